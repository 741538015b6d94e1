"""VRAM Planner from Python: GPU-memory estimates for LLM training and inference.

The same C++ core as the page and ``vram-probe``, through the JSON entry points
of ``core/include/vram/api.h``: a request dict goes in as JSON text, the core's
result text comes back as a dict. For the same request the text is byte for byte
what ``vram-probe estimate --request FILE --json`` prints (``estimate_json``
returns it as is).

    >>> import vram_planner
    >>> r = vram_planner.estimate({"model": {"config": cfg}, "task": "train",
    ...                            "train": {"method": "lora"}, "gpu": {"name": "A100 80GB"}})
    >>> r["fit"]["fits"], r["peak_bytes"]

Bad input raises ``EstimatorError`` with the core's ``code``, ``message`` and
``path`` (the request field at fault). The request vocabulary is docs/schema.md;
``fields()`` lists every field with its default.
"""

from __future__ import annotations

import json
import math
import operator
from typing import Any, Mapping, Optional, Union

from . import _core

__all__ = [
    "EstimatorError",
    "estimate",
    "estimate_json",
    "plan",
    "params",
    "version",
    "fields",
    "framework_defaults",
    "layout_options",
    "SCHEMA",
]

#: The result schema of the core (``"vram-planner/1"``), the ``schema`` field of every result.
SCHEMA: str = _core.SCHEMA

Request = Union[Mapping[str, Any], str, bytes]


class EstimatorError(ValueError):
    """The core refused the input.

    ``code`` is one of the core's stable codes (``bad_json``, ``missing_field``,
    ``wrong_type``, ``out_of_range``, ``inconsistent``, ``unsupported_model``,
    ``unknown_value``, ``unsupported``, ``internal``; core/include/vram/status.h),
    ``message`` says what is wrong, ``path`` names the field (``"train.seq_len"``,
    ``""`` for the whole input).
    """

    def __init__(self, code: str, message: str, path: str = "") -> None:
        super().__init__(f"[{code}] {message}" + (f" (at {path})" if path else ""))
        self.code = code
        self.message = message
        self.path = path

    def to_dict(self) -> dict:
        """The error object as the CLI and the page print it."""
        return {"error": {"code": self.code, "message": self.message, "path": self.path}}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _plain(value: Any, path: str) -> Any:
    """A JSON-ready copy of ``value``, or EstimatorError naming the field that cannot be JSON.

    Python's ``json`` would write NaN/Infinity (not JSON; the core would only say
    "not valid JSON") and fail on numpy scalars with a TypeError naming no field.
    Integers of any kind (``operator.index``: int, numpy integers) stay exact
    integers; floats must be finite; anything else is refused, never guessed.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, float):  # numpy.float64 is a float
        if not math.isfinite(value):
            raise EstimatorError("out_of_range", f"{path or 'the request'} is {value}, not a finite number", path)
        return float(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise EstimatorError(
                    "wrong_type", f"keys must be strings, got {type(k).__name__} {k!r} in {path or 'the request'}", path
                )
            out[k] = _plain(v, _join(path, k))
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{path}[{i}]") for i, v in enumerate(value)]
    try:
        return operator.index(value)
    except TypeError:
        pass
    raise EstimatorError(
        "wrong_type",
        f"{path or 'the request'} must be a JSON value (dict, list, str, int, float, bool, None), "
        f"got {type(value).__name__}",
        path,
    )


def _text(request: Request) -> str:
    """JSON text for the core: str/bytes as given (the CLI's --request file), dicts encoded."""
    if isinstance(request, bytes):
        return request.decode("utf-8")
    if isinstance(request, str):
        return request
    if not isinstance(request, Mapping):
        raise EstimatorError(
            "wrong_type", f"the request must be a dict or JSON text, got {type(request).__name__}", ""
        )
    return json.dumps(_plain(request, ""), ensure_ascii=False, allow_nan=False)


def _decode(text: str) -> dict:
    result = json.loads(text)
    if isinstance(result, dict) and "error" in result:
        e = result["error"]
        raise EstimatorError(e.get("code", "internal"), e.get("message", ""), e.get("path", ""))
    return result


def estimate_json(request: Request) -> str:
    """The core's result text for a request, unchanged (errors included, as ``{"error": ...}`` text).

    Byte for byte what ``vram-probe estimate --request FILE --json`` prints, without its final newline.
    """
    return _core.estimate_json(_text(request))


def estimate(request: Request) -> dict:
    """Estimate per-GPU memory for a request (dict or JSON text); returns the result dict.

    The result's contract fields: ``peak_bytes``, ``peak_phase``, ``components[]``, ``phases[]``,
    ``fit.fits``, ``fit.capacity_bytes``, ``model.params_total``, ``warnings[]`` (docs/schema.md).
    Raises EstimatorError on bad input.
    """
    return _decode(estimate_json(request))


def plan(
    request: Request,
    *,
    framework: Optional[str] = None,
    top: Optional[int] = None,
    allow_offload: Optional[bool] = None,
    allow_checkpointing: Optional[bool] = None,
) -> dict:
    """Rank every layout of ``parallel.gpus`` GPUs of ``gpu`` for a training request (``vram-probe plan``).

    The keyword arguments set the request's ``plan`` object, as the CLI's ``--framework``, ``--top``,
    ``--allow-offload`` and ``--allow-checkpointing`` do; ``None`` leaves the field to the request
    (and the core's default).
    """
    options = {
        "framework": framework,
        "top": top,
        "allow_offload": allow_offload,
        "allow_checkpointing": allow_checkpointing,
    }
    options = {k: v for k, v in options.items() if v is not None}
    if options:
        req = json.loads(_text(request))
        if not isinstance(req, dict):
            raise EstimatorError("wrong_type", "the request must be a JSON object", "")
        given = req.get("plan", {})
        if not isinstance(given, dict):
            raise EstimatorError("wrong_type", "plan must be an object", "plan")
        req["plan"] = {**given, **options}
        request = req
    return _decode(_core.plan_json(_text(request)))


def params(config: Request) -> dict:
    """Exact parameter count and breakdown of an HF ``config.json`` (dict or JSON text): ``vram-probe params``."""
    if isinstance(config, (str, bytes)):
        try:
            config = json.loads(config)
        except ValueError as e:  # what `vram-probe params` says of a file that is not JSON
            raise EstimatorError("bad_json", f"the config is not valid JSON: {e}", "config") from None
    return _decode(_core.model_info_json(_text({"config": config})))


def version() -> dict:
    """Schema, version, supported model types, optimizers, frameworks and their releases, GPUs (``vram-probe version``)."""
    return _decode(_core.version_json())


def fields() -> dict:
    """Every request field the core declares: default, values, limits, CLI flag (``vram-probe fields --json``)."""
    return _decode(_core.fields_json())


def framework_defaults(framework: str, method: Optional[str] = None) -> dict:
    """The defaults a framework's recipe sets for a method, with sources (``vram-probe frameworks --json``)."""
    query = {"framework": framework}
    if method is not None:
        query["method"] = method
    return _decode(_core.framework_defaults_json(_text(query)))


def layout_options(parallel: Request) -> dict:
    """A request's ``parallel`` object -> data parallel and which sharding options the layout can take."""
    return _decode(_core.layout_options_json(_text(parallel)))

"""vram_planner from Python gives what vram-probe gives, byte for byte, and raises EstimatorError on bad input."""

import json
import subprocess
import threading

import pytest

import vram_planner


def model(fixtures, hub_id):
    return json.loads((fixtures / "models" / (hub_id.replace("/", "__") + ".json")).read_text())


def train(cfg, gpu="H100 80GB", **fields):
    t = {
        "method": "full",
        "micro_batch": 1,
        "seq_len": 2048,
        "precision": "bf16",
        "optimizer": "adamw_torch_fused",
        "grad_checkpointing": False,
        "attention": "sdpa",
    }
    t.update(fields)
    return {"model": {"config": cfg}, "task": "train", "train": t, "gpu": {"name": gpu}}


def requests(fixtures):
    """Requests over the core's main paths: full, LoRA, QLoRA with a framework, multi-GPU, serving."""
    llama8 = model(fixtures, "meta-llama/Llama-3.1-8B")
    qwen = model(fixtures, "Qwen/Qwen3-0.6B")
    mistral = model(fixtures, "mistralai/Mistral-7B-v0.1")
    llama2 = model(fixtures, "meta-llama/Llama-2-7b-hf")
    mixtral = model(fixtures, "mistralai/Mixtral-8x7B-v0.1")
    zero3 = train(llama2, "A100 40GB", seq_len=4096, micro_batch=2, grad_accum=8, grad_checkpointing=True)
    zero3["parallel"] = {"gpus": 8, "zero": 3}
    moe = train(mixtral, "H100 80GB", method="lora", grad_checkpointing=True)
    moe["parallel"] = {"gpus": 8, "tp": 2, "ep": 4}
    return {
        "llama-3.1-8b full bf16": train(llama8),
        "qwen3-0.6b lora, checkpointing, eager": train(
            qwen, "A100 80GB", method="lora", grad_checkpointing=True, attention="eager", micro_batch=4
        ),
        "mistral-7b qlora torchtune": train(mistral, "RTX 4090", method="qlora", framework="torchtune"),
        "llama-2-7b zero-3 on 8 x A100 40GB": zero3,
        "mixtral lora tp 2 ep 4": moe,
        "llama-2-7b vllm serving": {
            "model": {"config": llama2},
            "task": "infer",
            "infer": {"engine": "vllm", "batch": 8, "context_len": 4096},
            "gpu": {"name": "A100 80GB"},
        },
    }


def cli(probe, tmp_path, *args):
    proc = subprocess.run([str(probe), *args], capture_output=True, text=True, encoding="utf-8")
    return proc.returncode, proc.stdout


def cli_estimate(probe, tmp_path, request_text):
    f = tmp_path / "request.json"
    f.write_text(request_text, encoding="utf-8")
    return cli(probe, tmp_path, "estimate", "--request", str(f), "--json")


def test_estimate_bytes_equal_the_cli_for_every_request(probe, fixtures, tmp_path):
    checked = 0
    for name, req in requests(fixtures).items():
        code, out = cli_estimate(probe, tmp_path, json.dumps(req))
        assert code == 0, (name, out)
        # The core's text as is, and the dict written back the way the core writes it.
        assert vram_planner.estimate_json(req) + "\n" == out, name
        result = vram_planner.estimate(req)
        assert json.dumps(result, indent=2, ensure_ascii=False) + "\n" == out, name
        assert isinstance(result["peak_bytes"], int) and result["peak_bytes"] > 0, name
        checked += 1
    assert checked == 6


def test_request_text_and_dict_give_the_same_result(fixtures):
    req = requests(fixtures)["qwen3-0.6b lora, checkpointing, eager"]
    pretty = json.dumps(req, indent=4)
    assert vram_planner.estimate_json(pretty) == vram_planner.estimate_json(req)
    assert vram_planner.estimate(pretty.encode()) == vram_planner.estimate(req)


def test_fit_answers_whether_the_run_fits(fixtures):
    big = vram_planner.estimate(train(model(fixtures, "meta-llama/Llama-3.1-8B"), "RTX 4090"))
    small = vram_planner.estimate(train(model(fixtures, "Qwen/Qwen3-0.6B"), "H100 80GB", method="lora"))
    assert big["fit"]["fits"] is False and big["peak_bytes"] > big["fit"]["capacity_bytes"]
    assert small["fit"]["fits"] is True and small["peak_bytes"] < small["fit"]["capacity_bytes"]


def test_params_bytes_equal_the_cli(probe, fixtures, tmp_path):
    for hub_id in ["meta-llama/Llama-3.1-8B", "google-t5/t5-small", "deepseek-ai/DeepSeek-V3"]:
        path = fixtures / "models" / (hub_id.replace("/", "__") + ".json")
        code, out = cli(probe, tmp_path, "params", "--config", str(path), "--json")
        assert code == 0, out
        info = vram_planner.params(model(fixtures, hub_id))
        assert json.dumps(info, indent=2, ensure_ascii=False) + "\n" == out, hub_id
        assert vram_planner.params(path.read_text()) == info
    # The checkpoint's exact count (tests/fixtures/models.json).
    assert vram_planner.params(model(fixtures, "meta-llama/Llama-3.1-8B"))["params_total"] == 8030261248


def test_plan_bytes_equal_the_cli_with_the_same_options(probe, fixtures, tmp_path):
    req = train(model(fixtures, "meta-llama/Llama-3.1-8B"), "A100 40GB", seq_len=4096, grad_accum=8)
    req["parallel"] = {"gpus": 8}
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(req))
    code, out = cli(probe, tmp_path, "plan", "--request", str(f), "--top", "3", "--framework", "fsdp", "--json")
    assert code == 0, out
    result = vram_planner.plan(req, top=3, framework="fsdp")
    assert json.dumps(result, indent=2, ensure_ascii=False) + "\n" == out
    assert len(result["plan"]["candidates"]) == 3
    assert "plan" not in req  # the caller's dict is not changed


def test_version_and_fields_are_the_cli_s(probe, tmp_path):
    code, out = cli(probe, tmp_path, "version")
    assert code == 0
    v = vram_planner.version()
    assert json.dumps(v, indent=2, ensure_ascii=False) + "\n" == out
    assert v["schema"] == vram_planner.SCHEMA == "vram-planner/1"
    assert "llama" in v["supported_model_types"]
    code, out = cli(probe, tmp_path, "fields", "--json")
    assert json.dumps(vram_planner.fields(), indent=2, ensure_ascii=False) + "\n" == out


def test_framework_defaults_and_layout_options(probe, tmp_path):
    code, out = cli(probe, tmp_path, "frameworks", "--framework", "torchtune", "--method", "qlora", "--json")
    assert code == 0, out
    assert vram_planner.framework_defaults("torchtune", "qlora") == json.loads(out)
    assert vram_planner.layout_options({"gpus": 8, "tp": 2})["dp"] == 4


# ---- errors -------------------------------------------------------------------------------


def bad_requests(fixtures):
    qwen = model(fixtures, "Qwen/Qwen3-0.6B")
    return {
        "negative seq_len": (train(qwen, seq_len=-1), "out_of_range", "train.seq_len"),
        "unknown optimizer": (train(qwen, optimizer="adamw_magic"), "unknown_value", "train.optimizer"),
        "unknown architecture": (
            train({**qwen, "model_type": "not_a_model"}),
            "unsupported_model",
            "model.config.model_type",
        ),
        "target list of numbers": (train(qwen, method="lora", lora={"targets": [1]}), "wrong_type", None),
        "not JSON": ('{"task": "train", ', "bad_json", None),
    }


def test_errors_raise_estimator_error_with_the_cli_s_code_message_and_path(probe, fixtures, tmp_path):
    for name, (req, code, path) in bad_requests(fixtures).items():
        text = req if isinstance(req, str) else json.dumps(req)
        exit_code, out = cli_estimate(probe, tmp_path, text)
        assert exit_code == 1, name
        assert vram_planner.estimate_json(req) + "\n" == out, name  # the error text, byte for byte
        with pytest.raises(vram_planner.EstimatorError) as raised:
            vram_planner.estimate(req)
        e = raised.value
        expected = json.loads(out)["error"]
        assert (e.code, e.message, e.path) == (expected["code"], expected["message"], expected["path"]), name
        assert e.code == code, name
        if path is not None:
            assert e.path == path, name
        assert e.to_dict() == json.loads(out)
        assert isinstance(e, ValueError)


def test_values_json_cannot_hold_are_refused_naming_the_field(fixtures):
    qwen = model(fixtures, "Qwen/Qwen3-0.6B")
    with pytest.raises(vram_planner.EstimatorError) as nan:
        vram_planner.estimate(train(qwen, seq_len=float("nan")))
    assert (nan.value.code, nan.value.path) == ("out_of_range", "train.seq_len")
    with pytest.raises(vram_planner.EstimatorError) as obj:
        vram_planner.estimate(train(qwen, lora={"targets": [object()]}))
    assert (obj.value.code, obj.value.path) == ("wrong_type", "train.lora.targets[0]")
    with pytest.raises(vram_planner.EstimatorError) as key:
        vram_planner.estimate({"model": {"config": qwen}, 1: "x"})
    assert key.value.code == "wrong_type"
    with pytest.raises(vram_planner.EstimatorError) as not_a_dict:
        vram_planner.estimate(["task", "train"])
    assert not_a_dict.value.code == "wrong_type"
    with pytest.raises(vram_planner.EstimatorError) as bad_config:
        vram_planner.params("{not json")
    assert (bad_config.value.code, bad_config.value.path) == ("bad_json", "config")


def test_numpy_integers_are_exact_integers(fixtures):
    np = pytest.importorskip("numpy")
    qwen = model(fixtures, "Qwen/Qwen3-0.6B")
    assert vram_planner.estimate_json(train(qwen, seq_len=np.int64(1024), micro_batch=np.int32(2))) == (
        vram_planner.estimate_json(train(qwen, seq_len=1024, micro_batch=2))
    )


def test_estimates_run_in_parallel_threads(fixtures):
    # The GIL is released inside the core: threads get the same answers as one call.
    req = train(model(fixtures, "meta-llama/Llama-3.1-8B"), method="lora")
    expected = vram_planner.estimate_json(req)
    out = []
    threads = [threading.Thread(target=lambda: out.append(vram_planner.estimate_json(req))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [expected] * 4

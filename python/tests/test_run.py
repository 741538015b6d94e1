"""`vram-probe run`: the script it writes for every method and option, and real CPU runs of tiny models.

The plan tests import the generated script and ask it what it would build in a given environment (the
CUDA environment with transformers, peft and bitsandbytes is described, not present: this machine has no
GPU). The run tests execute the script on the CPU with Debian's torch; CUDA-only parts (4-bit weights,
fused optimizers, allocator statistics) are skipped by the script itself with the reason in the report.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

TINY_LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 64,
    "intermediate_size": 176,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
    "torch_dtype": "bfloat16",
}
TINY_QWEN3 = {
    **TINY_LLAMA,
    "model_type": "qwen3",
    "architectures": ["Qwen3ForCausalLM"],
    "head_dim": 32,
    "tie_word_embeddings": True,
    "attention_bias": False,
}

CUDA_ENV = {
    "torch": True, "transformers": True, "peft": True, "bitsandbytes": True, "liger_kernel": True,
    "flash_attn": True, "cuda": True, "device": "cuda", "torch_version": "2.5.1", "sdpa": True,
    "fused_adamw": True,
}
CPU_BARE_ENV = {
    "torch": True, "transformers": False, "peft": False, "bitsandbytes": False, "liger_kernel": False,
    "flash_attn": False, "cuda": False, "device": "cpu", "torch_version": "1.13.0", "sdpa": False,
    "fused_adamw": False,
}


def request(config=TINY_LLAMA, **train):
    t = {"method": "full", "micro_batch": 2, "seq_len": 32, "precision": "fp32", "attention": "eager"}
    t.update(train)
    return {"model": {"config": config}, "task": "train", "train": t, "gpu": {"name": "A100 80GB"}}


def write_script(probe, tmp_path, req, name="run"):
    f = tmp_path / f"{name}-request.json"
    f.write_text(json.dumps(req))
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([str(probe), "run", "--request", str(f), "--out", str(out), "--script-only"],
                          capture_output=True, text=True)
    return proc, tmp_path / f"{name}.py"


def load(script):
    spec = importlib.util.spec_from_file_location(f"vram_run_{abs(hash(str(script)))}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plan_for(probe, tmp_path, req, env=CUDA_ENV):
    proc, script = write_script(probe, tmp_path, req)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = load(script)
    return m, m.make_plan(m.SPEC, dict(env))


# ---- the script for every method and option ------------------------------------------------------


def test_the_script_carries_the_request_with_the_core_s_resolved_settings(probe, tmp_path):
    req = request(method="lora", lora={"rank": 16, "alpha": 32, "dropout": 0.05, "targets": ["q_proj", "o_proj"]},
                  grad_accum=4, optimizer="adamw_torch")
    m, _ = plan_for(probe, tmp_path, req)
    s = m.SPEC
    assert s["request"] == req
    assert s["model_config"] == TINY_LLAMA
    assert (s["method"], s["micro_batch"], s["seq_len"], s["grad_accum"]) == ("lora", 2, 32, 4)
    assert s["lora"] == {"rank": 16, "alpha": 32, "dropout": 0.05, "targets": ["q_proj", "o_proj"],
                         "adapter_fp32": True, "use_dora": False}
    # Fields the request leaves out take the core's defaults (vram-probe fields).
    m2, _ = plan_for(probe, tmp_path, request(method="lora", precision="bf16", attention="sdpa"))
    assert m2.SPEC["lora"]["targets"] is None  # PEFT's own default for the model type, as the estimate assumes
    assert m2.SPEC["optimizer"] == "adamw_torch_fused"
    assert m2.SPEC["lora"]["rank"] == 8
    # A framework's defaults come in resolved (torchtune's LoRA recipe: all-linear-like targets, rank 8).
    m3, _ = plan_for(probe, tmp_path, request(method="lora", framework="torchtune", precision="bf16"))
    assert m3.SPEC["method"] == "lora" and m3.SPEC["lora"]["targets"] is not None


@pytest.mark.parametrize(
    "precision,dtype,autocast,scaler",
    [
        ("fp32", "float32", None, False),
        ("bf16", "bfloat16", None, False),
        ("fp16", "float16", None, False),
        ("amp_bf16", "float32", "bfloat16", False),
        ("amp_fp16", "float32", "float16", True),
    ],
)
def test_every_precision_recipe_on_cuda(probe, tmp_path, precision, dtype, autocast, scaler):
    _, plan = plan_for(probe, tmp_path, request(precision=precision))
    assert (plan["dtype"], plan["autocast"], plan["grad_scaler"]) == (dtype, autocast, scaler)
    assert plan["model_source"] == "transformers" and plan["device"] == "cuda"


def test_mixed_bf16_master_weights_are_refused_with_the_reason(probe, tmp_path):
    m, _ = plan_for(probe, tmp_path, request(precision="bf16"))
    m.SPEC["precision"] = "mixed_bf16"
    with pytest.raises(m.CannotRun) as e:
        m.make_plan(m.SPEC, dict(CUDA_ENV))
    assert e.value.path == "train.precision" and "master weights" in str(e.value)


@pytest.mark.parametrize("attention", ["eager", "sdpa", "flash_attention_2"])
@pytest.mark.parametrize("checkpointing", [False, True])
def test_attention_and_checkpointing(probe, tmp_path, attention, checkpointing):
    _, plan = plan_for(probe, tmp_path, request(attention=attention, grad_checkpointing=checkpointing))
    assert plan["attention"] == attention
    assert plan["checkpointing"] == ("full" if checkpointing else "none")


def test_flash_attention_on_the_cpu_is_refused_naming_the_field(probe, tmp_path):
    m, _ = plan_for(probe, tmp_path, request(attention="flash_attention_2"))
    with pytest.raises(m.CannotRun) as e:
        m.make_plan(m.SPEC, dict(CPU_BARE_ENV))
    assert e.value.path == "train.attention"


@pytest.mark.parametrize("method", ["full", "lora", "qlora", "freeze"])
def test_every_method_on_cuda_with_the_libraries(probe, tmp_path, method):
    extra = {"trainable_modules": ["lm_head"]} if method == "freeze" else {}
    _, plan = plan_for(probe, tmp_path, request(method=method, precision="bf16", **extra))
    assert plan["method"] == method
    assert plan.get("lora") == ("peft" if method in ("lora", "qlora") else None)
    if method == "qlora":
        assert plan["quant"] == {"library": "bitsandbytes", "quant_type": "nf4", "double_quant": True}
    else:
        assert "quant" not in plan


def test_without_transformers_and_peft_the_torch_fallback_says_so(probe, tmp_path):
    _, plan = plan_for(probe, tmp_path, request(method="lora", attention="sdpa"), CPU_BARE_ENV)
    assert plan["model_source"] == "torch" and plan["lora"] == "torch"
    assert plan["attention"] == "eager"  # torch 1.13 has no SDPA: said in a note
    notes = " ".join(plan["notes"])
    assert "transformers is not installed" in notes and "peft is not installed" in notes
    assert "scaled_dot_product_attention" in notes


def test_an_architecture_the_fallback_cannot_build_needs_transformers(probe, tmp_path):
    gpt2 = json.loads((Path(__file__).resolve().parents[2] / "tests/fixtures/models/openai-community__gpt2.json")
                      .read_text())
    m, _ = plan_for(probe, tmp_path, request(config=gpt2))
    with pytest.raises(m.CannotRun) as e:
        m.make_plan(m.SPEC, dict(CPU_BARE_ENV))
    assert e.value.path == "model.config.model_type" and "gpt2" in str(e.value)
    assert m.make_plan(m.SPEC, dict(CUDA_ENV))["model_source"] == "transformers"


def test_dora_without_peft_and_vision_models_are_refused_naming_the_field(probe, tmp_path):
    m, _ = plan_for(probe, tmp_path, request(method="lora", lora={"use_dora": True}))
    assert m.SPEC["lora"]["use_dora"] is True
    assert m.make_plan(m.SPEC, dict(CUDA_ENV))["lora"] == "peft"
    with pytest.raises(m.CannotRun) as e:
        m.make_plan(m.SPEC, dict(CPU_BARE_ENV))
    assert e.value.path == "train.lora.use_dora"
    llava = json.loads((Path(__file__).resolve().parents[2] / "tests/fixtures/models/llava-hf__llava-1.5-7b-hf.json")
                       .read_text())
    proc, script = write_script(probe, tmp_path, request(config=llava, precision="bf16"))
    assert proc.returncode == 0, proc.stderr
    m2 = load(script)
    with pytest.raises(m2.CannotRun) as e:
        m2.make_plan(m2.SPEC, dict(CUDA_ENV))
    assert e.value.path == "model.config" and "vision" in str(e.value)


def test_quantisation_settings_reach_the_script(probe, tmp_path):
    m, plan = plan_for(probe, tmp_path, request(method="qlora", precision="bf16",
                                                quant={"double_quant": False, "blocksize": 128}))
    assert m.SPEC["quant"]["blocksize"] == 128 and m.SPEC["quant"]["double_quant"] is False
    assert plan["quant"]["double_quant"] is False


def test_qlora_on_the_cpu_or_without_bitsandbytes_is_refused(probe, tmp_path):
    m, _ = plan_for(probe, tmp_path, request(method="qlora", precision="bf16"))
    with pytest.raises(m.CannotRun, match="CUDA"):
        m.make_plan(m.SPEC, dict(CPU_BARE_ENV))
    with pytest.raises(m.CannotRun, match="bitsandbytes"):
        m.make_plan(m.SPEC, {**CUDA_ENV, "bitsandbytes": False})
    m.SPEC["quant"]["quantizer"] = "torchao"
    with pytest.raises(m.CannotRun) as e:
        m.make_plan(m.SPEC, dict(CUDA_ENV))
    assert e.value.path == "train.quant.quantizer"


def test_every_optimizer_of_the_core_is_mapped_or_refused_with_a_reason(probe, tmp_path):
    optimizers = json.loads(subprocess.run([str(probe), "version"], capture_output=True, text=True).stdout)[
        "optimizers"]
    m, _ = plan_for(probe, tmp_path, request())
    mapped, refused = {}, {}
    for name in optimizers:
        notes = []
        try:
            cls, kwargs = m.optimizer_plan(name, dict(CUDA_ENV), notes)
            mapped[name] = (cls, kwargs)
        except m.CannotRun as e:
            assert e.path == "train.optimizer" and name in str(e)
            refused[name] = str(e)
    assert mapped["adamw_torch_fused"] == ("torch.optim.AdamW", {"fused": True})
    assert mapped["paged_adamw_8bit"] == ("bitsandbytes.optim.PagedAdamW8bit", {})
    assert mapped["sgd_momentum"] == ("torch.optim.SGD", {"momentum": 0.9})
    assert set(refused) == {"adamw_apex_fused", "lamb", "schedule_free_adamw", "muon"}
    # Every torch class named exists in this torch.
    pytest.importorskip("torch")
    for cls, _ in mapped.values():
        if cls.startswith("torch."):
            assert m.import_path(cls) is not None
    # On the CPU the fused kernel is not there: the default AdamW runs, with a note.
    notes = []
    assert m.optimizer_plan("adamw_torch_fused", dict(CPU_BARE_ENV), notes) == ("torch.optim.AdamW", {})
    assert "CUDA-only" in notes[0]


def test_requests_run_cannot_train_are_errors_naming_the_field(probe, tmp_path):
    infer = {"model": {"config": TINY_LLAMA}, "task": "infer", "infer": {"batch": 1, "context_len": 64}}
    multi = {**request(), "parallel": {"gpus": 2}}
    custom = {"model": {"custom": {"params": 1000000, "layers": 2, "hidden": 64, "heads": 4, "vocab": 512}},
              "task": "train"}
    for req, path in ((infer, "task"), (multi, "parallel.gpus"), (request(seq_len=-1), "train.seq_len")):
        proc, _ = write_script(probe, tmp_path, req)
        assert proc.returncode == 1, proc.stderr
        assert json.loads(proc.stdout)["error"]["path"] == path
    proc, _ = write_script(probe, tmp_path, custom)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["path"].startswith("model")


def test_describe_prints_the_plan_without_building(probe, tmp_path):
    proc, script = write_script(probe, tmp_path, request(method="qlora", precision="bf16"))
    d = subprocess.run([sys.executable, str(script), "--describe", "--assume", json.dumps(CUDA_ENV)],
                       capture_output=True, text=True)
    assert d.returncode == 0, d.stderr
    assert json.loads(d.stdout)["plan"]["quant"]["library"] == "bitsandbytes"


# ---- real runs on the CPU -------------------------------------------------------------------------

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="the CPU runs need PyTorch (Debian: python3-torch)"
)


def run(probe, tmp_path, req, name, steps=2):
    f = tmp_path / f"{name}-request.json"
    f.write_text(json.dumps(req))
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([str(probe), "run", "--request", str(f), "--out", str(out), "--python", sys.executable,
                           "--steps", str(steps)], capture_output=True, text=True, timeout=600)
    return proc, json.loads(out.read_text()) if out.exists() else None


CPU_CASES = {
    "full fp32 eager": (request(), 1),
    "lora bf16 sdpa checkpointing, 2 micro-steps": (
        request(method="lora", precision="bf16", attention="sdpa", grad_checkpointing=True, grad_accum=2), 2),
    "freeze lm_head and layers.1, amp_bf16": (
        request(method="freeze", precision="amp_bf16", trainable_modules=["lm_head", "layers.1"]), 1),
    "qwen3 (q/k norms, tied head) lora all-linear, sgd_momentum": (
        request(config=TINY_QWEN3, method="lora", lora={"targets": "all-linear"}, optimizer="sgd_momentum"), 1),
}


@needs_torch
@pytest.mark.parametrize("name", list(CPU_CASES))
def test_the_script_trains_on_the_cpu_and_its_tensors_match_the_estimate(probe, tmp_path, name):
    req, accum = CPU_CASES[name]
    proc, report = run(probe, tmp_path, req, "case")
    assert proc.returncode == 0, proc.stderr
    r = report["run"]
    assert report["schema"] == "vram-planner-probe/1" and report["gpus"] == []
    assert report["errors"][0]["code"] == "no_gpu"
    assert r["request"] == req and r["device"] == "cpu" and "error" not in r
    # load, then per step: forward, loss, backward per micro-step, and one optimizer step.
    assert [p["phase"] for p in r["phases"]] == ["load"] + (
        ["forward", "loss", "backward"] * accum + ["optimizer_step"]) * 2
    assert all(p["max_allocated_bytes"] is None for p in r["phases"])  # no CUDA allocator on the CPU: null
    assert all(p["seconds"] >= 0 for p in r["phases"])
    # The model the script built has the core's exact parameter counts.
    # (LoRA adds its adapters to the module tree; the core counts the base model and the adapters apart.)
    adapters = r["params"]["trainable"] if req["train"]["method"] == "lora" else 0
    assert r["params"]["total"] == r["estimate"]["model"]["params_total"] + adapters
    assert r["params"]["trainable"] == r["estimate"]["model"]["params_trainable"]
    # Its weights are the estimate's weights byte for byte; gradients are freed by zero_grad.
    est = r["estimate"]["components"]
    assert r["tensor_bytes"]["weights"] == est["weights"]
    assert r["tensor_bytes"]["gradients"] == 0
    # Optimizer states: the estimate's, plus torch's one 4-byte `step` tensor per parameter for Adam-style
    # optimizers (torch/optim/adamw.py keeps it on the CPU unless capturable/fused, so not in CUDA memory).
    states = r["tensor_bytes"]["optimizer_states"]
    if req["train"].get("optimizer", "adamw_torch_fused").startswith("adamw"):
        assert (states - est["optimizer_states"]) % 4 == 0 and 0 < states - est["optimizer_states"] < 4096
    else:
        assert states == est["optimizer_states"]
    assert isinstance(r["phases"][-1]["loss"], float)
    # The step time the script printed, read by the probe from its output (step_log.cpp): two steps,
    # the first left out as warm-up; tokens/s is the step's tokens over its seconds.
    t = report["timing"]
    assert (t["format"], t["steps_logged"], t["warmup_skipped"]) == ("vram_probe_run", 2, 1)
    # The estimate's time on the request's card travels with it, for the page's comparison.
    assert r["estimate"]["time"]["gpu"] == "A100 80GB" and r["estimate"]["time"]["step_seconds"]["low"] > 0
    assert t["step_seconds"]["count"] == 1 and t["step_seconds"]["median"] > 0
    tokens = req["train"]["micro_batch"] * req["train"]["seq_len"] * accum
    assert t["tokens_per_second_per_gpu"]["median"] == pytest.approx(tokens / t["step_seconds"]["median"], rel=1e-9)


@needs_torch
def test_qlora_on_the_cpu_writes_a_report_that_says_why_it_did_not_train(probe, tmp_path):
    proc, report = run(probe, tmp_path, request(method="qlora", precision="bf16"), "qlora", steps=1)
    assert proc.returncode == 2
    assert report["run"]["error"]["path"] == "train.method"
    assert "CUDA" in report["run"]["error"]["message"]
    assert report["run"]["phases"] == []


@needs_torch
def test_on_cuda_the_peak_is_reset_before_each_phase_and_read_after_it(probe, tmp_path, monkeypatch, capsys):
    """The CUDA recording, run for real on the CPU against a scripted torch.cuda (this machine has no GPU)."""
    import torch

    proc, script = write_script(probe, tmp_path, request(method="lora", grad_accum=2))
    m = load(script)
    plan = m.make_plan(m.SPEC, dict(CPU_BARE_ENV))
    calls, level = [], {"now": 0}

    def allocated():
        level["now"] += 1000  # the scripted allocator grows by 1000 bytes at every reading
        return level["now"]

    monkeypatch.setattr(torch.cuda, "synchronize", lambda: calls.append("sync"))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: calls.append("reset"))
    monkeypatch.setattr(torch.cuda, "memory_allocated", allocated)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: level["now"] + 1)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda: level["now"] + 2)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda: level["now"] + 3)
    recorder = m.Recorder("cpu")
    recorder.cuda = True  # record as on a GPU
    m.train(m.SPEC, plan, 2, recorder)
    phases = [r["phase"] for r in recorder.records]
    assert phases == ["load"] + (["forward", "loss", "backward"] * 2 + ["optimizer_step"]) * 2
    # Every phase: synchronize + reset before, synchronize after, then the four statistics.
    assert calls == ["sync", "reset", "sync"] * len(phases)
    for i, r in enumerate(recorder.records):
        assert r["allocated_bytes"] == 1000 * (i + 1)
        assert (r["max_allocated_bytes"], r["reserved_bytes"], r["max_reserved_bytes"]) == (
            r["allocated_bytes"] + 1, r["allocated_bytes"] + 2, r["allocated_bytes"] + 3)
    # One step line per optimizer step, timed between the phases' own synchronize calls (no extra ones):
    # from the first forward's start to the optimizer step's end.
    steps = [json.loads(line.split(" ", 1)[1]) for line in capsys.readouterr().out.splitlines()
             if line.startswith("vram-probe-step ")]
    assert [x["step"] for x in steps] == [1, 2]
    assert all(x["tokens"] == 2 * 32 * 2 and x["seconds"] > 0 for x in steps)
    first = recorder.records[1:8]  # step 1: forward, loss, backward twice, then the optimizer step
    assert steps[0]["seconds"] >= sum(p["seconds"] for p in first) - 1e-5


def test_on_a_gpu_the_script_runs_under_watch_and_the_report_merges_both(probe, tmp_path):
    """The GPU path of `vram-probe run` against the fake libnvidia-ml of the C++ tests: watch samples the
    script, and the report holds the NVML measurement and the run. The script itself finds no CUDA here
    and says so (exit 2), which the report carries."""
    import os

    fake = os.environ.get("VRAM_FAKE_NVML")
    if not fake or not Path(fake).exists():
        pytest.skip("the fake NVML library (tests/probe/fake_nvml.cpp, target vram_fake_nvml) is not built")
    libdir = tmp_path / "lib"
    libdir.mkdir()
    (libdir / "libnvidia-ml.so.1").symlink_to(Path(fake).resolve())
    f = tmp_path / "request.json"
    f.write_text(json.dumps(request(method="lora")))
    out = tmp_path / "gpu-run.json"
    proc = subprocess.run(
        [str(probe), "run", "--request", str(f), "--out", str(out), "--python", sys.executable, "--steps", "1",
         "--interval-ms", "5"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "LD_LIBRARY_PATH": str(libdir)},
    )
    report = json.loads(out.read_text())
    assert report["gpus"] and report["run"]["device"] == "cuda"
    assert "peak" in report and "timeline" in report and report["command"][1].endswith("gpu-run.py")
    if proc.returncode == 2:  # no CUDA behind the fake NVML: the script says why
        assert "torch.cuda.is_available() is False" in report["run"]["error"]["message"]
        assert report["exit"]["code"] == 2
    else:  # a machine with a real GPU and the fake NVML: it trained
        assert proc.returncode == 0, proc.stderr
        assert all(p["max_allocated_bytes"] is not None for p in report["run"]["phases"])

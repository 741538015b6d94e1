#!/usr/bin/env python3
# Written by `vram-probe run` (probe-agent/src/run/train_script.py, filled with the request below).
#
# Trains a few steps of the job the request describes, with random weights and synthetic tokens, and
# records PyTorch's allocator statistics at the end of each phase the estimator models: after load,
# forward, loss, backward, optimizer step. Before each phase the peak is reset
# (torch.cuda.reset_peak_memory_stats), so each phase's max_memory_allocated / max_memory_reserved is that
# phase's own peak (torch/cuda/memory.py). The phases go to --phases-out as JSON; `vram-probe run` puts
# them into its report next to the request, and the page's compare card lines them up with the estimate.
#
# The model: transformers' AutoModelForCausalLM.from_config (random weights, the request's dtype and
# attn_implementation) when transformers is installed; otherwise, for Llama-style model types only, a
# torch-only copy of transformers' Llama modules with the same parameter names and shapes (the reason is
# written to the report's notes). LoRA: PEFT when installed, else an equivalent torch LoRA layer (PEFT's
# lora.Linear forward). QLoRA: bitsandbytes Linear4bit (CUDA only).
#
#   python3 this_script.py --phases-out phases.json [--steps N] [--device auto|cuda|cpu] [--describe]
#
# --describe prints what would be built (the plan) as JSON and exits, without building anything.
# Exit codes: 0 trained and recorded; 2 this request cannot run here (the reason is printed and written
# to --phases-out as {"error": ...}); anything else is a crash of the training itself.

import argparse
import importlib.util
import json
import math
import os
import sys
import time

SPEC = json.loads(r'''__VRAM_RUN_SPEC__''')

PHASES = ["load", "forward", "loss", "backward", "optimizer_step"]

# Model types the torch-only fallback builds (transformers' modeling_llama.py layout: RMSNorm, rotary,
# GQA attention with q/k/v/o projections, gated SiLU MLP). qwen2 adds q/k/v biases
# (modeling_qwen2.py), qwen3 per-head q/k RMSNorms and an explicit head_dim (modeling_qwen3.py).
TORCH_ONLY_TYPES = ("llama", "mistral", "qwen2", "qwen3")

# PEFT's default LoRA targets for these model types (peft utils/constants.py
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING): q_proj and v_proj.
PEFT_DEFAULT_TARGETS = ["q_proj", "v_proj"]


class CannotRun(Exception):
    """This request cannot run in this environment; the message says why and which field."""

    def __init__(self, message, path=""):
        super().__init__(message)
        self.path = path


def has(module):
    return importlib.util.find_spec(module) is not None


def environment(device_arg):
    env = {name: has(name) for name in ("torch", "transformers", "peft", "bitsandbytes", "liger_kernel", "flash_attn")}
    env["cuda"] = False
    env["torch_version"] = None
    if env["torch"]:
        import torch

        env["torch_version"] = torch.__version__
        env["cuda"] = torch.cuda.is_available()
        env["sdpa"] = hasattr(torch.nn.functional, "scaled_dot_product_attention")
        env["fused_adamw"] = "fused" in torch.optim.AdamW.__init__.__code__.co_varnames
    env["device"] = ("cuda" if env["cuda"] else "cpu") if device_arg == "auto" else device_arg
    return env


# ---- the plan: what this environment builds for the request --------------------------------------------


def optimizer_plan(name, env, notes):
    """The optimizer class and arguments for an HF `optim` name (transformers training_args.OptimizerNames)."""
    cuda = env["device"] == "cuda"
    torch_opts = {
        # torch/optim/adamw.py: foreach is the default on CUDA tensors, fused must be asked for.
        "adamw_torch": ("torch.optim.AdamW", {}),
        "adamw_torch_forloop": ("torch.optim.AdamW", {"foreach": False}),
        "adam": ("torch.optim.Adam", {}),
        "amsgrad": ("torch.optim.AdamW", {"amsgrad": True}),
        "sgd": ("torch.optim.SGD", {}),
        "sgd_momentum": ("torch.optim.SGD", {"momentum": 0.9}),
        "nesterov": ("torch.optim.SGD", {"momentum": 0.9, "nesterov": True}),
        "adagrad": ("torch.optim.Adagrad", {}),
        "rmsprop": ("torch.optim.RMSprop", {}),
        "rmsprop_momentum": ("torch.optim.RMSprop", {"momentum": 0.9}),
        "nadam": ("torch.optim.NAdam", {}),
        "radam": ("torch.optim.RAdam", {}),
        "adamax": ("torch.optim.Adamax", {}),
    }
    bnb_opts = {
        "adamw_bnb_8bit": "bitsandbytes.optim.AdamW8bit",
        "paged_adamw_8bit": "bitsandbytes.optim.PagedAdamW8bit",
        "paged_adamw_32bit": "bitsandbytes.optim.PagedAdamW32bit",
        "adamw_bnb_32bit": "bitsandbytes.optim.AdamW32bit",
        "lion_32bit": "bitsandbytes.optim.Lion32bit",
        "lion_8bit": "bitsandbytes.optim.Lion8bit",
        "paged_lion_8bit": "bitsandbytes.optim.PagedLion8bit",
    }
    if name == "adamw_torch_fused":
        if cuda and env.get("fused_adamw"):
            return "torch.optim.AdamW", {"fused": True}
        notes.append(
            "adamw_torch_fused: the fused AdamW kernel "
            + ("is CUDA-only" if not cuda else f"is not in torch {env['torch_version']}")
            + "; torch.optim.AdamW's default implementation runs instead"
        )
        return "torch.optim.AdamW", {}
    if name in torch_opts:
        return torch_opts[name]
    if name in bnb_opts:
        if not env["bitsandbytes"]:
            raise CannotRun(f"optimizer {name} needs bitsandbytes (pip install bitsandbytes)", "train.optimizer")
        if not cuda:
            raise CannotRun(f"optimizer {name}: bitsandbytes' optimizer kernels need CUDA", "train.optimizer")
        return bnb_opts[name], {}
    if name == "adafactor":
        if not env["transformers"]:
            raise CannotRun("optimizer adafactor is transformers' Adafactor: install transformers", "train.optimizer")
        # HF Trainer: Adafactor(scale_parameter=False, relative_step=False) with the learning rate given.
        return "transformers.optimization.Adafactor", {"scale_parameter": False, "relative_step": False}
    raise CannotRun(
        f"optimizer {name} has no single-process PyTorch equivalent in this script "
        "(apex / schedule-free / Muon are separate installs); pick another optimizer or run your own script "
        "under `vram-probe watch`",
        "train.optimizer",
    )


def make_plan(spec, env):
    """What will be built, as data: the model source, dtypes, LoRA, quantisation, optimizer, notes."""
    if not env["torch"]:
        raise CannotRun("PyTorch is not installed (pip install torch, or Debian's python3-torch)")
    notes = []
    cuda = env["device"] == "cuda"
    if env["device"] == "cuda" and not env["cuda"]:
        raise CannotRun("--device cuda: torch.cuda.is_available() is False")
    cfg = spec["model_config"]
    model_type = cfg.get("model_type", "")
    plan = {"device": env["device"], "model_type": model_type}
    if "vision_config" in cfg or spec.get("images_per_sample"):
        raise CannotRun(
            "vision-language models need their image inputs and processor: this script trains text-only causal "
            "LMs (run your VLM script under `vram-probe watch`)",
            "model.config",
        )
    if spec.get("dropout") is not None:
        notes.append(
            f"train.dropout {spec['dropout']}: the script keeps the config's own dropout settings; the estimate "
            "counts the requested dropout's masks"
        )

    if env["transformers"]:
        plan["model_source"] = "transformers"
    elif model_type in TORCH_ONLY_TYPES:
        plan["model_source"] = "torch"
        notes.append(
            f"transformers is not installed: the {model_type} model is this script's torch-only copy of "
            "transformers' Llama modules (same parameter names and shapes, random weights)"
        )
    else:
        raise CannotRun(
            f"transformers is not installed and model_type {model_type!r} is not one the torch-only fallback "
            f"builds ({', '.join(TORCH_ONLY_TYPES)}): pip install transformers",
            "model.config.model_type",
        )

    precision = spec["precision"]
    dtypes = {
        "fp32": ("float32", None),
        "bf16": ("bfloat16", None),
        "fp16": ("float16", None),
        "amp_bf16": ("float32", "bfloat16"),
        "amp_fp16": ("float32", "float16"),
    }
    if precision not in dtypes:
        raise CannotRun(
            f"precision {precision} keeps fp32 master weights beside bf16 ones the way DeepSpeed, Megatron-LM "
            "and FSDP do; this single-process script does not emulate it (use bf16 or amp_bf16 here, or run "
            "your DeepSpeed job under `vram-probe watch`)",
            "train.precision",
        )
    dtype, autocast = dtypes[precision]
    if not cuda and "float16" in (dtype, autocast):
        notes.append(
            "fp16: PyTorch's CPU kernels do not cover float16 matmuls (CUDA-only), so the CPU run uses "
            "float32 for what the request keeps in fp16"
        )
        dtype = "float32" if dtype == "float16" else dtype
        autocast = None if autocast == "float16" else autocast
    plan["dtype"], plan["autocast"] = dtype, autocast
    plan["grad_scaler"] = precision == "amp_fp16" and cuda

    attention = spec["attention"]
    if attention == "flash_attention_2" and not (cuda and env["flash_attn"] and plan["model_source"] == "transformers"):
        raise CannotRun(
            "attention flash_attention_2 needs CUDA, the flash-attn package and transformers"
            + (" (this run is on the CPU)" if not cuda else ""),
            "train.attention",
        )
    if attention == "sdpa" and plan["model_source"] == "torch" and not env.get("sdpa"):
        notes.append(
            f"attention sdpa: torch {env['torch_version']} has no scaled_dot_product_attention (torch >= 2.0), "
            "so eager attention runs; its saved s^2 probabilities make this run's activations larger"
        )
        attention = "eager"
    plan["attention"] = attention
    plan["checkpointing"] = spec["grad_checkpointing"]
    if spec["grad_checkpointing"] == "selective":
        raise CannotRun(
            "grad_checkpointing selective (recompute only attention) is Megatron-LM's; HF models checkpoint "
            "whole layers (use full)",
            "train.grad_checkpointing",
        )

    method = spec["method"]
    plan["method"] = method
    if method == "qlora":
        if not cuda:
            raise CannotRun("method qlora: bitsandbytes' 4-bit Linear layers need CUDA (this run is on the CPU)", "train.method")
        if not env["bitsandbytes"]:
            raise CannotRun("method qlora needs bitsandbytes (pip install bitsandbytes)", "train.method")
        if spec["quant"]["quantizer"] != "bitsandbytes":
            raise CannotRun(
                f"quantizer {spec['quant']['quantizer']} is torchtune's NF4Tensor path; this script quantises "
                "with bitsandbytes",
                "train.quant.quantizer",
            )
        plan["quant"] = {"library": "bitsandbytes", "quant_type": "nf4", "double_quant": spec["quant"]["double_quant"]}
    if method == "qlora" and spec["quant"].get("saves_input"):
        notes.append(
            "train.quant.saves_input describes bitsandbytes < 0.43.2; the installed bitsandbytes decides what "
            "its 4-bit layers keep"
        )
    if method in ("lora", "qlora"):
        if spec["lora"]["use_dora"] and not env["peft"]:
            raise CannotRun("DoRA (train.lora.use_dora) needs peft (pip install peft)", "train.lora.use_dora")
        plan["lora"] = "peft" if env["peft"] else "torch"
        if not env["peft"]:
            notes.append("peft is not installed: LoRA adapters are this script's copy of PEFT's lora.Linear")
    if spec["fused_loss"] or spec["fused_norm"]:
        if not (cuda and env["liger_kernel"] and plan["model_source"] == "transformers"):
            raise CannotRun(
                "fused loss / norm (Liger kernels) need CUDA, liger-kernel and transformers", "train.fused_loss"
            )
        plan["liger"] = True
        if spec["fused_loss"]:
            notes.append(
                "fused loss: Liger computes the loss inside the forward (labels given), so the forward phase "
                "holds the loss and the loss phase only divides it"
            )
    for key, path, why in (
        ("optimizer_in_backward", "train.optimizer_in_backward", "torchtune's per-parameter step hooks"),
        ("activation_offload", "train.activation_offload", "torchtune's saved-tensor offload hooks"),
    ):
        if spec.get(key):
            raise CannotRun(f"{path} ({why}) is not reproduced by this script", path)
    if spec.get("compile"):
        notes.append("train.compile: the script runs eager, as the estimate does (torch.compile is not modelled)")
    plan["optimizer"] = optimizer_plan(spec["optimizer"], env, notes)
    plan["notes"] = notes
    return plan


# ---- the torch-only model (transformers modeling_llama.py layout) ---------------------------------------


def torch_only_model(cfg, plan):
    import torch
    import torch.nn.functional as F
    from torch import nn

    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or hidden // heads
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", 10000.0)
    model_type = cfg.get("model_type")
    qkv_bias = bool(cfg.get("attention_bias", model_type == "qwen2"))
    qk_norm = model_type == "qwen3"
    attention = plan["attention"]
    dropout_p = float(cfg.get("attention_dropout", 0.0) or 0.0)

    class RMSNorm(nn.Module):  # LlamaRMSNorm: fp32 variance, cast back, then scale
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = eps

        def forward(self, x):
            dtype = x.dtype
            x = x.to(torch.float32)
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * x.to(dtype)

    def rotate_half(x):
        a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        return torch.cat((-b, a), dim=-1)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(hidden, heads * head_dim, bias=qkv_bias)
            self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=qkv_bias)
            self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=qkv_bias)
            self.o_proj = nn.Linear(heads * head_dim, hidden, bias=bool(cfg.get("attention_bias", False)))
            if qk_norm:
                self.q_norm = RMSNorm(head_dim)
                self.k_norm = RMSNorm(head_dim)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            q = self.q_proj(x).view(b, s, heads, head_dim)
            k = self.k_proj(x).view(b, s, kv_heads, head_dim)
            v = self.v_proj(x).view(b, s, kv_heads, head_dim).transpose(1, 2)
            if qk_norm:
                q, k = self.q_norm(q), self.k_norm(k)
            q, k = q.transpose(1, 2), k.transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if heads != kv_heads:  # repeat_kv
                k = k.repeat_interleave(heads // kv_heads, dim=1)
                v = v.repeat_interleave(heads // kv_heads, dim=1)
            if attention == "sdpa":
                o = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p if self.training else 0.0, is_causal=True)
            else:  # eager_attention_forward: fp32 softmax, back to the query dtype
                scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(head_dim)
                mask = torch.full((s, s), float("-inf"), device=x.device).triu(1)
                p = F.softmax(scores + mask.to(scores.dtype), dim=-1, dtype=torch.float32).to(q.dtype)
                p = F.dropout(p, p=dropout_p, training=self.training)
                o = torch.matmul(p, v)
            return self.o_proj(o.transpose(1, 2).reshape(b, s, heads * head_dim))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            inter = cfg["intermediate_size"]
            self.gate_proj = nn.Linear(hidden, inter, bias=bool(cfg.get("mlp_bias", False)))
            self.up_proj = nn.Linear(hidden, inter, bias=bool(cfg.get("mlp_bias", False)))
            self.down_proj = nn.Linear(inter, hidden, bias=bool(cfg.get("mlp_bias", False)))

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm(hidden)
            self.self_attn = Attention()
            self.post_attention_layernorm = RMSNorm(hidden)
            self.mlp = MLP()

        def forward(self, x, cos, sin):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(cfg["vocab_size"], hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(cfg["num_hidden_layers"]))
            self.norm = RMSNorm(hidden)

    class CausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = Inner()
            self.lm_head = nn.Linear(hidden, cfg["vocab_size"], bias=False)
            if cfg.get("tie_word_embeddings", False):
                self.lm_head.weight = self.model.embed_tokens.weight
            self.checkpointing = False

        def gradient_checkpointing_enable(self):
            self.checkpointing = True

        def forward(self, input_ids):
            import torch.utils.checkpoint as ckpt

            x = self.model.embed_tokens(input_ids)
            s = input_ids.shape[1]
            inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=x.device, dtype=torch.float32) / head_dim))
            freqs = torch.outer(torch.arange(s, device=x.device, dtype=torch.float32), inv)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
            for layer in self.model.layers:
                if self.checkpointing and self.training:
                    # transformers' gradient_checkpointing_enable: non-reentrant checkpoint per decoder layer.
                    x = ckpt.checkpoint(layer, x, cos, sin, use_reentrant=False)
                else:
                    x = layer(x, cos, sin)
            return self.lm_head(self.model.norm(x))

    return CausalLM()


def torch_lora(model, spec, targets):
    """PEFT's lora.Linear, for when peft is not installed: frozen base, A (kaiming) and B (zeros) adapters."""
    import torch
    from torch import nn

    lora = spec["lora"]

    class LoraLinear(nn.Module):
        def __init__(self, base):
            super().__init__()
            self.base_layer = base
            dtype = torch.float32 if lora["adapter_fp32"] else base.weight.dtype
            kw = {"bias": False, "dtype": dtype, "device": base.weight.device}
            self.lora_A = nn.Linear(base.in_features, lora["rank"], **kw)
            self.lora_B = nn.Linear(lora["rank"], base.out_features, **kw)
            nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
            nn.init.zeros_(self.lora_B.weight)
            self.dropout = nn.Dropout(lora["dropout"]) if lora["dropout"] > 0 else nn.Identity()
            self.scaling = lora["alpha"] / lora["rank"]

        def forward(self, x):
            result = self.base_layer(x)
            a = self.lora_A(self.dropout(x.to(self.lora_A.weight.dtype)))
            return (result + self.lora_B(a) * self.scaling).to(result.dtype)

    for p in model.parameters():
        p.requires_grad_(False)
    wrapped = 0
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            is_linear = isinstance(child, nn.Linear) or type(child).__name__ == "Linear4bit"
            if not is_linear:
                continue
            full = f"{name}.{child_name}" if name else child_name
            if targets == "all-linear":
                hit = child_name != "lm_head"
            else:
                hit = child_name in targets or full in targets
            if hit:
                setattr(module, child_name, LoraLinear(child))
                wrapped += 1
    if wrapped == 0:
        raise CannotRun(f"LoRA targets {targets} match no Linear of this model", "train.lora.targets")
    return model


# ---- building and training -------------------------------------------------------------------------------


def import_path(dotted):
    module, _, name = dotted.rpartition(".")
    return getattr(__import__(module, fromlist=[name]), name)


def build(spec, plan):
    import torch

    cfg = spec["model_config"]
    dtype = getattr(torch, plan["dtype"])
    device = torch.device(plan["device"])
    method = spec["method"]
    if plan["model_source"] == "transformers":
        import transformers

        config = transformers.AutoConfig.for_model(**cfg)
        kwargs = {"attn_implementation": plan["attention"]}
        try:
            model = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=dtype, **kwargs)
        except TypeError:  # transformers v5 renamed torch_dtype to dtype
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype, **kwargs)
    else:
        model = torch_only_model(cfg, plan).to(dtype)

    if method == "qlora":
        import bitsandbytes as bnb
        from torch import nn

        compute = torch.bfloat16 if plan["dtype"] == "bfloat16" else torch.float16 if plan["dtype"] == "float16" else torch.float32
        # transformers' replace_with_bnb_linear: every Linear but the output layer becomes Linear4bit; the
        # weight is quantised when it moves to the GPU (Params4bit.cuda -> quantize_4bit).
        for name, module in list(model.named_modules()):
            for child_name, child in list(module.named_children()):
                if isinstance(child, nn.Linear) and child_name != "lm_head":
                    q = bnb.nn.Linear4bit(
                        child.in_features, child.out_features, bias=child.bias is not None,
                        compute_dtype=compute, compress_statistics=plan["quant"]["double_quant"], quant_type="nf4",
                    )
                    kw = {
                        "requires_grad": False,
                        "compress_statistics": plan["quant"]["double_quant"],
                        "quant_type": "nf4",
                        "blocksize": spec["quant"]["blocksize"],
                    }
                    try:  # bitsandbytes >= 0.43 links the parameter to its layer (quant_state on the module)
                        q.weight = bnb.nn.Params4bit(child.weight.data, module=q, **kw)
                    except TypeError:
                        q.weight = bnb.nn.Params4bit(child.weight.data, **kw)
                    if child.bias is not None:
                        q.bias = child.bias
                    setattr(module, child_name, q)
        model.is_loaded_in_4bit = True
    model.to(device)
    if method == "qlora" and spec["quant"]["prepare_kbit"]:
        if plan["lora"] == "peft":
            import peft

            model = peft.prepare_model_for_kbit_training(
                model, use_gradient_checkpointing=plan["checkpointing"] == "full"
            )
        else:  # peft prepare_model_for_kbit_training: non-4-bit 16-bit parameters to fp32
            for p in model.parameters():
                if p.dtype in (torch.float16, torch.bfloat16) and type(p).__name__ != "Params4bit":
                    p.data = p.data.to(torch.float32)
    if plan["checkpointing"] == "full":
        model.gradient_checkpointing_enable()
        if plan["model_source"] == "transformers" and method != "full" and hasattr(model, "enable_input_require_grads"):
            model.enable_input_require_grads()
    lora = spec.get("lora")
    if method in ("lora", "qlora"):
        targets = lora["targets"]
        if plan["lora"] == "peft":
            import peft

            config = peft.LoraConfig(
                r=lora["rank"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                target_modules=targets, use_dora=lora["use_dora"], task_type="CAUSAL_LM",
            )
            try:
                model = peft.get_peft_model(model, config, autocast_adapter_dtype=lora["adapter_fp32"])
            except TypeError:  # peft < 0.12 has no autocast_adapter_dtype; its adapters follow the base dtype
                model = peft.get_peft_model(model, config)
        else:
            model = torch_lora(model, spec, targets if targets is not None else PEFT_DEFAULT_TARGETS)
    elif method == "freeze":
        wanted = [t.split(".") for t in spec["trainable_modules"]]
        hits = 0
        for name, p in model.named_parameters():
            parts = name.split(".")
            train = any(
                parts[i : i + len(w)] == w for w in wanted for i in range(len(parts) - len(w) + 1)
            )
            p.requires_grad_(train)
            hits += train
        if hits == 0:
            raise CannotRun(f"trainable_modules {spec['trainable_modules']} match no parameter", "train.trainable_modules")
    if plan.get("liger"):
        from liger_kernel.transformers.monkey_patch import _apply_liger_kernel_to_instance

        _apply_liger_kernel_to_instance(model=model, fused_linear_cross_entropy=spec["fused_loss"], rms_norm=spec["fused_norm"])
    model.train()
    return model


def make_optimizer(model, plan):
    cls_name, kwargs = plan["optimizer"]
    cls = import_path(cls_name)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise CannotRun("no trainable parameter", "train.method")
    return cls(params, lr=1e-5, **kwargs)


class Recorder:
    """Allocator statistics at the end of each phase; peaks reset at the start of each."""

    def __init__(self, device):
        import torch

        self.torch = torch
        self.cuda = device == "cuda"
        self.records = []
        self.t0 = None
        self.ended = None

    def start(self):
        if self.cuda:
            self.torch.cuda.synchronize()
            self.torch.cuda.reset_peak_memory_stats()
        self.t0 = time.perf_counter()

    def end(self, phase, step, micro):
        torch = self.torch
        r = {"phase": phase, "step": step, "micro_step": micro}
        if self.cuda:
            torch.cuda.synchronize()
        self.ended = time.perf_counter()
        if self.cuda:
            r.update(
                allocated_bytes=torch.cuda.memory_allocated(),
                max_allocated_bytes=torch.cuda.max_memory_allocated(),
                reserved_bytes=torch.cuda.memory_reserved(),
                max_reserved_bytes=torch.cuda.max_memory_reserved(),
            )
        else:  # no allocator statistics on the CPU: null, never 0
            r.update(allocated_bytes=None, max_allocated_bytes=None, reserved_bytes=None, max_reserved_bytes=None)
        r["seconds"] = round(self.ended - self.t0, 6)
        self.records.append(r)


def tensor_bytes(model, optimizer):
    """Bytes of the parameters, gradients and optimizer states as they exist (any device)."""
    seen, weights, grads, states = set(), 0, 0, 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        weights += p.numel() * p.element_size()
        if p.grad is not None:
            grads += p.grad.numel() * p.grad.element_size()
    if optimizer is not None:
        for state in optimizer.state.values():
            for v in state.values():
                if hasattr(v, "numel") and hasattr(v, "element_size"):
                    states += v.numel() * v.element_size()
    return {"weights": weights, "gradients": grads, "optimizer_states": states}


def train(spec, plan, steps, recorder):
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    device = plan["device"]
    recorder.start()
    model = build(spec, plan)
    recorder.end("load", 0, 0)
    params = {
        "total": sum(p.numel() for p in {id(p): p for p in model.parameters()}.values()),
        "trainable": sum(p.numel() for p in {id(p): p for p in model.parameters() if p.requires_grad}.values()),
    }
    optimizer = make_optimizer(model, plan)
    scaler = torch.cuda.amp.GradScaler() if plan["grad_scaler"] else None
    vocab = spec["model_config"]["vocab_size"]
    b, s, accum = spec["micro_batch"], spec["seq_len"], spec["grad_accum"]
    autocast = plan["autocast"]
    for step in range(1, steps + 1):
        for micro in range(1, accum + 1):
            ids = torch.randint(0, vocab, (b, s), device=device)
            recorder.start()
            if micro == 1:
                step_t0 = recorder.t0  # after the queue drained (start() synchronizes on CUDA)
            ctx = torch.autocast(device_type=device, dtype=getattr(torch, autocast)) if autocast else _null()
            fused = plan.get("liger") and spec["fused_loss"]
            with ctx:
                if fused:  # Liger's fused linear cross-entropy runs inside forward, given the labels
                    out = model(input_ids=ids, labels=ids)
                else:
                    out = model(input_ids=ids) if plan["model_source"] == "transformers" else model(ids)
                logits = out.logits if hasattr(out, "logits") else out
            recorder.end("forward", step, micro)
            recorder.start()
            if fused:
                shift = None
                loss = out.loss / accum
            else:
                # transformers ForCausalLMLoss: logits upcast to fp32, shifted labels, cross_entropy (mean).
                shift = logits.float()[:, :-1, :].reshape(-1, logits.shape[-1])
                loss = F.cross_entropy(shift, ids[:, 1:].reshape(-1)) / accum
            recorder.end("loss", step, micro)
            recorder.start()
            (scaler.scale(loss) if scaler else loss).backward()
            del out, logits, shift
            recorder.end("backward", step, micro)
        recorder.start()
        if scaler:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        # HF Trainer / torch >= 2.0: zero_grad(set_to_none=True) frees the gradients.
        optimizer.zero_grad(set_to_none=spec["zero_grad_set_to_none"])
        recorder.end("optimizer_step", step, 0)
        recorder.records[-1]["loss"] = float(loss.item()) * accum
        step_done(step, recorder.ended - step_t0, b * s * accum)
    return params, tensor_bytes(model, optimizer)


def step_done(step, seconds, tokens):
    """One line per optimizer step for vram-probe's step timing (probe-agent/src/measure/step_log.h).

    The step runs from its first forward to the end of its optimizer step, each end taken after
    torch.cuda.synchronize() (the kernels queued are done) with time.perf_counter(); the phases'
    own synchronize calls stay inside it. vram-probe leaves the first step out as warm-up.
    """
    line = json.dumps({"step": step, "seconds": round(seconds, 6), "tokens": tokens})
    print(f"vram-probe-step {line}", flush=True)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description="Train the estimated job for a few steps and record memory per phase.")
    ap.add_argument("--phases-out", default="vram_run_phases.json", help="where the phases JSON goes")
    ap.add_argument("--steps", type=int, default=SPEC["steps"], help=f"optimizer steps (default {SPEC['steps']})")
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    ap.add_argument("--describe", action="store_true", help="print the plan as JSON and exit")
    ap.add_argument("--assume", help=argparse.SUPPRESS)  # tests: JSON that overrides the detected environment
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    env = environment(args.device)
    if args.assume:
        env.update(json.loads(args.assume))
    doc = {"schema": "vram-planner-run/1", "steps": args.steps, "environment": env}
    try:
        plan = make_plan(SPEC, env)
        doc["plan"] = plan
        if args.describe:
            print(json.dumps(doc, indent=2))
            return 0
        recorder = Recorder(plan["device"])
        t0 = time.perf_counter()
        params, tensors = train(SPEC, plan, args.steps, recorder)
        doc.update(params=params, tensor_bytes=tensors, phases=recorder.records, seconds=round(time.perf_counter() - t0, 3))
        code = 0
    except CannotRun as e:
        doc["error"] = {"code": "cannot_run", "message": str(e), "path": e.path}
        print(f"vram-probe run: cannot run this request here: {e}" + (f" (at {e.path})" if e.path else ""), file=sys.stderr)
        if args.describe:
            print(json.dumps(doc, indent=2))
        code = 2
    tmp = args.phases_out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, args.phases_out)
    return code


if __name__ == "__main__":
    sys.exit(main())

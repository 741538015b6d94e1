// Serving a model: weights in their serving format, the KV cache, prefill
// activations and logits (DESIGN.md §3 "Inference"; research §7).
#include "infer/estimate_infer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "vram/gpus.h"
#include "vram/status.h"

namespace vram::infer {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Format {
  const char* name;
  double linear_bytes;  // bytes per Linear weight value, scales included (per group)
  int64_t group;        // values per scale group (0: per output row)
  double scale_bytes;   // bytes per group (scale + zero point)
  const char* source;
};

// Serving formats. int8: bitsandbytes LLM.int8 Int8Params keeps CB (int8) and
// SCB (one fp32 absmax per output row). GPTQ/AWQ int4: packed 4-bit values
// plus an fp16 scale and a 4-bit zero point per group of 128 (AutoGPTQ /
// AutoAWQ default group_size). NF4: see training (QLoRA paper §3).
const Format kFormats[] = {
    {"fp32", 4.0, 0, 0.0, "torch.float32"},
    {"bf16", 2.0, 0, 0.0, "torch.bfloat16"},
    {"fp16", 2.0, 0, 0.0, "torch.float16"},
    {"fp8", 1.0, 0, 4.0, "float8_e4m3 weights + one fp32 scale per output row"},
    {"int8", 1.0, 0, 4.0, "bitsandbytes LLM.int8: int8 + fp32 absmax per row"},
    {"int4", 0.5, 128, 2.5, "GPTQ/AWQ 4-bit, group 128: fp16 scale + 4-bit zero per group"},
    {"gptq", 0.5, 128, 2.5, "GPTQ 4-bit, group 128"},
    {"awq", 0.5, 128, 2.5, "AWQ 4-bit, group 128"},
    {"nf4", 0.5, 64, 4.0, "bitsandbytes NF4, fp32 absmax per 64"},
    {"nf4-dq", 0.5, 64, 1.0 + 4.0 / 256.0, "bitsandbytes NF4 + double quantisation"},
};

const Format* find_format(const std::string& n) {
  for (const auto& f : kFormats) {
    if (n == f.name) return &f;
  }
  if (n == "bfloat16") return find_format("bf16");
  if (n == "float16") return find_format("fp16");
  if (n == "float32") return find_format("fp32");
  return nullptr;
}

std::string names() {
  std::string s;
  for (const auto& f : kFormats) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

double kv_elem_bytes(const std::string& n) {
  if (n == "bf16" || n == "fp16" || n == "auto") return 2;
  if (n == "fp32") return 4;
  if (n == "fp8" || n == "fp8_e4m3" || n == "fp8_e5m2" || n == "int8") return 1;
  if (n == "int4") return 0.5;
  return -1;
}

}  // namespace

double kv_bytes_per_token(const ModelSpec& m, double kv_elem, bool hf_decompressed, int64_t context) {
  const LayerStack& t = m.text;
  double per_layer_full = 0;
  if (t.attention == AttnKind::kMla && !hf_decompressed) {
    per_layer_full = static_cast<double>(t.kv_lora_rank + t.qk_rope_head_dim) * kv_elem;
  } else if (t.attention == AttnKind::kMla) {
    per_layer_full = static_cast<double>(t.heads) * (t.head_dim + t.v_head_dim) * kv_elem;
  } else {
    per_layer_full = 2.0 * t.kv_heads * t.head_dim * kv_elem;
  }
  // Sliding-window layers keep at most `window` tokens: averaged per token of
  // a `context`-long sequence.
  const int64_t sliding = t.sliding_window > 0 ? std::min(t.sliding_layers, t.layers) : 0;
  const double sliding_share =
      context > 0 ? std::min<double>(1.0, static_cast<double>(t.sliding_window) / context) : 1.0;
  return per_layer_full * (static_cast<double>(t.layers - sliding) + static_cast<double>(sliding) * sliding_share);
}

Result<Estimate> estimate_infer(const Request& req) {
  try {
    const ModelSpec& m = req.model;
    const InferOptions& o = req.infer;
    const Format* fmt = find_format(o.weights_dtype);
    if (fmt == nullptr) {
      fail(errc::kUnknownValue, "infer.weights_dtype",
           "infer.weights_dtype " + vram::quoted(o.weights_dtype) + " is not one of: " + names());
    }
    const double kv_elem = kv_elem_bytes(o.kv_dtype);
    if (kv_elem < 0) {
      fail(errc::kUnknownValue, "infer.kv_dtype",
           "infer.kv_dtype " + vram::quoted(o.kv_dtype) + " is not one of: bf16, fp16, fp32, fp8, int8, int4");
    }
    Estimate e;
    const int64_t hp = (fmt->linear_bytes >= 2.0) ? static_cast<int64_t>(fmt->linear_bytes) : 2;
    // Weights: quantised formats replace nn.Linear only; embeddings, norms and
    // lm_head stay in 16-bit (transformers get_keys_to_not_convert).
    int64_t w = 0;
    for (const auto& g : m.groups) {
      const bool quant =
          fmt->linear_bytes < 2.0 && g.kind == ModuleKind::kLinear && g.component != std::string(comp::kLmHead);
      if (!quant) {
        w += hp * g.total();
        continue;
      }
      const int64_t values = g.in_features * g.out_features;
      const int64_t groups = fmt->group > 0 ? ceil_div(values, fmt->group) : g.out_features;
      const int64_t bytes = static_cast<int64_t>(std::ceil(values * fmt->linear_bytes + groups * fmt->scale_bytes)) +
                            (g.bias ? 2 * g.out_features : 0);
      w += bytes * g.instances;
    }
    const int64_t B = o.batch;
    const int64_t ctx = o.context_len;
    const bool hf_mla = m.text.attention == AttnKind::kMla;  // HF generate caches decompressed heads
    const double kv_tok = kv_bytes_per_token(m, kv_elem, hf_mla, ctx);
    const int64_t kv = static_cast<int64_t>(std::ceil(kv_tok * static_cast<double>(B) * ctx));
    // Prefill working set of one layer (the forward frees each layer's
    // intermediates): residual + norm output + q/k/v/out + the MLP's
    // gate/up/act outputs, in 16-bit, for all prompt tokens; eager attention
    // adds the fp32 score matrix.
    const LayerStack& t = m.text;
    const double pre_tok =
        2.0 * (2.0 * t.hidden + 2.0 * t.heads * t.head_dim + 2.0 * t.kv_heads * t.head_dim) +
        2.0 * 3.0 * std::max(t.intermediate, t.expert_intermediate * std::max<int64_t>(t.experts_per_token, 1));
    const int64_t prefill = static_cast<int64_t>(std::ceil(pre_tok * static_cast<double>(B) * ctx));
    // Logits of the last position only (generate uses logits_to_keep=1),
    // upcast to fp32 for sampling.
    const int64_t logits = B * m.vocab * (2 + 4);
    const GpuInfo* gpu = req.gpu.name.empty() ? nullptr : find_gpu(req.gpu.name);
    const int sm = gpu != nullptr ? gpu->sm : 80;
    const int64_t ws_each = sm == 90 ? (int64_t{32} << 20) : (int64_t{4096} * 2 + 16 * 8) * 1024;
    // Inference runs on one thread: one cuBLAS and one cuBLASLt workspace.
    const int64_t cublas = req.overheads.cublas_workspace_bytes.value_or(ws_each + (int64_t{1} << 20));
    const int64_t context = req.overheads.cuda_context_bytes.value_or(int64_t{512} << 20);
    const double frag = req.overheads.fragmentation.value_or(0.0);

    auto phase = [&](const char* key, const char* label, std::map<std::string, int64_t> parts) {
      Phase p;
      p.key = key;
      p.label = label;
      p.parts = std::move(parts);
      p.parts["cublas_workspace"] = cublas;
      p.parts["misc"] = req.overheads.misc_bytes;
      for (const auto& [k, v] : p.parts) p.allocated_bytes += v;
      p.reserved_bytes = p.allocated_bytes + static_cast<int64_t>(std::ceil(frag * p.allocated_bytes));
      p.parts["allocator"] = p.reserved_bytes - p.allocated_bytes;
      p.parts["cuda_context"] = context;
      p.device_bytes = p.reserved_bytes + context;
      return p;
    };
    e.phases.push_back(phase("weights_loaded", "weights loaded", {{"weights", w}}));
    e.phases.push_back(phase("prefill", "prefill (prompt through the model)",
                             {{"weights", w}, {"kv_cache", kv}, {"activations", prefill}, {"logits", logits}}));
    e.phases.push_back(
        phase("decode", "decoding at full context", {{"weights", w}, {"kv_cache", kv}, {"logits", logits}}));
    for (const auto& p : e.phases) {
      if (p.device_bytes > e.peak_bytes) {
        e.peak_bytes = p.device_bytes;
        e.peak_phase = p.key;
      }
      e.peak_allocated_bytes = std::max(e.peak_allocated_bytes, p.allocated_bytes);
      e.peak_reserved_bytes = std::max(e.peak_reserved_bytes, p.reserved_bytes);
    }
    e.components.push_back({"weights", "Weights", w,
                            std::to_string(m.params_total()) + " params; linears as " + fmt->source, Pool::kAllocated});
    e.components.push_back({"kv_cache", "KV cache", kv,
                            std::to_string(static_cast<int64_t>(kv_tok)) + " B/token x batch " + std::to_string(B) +
                                " x context " + std::to_string(ctx),
                            Pool::kAllocated});
    e.components.push_back(
        {"activations", "Prefill activations (one layer)", prefill,
         "per token " + std::to_string(static_cast<int64_t>(pre_tok)) + " B x " + std::to_string(B * ctx) + " tokens",
         Pool::kAllocated});
    e.components.push_back(
        {"logits", "Logits (last position, fp32 copy)", logits, "batch x V x (2 + 4) B", Pool::kAllocated});
    e.components.push_back({"cublas_workspace", "cuBLAS/cuBLASLt workspaces", cublas, "one handle", Pool::kAllocated});
    e.components.push_back(
        {"cuda_context", "CUDA context", context, "512 MiB lazy-loading prior (research §2.1)", Pool::kOutside});
    e.assumptions.push_back("engine: transformers generate with a dynamic cache sized to the full context");
    if (hf_mla) e.assumptions.push_back("MLA: transformers caches decompressed keys and values, not the latent");
    e.tokens_per_micro_batch = B * ctx;
    return e;
  } catch (const Failure& f) {
    return f.error();
  }
}

}  // namespace vram::infer

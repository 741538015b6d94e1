// Serving a model: weights in their serving format, the KV cache, prefill
// activations and logits (DESIGN.md §3 "Inference"; research §7), for
// transformers' generate (dynamic cache), LitGPT's generate (preallocated
// cache) or a paged engine (vLLM), on one GPU or sharded with tensor
// parallelism.
#include "infer/estimate_infer.h"

#include <algorithm>

#include "infer/serving.h"
#include "vram/status.h"

namespace vram::infer {

Result<Estimate> estimate_infer(const Request& req, LoadMemo* memo) {
  return attempt<Estimate>([&]() -> Result<Estimate> {
    // The input blamed when a figure exceeds limits::kMaxBytes: the larger
    // factor of the cached tokens.
    const bytes::Driver driver(req.infer.batch > req.infer.context_len ? "infer.batch" : "infer.context_len");
    Serving sv = serving(req);
    sv.memo = memo;
    Estimate e;
    e.engine = req.infer.engine;
    const Sizes z = sv.vllm     ? vllm_serving(e, req, sv)
                    : sv.sglang ? sglang_serving(e, req, sv)
                    : sv.litgpt ? litgpt_generate(e, req, sv)
                                : hf_generate(e, req, sv);
    int64_t alloc_at_peak = 0;
    for (const auto& p : e.phases) {
      // The largest device view; among equals (the allocator's cache keeps
      // its size from phase to phase), the one with the most live tensors.
      if (p.device_bytes > e.peak_bytes || (p.device_bytes == e.peak_bytes && p.allocated_bytes > alloc_at_peak)) {
        e.peak_bytes = p.device_bytes;
        e.peak_phase = p.key;
        alloc_at_peak = p.allocated_bytes;
      }
      e.peak_allocated_bytes = std::max(e.peak_allocated_bytes, p.allocated_bytes);
      e.peak_reserved_bytes = std::max(e.peak_reserved_bytes, p.reserved_bytes);
    }
    // A paged engine's device use is its budget, whatever the cache holds.
    if (sv.paged && !e.phases.empty() && e.warnings.empty()) e.peak_phase = "serving";
    // Per layer that caches keys: a hybrid's state-space layers and
    // Mllama's cross-attention layers (a fixed cache of their own) hold none.
    const int64_t kv_layers =
        req.model.text.attention_layers() - req.model.text.image_cross_layers - req.model.text.kv_shared_layers;
    const int64_t layers =
        std::max<int64_t>(kv_layers > 0 ? kv_layers : req.model.text.layers - req.model.text.image_cross_layers, 1);
    e.facts.insert(e.facts.begin(), {"kv_bytes_per_token", ceil_bytes(sv.kv_tok_full, kKv)});
    e.facts.insert(e.facts.begin() + 1,
                   {"kv_bytes_per_token_per_layer", ceil_bytes(sv.kv_tok_full / static_cast<double>(layers), kKv)});
    e.facts.push_back({"kv_cache_bytes", z.kv});
    if (z.ssm > 0) e.facts.push_back({"ssm_state_bytes", z.ssm});
    e.facts.push_back({"tp", sv.tp});
    if (!sv.paged) serving_components(e, req, sv, z);  // vLLM and SGLang list their own
    serving_assumptions(e, req, sv);
    if (!sv.format_note.empty()) e.assumptions.push_back(sv.format_note);
    e.tokens_per_micro_batch =
        bytes::mul(req.infer.batch, req.infer.context_len + sv.image_tokens, "tokens in the KV cache");
    return e;
  });
}

}  // namespace vram::infer

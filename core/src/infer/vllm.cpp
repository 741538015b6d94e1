// vLLM: the KV cache fills gpu_memory_utilization of the GPU after the
// weights and the profile run (infer/serving.h).
#include <algorithm>

#include "infer/serving.h"
#include "memory/overheads.h"
#include "vram/status.h"

namespace vram::infer {

using memory::ceil_div;

// vLLM (vllm/v1/worker/gpu_worker.py determine_available_memory): requested
// = total x gpu_memory_utilization; the profile run's peak activations (a
// max_num_batched_tokens prefill and the sampler over max_num_seqs) and the
// non-torch increase are subtracted; the rest becomes KV blocks of
// block_size tokens.
Sizes vllm_serving(Estimate& e, const Request& req, const Serving& sv) {
  const InferOptions& o = req.infer;
  const ModelSpec& m = req.model;
  if (sv.gpu == nullptr && !req.gpu.memory_gib) {
    fail(errc::kMissingField, "gpu.name",
         "gpu.name or gpu.memory_gib is required with infer.engine \"vllm\": its KV cache fills the GPU");
  }
  const int64_t total = sv.gpu != nullptr
                            ? sv.gpu->usable_bytes()
                            : static_cast<int64_t>(*req.gpu.memory_gib * 1073741824.0 * (1.0 - kDriverReserveFraction));
  const int64_t requested = static_cast<int64_t>(static_cast<double>(total) * o.gpu_memory_utilization);
  Sizes z;
  z.prefill = ceil_bytes(sv.pre_tok * static_cast<double>(o.max_num_batched_tokens), "the prefill activations");
  // The profiling dummy run computes fp32 logits for every one of its
  // max_num_batched_tokens tokens. Check against llm-d's measured "peak
  // activation" on H100 (research §7.4): Llama-3.1-8B 4.76 GiB (8192 x
  // 128,256 x 4 B = 3.91 GiB of it), Qwen3-0.6B 5.56 GiB (8192 x 151,936 x
  // 4 B = 4.64 GiB).
  z.logits = bytes::mul(std::max(o.max_num_batched_tokens, o.max_num_seqs), ceil_div(m.vocab, sv.tp), 4, "the logits");
  const int64_t non_kv =
      bytes::add(bytes::add(sv.fx.weights, z.prefill), bytes::add(z.logits, sv.fx.cublas + sv.fx.nccl));
  const int64_t pool = std::max<int64_t>(requested - non_kv, 0);
  const int64_t page = ceil_bytes(sv.kv_tok_full * static_cast<double>(o.block_size), kKv);
  const int64_t blocks = page > 0 ? pool / page : 0;
  z.kv = blocks * page;
  const int64_t ctx = o.context_len + sv.image_tokens;
  const int64_t B = o.batch;
  const int64_t blocks_per_seq = ceil_div(ctx, o.block_size);
  // max_context_len never exceeds the model's max_position_embeddings
  // (vLLM's max_model_len default).
  const int64_t model_max = m.max_position_embeddings > 0 ? m.max_position_embeddings : kMaxSize;
  e.facts.push_back({"kv_blocks", blocks});
  e.facts.push_back({"kv_block_bytes", page});
  e.facts.push_back({"max_concurrent_sequences", std::min(o.max_num_seqs, blocks / blocks_per_seq)});
  e.facts.push_back({"max_context_len", std::min(blocks / std::max<int64_t>(B, 1) * o.block_size, model_max)});
  const int64_t W = sv.fx.weights;
  e.phases.push_back(make_phase(req, sv, "weights_loaded", "weights loaded", {{"weights", W}}, 0));
  e.phases.push_back(make_phase(req, sv, "profile", "profiling run (max_num_batched_tokens prefill + sampler)",
                                {{"weights", W}, {"activations", z.prefill}, {"logits", z.logits}}, 0));
  e.phases.push_back(make_phase(req, sv, "serving", "serving (KV cache allocated, CUDA graphs captured)",
                                {{"weights", W}, {"kv_cache", z.kv}, {"activations", z.prefill}, {"logits", z.logits}},
                                sv.fx.graphs));
  if (blocks < blocks_per_seq) {
    e.warnings.push_back("vLLM cannot start: the KV cache holds " + std::to_string(blocks * o.block_size) +
                         " tokens, fewer than one sequence of " + std::to_string(ctx) +
                         " (lower context_len, raise gpu_memory_utilization or add GPUs)");
  } else if (blocks / blocks_per_seq < B) {
    e.warnings.push_back("only " + std::to_string(blocks / blocks_per_seq) + " sequences of " + std::to_string(ctx) +
                         " tokens fit at once; the rest wait in the queue");
  }
  return z;
}

}  // namespace vram::infer

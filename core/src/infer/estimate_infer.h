// Private: serving memory on one GPU.
#pragma once

#include "vram/request.h"
#include "vram/result.h"

namespace vram::infer {

struct LoadMemo;  // infer/replay.h

// KV-cache bytes per token summed over layers, for `kv_elem` bytes per value.
// GQA/MQA cache kv_heads x head_dim per K and V (vLLM kv_cache_interface.py
// AttentionSpec: 2 * num_kv_heads * head_size * dtype_size); MLA caches the
// latent kv_lora_rank + qk_rope_head_dim with no factor 2 (MLAAttentionSpec).
// `hf_decompressed` instead counts what transformers' DeepseekV3Attention
// caches: full heads of (nope + rope) keys and v_head_dim values.
double kv_bytes_per_token(const ModelSpec& m, double kv_elem, bool hf_decompressed, int64_t context);
// State-space (Mamba) cache of one sequence: conv and SSM states of every
// SSM layer at `elem` bytes per value; 0 without SSM layers.
double ssm_state_bytes_per_sequence(const ModelSpec& m, double elem);
// Working set of one state-space mixer during prefill, bytes per token, on a
// tensor-parallel rank of `tp`.
double ssm_prefill_bytes_per_token(const LayerStack& t, int64_t tp);

// `memo`: the loads a sweep of estimates has replayed (the GPU table's
// cards, a search's probes), which the next ones start from (infer/replay.h).
Result<Estimate> estimate_infer(const Request& req, LoadMemo* memo = nullptr);

// Reads a request's `infer` object into req.infer (options.cpp; the
// llama.cpp engines' fields through llama_cpp::parse_options).
void parse_options(const JsonReader& infer, Request& req);

}  // namespace vram::infer

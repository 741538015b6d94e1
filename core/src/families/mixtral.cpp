// Mixtral: a Mistral-shaped decoder whose MLP is a sparse mixture of experts.
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_mixtral.py (MixtralConfig): vocab 32000, hidden 4096,
// intermediate 14336, 32 layers, 32 heads, 8 KV heads, 4096*32 positions,
// untied head, sliding_window None, num_local_experts 8, num_experts_per_tok 2.
// modeling_mixtral.py: attention without biases; each layer's
// block_sparse_moe has a router `gate` (Linear hidden -> experts, no bias) and
// `experts` w1/w3 (hidden -> intermediate) and w2 (intermediate -> hidden),
// no biases, the checkpoint's key names (newer transformers fuse them into
// gate_up_proj / down_proj tensors of the same size).
void build_mixtral(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "MixtralConfig";
  d.intermediate = 14336;
  d.kv_heads = 8;
  d.max_positions = 4096 * 32;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  const int64_t experts = cfg.int_or("num_local_experts", 8, 1, kMaxSize);
  const int64_t k = read_experts_per_token(cfg, "num_experts_per_tok", 2, experts, "num_local_experts");
  keep_dense_mlp_on(spec, 0);
  add_linear(spec, "gate", comp::kRouter, "text", t.hidden, experts, false, t.layers);
  spec.groups.back().layers = LayerSet::kMoe;
  add_routed_experts(spec, "w1", "w3", "w2", t.hidden, t.intermediate, experts, k, t.layers);
  t.moe_layers = t.layers;
  t.experts = experts;
  t.experts_per_token = k;
  t.expert_intermediate = t.intermediate;
  // MixtralConfig.sliding_window defaults to None (full attention).
  spec.text.sliding_window = cfg.int_or("sliding_window", 0, 1, kMaxSize);
  spec.text.sliding_layers = spec.text.sliding_window > 0 ? spec.text.layers : 0;
}

}  // namespace vram::detail

// OLMoE: a Llama-shaped decoder with OLMo 2's q/k norms and a sparse MLP of
// 64 small experts on every layer.
// Sources: transformers src/transformers/models/olmoe/modular_olmoe.py and
// configuration_olmoe.py (the 4.5x line; unchanged in module structure since
// the model was added in 4.45).
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"
#include "vram/families.h"

namespace vram::detail {

// configuration_olmoe.py (OlmoeConfig): vocab 50304, hidden 2048,
// intermediate 2048, 16 layers, 16 heads, num_key_value_heads None (= heads),
// 4096 positions, untied, attention_bias False, num_experts 64,
// num_experts_per_tok 8. modular_olmoe.py: OlmoeAttention is LlamaAttention
// plus q_norm = OlmoeRMSNorm(hidden_size) and k_norm =
// OlmoeRMSNorm(hidden_size / heads x kv_heads); the decoder layer keeps Llama's
// input_layernorm and post_attention_layernorm; OlmoeSparseMoeBlock has the
// router `gate` (Linear hidden -> experts, no bias) and `experts` gate/up/down
// of intermediate_size, no bias, no shared expert. clip_qkv clamps
// activations (no parameters).
void build_olmoe(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "OlmoeConfig";
  d.vocab = 50304;
  d.hidden = 2048;
  d.intermediate = 2048;
  d.layers = 16;
  d.heads = 16;
  d.max_positions = 4096;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  t.position_encoding = "rope";
  add_norm(spec, "q_norm", "text", t.hidden, false, t.layers);
  add_norm(spec, "k_norm", "text", t.hidden / t.heads * t.kv_heads, false, t.layers);
  t.qk_norm = true;
  const int64_t experts = cfg.int_or("num_experts", 64, 1, kMaxSize);
  const int64_t k = read_experts_per_token(cfg, "num_experts_per_tok", 8, experts, "num_experts");
  keep_dense_mlp_on(spec, 0);
  const size_t router = spec.groups.size();
  add_linear(spec, "gate", comp::kRouter, "text", t.hidden, experts, false, t.layers);
  mark_layers(spec, router, LayerSet::kMoe);
  add_routed_experts(spec, "gate_proj", "up_proj", "down_proj", t.hidden, t.intermediate, experts, k, t.layers);
  t.moe_layers = t.layers;
  t.experts = experts;
  t.experts_per_token = k;
  t.expert_intermediate = t.intermediate;
}

}  // namespace vram::detail

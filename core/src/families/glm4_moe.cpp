// GLM-4.5 / GLM-4.5-Air / GLM-4.6 (glm4_moe): a Llama-shaped GQA decoder with
// biased q/k/v, optional per-head q/k norms, dense MLPs on the first
// first_k_dense_replace layers and a DeepSeek-V3-style MoE (sigmoid router run
// in fp32, routed experts plus always-on shared experts) on the rest.
// Sources: transformers src/transformers/models/glm4_moe/configuration_glm4_moe.py
// and modeling_glm4_moe.py (the 4.56+ line: n_routed_experts, n_shared_experts,
// first_k_dense_replace, use_qk_norm).
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_glm4_moe.py (Glm4MoeConfig): vocab 151552, hidden 4096,
// intermediate 10944, 46 layers, 96 heads, 8 KV heads, 131072 positions,
// untied, attention_bias False, moe_intermediate_size 1408,
// num_experts_per_tok 8, n_shared_experts 1, n_routed_experts 128,
// first_k_dense_replace 1, use_qk_norm False, partial_rotary_factor 0.5
// (rotary on half of each head: no parameters). The class sets no head_dim:
// Glm4MoeAttention uses getattr(config, "head_dim", hidden_size //
// num_attention_heads).
// modeling_glm4_moe.py:
// - Glm4MoeAttention: q/k/v_proj with bias = attention_bias, o_proj without
//   bias; q_norm / k_norm (Glm4MoeRMSNorm over head_dim) only when use_qk_norm.
// - Glm4MoeDecoderLayer: `mlp` is Glm4MoeMoE when layer_idx >=
//   first_k_dense_replace, else Glm4MoeMLP(intermediate_size) (gate/up/down,
//   no bias); input_layernorm and post_attention_layernorm.
// - Glm4MoeMoE: `experts`, n_routed_experts Glm4MoeMLP(moe_intermediate_size);
//   `gate`, a Glm4MoeTopkRouter whose `weight` is an nn.Parameter
//   (n_routed_experts x hidden, not an nn.Linear) with the buffer
//   e_score_correction_bias; `shared_experts`, one Glm4MoeMLP of
//   moe_intermediate_size x n_shared_experts.
// - Glm4MoeModel lists model.layers.46.* / 92.* (the checkpoints' MTP layer,
//   num_nextn_predict_layers) in _keys_to_ignore_on_load_unexpected: never built.
void build_glm4_moe(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Glm4MoeConfig";
  d.vocab = 151552;
  d.hidden = 4096;
  d.intermediate = 10944;
  d.layers = 46;
  d.heads = 96;
  d.kv_heads = 8;
  d.max_positions = 131072;
  d.has_mlp_bias = false;
  d.qk_norm = cfg.bool_or("use_qk_norm", false);
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  t.position_encoding = "rope";
  // build_llama_like gives o_proj the attention bias too; Glm4MoeAttention never does.
  set_text_linear_bias(spec, "o_proj", false);

  const int64_t routed = cfg.int_or("n_routed_experts", 128, 0, kMaxSize);
  const int64_t shared = cfg.int_or("n_shared_experts", 1, 0, kMaxSize);
  const int64_t first_dense = cfg.int_or("first_k_dense_replace", 1, 0, 100000);
  const int64_t moe_inter = cfg.int_or("moe_intermediate_size", 1408);
  for (const char* key : {"n_routed_experts", "n_shared_experts", "first_k_dense_replace", "moe_intermediate_size"}) {
    if (!cfg.has(key)) spec.notes.push_back(std::string(key) + " missing: using the Glm4MoeConfig default");
  }
  const int64_t moe_layers = routed > 0 && t.layers > first_dense ? t.layers - first_dense : 0;
  const int64_t k =
      moe_layers > 0 ? read_experts_per_token(cfg, "num_experts_per_tok", 8, routed, "n_routed_experts") : 0;
  keep_dense_mlp_on(spec, t.layers - moe_layers);
  if (moe_layers > 0) {
    const size_t from = spec.groups.size();
    add_other(spec, "gate", comp::kRouter, "text", routed * t.hidden, moe_layers);
    add_routed_experts(spec, "gate_proj", "up_proj", "down_proj", t.hidden, moe_inter, routed, k, moe_layers);
    if (shared > 0) {
      // The shared experts are one dense, always-on MLP: "mlp", not "experts".
      const int64_t w = moe_inter * shared;
      add_linear(spec, "gate_proj", comp::kMlp, "text", t.hidden, w, false, moe_layers);
      add_linear(spec, "up_proj", comp::kMlp, "text", t.hidden, w, false, moe_layers);
      add_linear(spec, "down_proj", comp::kMlp, "text", w, t.hidden, false, moe_layers);
    }
    mark_layers(spec, from, LayerSet::kMoe);
    spec.notes.push_back("e_score_correction_bias (" + std::to_string(routed) + " x " + std::to_string(moe_layers) +
                         " MoE layers) is a buffer in transformers' Glm4MoeTopkRouter: held in memory in fp32, "
                         "not counted as parameters");
  }
  t.moe_layers = moe_layers;
  t.experts = moe_layers > 0 ? routed : 0;
  t.experts_per_token = k;
  t.expert_intermediate = moe_layers > 0 ? moe_inter : 0;
  t.shared_expert_intermediate = moe_layers > 0 ? moe_inter * shared : 0;
  // Glm4MoeTopkRouter.forward: F.linear(hidden_states.type(torch.float32),
  // self.weight.type(torch.float32)), then sigmoid.
  t.router_fp32 = moe_layers > 0;

  if (const auto mtp = cfg.int_opt("num_nextn_predict_layers", 0, 100); mtp && *mtp > 0) {
    spec.notes.push_back("num_nextn_predict_layers " + std::to_string(*mtp) +
                         ": the checkpoint's multi-token-prediction layer(s) (model.layers." +
                         std::to_string(t.layers) +
                         ".*: a full MoE decoder layer, eh_proj, enorm / hnorm and its own copies of embed_tokens "
                         "and the head) are not built by transformers and are not counted (the in-memory model "
                         "excludes them)");
  }
}

}  // namespace vram::detail

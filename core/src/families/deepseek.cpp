// DeepSeek-V2 and DeepSeek-V3: multi-head latent attention (MLA) and a
// DeepSeekMoE MLP with shared experts after the first dense layers.
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

namespace {

// Defaults of DeepseekV2Config / DeepseekV3Config. 0 stands for None.
struct DeepseekDefaults {
  const char* config_class;
  bool v3;
  int64_t vocab, hidden, intermediate, moe_intermediate, layers, heads, kv_heads;
  int64_t shared_experts, routed_experts, experts_per_token, first_k_dense;
  int64_t q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim;
  int64_t max_positions;
};

// configuration_deepseek_v2.py (DeepseekV2Config, a LlamaConfig subclass):
// vocab 32000, hidden 4096, intermediate 11008, 32 layers, 32 heads, KV heads
// None (= heads), 2048 positions, first_k_dense_replace 0, kv_lora_rank 512,
// q_lora_rank 1536, n_routed_experts 64, n_shared_experts 2,
// qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128,
// num_experts_per_tok None, moe_intermediate_size 1407.
constexpr DeepseekDefaults kV2 = {
    "DeepseekV2Config", false, 32000, 4096, 11008, 1407, 32, 32, 0, 2, 64, 0, 0, 1536, 512, 64, 128, 128, 2048};

// configuration_deepseek_v3.py (DeepseekV3Config): vocab 129280, hidden 7168,
// intermediate 18432, moe_intermediate_size 2048, 61 layers, 128 heads,
// 128 KV heads, n_shared_experts 1, n_routed_experts 256, kv_lora_rank 512,
// q_lora_rank 1536, qk_rope_head_dim 64, v_head_dim 128, qk_nope_head_dim 128,
// num_experts_per_tok 8, first_k_dense_replace 3, 4096 positions.
constexpr DeepseekDefaults kV3 = {
    "DeepseekV3Config", true, 129280, 7168, 18432, 2048, 61, 128, 128, 1, 256, 8, 3, 1536, 512, 64, 128, 128, 4096};

// A key whose explicit null means "None" (0 here); absent takes the default.
int64_t nullable(const JsonReader& cfg, ModelSpec& spec, const DeepseekDefaults& d, const char* key, int64_t def) {
  if (!cfg.has_key(key)) {
    spec.notes.push_back(std::string(key) + " missing: using " + d.config_class + " default " +
                         (def > 0 ? std::to_string(def) : std::string("None")));
    return def;
  }
  return cfg.has(key) ? cfg.int_req(key, 1, kMaxSize) : 0;
}

// The MLP of every layer: dense layers below first_k_dense_replace, routed
// experts (+ router, shared experts) above.
void add_mlps(const JsonReader& cfg, ModelSpec& spec, const DeepseekDefaults& d, bool mlp_bias) {
  LayerStack& t = spec.text;
  const int64_t L = t.layers, h = t.hidden;
  // Experts. transformers builds the MoE block on layers >= first_k_dense_replace.
  // DeepSeek's own modeling_deepseek.py also requires layer % moe_layer_freq == 0;
  // transformers ignores moe_layer_freq, so a value other than 1 is ambiguous.
  const int64_t routed = nullable(cfg, spec, d, "n_routed_experts", d.routed_experts);
  const int64_t shared = nullable(cfg, spec, d, "n_shared_experts", d.shared_experts);
  const int64_t first_dense = cfg.int_or("first_k_dense_replace", d.first_k_dense, 0, 100000);
  const int64_t freq = cfg.int_or("moe_layer_freq", 1, 1, 100000);
  if (freq != 1) {
    spec.exact = false;
    spec.inexact.push_back("moe_layer_freq " + std::to_string(freq) +
                           ": DeepSeek's modeling code puts experts on every moe_layer_freq-th layer (counted so), "
                           "transformers' " +
                           (d.v3 ? std::string("DeepseekV3") : std::string("DeepseekV2")) +
                           " model on every layer from first_k_dense_replace");
  }
  int64_t moe_layers = 0;
  for (int64_t i = 0; routed > 0 && i < L; ++i) {
    if (i >= first_dense && i % freq == 0) ++moe_layers;
  }
  int64_t k = 0;
  if (moe_layers > 0) {
    if (cfg.has("num_experts_per_tok") || d.experts_per_token > 0) {
      k = read_experts_per_token(cfg, "num_experts_per_tok", d.experts_per_token, routed, "n_routed_experts");
    } else {
      k = routed;
      spec.notes.push_back(std::string("num_experts_per_tok missing (") + d.config_class +
                           " default None): active parameters count every routed expert");
    }
  }
  const int64_t moe_inter = cfg.int_or("moe_intermediate_size", d.moe_intermediate);
  const int64_t dense_layers = L - moe_layers;
  if (dense_layers > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "gate_proj", comp::kMlp, "text", h, t.intermediate, mlp_bias, dense_layers);
    add_linear(spec, "up_proj", comp::kMlp, "text", h, t.intermediate, mlp_bias, dense_layers);
    add_linear(spec, "down_proj", comp::kMlp, "text", t.intermediate, h, mlp_bias, dense_layers);
    mark_layers(spec, from, LayerSet::kDense);
  }
  if (moe_layers > 0) {
    const size_t from = spec.groups.size();
    if (d.v3) {
      // DeepseekV3TopkRouter: `weight` is an nn.Parameter (not a Linear); its
      // e_score_correction_bias is a registered buffer, not a parameter.
      add_other(spec, "gate", comp::kRouter, "text", routed * h, moe_layers);
      spec.notes.push_back("e_score_correction_bias (" + std::to_string(routed) + " x " + std::to_string(moe_layers) +
                           " MoE layers) is a buffer in transformers' DeepseekV3TopkRouter: held in memory in fp32, "
                           "not counted as parameters");
    } else {
      add_linear(spec, "gate", comp::kRouter, "text", h, routed, false, moe_layers);
    }
    add_routed_experts(spec, "gate_proj", "up_proj", "down_proj", h, moe_inter, routed, k, moe_layers);
    if (shared > 0) {
      const int64_t w = moe_inter * shared;
      add_linear(spec, "gate_proj", comp::kMlp, "text", h, w, mlp_bias, moe_layers);
      add_linear(spec, "up_proj", comp::kMlp, "text", h, w, mlp_bias, moe_layers);
      add_linear(spec, "down_proj", comp::kMlp, "text", w, h, mlp_bias, moe_layers);
    }
    mark_layers(spec, from, LayerSet::kMoe);
  }
  t.moe_layers = moe_layers;
  t.experts = moe_layers > 0 ? routed : 0;
  t.experts_per_token = k;
  t.expert_intermediate = moe_layers > 0 ? moe_inter : 0;
  t.shared_expert_intermediate = moe_layers > 0 ? moe_inter * shared : 0;
  // DeepseekV3TopkRouter.forward: F.linear(hidden_states.type(torch.float32),
  // self.weight.type(torch.float32)).sigmoid() (V2's gate is a Linear + softmax).
  t.router_fp32 = d.v3 && moe_layers > 0;
}

void build_deepseek(const JsonReader& cfg, ModelSpec& spec, const DeepseekDefaults& d) {
  LayerStack& t = spec.text;
  t.name = "text";
  auto note_default = [&](const char* key, int64_t v) {
    if (!cfg.has(key)) {
      spec.notes.push_back(std::string(key) + " missing: using " + d.config_class + " default " + std::to_string(v));
    }
  };
  note_default("vocab_size", d.vocab);
  note_default("hidden_size", d.hidden);
  note_default("num_hidden_layers", d.layers);
  note_default("num_attention_heads", d.heads);
  spec.vocab = cfg.int_or("vocab_size", d.vocab);
  t.hidden = cfg.int_or("hidden_size", d.hidden);
  t.intermediate = cfg.int_or("intermediate_size", d.intermediate);
  t.layers = cfg.int_or("num_hidden_layers", d.layers, 1, 100000);
  t.heads = cfg.int_or("num_attention_heads", d.heads, 1, 1 << 20);
  t.kv_heads = cfg.int_or("num_key_value_heads", d.kv_heads > 0 ? d.kv_heads : t.heads, 1, 1 << 20);
  t.activation = cfg.str_or("hidden_act", "silu");
  spec.tie_word_embeddings = cfg.bool_or("tie_word_embeddings", false);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", d.max_positions);
  spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));
  t.dropout = cfg.num_or("attention_dropout", 0.0, 0.0, 1.0);

  // MLA ranks. q_lora_rank null means a direct q_proj; kv_lora_rank has no
  // such form: DeepseekV*Attention always builds kv_a_proj_with_mqa from it.
  t.q_lora_rank = nullable(cfg, spec, d, "q_lora_rank", d.q_lora_rank);
  if (cfg.has_key("kv_lora_rank") && !cfg.has("kv_lora_rank")) {
    fail(errc::kMissingField, cfg.child_path("kv_lora_rank"),
         cfg.child_path("kv_lora_rank") +
             " is null: multi-head latent attention needs the rank of its compressed key/value projection");
  }
  note_default("kv_lora_rank", d.kv_lora_rank);
  t.kv_lora_rank = cfg.int_or("kv_lora_rank", d.kv_lora_rank);
  t.qk_rope_head_dim = cfg.int_or("qk_rope_head_dim", d.qk_rope_head_dim);
  t.qk_nope_head_dim = cfg.int_or("qk_nope_head_dim", d.qk_nope_head_dim, 0, kMaxSize);
  t.v_head_dim = cfg.int_or("v_head_dim", d.v_head_dim);
  t.head_dim = t.qk_nope_head_dim + t.qk_rope_head_dim;
  t.attention = AttnKind::kMla;
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;

  const bool attn_bias = cfg.bool_or("attention_bias", false);
  // DeepseekV2MLP is a LlamaMLP (bias = mlp_bias); DeepseekV3MLP never has one.
  const bool mlp_bias = !d.v3 && cfg.bool_or("mlp_bias", false);
  const int64_t L = t.layers, h = t.hidden, H = t.heads;
  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  if (t.q_lora_rank == 0) {
    add_linear(spec, "q_proj", comp::kAttention, "text", h, H * t.head_dim, false, L);
  } else {
    add_linear(spec, "q_a_proj", comp::kAttention, "text", h, t.q_lora_rank, attn_bias, L);
    add_norm(spec, "q_a_layernorm", "text", t.q_lora_rank, false, L);
    add_linear(spec, "q_b_proj", comp::kAttention, "text", t.q_lora_rank, H * t.head_dim, false, L);
  }
  add_linear(spec, "kv_a_proj_with_mqa", comp::kAttention, "text", h, t.kv_lora_rank + t.qk_rope_head_dim, attn_bias,
             L);
  add_norm(spec, "kv_a_layernorm", "text", t.kv_lora_rank, false, L);
  add_linear(spec, "kv_b_proj", comp::kAttention, "text", t.kv_lora_rank, H * (t.qk_nope_head_dim + t.v_head_dim),
             false, L);
  add_linear(spec, "o_proj", comp::kAttention, "text", H * t.v_head_dim, h, attn_bias, L);
  add_norm(spec, "input_layernorm", "text", h, false, L);
  add_norm(spec, "post_attention_layernorm", "text", h, false, L);

  add_mlps(cfg, spec, d, mlp_bias);
  add_norm(spec, "norm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);

  // Multi-token prediction: the Hub checkpoint stores num_nextn_predict_layers
  // extra decoder layers (model.layers.61.* for V3); DeepseekV3Model lists them
  // in _keys_to_ignore_on_load_unexpected and never builds them.
  if (const auto mtp = cfg.int_opt("num_nextn_predict_layers", 0, 100); mtp && *mtp > 0) {
    spec.notes.push_back("num_nextn_predict_layers " + std::to_string(*mtp) +
                         ": the checkpoint's multi-token-prediction layer(s) are not built by transformers and are "
                         "not counted (the in-memory model excludes them)");
  }
}

}  // namespace

void build_deepseek_v2(const JsonReader& cfg, ModelSpec& spec) { build_deepseek(cfg, spec, kV2); }

void build_deepseek_v3(const JsonReader& cfg, ModelSpec& spec) { build_deepseek(cfg, spec, kV3); }

}  // namespace vram::detail

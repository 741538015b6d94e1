// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B) and Qwen3-MoE.
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

namespace {

// Sliding window as both Qwen MoE configs define it: only with
// use_sliding_window, on layers >= max_window_layers.
void qwen_sliding(const JsonReader& cfg, LayerStack& t, int64_t max_window_default) {
  if (cfg.bool_or("use_sliding_window", false) && cfg.has("sliding_window")) {
    const int64_t mwl = cfg.int_or("max_window_layers", max_window_default, 0, kMaxSize);
    t.sliding_window = cfg.int_req("sliding_window");
    t.sliding_layers = t.layers > mwl ? t.layers - mwl : 0;
  }
}

}  // namespace

// configuration_qwen2_moe.py (Qwen2MoeConfig): vocab 151936, hidden 2048,
// intermediate 5632, 24 layers, 16 heads, 16 KV heads, 32768 positions,
// untied, decoder_sparse_step 1, moe_intermediate_size 1408,
// shared_expert_intermediate_size 5632, num_experts_per_tok 4, num_experts 60,
// mlp_only_layers [], qkv_bias True, max_window_layers 28.
// modeling_qwen2_moe.py: q/k/v_proj bias=qkv_bias, o_proj without bias; a
// sparse layer (Qwen2MoeSparseMoeBlock) has the router `gate` (experts x
// hidden), routed experts gate/up/down_proj of moe_intermediate_size, an
// always-on `shared_expert` MLP of shared_expert_intermediate_size and a
// `shared_expert_gate` Linear(hidden, 1); other layers have a dense
// Qwen2MoeMLP of intermediate_size.
void build_qwen2_moe(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Qwen2MoeConfig";
  d.vocab = 151936;
  d.hidden = 2048;
  d.intermediate = 5632;
  d.layers = 24;
  d.heads = 16;
  d.kv_heads = 16;
  d.max_positions = 32768;
  d.qkv_bias_always = true;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  const bool qkv_bias = cfg.bool_or("qkv_bias", true);
  for (const char* m : {"q_proj", "k_proj", "v_proj"}) set_text_linear_bias(spec, m, qkv_bias);

  LayerStack& t = spec.text;
  const int64_t experts = cfg.int_or("num_experts", 60, 0, kMaxSize);
  const int64_t k = read_experts_per_token(cfg, "num_experts_per_tok", 4, experts, "num_experts");
  const int64_t moe_inter = cfg.int_or("moe_intermediate_size", 1408);
  const int64_t shared_inter = cfg.int_or("shared_expert_intermediate_size", 5632, 0, kMaxSize);
  const int64_t sparse = qwen_moe_sparse_layers(cfg, t.layers, experts);
  keep_dense_mlp_on(spec, t.layers - sparse);
  if (sparse > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "gate", comp::kRouter, "text", t.hidden, experts, false, sparse);
    add_routed_experts(spec, "gate_proj", "up_proj", "down_proj", t.hidden, moe_inter, experts, k, sparse);
    // The shared expert is a dense, always-on MLP: it belongs to "mlp", not "experts".
    if (shared_inter > 0) {
      add_linear(spec, "gate_proj", comp::kMlp, "text", t.hidden, shared_inter, false, sparse);
      add_linear(spec, "up_proj", comp::kMlp, "text", t.hidden, shared_inter, false, sparse);
      add_linear(spec, "down_proj", comp::kMlp, "text", shared_inter, t.hidden, false, sparse);
    }
    add_linear(spec, "shared_expert_gate", comp::kRouter, "text", t.hidden, 1, false, sparse);
    mark_layers(spec, from, LayerSet::kMoe);
  }
  t.moe_layers = sparse;
  t.experts = experts;
  t.experts_per_token = k;
  t.expert_intermediate = moe_inter;
  t.shared_expert_intermediate = sparse > 0 ? shared_inter : 0;
  qwen_sliding(cfg, t, 28);
}

// configuration_qwen3_moe.py (Qwen3MoeConfig): vocab 151936, hidden 2048,
// intermediate 6144, 24 layers, 32 heads, 4 KV heads, 32768 positions, untied,
// attention_bias False, decoder_sparse_step 1, moe_intermediate_size 768,
// num_experts_per_tok 8, num_experts 128, mlp_only_layers []. The class has no
// head_dim default: modeling_qwen3_moe.py uses getattr(config, "head_dim",
// hidden_size // num_attention_heads). Per layer q_norm / k_norm (RMSNorm over
// head_dim); sparse layers have the router `gate` and routed experts only (no
// shared expert); the others a dense MLP of intermediate_size.
void build_qwen3_moe(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Qwen3MoeConfig";
  d.vocab = 151936;
  d.hidden = 2048;
  d.intermediate = 6144;
  d.layers = 24;
  d.heads = 32;
  d.kv_heads = 4;
  d.max_positions = 32768;
  d.has_mlp_bias = false;
  d.qk_norm = true;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  const int64_t experts = cfg.int_or("num_experts", 128, 0, kMaxSize);
  const int64_t k = read_experts_per_token(cfg, "num_experts_per_tok", 8, experts, "num_experts");
  const int64_t moe_inter = cfg.int_or("moe_intermediate_size", 768);
  const int64_t sparse = qwen_moe_sparse_layers(cfg, t.layers, experts);
  keep_dense_mlp_on(spec, t.layers - sparse);
  if (sparse > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "gate", comp::kRouter, "text", t.hidden, experts, false, sparse);
    add_routed_experts(spec, "gate_proj", "up_proj", "down_proj", t.hidden, moe_inter, experts, k, sparse);
    mark_layers(spec, from, LayerSet::kMoe);
  }
  t.moe_layers = sparse;
  t.experts = experts;
  t.experts_per_token = k;
  t.expert_intermediate = moe_inter;
  // Qwen3MoeConfig has no max_window_layers; the layer rule falls back to all layers.
  qwen_sliding(cfg, t, 0);
}

}  // namespace vram::detail

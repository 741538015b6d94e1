// StarCoder2, Command R / Aya (cohere), Command R7B (cohere2), GLM-4-0414 (glm4), Phi-3.5-MoE (phimoe),
// Granite MoE, EXAONE 3.x and InternLM2 / 2.5 (internlm2): Llama-shaped decoders that differ in their
// block layout (Cohere's parallel attention + MLP under one LayerNorm without
// bias, GLM-4's four norms per layer), fused projections (InternLM2's wqkv,
// GLM-4's gate_up_proj) or config defaults.
// Sources: transformers src/transformers/models/{starcoder2,cohere,cohere2,glm4,phimoe,granitemoe}/
// configuration_*.py and modeling_*.py (the 4.5x line), and InternLM2's remote
// code on the Hub (internlm/internlm2_5-7b-chat configuration_internlm2.py and
// modeling_internlm2.py, loaded with trust_remote_code).
#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"
#include "vram/families.h"

namespace vram::detail {

namespace {

// The Cohere decoder shared by cohere and cohere2 (modeling_cohere.py,
// modular_cohere2.py): embed_tokens; per layer one input_layernorm
// (CohereLayerNorm: a mean-subtracting LayerNorm with a weight and no bias)
// whose output feeds both self_attn (q/k/v/o_proj, bias = attention_bias) and
// mlp (gate/up/down_proj, no bias), added to the residual together; final
// norm (CohereLayerNorm); lm_head tied to embed_tokens by default.
void build_cohere_like(const JsonReader& cfg, ModelSpec& spec, const char* config_class, bool qk_norm_switch) {
  ConfigKeys k(cfg, spec, config_class);
  LayerStack& t = spec.text;
  t.name = "text";
  // CohereConfig / Cohere2Config: vocab 256000, hidden 8192, intermediate
  // 22528, 40 layers, 64 heads, num_key_value_heads None (= heads), 8192
  // positions, tie_word_embeddings True, attention_bias False.
  spec.vocab = k.size({"vocab_size"}, 256000);
  t.hidden = k.size({"hidden_size"}, 8192);
  t.intermediate = k.size({"intermediate_size"}, 22528);
  t.layers = k.size({"num_hidden_layers"}, 40, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 64, 1, 1 << 20);
  t.kv_heads = cfg.int_or("num_key_value_heads", t.heads, 1, 1 << 20);
  check_divisible(cfg.child_path("hidden_size"), t.hidden, cfg.child_path("num_attention_heads"), t.heads);
  check_kv_heads(cfg.child_path("num_key_value_heads"), t.kv_heads, cfg.child_path("num_attention_heads"), t.heads);
  t.head_dim = t.hidden / t.heads;  // modeling_cohere.py: head_dim = hidden_size // num_heads
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kLayerNorm;
  t.parallel_block = true;
  t.norms_per_layer = 1;
  t.activation = k.str({"hidden_act"}, "silu");
  t.position_encoding = "rope";
  t.dropout = cfg.num_or("attention_dropout", 0.0, 0.0, 1.0);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", 8192);
  read_dtype(cfg, spec);

  const bool bias = cfg.bool_or("attention_bias", false);
  const int64_t L = t.layers, h = t.hidden;
  const int64_t q_out = t.heads * t.head_dim, kv_out = t.kv_heads * t.head_dim;
  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  add_linear(spec, "q_proj", comp::kAttention, "text", h, q_out, bias, L);
  add_linear(spec, "k_proj", comp::kAttention, "text", h, kv_out, bias, L);
  add_linear(spec, "v_proj", comp::kAttention, "text", h, kv_out, bias, L);
  add_linear(spec, "o_proj", comp::kAttention, "text", q_out, h, bias, L);
  // CohereAttention with use_qk_norm (Command R+): q_norm =
  // CohereLayerNorm((num_heads, head_dim)), k_norm over (kv_heads, head_dim):
  // one weight per head and feature, no bias.
  if (qk_norm_switch && cfg.bool_or("use_qk_norm", false)) {
    add_norm(spec, "q_norm", "text", q_out, false, L);
    add_norm(spec, "k_norm", "text", kv_out, false, L);
    t.qk_norm = true;
  }
  add_linear(spec, "gate_proj", comp::kMlp, "text", h, t.intermediate, false, L);
  add_linear(spec, "up_proj", comp::kMlp, "text", h, t.intermediate, false, L);
  add_linear(spec, "down_proj", comp::kMlp, "text", t.intermediate, h, false, L);
  add_norm(spec, "input_layernorm", "text", h, false, L);
  add_norm(spec, "norm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
  if (cfg.has("logit_scale")) {
    spec.notes.push_back("logit_scale multiplies the logits in the forward pass; it holds no parameters");
  }
}

}  // namespace

// configuration_cohere.py (CohereConfig), modeling_cohere.py.
void build_cohere(const JsonReader& cfg, ModelSpec& spec) {
  build_cohere_like(cfg, spec, "CohereConfig (configuration_cohere.py)", true);
}

// configuration_cohere2.py (Cohere2Config): the Cohere decoder (no
// use_qk_norm) with sliding_window 4096 and sliding_window_pattern 4:
// layer_types[i] is "sliding_attention" unless (i + 1) % pattern == 0, so
// three of every four layers keep a 4096-token window (and use RoPE) and every
// fourth attends to the whole sequence without positions.
void build_cohere2(const JsonReader& cfg, ModelSpec& spec) {
  build_cohere_like(cfg, spec, "Cohere2Config (configuration_cohere2.py)", false);
  LayerStack& t = spec.text;
  if (cfg.has_key("sliding_window") && !cfg.has("sliding_window")) {
    t.sliding_window = 0;
  } else {
    t.sliding_window = cfg.int_or("sliding_window", 4096, 1, kMaxSize);
  }
  if (const auto listed = listed_sliding_layers(cfg, t.layers)) {
    t.sliding_layers = *listed;
  } else {
    const int64_t pattern = cfg.int_or("sliding_window_pattern", 4, 1, kMaxSize);
    t.sliding_layers = t.layers - t.layers / pattern;
  }
  if (t.sliding_window == 0) t.sliding_layers = 0;
}

// configuration_glm4.py (Glm4Config): vocab 151552, hidden 4096, intermediate
// 13696, 40 layers, 32 heads, 2 KV heads, head_dim 128, partial_rotary_factor
// 0.5, 131072 positions, untied, attention_bias True.
// modeling_glm4.py: Glm4Attention q/k/v_proj with bias = attention_bias and
// o_proj without bias; Glm4MLP fuses gate and up into gate_up_proj (hidden ->
// 2 x intermediate, no bias) and down_proj (no bias); Glm4DecoderLayer has four
// RMSNorms: input_layernorm, post_self_attn_layernorm (on the attention
// output), post_attention_layernorm (before the MLP) and post_mlp_layernorm
// (on the MLP output).
void build_glm4(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Glm4Config";
  d.vocab = 151552;
  d.intermediate = 13696;
  d.layers = 40;
  d.kv_heads = 2;
  d.head_dim = 128;
  d.max_positions = 131072;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  t.position_encoding = "rope";
  t.norms_per_layer = 4;
  const bool bias = cfg.bool_or("attention_bias", true);
  for (const char* m : {"q_proj", "k_proj", "v_proj"}) set_text_linear_bias(spec, m, bias);
  set_text_linear_bias(spec, "o_proj", false);
  std::erase_if(spec.groups, [](const ParamGroup& g) {
    return g.stack == "text" && (g.module == "gate_proj" || g.module == "up_proj" || g.module == "down_proj");
  });
  add_linear(spec, "gate_up_proj", comp::kMlp, "text", t.hidden, 2 * t.intermediate, false, t.layers);
  add_linear(spec, "down_proj", comp::kMlp, "text", t.intermediate, t.hidden, false, t.layers);
  add_norm(spec, "post_self_attn_layernorm", "text", t.hidden, false, t.layers);
  add_norm(spec, "post_mlp_layernorm", "text", t.hidden, false, t.layers);
}

// InternLM2Config (configuration_internlm2.py, Hub remote code): vocab
// 103168, hidden 4096, intermediate 11008, 32 layers, 32 heads,
// num_key_value_heads None (= heads), 2048 positions, bias True, untied.
// modeling_internlm2.py: tok_embeddings; per layer attention.wqkv (hidden ->
// (heads + 2 x kv_heads) x head_dim, bias = config.bias) and attention.wo
// (bias = config.bias), feed_forward.w1 / w3 (hidden -> intermediate) and w2
// (intermediate -> hidden) without bias, attention_norm and ffn_norm
// (RMSNorm); final norm; output (the LM head, its own weight).
void build_internlm2(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "InternLM2Config (configuration_internlm2.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 103168);
  t.hidden = k.size({"hidden_size"}, 4096);
  t.intermediate = k.size({"intermediate_size"}, 11008);
  t.layers = k.size({"num_hidden_layers"}, 32, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 32, 1, 1 << 20);
  t.kv_heads = cfg.int_or("num_key_value_heads", t.heads, 1, 1 << 20);
  check_divisible(cfg.child_path("hidden_size"), t.hidden, cfg.child_path("num_attention_heads"), t.heads);
  check_kv_heads(cfg.child_path("num_key_value_heads"), t.kv_heads, cfg.child_path("num_attention_heads"), t.heads);
  t.head_dim = t.hidden / t.heads;
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;
  t.activation = k.str({"hidden_act"}, "silu");
  t.position_encoding = "rope";
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", false);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", 2048);
  read_dtype(cfg, spec);
  const bool bias = k.flag("bias", true);
  const int64_t L = t.layers, h = t.hidden;
  const int64_t q_out = t.heads * t.head_dim, kv_out = t.kv_heads * t.head_dim;
  add_embedding(spec, "tok_embeddings", "text", spec.vocab, h);
  add_linear(spec, "wqkv", comp::kAttention, "text", h, q_out + 2 * kv_out, bias, L);
  add_linear(spec, "wo", comp::kAttention, "text", q_out, h, bias, L);
  add_linear(spec, "w1", comp::kMlp, "text", h, t.intermediate, false, L);
  add_linear(spec, "w3", comp::kMlp, "text", h, t.intermediate, false, L);
  add_linear(spec, "w2", comp::kMlp, "text", t.intermediate, h, false, L);
  add_norm(spec, "attention_norm", "text", h, false, L);
  add_norm(spec, "ffn_norm", "text", h, false, L);
  add_norm(spec, "norm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "output", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

// configuration_phimoe.py (PhimoeConfig): vocab 32064, hidden 4096,
// intermediate 6400, 32 layers, 32 heads, 8 KV heads, 4096 x 32 positions,
// untied, num_local_experts 16, num_experts_per_tok 2, attention_bias False,
// lm_head_bias False, sliding_window None.
// modeling_phimoe.py: PhimoeAttention q/k/v/o_proj with bias =
// attention_bias; PhimoeSparseMoeBlock: router `gate` (hidden -> experts, no
// bias) and experts w1 / w3 (hidden -> intermediate) and w2, no bias;
// input_layernorm and post_attention_layernorm are nn.LayerNorm with weight
// and bias, as is the final norm; lm_head has a bias when lm_head_bias.
void build_phimoe(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "PhimoeConfig";
  d.vocab = 32064;
  d.intermediate = 6400;
  d.kv_heads = 8;
  d.max_positions = 4096 * 32;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  t.position_encoding = "rope";
  t.norm = NormKind::kLayerNorm;
  for (auto& g : spec.groups) {
    if (g.kind == ModuleKind::kNorm) {
      g.bias = true;
      g.numel = 2 * g.out_features;
    }
  }
  const int64_t experts = cfg.int_or("num_local_experts", 16, 1, kMaxSize);
  const int64_t k = read_experts_per_token(cfg, "num_experts_per_tok", 2, experts, "num_local_experts");
  keep_dense_mlp_on(spec, 0);
  const size_t router = spec.groups.size();
  add_linear(spec, "gate", comp::kRouter, "text", t.hidden, experts, false, t.layers);
  mark_layers(spec, router, LayerSet::kMoe);
  add_routed_experts(spec, "w1", "w3", "w2", t.hidden, t.intermediate, experts, k, t.layers);
  t.moe_layers = t.layers;
  t.experts = experts;
  t.experts_per_token = k;
  t.expert_intermediate = t.intermediate;
  if (cfg.bool_or("lm_head_bias", false)) set_text_linear_bias(spec, "lm_head", true);
  t.sliding_window = cfg.int_or("sliding_window", 0, 1, kMaxSize);
  t.sliding_layers = t.sliding_window > 0 ? t.layers : 0;
}

// configuration_granitemoe.py (GraniteMoeConfig): vocab 32000, hidden 4096,
// intermediate 11008, 32 layers, 32 heads, num_key_value_heads None (= heads),
// 2048 positions, untied, attention_bias False, num_local_experts 8,
// num_experts_per_tok 2. modeling_granitemoe.py: Granite's attention (q/k/v/o
// with bias = attention_bias) and RMSNorms; block_sparse_moe has the router
// (GraniteMoeTopKGating.layer: hidden -> experts, no bias), input_linear
// (GraniteMoeParallelExperts: experts x (2 x intermediate) x hidden, the gate
// and up halves) and output_linear (experts x hidden x intermediate), no
// biases, no shared expert. embedding_multiplier, attention_multiplier,
// residual_multiplier and logits_scaling scale activations only.
void build_granitemoe(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "GraniteMoeConfig";
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  t.position_encoding = "rope";
  const int64_t experts = cfg.int_or("num_local_experts", 8, 1, kMaxSize);
  const int64_t k = read_experts_per_token(cfg, "num_experts_per_tok", 2, experts, "num_local_experts");
  keep_dense_mlp_on(spec, 0);
  const size_t router = spec.groups.size();
  add_linear(spec, "router", comp::kRouter, "text", t.hidden, experts, false, t.layers);
  mark_layers(spec, router, LayerSet::kMoe);
  // input_linear is one [experts, 2 x intermediate, hidden] tensor: its gate
  // and up halves are counted as two groups of the same size.
  add_routed_experts(spec, "input_linear", "input_linear", "output_linear", t.hidden, t.intermediate, experts, k,
                     t.layers);
  t.moe_layers = t.layers;
  t.experts = experts;
  t.experts_per_token = k;
  t.expert_intermediate = t.intermediate;
}

// configuration_starcoder2.py (Starcoder2Config): vocab 49152, hidden 3072,
// intermediate 12288, 30 layers, 24 heads, 2 KV heads, hidden_act
// gelu_pytorch_tanh, 4096 positions, use_bias True, sliding_window None,
// tie_word_embeddings True (PretrainedConfig's default; the 15B sets False).
// modeling_starcoder2.py: embed_tokens; per layer q/k/v/o_proj and the plain
// MLP c_fc (hidden -> intermediate) / c_proj, all with bias = use_bias;
// input_layernorm and post_attention_layernorm are nn.LayerNorm (weight and
// bias); final norm (LayerNorm); lm_head unless tied. A window applies to
// every layer.
void build_starcoder2(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "Starcoder2Config (configuration_starcoder2.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 49152);
  t.hidden = k.size({"hidden_size"}, 3072);
  t.intermediate = k.size({"intermediate_size"}, 12288);
  t.layers = k.size({"num_hidden_layers"}, 30, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 24, 1, 1 << 20);
  t.kv_heads = k.size({"num_key_value_heads"}, 2, 1, 1 << 20);
  check_divisible(cfg.child_path("hidden_size"), t.hidden, cfg.child_path("num_attention_heads"), t.heads);
  check_kv_heads(cfg.child_path("num_key_value_heads"), t.kv_heads, cfg.child_path("num_attention_heads"), t.heads);
  t.head_dim = t.hidden / t.heads;
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kPlain;
  t.norm = NormKind::kLayerNorm;
  t.activation = k.str({"hidden_act"}, "gelu_pytorch_tanh");
  t.position_encoding = "rope";
  t.dropout = cfg.num_or("attention_dropout", 0.0, 0.0, 1.0);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", 4096);
  read_dtype(cfg, spec);
  t.sliding_window = cfg.int_or("sliding_window", 0, 1, kMaxSize);
  t.sliding_layers = t.sliding_window > 0 ? t.layers : 0;
  const bool bias = k.flag("use_bias", true);
  const int64_t L = t.layers, h = t.hidden;
  const int64_t q_out = t.heads * t.head_dim, kv_out = t.kv_heads * t.head_dim;
  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  add_linear(spec, "q_proj", comp::kAttention, "text", h, q_out, bias, L);
  add_linear(spec, "k_proj", comp::kAttention, "text", h, kv_out, bias, L);
  add_linear(spec, "v_proj", comp::kAttention, "text", h, kv_out, bias, L);
  add_linear(spec, "o_proj", comp::kAttention, "text", q_out, h, bias, L);
  add_linear(spec, "c_fc", comp::kMlp, "text", h, t.intermediate, bias, L);
  add_linear(spec, "c_proj", comp::kMlp, "text", t.intermediate, h, bias, L);
  add_norm(spec, "input_layernorm", "text", h, true, L);
  add_norm(spec, "post_attention_layernorm", "text", h, true, L);
  add_norm(spec, "norm", "text", h, true, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

// EXAONE 3.0 / 3.5 (LG AI Research; model_type "exaone", remote code on the
// Hub: LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct configuration_exaone.py and
// modeling_exaone.py). ExaoneConfig names the depth num_layers
// (attribute_map num_hidden_layers -> num_layers) and the activation
// activation_function; defaults: vocab 102400, hidden 2048, 32 layers, 32
// heads, num_key_value_heads None (= heads), intermediate None (= 4 x hidden),
// 2048 positions, silu, tie_word_embeddings True.
// modeling_exaone.py: transformer.wte; per block ln_1 (RMSNorm),
// attn.attention q/k/v_proj and out_proj without bias, ln_2, mlp c_fc_0
// (gate) and c_fc_1 (up), hidden -> intermediate, and c_proj, no bias;
// transformer.ln_f; lm_head unless tied. Llama's tree under other names.
void build_exaone(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "ExaoneConfig (configuration_exaone.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 102400);
  t.hidden = k.size({"hidden_size"}, 2048);
  t.intermediate = k.size({"intermediate_size"}, 4 * t.hidden);
  t.layers = k.size({"num_layers", "num_hidden_layers"}, 32, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 32, 1, 1 << 20);
  t.kv_heads = cfg.int_or("num_key_value_heads", t.heads, 1, 1 << 20);
  check_divisible(cfg.child_path("hidden_size"), t.hidden, cfg.child_path("num_attention_heads"), t.heads);
  check_kv_heads(cfg.child_path("num_key_value_heads"), t.kv_heads, cfg.child_path("num_attention_heads"), t.heads);
  t.head_dim = t.hidden / t.heads;
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;
  t.activation = k.str({"activation_function", "hidden_act"}, "silu");
  t.position_encoding = "rope";
  t.dropout = cfg.num_or("attention_dropout", 0.0, 0.0, 1.0);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", 2048);
  read_dtype(cfg, spec);
  const int64_t L = t.layers, h = t.hidden;
  const int64_t q_out = t.heads * t.head_dim, kv_out = t.kv_heads * t.head_dim;
  add_embedding(spec, "wte", "text", spec.vocab, h);
  add_linear(spec, "q_proj", comp::kAttention, "text", h, q_out, false, L);
  add_linear(spec, "k_proj", comp::kAttention, "text", h, kv_out, false, L);
  add_linear(spec, "v_proj", comp::kAttention, "text", h, kv_out, false, L);
  add_linear(spec, "out_proj", comp::kAttention, "text", q_out, h, false, L);
  add_linear(spec, "c_fc_0", comp::kMlp, "text", h, t.intermediate, false, L);
  add_linear(spec, "c_fc_1", comp::kMlp, "text", h, t.intermediate, false, L);
  add_linear(spec, "c_proj", comp::kMlp, "text", t.intermediate, h, false, L);
  add_norm(spec, "ln_1", "text", h, false, L);
  add_norm(spec, "ln_2", "text", h, false, L);
  add_norm(spec, "ln_f", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace vram::detail

// Phi-1 / Phi-1.5 / Phi-2 (modeling_phi.py): a parallel-residual decoder with
// biased projections, LayerNorm and partial rotary embeddings.
#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_phi.py: vocab_size=51200, hidden_size=2048,
// intermediate_size=8192, num_hidden_layers=24, num_attention_heads=32,
// num_key_value_heads=None (= heads), hidden_act="gelu_new",
// max_position_embeddings=2048, partial_rotary_factor=0.5, qk_layernorm=False,
// tie_word_embeddings=False.
// modeling_phi.py: embed_tokens; per layer input_layernorm (LayerNorm with
// bias), q/k/v_proj and dense with bias, optional q_layernorm/k_layernorm over
// head_dim, mlp fc1/fc2 with bias; final_layernorm; lm_head WITH bias.
void build_phi(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "PhiConfig (configuration_phi.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 51200);
  t.hidden = k.size({"hidden_size"}, 2048);
  t.intermediate = k.size({"intermediate_size"}, 8192);
  t.layers = k.size({"num_hidden_layers"}, 24, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 32, 1, 1 << 20);
  t.kv_heads = cfg.int_or("num_key_value_heads", t.heads, 1, 1 << 20);
  check_divisible(cfg.child_path("hidden_size"), t.hidden, cfg.child_path("num_attention_heads"), t.heads);
  check_kv_heads(cfg.child_path("num_key_value_heads"), t.kv_heads, cfg.child_path("num_attention_heads"), t.heads);
  t.head_dim = t.hidden / t.heads;  // modeling_phi.py: head_dim = hidden_size // num_attention_heads
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kPlain;
  t.norm = NormKind::kLayerNorm;
  t.activation = k.str({"hidden_act"}, "gelu_new");
  t.parallel_block = true;  // attention and MLP both read input_layernorm's output
  t.norms_per_layer = 1;
  t.qk_norm = k.flag("qk_layernorm", false);
  t.position_encoding = "rope";
  t.dropout = cfg.num_or("resid_pdrop", 0.0, 0.0, 1.0);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", false);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", 2048);
  read_dtype(cfg, spec);

  const int64_t L = t.layers, h = t.hidden;
  const int64_t q_out = t.heads * t.head_dim, kv_out = t.kv_heads * t.head_dim;
  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  add_linear(spec, "q_proj", comp::kAttention, "text", h, q_out, true, L);
  add_linear(spec, "k_proj", comp::kAttention, "text", h, kv_out, true, L);
  add_linear(spec, "v_proj", comp::kAttention, "text", h, kv_out, true, L);
  add_linear(spec, "dense", comp::kAttention, "text", q_out, h, true, L);
  if (t.qk_norm) {
    add_norm(spec, "q_layernorm", "text", t.head_dim, true, L);
    add_norm(spec, "k_layernorm", "text", t.head_dim, true, L);
  }
  add_linear(spec, "fc1", comp::kMlp, "text", h, t.intermediate, true, L);
  add_linear(spec, "fc2", comp::kMlp, "text", t.intermediate, h, true, L);
  add_norm(spec, "input_layernorm", "text", h, true, L);
  add_norm(spec, "final_layernorm", "text", h, true, 1);
  // PhiForCausalLM: lm_head = nn.Linear(hidden_size, vocab_size, bias=True).
  // When tied, the weight is shared and only the bias is a parameter of its own.
  if (spec.tie_word_embeddings) {
    add_other(spec, "lm_head.bias", comp::kLmHead, "text", spec.vocab, 1);
  } else {
    add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, true, 1);
  }
}

// configuration_phi3.py: vocab_size=32064, hidden_size=3072,
// intermediate_size=8192, num_hidden_layers=32, num_attention_heads=32,
// num_key_value_heads=None (= heads), hidden_act="silu",
// max_position_embeddings=4096, tie_word_embeddings=False, sliding_window=None.
// modeling_phi3.py: embed_tokens; per layer fused qkv_proj (hidden ->
// heads*head_dim + 2*kv_heads*head_dim) and o_proj without bias, fused
// gate_up_proj (hidden -> 2*intermediate) and down_proj without bias,
// input_layernorm + post_attention_layernorm (RMSNorm); final norm; lm_head.
void build_phi3(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "Phi3Config (configuration_phi3.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 32064);
  t.hidden = k.size({"hidden_size"}, 3072);
  t.intermediate = k.size({"intermediate_size"}, 8192);
  t.layers = k.size({"num_hidden_layers"}, 32, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 32, 1, 1 << 20);
  t.kv_heads = cfg.int_or("num_key_value_heads", t.heads, 1, 1 << 20);
  check_divisible(cfg.child_path("hidden_size"), t.hidden, cfg.child_path("num_attention_heads"), t.heads);
  check_kv_heads(cfg.child_path("num_key_value_heads"), t.kv_heads, cfg.child_path("num_attention_heads"), t.heads);
  t.head_dim = t.hidden / t.heads;  // modeling_phi3.py: head_dim = hidden_size // num_attention_heads
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;
  t.activation = k.str({"hidden_act"}, "silu");
  t.position_encoding = "rope";
  t.dropout = cfg.num_or("attention_dropout", 0.0, 0.0, 1.0);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", false);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", 4096);
  read_dtype(cfg, spec);
  // A window (Phi-3-mini-4k: 2047) applies to every layer; null means none.
  t.sliding_window = cfg.int_or("sliding_window", 0, 1, kMaxSize);
  t.sliding_layers = t.sliding_window > 0 ? t.layers : 0;

  const int64_t L = t.layers, h = t.hidden;
  const int64_t q_out = t.heads * t.head_dim, kv_out = t.kv_heads * t.head_dim;
  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  add_linear(spec, "qkv_proj", comp::kAttention, "text", h, q_out + 2 * kv_out, false, L);
  add_linear(spec, "o_proj", comp::kAttention, "text", q_out, h, false, L);
  add_linear(spec, "gate_up_proj", comp::kMlp, "text", h, 2 * t.intermediate, false, L);
  add_linear(spec, "down_proj", comp::kMlp, "text", t.intermediate, h, false, L);
  add_norm(spec, "input_layernorm", "text", h, false, L);
  add_norm(spec, "post_attention_layernorm", "text", h, false, L);
  add_norm(spec, "norm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace vram::detail

// BLOOM (modeling_bloom.py): ALiBi positions, an extra LayerNorm after the
// word embeddings, fused query_key_value, biases everywhere, tied head.
#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_bloom.py: vocab_size=250880, hidden_size=64, n_layer=2,
// n_head=8, hidden_dropout=0.0, tie_word_embeddings (PretrainedConfig) True;
// attribute_map num_hidden_layers -> n_layer, num_attention_heads -> n_head;
// the `n_embed` kwarg overrides hidden_size.
// modeling_bloom.py: word_embeddings, word_embeddings_layernorm; per block
// input_layernorm, self_attention.query_key_value (hidden -> 3*hidden) and
// dense, post_attention_layernorm, mlp.dense_h_to_4h (hidden -> 4*hidden) and
// dense_4h_to_h, all with bias; ln_f; lm_head without bias.
void build_bloom(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "BloomConfig (configuration_bloom.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 250880);
  // n_embed wins over hidden_size when both are given (BloomConfig.__init__).
  t.hidden = k.size({"n_embed", "hidden_size"}, 64);
  t.layers = k.size({"n_layer", "num_hidden_layers"}, 2, 1, 100000);
  t.heads = k.size({"n_head", "num_attention_heads"}, 8, 1, 1 << 20);
  check_divisible(k.path({"n_embed", "hidden_size"}), t.hidden, k.path({"n_head", "num_attention_heads"}), t.heads);
  t.kv_heads = t.heads;
  t.head_dim = t.hidden / t.heads;
  t.v_head_dim = t.head_dim;
  t.intermediate = 4 * t.hidden;  // BloomMLP: dense_h_to_4h is hidden -> 4 * hidden
  t.attention = AttnKind::kMha;
  t.mlp = MlpKind::kPlain;
  t.norm = NormKind::kLayerNorm;
  t.activation = "bloom_gelu";  // BloomGelu: tanh approximation
  t.position_encoding = "alibi";
  t.dropout = cfg.num_or("hidden_dropout", 0.0, 0.0, 1.0);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  // ALiBi has no position table; seq_length is what the checkpoint trained with.
  spec.max_position_embeddings = cfg.int_or("seq_length", 0, 1, kMaxSize);
  read_dtype(cfg, spec);

  const int64_t L = t.layers, h = t.hidden;
  add_embedding(spec, "word_embeddings", "text", spec.vocab, h);
  add_norm(spec, "word_embeddings_layernorm", "text", h, true, 1);
  add_linear(spec, "query_key_value", comp::kAttention, "text", h, 3 * h, true, L);
  add_linear(spec, "dense", comp::kAttention, "text", h, h, true, L);
  add_linear(spec, "dense_h_to_4h", comp::kMlp, "text", h, t.intermediate, true, L);
  add_linear(spec, "dense_4h_to_h", comp::kMlp, "text", t.intermediate, h, true, L);
  add_norm(spec, "input_layernorm", "text", h, true, L);
  add_norm(spec, "post_attention_layernorm", "text", h, true, L);
  add_norm(spec, "ln_f", "text", h, true, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace vram::detail

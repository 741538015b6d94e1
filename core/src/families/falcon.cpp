// Falcon (modeling_falcon.py), in its three layouts:
//  - Falcon-7B: multi_query (one shared K/V head), parallel_attn, one LayerNorm;
//  - Falcon-40B/180B: new_decoder_architecture, num_kv_heads K/V groups, ln_attn + ln_mlp;
//  - Falcon-RW: classic MHA, sequential blocks, ALiBi, biases.
#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_falcon.py: vocab_size=65024, hidden_size=4544,
// num_hidden_layers=32, num_attention_heads=71, num_kv_heads=None (= heads),
// alibi=False, new_decoder_architecture=False, multi_query=True,
// parallel_attn=True, bias=False, max_position_embeddings=2048,
// ffn_hidden_size=None (= 4 * hidden), activation="gelu",
// num_ln_in_parallel_attn=None, tie_word_embeddings (PretrainedConfig) True.
// `n_embed` is accepted as an alias of hidden_size.
// modeling_falcon.py FalconAttention: query_key_value is
//   (2 * num_kv_heads + heads) * head_dim   with new_decoder_architecture,
//   hidden + 2 * head_dim                  with multi_query,
//   3 * hidden                             otherwise,
// dense hidden -> hidden; both with bias = config.bias. FalconMLP:
// dense_h_to_4h / dense_4h_to_h with bias = config.bias. FalconDecoderLayer:
// num_ln_in_parallel_attn defaults to 2 under new_decoder_architecture; a
// sequential block (parallel_attn false) has input_layernorm +
// post_attention_layernorm; a parallel one has ln_attn + ln_mlp when
// num_ln_in_parallel_attn == 2, else input_layernorm only. lm_head has no bias.
void build_falcon(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "FalconConfig (configuration_falcon.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 65024);
  t.hidden = k.size({"hidden_size", "n_embed"}, 4544);
  t.layers = k.size({"num_hidden_layers", "n_layer"}, 32, 1, 100000);
  t.heads = k.size({"num_attention_heads", "n_head"}, 71, 1, 1 << 20);
  const std::string hidden_path = k.path({"hidden_size", "n_embed"});
  const std::string heads_path = k.path({"num_attention_heads", "n_head"});
  check_divisible(hidden_path, t.hidden, heads_path, t.heads);
  t.head_dim = t.hidden / t.heads;  // FalconConfig.head_dim = hidden_size // num_attention_heads
  t.v_head_dim = t.head_dim;

  const bool new_arch = k.flag("new_decoder_architecture", false);
  const bool multi_query = k.flag("multi_query", true);
  const bool parallel = k.flag("parallel_attn", true);
  const bool alibi = k.flag("alibi", false);
  const bool bias = k.flag("bias", false);
  const std::string kv_key = k.key({"num_kv_heads", "n_head_kv"});
  if (new_arch) {
    t.kv_heads = cfg.int_or(kv_key, t.heads, 1, 1 << 20);
    check_kv_heads(cfg.child_path(kv_key), t.kv_heads, heads_path, t.heads);
  } else {
    // Outside the new layout num_kv_heads is ignored: one K/V head under
    // multi_query, otherwise one per query head.
    t.kv_heads = multi_query ? 1 : t.heads;
  }
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.intermediate = cfg.int_or("ffn_hidden_size", 4 * t.hidden);
  t.mlp = MlpKind::kPlain;
  t.norm = NormKind::kLayerNorm;
  t.activation = k.str({"activation"}, "gelu");
  t.parallel_block = parallel;
  t.position_encoding = alibi ? "alibi" : "rope";
  t.dropout = cfg.num_or("hidden_dropout", 0.0, 0.0, 1.0);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", 2048);
  read_dtype(cfg, spec);

  const int64_t ln_in_parallel = cfg.int_or("num_ln_in_parallel_attn", new_arch ? 2 : 1, 1, 2);
  // modeling_falcon.py FalconDecoderLayer: parallel attention reads one
  // input_layernorm (or ln_attn and ln_mlp when num_ln_in_parallel_attn is 2);
  // sequential layers have input_layernorm and post_attention_layernorm.
  t.norms_per_layer = parallel ? ln_in_parallel : 2;
  const int64_t L = t.layers, h = t.hidden;
  const int64_t qkv_out = (t.kv_heads * 2 + t.heads) * t.head_dim;
  add_embedding(spec, "word_embeddings", "text", spec.vocab, h);
  add_linear(spec, "query_key_value", comp::kAttention, "text", h, qkv_out, bias, L);
  add_linear(spec, "dense", comp::kAttention, "text", h, h, bias, L);
  add_linear(spec, "dense_h_to_4h", comp::kMlp, "text", h, t.intermediate, bias, L);
  add_linear(spec, "dense_4h_to_h", comp::kMlp, "text", t.intermediate, h, bias, L);
  if (!parallel) {
    add_norm(spec, "input_layernorm", "text", h, true, L);
    add_norm(spec, "post_attention_layernorm", "text", h, true, L);
    t.norms_per_layer = 2;
  } else if (ln_in_parallel == 2) {
    add_norm(spec, "ln_attn", "text", h, true, L);
    add_norm(spec, "ln_mlp", "text", h, true, L);
    t.norms_per_layer = 2;
  } else {
    add_norm(spec, "input_layernorm", "text", h, true, L);
    t.norms_per_layer = 1;
  }
  add_norm(spec, "ln_f", "text", h, true, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace vram::detail

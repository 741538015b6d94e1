// GPT-NeoX and Pythia (modeling_gpt_neox.py): fused query_key_value,
// partial rotary embeddings, parallel residual, untied embed_out.
#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_gpt_neox.py: vocab_size=50432, hidden_size=6144,
// num_hidden_layers=44, num_attention_heads=64, intermediate_size=24576,
// hidden_act="gelu", rotary_pct=0.25, max_position_embeddings=2048,
// use_parallel_residual=True, attention_bias=True, tie_word_embeddings=False.
// modeling_gpt_neox.py: embed_in; per layer input_layernorm and
// post_attention_layernorm (LayerNorm, both present with or without the
// parallel residual), attention.query_key_value (hidden -> 3*hidden) and
// attention.dense (bias = attention_bias), mlp.dense_h_to_4h and
// mlp.dense_4h_to_h (nn.Linear, bias); final_layer_norm; embed_out (no bias).
void build_gpt_neox(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "GPTNeoXConfig (configuration_gpt_neox.py)");
  read_mha_layernorm_stack(k, cfg, spec, {50432, 6144, "intermediate_size", 24576, 44, 64, "hidden_act", "gelu"});
  LayerStack& t = spec.text;
  t.parallel_block = k.flag("use_parallel_residual", true);
  t.position_encoding = "rope";
  t.dropout = cfg.num_or("hidden_dropout", 0.0, 0.0, 1.0);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", false);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", 2048);
  read_dtype(cfg, spec);
  const bool bias = cfg.bool_or("attention_bias", true);

  const int64_t L = t.layers, h = t.hidden;
  add_embedding(spec, "embed_in", "text", spec.vocab, h);
  add_linear(spec, "query_key_value", comp::kAttention, "text", h, 3 * h, bias, L);
  add_linear(spec, "dense", comp::kAttention, "text", h, h, bias, L);
  add_linear(spec, "dense_h_to_4h", comp::kMlp, "text", h, t.intermediate, true, L);
  add_linear(spec, "dense_4h_to_h", comp::kMlp, "text", t.intermediate, h, true, L);
  add_norm(spec, "input_layernorm", "text", h, true, L);
  add_norm(spec, "post_attention_layernorm", "text", h, true, L);
  add_norm(spec, "final_layer_norm", "text", h, true, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "embed_out", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace vram::detail

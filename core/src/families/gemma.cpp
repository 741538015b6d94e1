// Gemma and Gemma 2: Llama-shaped decoders with a tied head, a GeGLU MLP and
// an explicit head_dim (modeling_gemma.py, modeling_gemma2.py).
#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

namespace {

// GemmaConfig / Gemma2Config name the MLP activation `hidden_activation`;
// older configs only carry `hidden_act`.
void read_activation(const JsonReader& cfg, LayerStack& t) {
  t.activation = cfg.str_or("hidden_activation", cfg.str_or("hidden_act", "gelu_pytorch_tanh"));
}

}  // namespace

// configuration_gemma.py: vocab_size=256000, hidden_size=3072,
// intermediate_size=24576, num_hidden_layers=28, num_attention_heads=16,
// num_key_value_heads=16, head_dim=256, max_position_embeddings=8192,
// tie_word_embeddings=True, attention_bias=False.
// modeling_gemma.py: q/k/v/o_proj (bias = attention_bias), gate/up/down_proj
// without bias, input_layernorm + post_attention_layernorm (GemmaRMSNorm, one
// weight of hidden_size), final norm, lm_head tied to embed_tokens.
void build_gemma(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "GemmaConfig (configuration_gemma.py)";
  d.vocab = 256000;
  d.hidden = 3072;
  d.intermediate = 24576;
  d.layers = 28;
  d.heads = 16;
  d.kv_heads = 16;
  d.head_dim = 256;
  d.max_positions = 8192;
  d.tie = true;
  d.activation = "gelu_pytorch_tanh";
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  read_activation(cfg, spec.text);
  spec.text.position_encoding = "rope";
}

// configuration_gemma2.py: vocab_size=256000, hidden_size=2304,
// intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8,
// num_key_value_heads=4, head_dim=256, max_position_embeddings=8192,
// sliding_window=4096, tie_word_embeddings=True.
// modeling_gemma2.py: Gemma's layer plus pre_feedforward_layernorm and
// post_feedforward_layernorm (four RMSNorms per layer). Layer i uses the
// sliding window when layer_types[i] == "sliding_attention"; without
// layer_types, the even layers (0, 2, ...) slide and the odd ones attend fully.
namespace {

// A Gemma 2 soft-cap (cap * tanh(x / cap); configuration_gemma2.py at
// 008e5743: attn_logit_softcapping 50.0, final_logit_softcapping 30.0): on
// with a positive number, off when null, the class default (noted) when
// missing. Only whether it is on changes memory (tanh keeps its output).
bool softcap_on(const JsonReader& cfg, ModelSpec& spec, const char* key, const char* class_default) {
  if (!cfg.has_key(key)) {
    spec.notes.push_back(std::string(key) + " missing: using Gemma2Config (configuration_gemma2.py) default " +
                         class_default);
    return true;
  }
  if (!cfg.has(key)) return false;
  cfg.num_or(key, 0.0, 1e-6, 1e6);  // a positive number, or an error naming the key
  return true;
}

}  // namespace

void build_gemma2(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Gemma2Config (configuration_gemma2.py)";
  d.vocab = 256000;
  d.hidden = 2304;
  d.intermediate = 9216;
  d.layers = 26;
  d.heads = 8;
  d.kv_heads = 4;
  d.head_dim = 256;
  d.max_positions = 8192;
  d.tie = true;
  d.activation = "gelu_pytorch_tanh";
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  read_activation(cfg, t);
  t.position_encoding = "rope";
  add_norm(spec, "pre_feedforward_layernorm", "text", t.hidden, false, t.layers);
  add_norm(spec, "post_feedforward_layernorm", "text", t.hidden, false, t.layers);
  t.norms_per_layer = 4;

  t.attn_softcap = softcap_on(cfg, spec, "attn_logit_softcapping", "50.0");
  t.final_softcap = softcap_on(cfg, spec, "final_logit_softcapping", "30.0");
  if (cfg.has_key("sliding_window") && !cfg.has("sliding_window")) {
    t.sliding_window = 0;  // null: every layer attends fully
  } else {
    t.sliding_window = cfg.int_or("sliding_window", 4096, 1, kMaxSize);
  }
  if (t.sliding_window > 0) {
    t.sliding_layers = listed_sliding_layers(cfg, t.layers).value_or((t.layers + 1) / 2);
  }
}

}  // namespace vram::detail

// OLMo 2, Granite and SmolLM3: Llama-shaped decoders that differ from Llama in
// where their norms sit, their config defaults or which layers use a window.
// Sources: transformers at commit 008e574391258935f3ecc3035c882e73bbcac419,
// src/transformers/models/{olmo2,granite,smollm3}/configuration_*.py and
// modeling_*.py.
#include <algorithm>

#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"
#include "vram/families.h"

namespace vram::detail {

namespace {

void drop_text_group(ModelSpec& spec, const char* module) {
  std::erase_if(spec.groups, [&](const ParamGroup& g) { return g.stack == "text" && g.module == module; });
}

}  // namespace

// configuration_olmo2.py (Olmo2Config): vocab 50304, hidden 4096,
// intermediate 11008, 32 layers, 32 heads, num_key_value_heads None (= heads),
// 2048 positions, untied, attention_bias False.
// modeling_olmo2.py: Olmo2Attention has q/k/v/o_proj (bias = attention_bias)
// and q_norm = Olmo2RMSNorm(num_attention_heads * head_dim), k_norm =
// Olmo2RMSNorm(num_key_value_heads * head_dim): the norm spans all heads, not
// one head as in Qwen3. Olmo2DecoderLayer normalises each branch's output
// (post_attention_layernorm, post_feedforward_layernorm) and has no
// input_layernorm; the MLP is Llama's gate/up/down without bias.
void build_olmo2(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Olmo2Config";
  d.vocab = 50304;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  drop_text_group(spec, "input_layernorm");
  add_norm(spec, "post_feedforward_layernorm", "text", t.hidden, false, t.layers);
  add_norm(spec, "q_norm", "text", t.heads * t.head_dim, false, t.layers);
  add_norm(spec, "k_norm", "text", t.kv_heads * t.head_dim, false, t.layers);
  t.qk_norm = true;
  t.position_encoding = "rope";
}

// configuration_granite.py (GraniteConfig): vocab 32000, hidden 4096,
// intermediate 11008, 32 layers, 32 heads, num_key_value_heads None (= heads),
// 2048 positions, untied, attention_bias False, mlp_bias False.
// modeling_granite.py: Llama's module tree (q/k/v/o_proj with bias =
// attention_bias, gate/up/down_proj with bias = mlp_bias). embedding_multiplier,
// attention_multiplier, residual_multiplier and logits_scaling are scalars in
// the forward pass, not parameters.
void build_granite(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "GraniteConfig";
  build_llama_like(cfg, spec, d);
  spec.text.position_encoding = "rope";
  for (const char* k : {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"}) {
    if (cfg.has(k)) {
      spec.notes.push_back(std::string(k) + " scales activations in the forward pass; it holds no parameters");
      break;
    }
  }
}

// configuration_smollm3.py (SmolLM3Config): vocab 128256, hidden 2048,
// intermediate 11008, 36 layers, 16 heads, 4 KV heads, 32768 positions,
// tie_word_embeddings True, attention_bias False, mlp_bias False,
// use_sliding_window False, no_rope_layer_interval 4. modeling_smollm3.py:
// Llama's module tree; layers with no_rope_layers[i] == 0 skip rotary
// embeddings (no parameters either way). A layer slides when layer_types[i] is
// "sliding_attention"; without layer_types, __post_init__ makes the NoPE
// layers slide when use_sliding_window and sliding_window are set.
void build_smollm3(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "SmolLM3Config";
  d.vocab = 128256;
  d.hidden = 2048;
  d.layers = 36;
  d.heads = 16;
  d.kv_heads = 4;
  d.max_positions = 32768;
  d.tie = true;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  t.position_encoding = "rope";
  const int64_t window = cfg.int_or("sliding_window", 0, 1, kMaxSize);
  if (const auto listed = listed_sliding_layers(cfg, t.layers)) {
    t.sliding_layers = *listed;
  } else if (cfg.bool_or("use_sliding_window", false) && window > 0) {
    const int64_t interval = cfg.int_or("no_rope_layer_interval", 4, 1, kMaxSize);
    t.sliding_layers = 0;
    if (const json* nope = cfg.get("no_rope_layers"); nope != nullptr && nope->is_array()) {
      for (int64_t i = 0; i < t.layers && i < static_cast<int64_t>(nope->size()); ++i) {
        if ((*nope)[i].is_number_integer() && (*nope)[i].get<int64_t>() == 0) ++t.sliding_layers;
      }
    } else {
      t.sliding_layers = t.layers / interval;
    }
  }
  t.sliding_window = t.sliding_layers > 0 ? window : 0;
  if (t.sliding_window == 0) t.sliding_layers = 0;
}

}  // namespace vram::detail

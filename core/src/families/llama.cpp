// Llama, Mistral, Qwen2, Qwen3: one decoder shape, different config defaults.
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_llama.py: LlamaConfig.__init__ defaults.
void build_llama(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  build_llama_like(cfg, spec, d);
}

// configuration_mistral.py: intermediate 14336, 8 KV heads, 4096*32 positions,
// sliding_window 4096. No biases anywhere (modeling_mistral.py).
void build_mistral(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "MistralConfig";
  d.intermediate = 14336;
  d.kv_heads = 8;
  d.max_positions = 4096 * 32;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  // A window of null means full attention (Mistral v0.2+); v0.1 has 4096.
  if (cfg.has_key("sliding_window")) {
    spec.text.sliding_window = cfg.int_or("sliding_window", 0, 1, kMaxSize);
  } else {
    spec.text.sliding_window = 4096;
  }
  spec.text.sliding_layers = spec.text.sliding_window > 0 ? spec.text.layers : 0;
}

// configuration_qwen2.py: vocab 151936, intermediate 22016, MHA by default;
// modeling_qwen2.py: q/k/v_proj with bias=True, o_proj bias=False.
void build_qwen2(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Qwen2Config";
  d.vocab = 151936;
  d.intermediate = 22016;
  d.max_positions = 32768;
  d.qkv_bias_always = true;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  // Qwen2 uses the window only with use_sliding_window, on layers >= max_window_layers.
  if (cfg.bool_or("use_sliding_window", false) && cfg.has("sliding_window")) {
    const int64_t mwl = cfg.int_or("max_window_layers", 28, 0, kMaxSize);
    spec.text.sliding_window = cfg.int_req("sliding_window");
    spec.text.sliding_layers = spec.text.layers > mwl ? spec.text.layers - mwl : 0;
  }
}

// configuration_qwen3.py: head_dim 128 by default, attention_bias False;
// modeling_qwen3.py adds q_norm / k_norm (RMSNorm over head_dim) per layer.
void build_qwen3(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Qwen3Config";
  d.vocab = 151936;
  d.intermediate = 22016;
  d.head_dim = 128;
  d.max_positions = 32768;
  d.has_mlp_bias = false;
  d.qk_norm = true;
  build_llama_like(cfg, spec, d);
  if (cfg.bool_or("use_sliding_window", false) && cfg.has("sliding_window")) {
    const int64_t mwl = cfg.int_or("max_window_layers", 28, 0, kMaxSize);
    spec.text.sliding_window = cfg.int_req("sliding_window");
    spec.text.sliding_layers = spec.text.layers > mwl ? spec.text.layers - mwl : 0;
  }
}

}  // namespace vram::detail

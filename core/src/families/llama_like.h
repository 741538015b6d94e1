// Private: the Llama-shaped decoder builder shared by several adapters.
#pragma once

#include <cstdint>

#include "vram/json_reader.h"
#include "vram/model.h"

namespace vram::detail {

// Defaults of one transformers config class (configuration_<family>.py).
struct LlamaLikeDefaults {
  const char* config_class = "LlamaConfig";
  int64_t vocab = 32000;
  int64_t hidden = 4096;
  int64_t intermediate = 11008;
  int64_t layers = 32;
  int64_t heads = 32;
  int64_t kv_heads = 0;  // 0: defaults to heads (MHA)
  int64_t head_dim = 0;  // 0: hidden / heads
  int64_t max_positions = 2048;
  bool tie = false;
  const char* activation = "silu";
  bool qkv_bias_always = false;  // Qwen2: q/k/v always have a bias, o_proj never
  bool has_mlp_bias = true;      // the config has an mlp_bias switch (Llama)
  bool qk_norm = false;          // Qwen3: q_norm / k_norm over head_dim
};

AttnKind attention_kind(int64_t heads, int64_t kv_heads);

void build_llama_like(const JsonReader& cfg, ModelSpec& spec, const LlamaLikeDefaults& d);

}  // namespace vram::detail

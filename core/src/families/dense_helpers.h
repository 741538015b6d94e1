// Private: reading one config class's keys for the dense family adapters.
//
// transformers fills every key a config.json omits from the config class's
// __init__ defaults, and several classes accept alias keys through
// `attribute_map` (GPT2Config maps hidden_size to n_embd). ConfigKeys does the
// same and records each default it applies as a note on the spec, so the user
// sees which sizes were not in their config.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vram/json_reader.h"
#include "vram/model.h"

namespace vram::detail {

class ConfigKeys {
 public:
  // `config_class` names the class and file the defaults come from, e.g.
  // "GPT2Config (configuration_gpt2.py)".
  ConfigKeys(const JsonReader& cfg, ModelSpec& spec, std::string config_class)
      : cfg_(cfg), spec_(spec), config_class_(std::move(config_class)) {}

  const JsonReader& cfg() const { return cfg_; }

  // The first of `keys` present and not null (transformers' attribute_map
  // aliases), or the first key when none is.
  std::string key(std::initializer_list<const char*> keys) const;
  // JSON path of key(keys), for error messages.
  std::string path(std::initializer_list<const char*> keys) const { return cfg_.child_path(key(keys)); }

  // A size in [lo, hi]; the class default (noted) when every alias is missing.
  int64_t size(std::initializer_list<const char*> keys, int64_t fallback, int64_t lo = 1, int64_t hi = kMaxSize) const;
  // A structural switch (bias, tying, layout); the class default (noted) when missing.
  bool flag(const char* key, bool fallback) const;
  // A string setting; the class default when missing (not noted: activation
  // names and similar do not change the count).
  std::string str(std::initializer_list<const char*> keys, const std::string& fallback) const;

 private:
  void note_default(const std::string& key, const std::string& value) const;

  const JsonReader& cfg_;
  ModelSpec& spec_;
  std::string config_class_;
};

// Fails with `inconsistent` at `num_path` unless `den` divides `num`
// ("model.config.n_embd (770) is not divisible by model.config.n_head (12)").
void check_divisible(const std::string& num_path, int64_t num, const std::string& den_path, int64_t den);

// Fails with `inconsistent` at `kv_path` unless the key/value head count
// divides the query head count (grouped-query attention needs whole groups).
void check_kv_heads(const std::string& kv_path, int64_t kv_heads, const std::string& heads_path, int64_t heads);

// transformers' layer_types (one "sliding_attention" / "full_attention" per
// layer): how many layers slide, or nullopt when the config has no list.
// Fails with `inconsistent` at layer_types unless it has `layers` entries.
std::optional<int64_t> listed_sliding_layers(const JsonReader& cfg, int64_t layers);

// A hybrid's layer_types naming two kinds of layer (Qwen3-Next
// "linear_attention" / "full_attention", LFM2 "conv" / "full_attention"):
// true where an entry is `marked`. Fails with `inconsistent` at layer_types
// unless it has `layers` entries, and with `unknown_value` at an entry of
// neither kind (the message names `family`'s two kinds).
std::vector<bool> listed_layer_kinds(const JsonReader& cfg, int64_t layers, const std::string& marked,
                                     const std::string& other, const std::string& family);

// Defaults of a multi-head-attention stack with plain (fc1-act-fc2) MLP and
// LayerNorm, the shape BERT, GPT-NeoX and OPT share.
struct MhaLayerNormDefaults {
  int64_t vocab;
  int64_t hidden;
  const char* intermediate_key;  // "intermediate_size" or OPT's "ffn_dim"
  int64_t intermediate;
  int64_t layers;
  int64_t heads;
  const char* activation_key;  // "hidden_act" or "activation_function"
  const char* activation;
};

// Reads vocab, hidden, intermediate, layers and heads with the class defaults
// (noted when missing), checks hidden % heads, and sets an MHA / plain-MLP /
// LayerNorm text stack.
void read_mha_layernorm_stack(const ConfigKeys& k, const JsonReader& cfg, ModelSpec& spec,
                              const MhaLayerNormDefaults& d);

// The checkpoint dtype ("torch_dtype", or "dtype" from transformers 4.56 on).
void read_dtype(const JsonReader& cfg, ModelSpec& spec);

}  // namespace vram::detail

#include "families/dense_helpers.h"

#include <algorithm>

namespace vram::detail {

std::string ConfigKeys::key(std::initializer_list<const char*> keys) const {
  for (const char* k : keys) {
    if (cfg_.has(k)) return k;
  }
  return *keys.begin();
}

void ConfigKeys::note_default(const std::string& key, const std::string& value) const {
  spec_.notes.push_back(key + " missing: using " + config_class_ + " default " + value);
}

int64_t ConfigKeys::size(std::initializer_list<const char*> keys, int64_t fallback, int64_t lo, int64_t hi) const {
  const std::string k = key(keys);
  if (!cfg_.has(k)) note_default(k, std::to_string(fallback));
  return cfg_.int_or(k, fallback, lo, hi);
}

bool ConfigKeys::flag(const char* key, bool fallback) const {
  if (!cfg_.has(key)) note_default(key, fallback ? "true" : "false");
  return cfg_.bool_or(key, fallback);
}

std::string ConfigKeys::str(std::initializer_list<const char*> keys, const std::string& fallback) const {
  return cfg_.str_or(key(keys), fallback);
}

void check_divisible(const std::string& num_path, int64_t num, const std::string& den_path, int64_t den) {
  if (den <= 0 || num % den != 0) {
    fail(
        errc::kInconsistent, num_path,
        num_path + " (" + std::to_string(num) + ") is not divisible by " + den_path + " (" + std::to_string(den) + ")");
  }
}

void check_kv_heads(const std::string& kv_path, int64_t kv_heads, const std::string& heads_path, int64_t heads) {
  if (kv_heads > heads || heads % kv_heads != 0) {
    fail(
        errc::kInconsistent, kv_path,
        kv_path + " (" + std::to_string(kv_heads) + ") must divide " + heads_path + " (" + std::to_string(heads) + ")");
  }
}

std::optional<int64_t> listed_sliding_layers(const JsonReader& cfg, int64_t layers) {
  const auto types = cfg.str_list_or("layer_types", {});
  if (types.empty()) return std::nullopt;
  if (static_cast<int64_t>(types.size()) != layers) {
    fail(errc::kInconsistent, cfg.child_path("layer_types"),
         cfg.child_path("layer_types") + " has " + std::to_string(types.size()) + " entries but " +
             cfg.child_path("num_hidden_layers") + " is " + std::to_string(layers));
  }
  return std::count(types.begin(), types.end(), "sliding_attention");
}

std::vector<bool> listed_layer_kinds(const JsonReader& cfg, int64_t layers, const std::string& marked,
                                     const std::string& other, const std::string& family) {
  const auto types = cfg.str_list_or("layer_types", {});
  if (static_cast<int64_t>(types.size()) != layers) {
    fail(errc::kInconsistent, cfg.child_path("layer_types"),
         cfg.child_path("layer_types") + " has " + std::to_string(types.size()) + " entries for " +
             std::to_string(layers) + " layers");
  }
  std::vector<bool> at(types.size(), false);
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != marked && types[i] != other) {
      fail(errc::kUnknownValue, cfg.child_path("layer_types") + "[" + std::to_string(i) + "]",
           cfg.child_path("layer_types") + "[" + std::to_string(i) + "] is " + vram::quoted(types[i]) + "; " + family +
               " layers are \"" + marked + "\" or \"" + other + "\"");
    }
    at[i] = types[i] == marked;
  }
  return at;
}

void read_dtype(const JsonReader& cfg, ModelSpec& spec) {
  // transformers >= 4.56 writes "dtype"; older checkpoints "torch_dtype".
  spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));
}

void read_mha_layernorm_stack(const ConfigKeys& k, const JsonReader& cfg, ModelSpec& spec,
                              const MhaLayerNormDefaults& d) {
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, d.vocab);
  t.hidden = k.size({"hidden_size"}, d.hidden);
  t.intermediate = k.size({d.intermediate_key}, d.intermediate);
  t.layers = k.size({"num_hidden_layers"}, d.layers, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, d.heads, 1, 1 << 20);
  check_divisible(cfg.child_path("hidden_size"), t.hidden, cfg.child_path("num_attention_heads"), t.heads);
  t.kv_heads = t.heads;
  t.head_dim = t.hidden / t.heads;
  t.v_head_dim = t.head_dim;
  t.attention = AttnKind::kMha;
  t.mlp = MlpKind::kPlain;
  t.norm = NormKind::kLayerNorm;
  t.activation = k.str({d.activation_key}, d.activation);
}

}  // namespace vram::detail

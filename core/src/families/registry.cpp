// Dispatch from config.json model_type to a family adapter.
#include <algorithm>

#include "families/family_list.h"
#include "families/llama_like.h"
#include "memory/bytes.h"
#include "reach.h"
#include "vram/families.h"

namespace vram {

// The names alone (family_list.h): every module reports them all, and
// finds a builder through reach::find_adapter.
std::vector<std::string> supported_model_types() {
  std::vector<std::string> out = {
#define VRAM_NAME(name) #name,
      VRAM_COMMON_FAMILIES(VRAM_NAME) VRAM_OTHER_FAMILIES(VRAM_NAME)
#undef VRAM_NAME
  };
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Sanity limit: no real checkpoint is near 10^14 parameters; anything above is
// an input mistake (e.g. vocab_size 10^12) and would overflow byte products.
constexpr int64_t kMaxParams = int64_t{100'000'000'000'000};

void check_total(const ModelSpec& s, const std::string& path) {
  const int64_t n = s.params_total();
  if (n <= 0 || n > kMaxParams) {
    fail(errc::kOutOfRange, path,
         path + " describes " + std::to_string(n) + " parameters, outside 1..1e14: check the sizes");
  }
}

}  // namespace

namespace {

// config.json's quantization_config (transformers utils/quantization_config.py;
// compressed-tensors keeps the scheme in config_groups.<group>.weights).
void read_quantization(const json& config, ModelSpec& spec) {
  const auto q = config.find("quantization_config");
  if (q == config.end() || !q->is_object()) return;
  const auto text = [](const json& o, const char* key) {
    const auto v = o.find(key);
    return v != o.end() && v->is_string() ? v->get<std::string>() : std::string();
  };
  const auto number = [](const json& o, const char* key) {
    const auto v = o.find(key);
    return v != o.end() && v->is_number_integer() ? v->get<int64_t>() : int64_t{0};
  };
  spec.quant_method = text(*q, "quant_method");
  spec.quant_bits = number(*q, "bits");
  const auto groups = q->find("config_groups");
  if (groups == q->end() || !groups->is_object()) return;
  for (const auto& [name, g] : groups->items()) {
    if (!g.is_object() || g.find("weights") == g.end() || !g["weights"].is_object()) continue;
    spec.quant_bits = number(g["weights"], "num_bits");
    spec.quant_float = text(g["weights"], "type") == "float";
    break;
  }
}

}  // namespace

Result<ModelSpec> model_from_config(const json& config, const std::string& path, bool allow_generic) {
  return attempt<ModelSpec>([&]() -> Result<ModelSpec> {
    JsonReader cfg(config, path);
    const bytes::Driver driver(path);
    ModelSpec spec;
    const auto mt = cfg.str_opt("model_type");
    if (!mt || mt->empty()) {
      fail(errc::kMissingField, cfg.child_path("model_type"),
           cfg.child_path("model_type") + " is required (it selects the architecture)");
    }
    spec.model_type = *mt;
    if (const json* arch = cfg.get("architectures");
        arch != nullptr && arch->is_array() && !arch->empty() && (*arch)[0].is_string()) {
      spec.architecture = (*arch)[0].get<std::string>();
    }
    if (const detail::Adapter build = reach::find_adapter(spec.model_type, cfg.child_path("model_type"))) {
      spec.family = spec.model_type;
      build(cfg, spec);
    } else if (allow_generic) {
      spec.family = "generic";
      spec.exact = false;
      spec.inexact.push_back("model_type " + vram::quoted(spec.model_type) +
                             " has no exact adapter: estimated as a Llama-shaped decoder");
      detail::LlamaLikeDefaults d;
      d.config_class = "LlamaConfig (generic fallback)";
      detail::build_llama_like(cfg, spec, d);
    } else {
      fail(errc::kUnsupportedModel, cfg.child_path("model_type"),
           "model_type " + vram::quoted(spec.model_type) + " is not supported; supported: " +
               join(supported_model_types()) + " (or ask for a generic estimate with model.allow_generic)");
    }
    check_total(spec, path);
    read_quantization(config, spec);
    return spec;
  });
}

Result<ModelSpec> model_from_custom(const json& custom, const std::string& path) {
  return attempt<ModelSpec>([&]() -> Result<ModelSpec> {
    JsonReader c(custom, path);
    const bytes::Driver driver(path);
    ModelSpec spec;
    spec.model_type = "custom";
    spec.family = "custom";
    spec.architecture = "Llama-shaped decoder (custom sizes)";
    spec.exact = false;
    spec.inexact.push_back("custom sizes: a Llama-shaped decoder (gated MLP, RMSNorm, untied head) is assumed");
    LayerStack& t = spec.text;
    t.name = "text";
    t.layers = c.int_req("layers", 1, 100000);
    t.hidden = c.int_req("hidden");
    t.heads = c.int_req("heads", 1, 1 << 20);
    t.kv_heads = c.int_or("kv_heads", t.heads, 1, 1 << 20);
    const bool hd = c.has("head_dim");
    t.head_dim = c.int_or("head_dim", 0, 1, 1 << 20);
    detail::check_heads(c, t, "heads", "kv_heads", hd);
    if (t.head_dim == 0) t.head_dim = t.hidden / t.heads;
    t.v_head_dim = t.head_dim;
    // Llama's SwiGLU width is about 8h/3 rounded to a multiple of 256
    // (Touvron et al. 2023, §2.2); used only when intermediate is not given.
    const int64_t default_inter = ((8 * t.hidden / 3 + 255) / 256) * 256;
    if (!c.has("intermediate")) spec.notes.push_back("intermediate missing: using 8/3*hidden rounded to 256");
    t.intermediate = c.int_or("intermediate", default_inter);
    spec.vocab = c.int_req("vocab");
    spec.tie_word_embeddings = c.bool_or("tie_word_embeddings", false);
    t.attention = detail::attention_kind(t.heads, t.kv_heads);
    t.activation = "silu";
    const int64_t L = t.layers, h = t.hidden;
    detail::add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
    detail::add_linear(spec, "q_proj", comp::kAttention, "text", h, t.heads * t.head_dim, false, L);
    detail::add_linear(spec, "k_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, false, L);
    detail::add_linear(spec, "v_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, false, L);
    detail::add_linear(spec, "o_proj", comp::kAttention, "text", t.heads * t.head_dim, h, false, L);
    detail::add_linear(spec, "gate_proj", comp::kMlp, "text", h, t.intermediate, false, L);
    detail::add_linear(spec, "up_proj", comp::kMlp, "text", h, t.intermediate, false, L);
    detail::add_linear(spec, "down_proj", comp::kMlp, "text", t.intermediate, h, false, L);
    detail::add_norm(spec, "input_layernorm", "text", h, false, L);
    detail::add_norm(spec, "post_attention_layernorm", "text", h, false, L);
    detail::add_norm(spec, "norm", "text", h, false, 1);
    if (!spec.tie_word_embeddings) detail::add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
    check_total(spec, path);
    // A stated total overrides the shape-derived one: the difference is kept
    // as an explicit "other" group so the user sees it.
    // "7B" as in seed 004's "num_parameters" (json_reader.h parse_size).
    if (auto stated = c.size_opt("params", SizeUnit::kCount, 1, kMaxParams)) {
      const int64_t derived = spec.params_total();
      if (*stated < derived) {
        fail(errc::kInconsistent, c.child_path("params"),
             c.child_path("params") + " (" + std::to_string(*stated) + ") is smaller than the " +
                 std::to_string(derived) + " parameters the given sizes imply");
      }
      if (*stated > derived) detail::add_other(spec, "unaccounted", "other", "text", *stated - derived, 1);
    }
    return spec;
  });
}

}  // namespace vram

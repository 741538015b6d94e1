// The request's model sources (config, custom, safetensors) and the
// checkpoint cross-check (vram/checkpoint.h).
#include "vram/checkpoint.h"

#include <algorithm>

#include "checkpoint/inventory.h"
#include "reach.h"
#include "vram/families.h"

namespace vram {

namespace {

constexpr int64_t kMaxParams = int64_t{100'000'000'000'000};  // as families/registry.cpp

bool known_type(const json* config) {
  if (config == nullptr || !config->is_object()) return false;
  auto it = config->find("model_type");
  if (it == config->end() || !it->is_string()) return false;
  const auto types = supported_model_types();
  return std::find(types.begin(), types.end(), it->get<std::string>()) != types.end();
}

void fill_identity(ModelSpec& spec, const json* config) {
  spec.family = "safetensors";
  spec.model_type = "unknown";
  spec.architecture = "from the checkpoint's tensors";
  if (config == nullptr || !config->is_object()) return;
  if (auto it = config->find("model_type"); it != config->end() && it->is_string()) {
    spec.model_type = it->get<std::string>();
  }
  if (auto it = config->find("architectures");
      it != config->end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
    spec.architecture = (*it)[0].get<std::string>();
  }
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (auto it = config->find(key); it != config->end() && it->is_string() && spec.torch_dtype.empty()) {
      spec.torch_dtype = it->get<std::string>();
    }
  }
}

}  // namespace

Result<ModelSpec> model_from_safetensors(const json& inventory, const json* config, const std::string& path) {
  return attempt<ModelSpec>([&]() -> Result<ModelSpec> {
    JsonReader inv(inventory, path);
    if (!inventory.is_object()) fail(errc::kWrongType, path, path + " must be an object {tensors, metadata}");
    ModelSpec spec;
    spec.checkpoint.present = true;
    const auto tensors = detail::read_inventory(inv, spec.checkpoint);
    fill_identity(spec, config);
    detail::build_from_tensors(tensors, config, path, spec);
    const int64_t n = spec.params_total();
    if (n <= 0 || n > kMaxParams) {
      fail(errc::kOutOfRange, path, path + " describes " + std::to_string(n) + " parameters, outside 1..1e14");
    }
    return spec;
  });
}

Result<ModelSpec> model_from_sources(const json& model, const std::string& path) {
  return attempt<ModelSpec>([&]() -> Result<ModelSpec> {
    JsonReader m(model, path);
    const json* config = m.get("config");
    const json* st = m.get("safetensors");
    if (m.has("gguf") || m.has("mmproj")) return reach::model_from_gguf(model, path);
    if (st != nullptr) {
      const std::string sp = m.child_path("safetensors");
      auto from_tensors = reach::model_from_safetensors(*st, config, sp);
      if (!from_tensors.ok()) return from_tensors.error();
      if (!known_type(config)) return from_tensors;
      // A known architecture: the adapter's exact module tree is the model,
      // the checkpoint its cross-check and its stored bytes.
      auto spec = model_from_config(*config, m.child_path("config"), false);
      if (!spec.ok()) return spec.error();
      ModelSpec out = std::move(spec.value());
      out.checkpoint = from_tensors.value().checkpoint;
      return out;
    }
    if (config != nullptr) return model_from_config(*config, m.child_path("config"), m.bool_or("allow_generic", false));
    if (m.has("custom")) return model_from_custom(*m.get("custom"), m.child_path("custom"));
    if (m.has("size")) return reach::model_from_size(*m.get("size"), m.child_path("size"));
    fail(errc::kMissingField, m.child_path("config"),
         m.child_path("config") + " (an HF config.json object), " + m.child_path("custom") + ", " +
             m.child_path("size") + ", " + m.child_path("safetensors") + " (the checkpoint's tensor list) or " +
             m.child_path("gguf") + " (a GGUF file's header) is required");
  });
}

json checkpoint_json(const ModelSpec& spec) {
  const CheckpointSummary& c = spec.checkpoint;
  if (!c.present) return nullptr;
  json out = {{"tensors", c.tensors},
              {"stored_bytes", c.stored_bytes},
              {"stored_elements", c.stored_elements},
              {"elements_by_dtype", c.elements_by_dtype},
              {"params", c.params},
              {"quantization", c.quantization},
              {"unplaced", c.unplaced},
              {"unplaced_params", c.unplaced_params},
              {"buffers", c.buffers},
              {"buffer_elements", c.buffer_elements}};
  if (c.declared_total_size >= 0) out["declared_total_size"] = c.declared_total_size;
  if (c.declared_total_parameters >= 0) out["declared_total_parameters"] = c.declared_total_parameters;
  // Cross-check: the model's exact count against what the checkpoint holds,
  // with the reasons a difference is expected.
  const int64_t model = spec.params_total();
  const int64_t diff = c.params - model;
  json explained = json::array();
  if (c.extra_layer_params > 0) {
    explained.push_back({{"reason",
                          "multi-token-prediction weights (layers past num_hidden_layers, or an mtp.* module), not "
                          "loaded"},
                         {"params", c.extra_layer_params}});
  }
  if (c.buffer_elements > 0) {
    explained.push_back(
        {{"reason", "buffers stored with the weights, not parameters (not in either count)"}, {"params", 0}});
  }
  if (spec.family != "safetensors" && spec.tie_word_embeddings && diff > 0) {
    for (const auto& g : spec.groups) {
      if (g.kind == ModuleKind::kEmbedding && g.component == std::string(comp::kEmbeddings) && g.stack == "text" &&
          g.total() == diff) {
        explained.push_back(
            {{"reason", "tied output head stored as a separate tensor (counted once by the model)"}, {"params", diff}});
        break;
      }
    }
  }
  out["cross_check"] = {{"model_params", model},
                        {"checkpoint_params", c.params},
                        {"difference", diff},
                        {"matches", diff == 0},
                        {"explained", explained}};
  if (c.declared_total_size >= 0 && c.declared_total_size != c.stored_bytes) {
    out["cross_check"]["total_size_difference"] = c.declared_total_size - c.stored_bytes;
  }
  return out;
}

}  // namespace vram

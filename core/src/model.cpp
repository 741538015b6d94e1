#include "vram/model.h"

namespace vram {

int64_t ModelSpec::params_total() const {
  int64_t n = 0;
  for (const auto& g : groups) n += g.total();
  return n;
}

int64_t ModelSpec::params_active() const {
  int64_t n = 0;
  for (const auto& g : groups) n += g.numel * (g.instances * g.active_num / g.active_den);
  return n;
}

std::map<std::string, int64_t> ModelSpec::params_by_component() const {
  std::map<std::string, int64_t> out;
  for (const auto& g : groups) out[g.component] += g.total();
  return out;
}

int64_t ModelSpec::layer_span(const ParamGroup& g) const {
  if (g.stack != "text" || g.layer_index >= 0) return 0;
  const int64_t span = g.layers == LayerSet::kMoe     ? text.moe_layers
                       : g.layers == LayerSet::kDense ? text.layers - text.moe_layers
                                                      : text.layers;
  return span > 0 && g.instances >= span && g.instances % span == 0 ? span : 0;
}

const LayerStack* ModelSpec::stack(const std::string& name) const {
  if (text.name == name) return &text;
  for (const auto& s : extra_stacks) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace vram

#include "vram/model.h"

#include <algorithm>

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
  const int64_t span = g.layers == LayerSet::kMoe         ? text.moe_layers
                       : g.layers == LayerSet::kDense     ? text.layers - text.moe_layers
                       : g.layers == LayerSet::kSsm       ? text.ssm_layers
                       : g.layers == LayerSet::kAttention ? text.attention_layers()
                                                          : text.layers;
  return span > 0 && g.instances >= span && g.instances % span == 0 ? span : 0;
}

int64_t LayerStack::attention_layers() const {
  if (heads == 0) return 0;
  if (ssm_with_attention) return layers;
  return layers - std::min(ssm_layers, layers);
}

bool LayerStack::ssm_layer(int64_t l) const {
  if (!ssm_at.empty()) return l >= 0 && l < static_cast<int64_t>(ssm_at.size()) && ssm_at[static_cast<size_t>(l)];
  return l >= layers - ssm_layers;
}

bool LayerStack::carries(LayerSet set, int64_t l) const {
  switch (set) {
    case LayerSet::kEvery:
      return true;
    case LayerSet::kMoe:
      return l >= layers - moe_layers;
    case LayerSet::kDense:
      return l < layers - moe_layers;
    case LayerSet::kSsm:
      return ssm_layer(l);
    case LayerSet::kAttention:
      return heads > 0 && (ssm_with_attention || !ssm_layer(l));
  }
  return false;
}

int64_t LayerStack::count(LayerSet set, int64_t begin, int64_t n) const {
  int64_t c = 0;
  for (int64_t l = begin; l < begin + n; ++l) c += carries(set, l) ? 1 : 0;
  return c;
}

const LayerStack* ModelSpec::stack(const std::string& name) const {
  if (text.name == name) return &text;
  for (const auto& s : extra_stacks) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace vram

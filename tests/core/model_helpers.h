// Building a model and reading one layer's saved tensors in a test: shared by
// the family tests so each file does not carry its own copy.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "memory/recipe.h"
#include "vram/families.h"
#include "vram/request.h"

namespace vram::testing {

// The ModelSpec of an HF config, failing the test (with the error's path)
// when the core refuses it.
inline ModelSpec build(const json& cfg) {
  auto r = model_from_config(cfg, "model.config");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().path + ": " + r.error().message);
  return r.ok() ? r.value() : ModelSpec{};
}

// Bytes per token of the saved item whose name contains `needle` in one
// layer (a MoE layer when `moe_layer`) of `req`'s text stack; -1 when there
// is none.
inline double saved_item(const json& req, const std::string& needle, bool moe_layer = false) {
  auto parsed = parse_request(req);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  if (!parsed.ok()) return -1;
  const Request& q = parsed.value();
  const auto acts = memory::layer_activations(q, q.model.text, memory::plan_trainable(q), memory::dtypes_for(q),
                                              q.train.seq_len, moe_layer, true);
  for (const auto& i : acts.items) {
    if (i.name.find(needle) != std::string::npos) return i.bytes_per_token;
  }
  return -1;
}

}  // namespace vram::testing

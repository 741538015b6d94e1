// Running an estimate in a test and reading its result: shared by the
// training tests so each file does not carry its own copy.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "vram/api.h"

namespace vram::testing {

// The result of `req`, failing the test if it is an error.
inline json estimate_ok(const json& req) {
  json r = estimate(req);
  EXPECT_FALSE(r.contains("error")) << r.dump();
  return r;
}

// bytes of the result's component `key`; a missing component fails the test.
inline int64_t component_bytes(const json& r, const std::string& key) {
  for (const auto& c : r["components"]) {
    if (c["key"] == key) return c["bytes"].get<int64_t>();
  }
  ADD_FAILURE() << "no component " << key;
  return -1;
}

// The largest allocated_bytes of the result's "forward" phases; none fails
// the test.
inline int64_t forward_allocated(const json& r) {
  int64_t best = -1;
  for (const auto& p : r["phases"]) {
    if (p["key"] == "forward") best = std::max(best, p["allocated_bytes"].get<int64_t>());
  }
  EXPECT_GE(best, 0) << "no forward phase";
  return best;
}

}  // namespace vram::testing

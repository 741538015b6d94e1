// Private: numbers in formulas shown to people.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "vram/number_text.h"  // fmt_int

namespace vram {

// Four significant digits (a figure of the time model in JSON): printed and
// read back, so native and WASM give the same bytes; 0 for a non-finite value.
inline double sig4(double v) {
  if (!std::isfinite(v) || v == 0) return 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::strtod(buf, nullptr);
}

// 1610612736 -> "1.50 GiB"
inline std::string fmt_gib(int64_t bytes) {
  const int64_t centi = (bytes * 100 + (int64_t{1} << 29)) >> 30;
  const int64_t frac = centi % 100;
  return std::to_string(centi / 100) + "." + (frac < 10 ? "0" : "") + std::to_string(frac) + " GiB";
}

}  // namespace vram

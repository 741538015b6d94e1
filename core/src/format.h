// Private: numbers in formulas shown to people.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "vram/number_text.h"  // fmt_int

namespace vram {

// 1610612736 -> "1.50 GiB"
inline std::string fmt_gib(int64_t bytes) {
  const int64_t centi = (bytes * 100 + (int64_t{1} << 29)) >> 30;
  const int64_t frac = centi % 100;
  return std::to_string(centi / 100) + "." + (frac < 10 ? "0" : "") + std::to_string(frac) + " GiB";
}

}  // namespace vram

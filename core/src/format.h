// Private: numbers in formulas shown to people.
#pragma once

#include <cstdint>
#include <string>

namespace vram {

// 8030261248 -> "8,030,261,248"
inline std::string fmt_int(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > (v < 0 ? 1 : 0); i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// 1610612736 -> "1.50 GiB"
inline std::string fmt_gib(int64_t bytes) {
  const int64_t centi = (bytes * 100 + (int64_t{1} << 29)) >> 30;
  const int64_t frac = centi % 100;
  return std::to_string(centi / 100) + "." + (frac < 10 ? "0" : "") + std::to_string(frac) + " GiB";
}

}  // namespace vram

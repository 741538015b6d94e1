// An integer as people read it: the core's formulas and notes (format.h) and
// vram-probe's printed counts write it the same way.
#pragma once

#include <cstdint>
#include <string>

namespace vram {

// 8030261248 -> "8,030,261,248"
// Written forward, digit by digit: std::string::insert at computed offsets
// drew GCC 12's -Wrestrict false positive (GCC bug 105329) in every file
// that printed a count.
inline std::string fmt_int(int64_t v) {
  const std::string digits = std::to_string(v);
  const size_t sign = v < 0 ? 1 : 0;
  const size_t n = digits.size() - sign;
  std::string s(digits, 0, sign);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) s += ',';
    s += digits[sign + i];
  }
  return s;
}

}  // namespace vram

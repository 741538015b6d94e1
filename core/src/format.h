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

}  // namespace vram

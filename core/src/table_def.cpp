// Def and split_bars (table_def.h).
#include "table_def.h"

namespace vram::detail {

json Def::to_json() const {
  switch (kind) {
    case Kind::kInt:
      return i;
    case Kind::kNumber:
      return d;
    case Kind::kBool:
      return b;
    case Kind::kString:
      return s;
    case Kind::kList:
      return split_bars(s);
    case Kind::kNull:
      break;
  }
  return nullptr;
}

std::vector<std::string> split_bars(std::string_view text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t from = 0;
  while (true) {
    const size_t bar = text.find('|', from);
    out.emplace_back(text.substr(from, bar == std::string_view::npos ? std::string_view::npos : bar - from));
    if (bar == std::string_view::npos) return out;
    from = bar + 1;
  }
}

}  // namespace vram::detail

// Tables written as data (issue 18: as constexpr rows they cost the
// WebAssembly module bytes of data instead of code). A default value in a
// constexpr row, and the '|'-separated lists the rows use for enum values,
// aliases, methods and string lists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vram/json_reader.h"

namespace vram::detail {

// Null, an integer, a number, a bool, a string, or a list of strings written
// "a|b|c" (an empty text is an empty list).
struct Def {
  enum class Kind : unsigned char { kNull, kInt, kNumber, kBool, kString, kList };
  Kind kind = Kind::kNull;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  const char* s = nullptr;

  constexpr Def() = default;
  constexpr Def(std::nullptr_t) {}                             // NOLINT(google-explicit-constructor)
  constexpr Def(int v) : kind(Kind::kInt), i(v) {}             // NOLINT(google-explicit-constructor)
  constexpr Def(int64_t v) : kind(Kind::kInt), i(v) {}         // NOLINT(google-explicit-constructor)
  constexpr Def(double v) : kind(Kind::kNumber), d(v) {}       // NOLINT(google-explicit-constructor)
  constexpr Def(bool v) : kind(Kind::kBool), b(v) {}           // NOLINT(google-explicit-constructor)
  constexpr Def(const char* v) : kind(Kind::kString), s(v) {}  // NOLINT(google-explicit-constructor)
  static constexpr Def list(const char* bars) {
    Def x;
    x.kind = Kind::kList;
    x.s = bars;
    return x;
  }

  json to_json() const;
};

// "a|b|c" -> {"a", "b", "c"}; "" -> {}; "|a" -> {"", "a"}.
std::vector<std::string> split_bars(std::string_view text);

}  // namespace vram::detail

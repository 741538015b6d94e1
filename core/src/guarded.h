// guarded(): where every public entry point stops its failures (api.cpp,
// import.cpp, export.cpp, suggest.cpp).
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "vram/api.h"
#include "vram/status.h"

namespace vram {

// The one place where every failure stops (STYLE.md: no exception out of
// core's public API). Every public entry point runs its body through
// guarded(): a fail() becomes its Error; anything else (a std::exception in
// the build with exceptions, fail_internal() in the one without: status.h)
// becomes an `internal` error. `body` returns the result as json, or as the text the
// *_json functions hand out (then the error comes back as text too).
template <typename Body>
auto guarded(Body&& body) -> decltype(body()) {
  using Out = decltype(body());
  static_assert(std::is_same_v<Out, json> || std::is_same_v<Out, std::string>);
  const auto out = [](const Error& e) -> Out {
    if constexpr (std::is_same_v<Out, std::string>) {
      return error_json(e).dump(2);
    } else {
      return error_json(e);
    }
  };
  std::optional<Out> result;
  if (auto e = recover([&] { result.emplace(body()); }, /*internal=*/true)) return out(*e);
  return std::move(*result);
}

}  // namespace vram

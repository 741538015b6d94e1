// Included before everything else (-include) in the build of core without
// C++ exceptions (VRAM_NO_EXCEPTIONS, status.h; wasm/CMakeLists.txt).
//
// nlohmann/json throws its type and range errors with JSON_THROW, which a
// build without exceptions turns into std::abort() unless JSON_THROW_USER
// names another function (nlohmann/json detail/macro_scope.hpp, "override
// exception macros"): here, an internal error at the public API's recover().
// Its try and catch blocks become if (true) / if (false) on their own.
#pragma once

#include <exception>

namespace vram {
[[noreturn]] void json_threw(const std::exception& e);
}  // namespace vram

#define JSON_THROW_USER(exception) ::vram::json_threw(exception)

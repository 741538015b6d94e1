// Errors and results of the public API.
//
// No exception leaves core's public API (STYLE.md, google/draco status.h): every
// public function returns a Result<T> that holds either a value or an Error
// with a stable code, a message that names the offending field, and the JSON
// path of that field ("train.seq_len", "model.config.hidden_size").
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace vram {

// Stable error codes. They cross the JSON boundary as strings and are part of
// the contract: add new ones, never rename.
namespace errc {
inline constexpr const char* kBadJson = "bad_json";            // not parseable
inline constexpr const char* kMissingField = "missing_field";  // required key absent
inline constexpr const char* kWrongType = "wrong_type";        // e.g. string where int expected
inline constexpr const char* kOutOfRange = "out_of_range";     // zero, negative, absurd, NaN
inline constexpr const char* kInconsistent = "inconsistent";   // fields disagree (hidden % heads)
inline constexpr const char* kUnsupportedModel = "unsupported_model";
inline constexpr const char* kUnknownValue = "unknown_value";  // enum value not recognised
inline constexpr const char* kUnsupported = "unsupported";     // valid but not modelled yet
inline constexpr const char* kUnknownField = "unknown_field";  // a key the request format does not have
inline constexpr const char* kInternal = "internal";
// The request is valid, but this build leaves out the code that answers it:
// the WASM module a first visit loads carries the common families only
// (wasm/reach_lite.cpp); the page asks the full module (vram_plan) instead.
// Never seen from the CLI, the Python module or the full WASM modules.
inline constexpr const char* kNotInModule = "not_in_module";
}  // namespace errc

struct Error {
  std::string code;
  std::string message;
  std::string path;
};

// How a failure travels from fail() to the nearest recover() (below). Core
// is built two ways from the same sources:
// - with C++ exceptions (native: the CLI, the tests, the fuzzers, the Python
//   module): fail() throws Failure and recover() catches it;
// - without (VRAM_NO_EXCEPTIONS, -fno-exceptions: the WASM modules, where
//   exception handling was a fifth of each binary, about 35 KiB gzip;
//   wasm/CMakeLists.txt): recover() marks its place with setjmp and fail()
//   longjmps back to it. Destructors between the two do not run, so what the failed
//   work had allocated stays allocated: recover() counts these unwinds
//   (unwind_count) and the page replaces a module that has unwound (wasm/
//   vram.js). State that outlives a call and is restored by a destructor
//   (bytes::Driver's path) is saved and restored by recover() itself.
// Either way, parse code calls fail() and stops there: the per-field checks
// stay one line each.
// A std::exception that carries an Error (the base of Failure and ApiFailure).
template <int Kind>
class CarriedError : public std::runtime_error {
 public:
  explicit CarriedError(Error e) : std::runtime_error(e.message), error_(std::move(e)) {}
  const Error& error() const { return error_; }

 private:
  Error error_;
};
// Thrown by fail() in the build with exceptions.
using Failure = CarriedError<0>;
// Thrown by fail_to_api() in the build with exceptions: not a Failure, so only
// a recover() with `internal` stops it.
using ApiFailure = CarriedError<1>;

// Ends the current work with `e` at the nearest recover().
[[noreturn]] void fail(Error e);
[[noreturn]] inline void fail(const char* code, const std::string& path, const std::string& message) {
  fail(Error{code, message, path});
}

// A failure that is a bug, not a bad input (a JSON accessor on the wrong
// type, std::bad_alloc): only a recover() with `internal` set stops it (the
// public API's, api.cpp guarded()), as only that one catches std::exception
// in the exception build. The message is prefixed "internal error: ".
[[noreturn]] void fail_internal(const std::string& what);

// Ends the work with `e` at the public API (guarded()), past every recover()
// without `internal`, as fail_internal() does, but keeping e's code, message
// and path: for an answer no caller inside core may take as "does not fit"
// or re-prefix (errc::kNotInModule).
[[noreturn]] void fail_to_api(Error e);

namespace detail {
std::optional<Error> recover_erased(void (*body)(void*), void* context, bool internal);
}  // namespace detail

// Runs `body` and returns the Error it failed with, or nullopt if it
// finished. With `internal`, internal failures stop here too.
template <typename F>
std::optional<Error> recover(F&& body, bool internal = false) {
  return detail::recover_erased([](void* f) { (*static_cast<std::remove_reference_t<F>*>(f))(); },
                                const_cast<void*>(static_cast<const void*>(&body)), internal);
}

// How many failures have unwound since the program started (each one, in the
// build without exceptions, leaves what it had allocated behind).
uint64_t unwind_count();

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& value() { return std::get<T>(v_); }
  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

// recover() for a body that returns a T (or a Result<T>): its value, or the
// Error it failed with.
template <typename T, typename F>
Result<T> attempt(F&& body, bool internal = false) {
  std::optional<Result<T>> out;
  if (auto e = recover([&] { out.emplace(body()); }, internal)) return std::move(*e);
  return std::move(*out);
}

}  // namespace vram

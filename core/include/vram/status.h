// Errors and results of the public API.
//
// No exception leaves core's public API (STYLE.md, google/draco status.h): every
// public function returns a Result<T> that holds either a value or an Error
// with a stable code, a message that names the offending field, and the JSON
// path of that field ("train.seq_len", "model.config.hidden_size").
#pragma once

#include <stdexcept>
#include <string>
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
}  // namespace errc

struct Error {
  std::string code;
  std::string message;
  std::string path;
};

// Thrown only inside core; every public entry point catches it and returns an
// Error. Keeping parse code exception-based keeps the per-field checks short.
class Failure : public std::runtime_error {
 public:
  explicit Failure(Error e) : std::runtime_error(e.message), error_(std::move(e)) {}
  const Error& error() const { return error_; }

 private:
  Error error_;
};

[[noreturn]] inline void fail(const char* code, const std::string& path, const std::string& message) {
  throw Failure(Error{code, message, path});
}

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

}  // namespace vram

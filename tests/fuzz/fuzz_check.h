// What every fuzzed entry point must answer, whatever the input: checked by
// tests/fuzz/fuzz_target.cpp after each call. A violation prints why and
// aborts, which libFuzzer reports as a crash and saves as an artifact.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

namespace vram::fuzz {

[[noreturn]] inline void violation(const std::string& why, const std::string& answer) {
  std::fprintf(stderr, "fuzz check failed: %s\nanswer: %.2000s\n", why.c_str(), answer.c_str());
  std::abort();
}

// Byte counts anywhere in a result: an integer >= 0 (a wrapped int64 or a
// double that overflowed shows up as a negative or fractional figure).
inline void check_bytes(const nlohmann::json& j, const std::string& path, const std::string& answer) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      const std::string child = path + "." + key;
      const bool bytes_key = key.size() >= 6 && key.compare(key.size() - 6, 6, "_bytes") == 0;
      if (bytes_key && value.is_number()) {
        if (value.is_number_float()) violation(child + " is not an integer", answer);
        if (value.is_number_integer() && !value.is_number_unsigned() && value.get<std::int64_t>() < 0) {
          violation(child + " is negative", answer);
        }
      }
      check_bytes(value, child, answer);
    }
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) check_bytes(j[i], path + "[" + std::to_string(i) + "]", answer);
  }
}

// The text entry points' contract (api.h): one JSON object, either a result or
// {"error": {"code", "message", "path"}} with a non-empty code and message.
inline void check_answer(const std::string& answer) {
  const nlohmann::json j = nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) violation("the answer is not JSON", answer);
  if (!j.is_object()) violation("the answer is not a JSON object", answer);
  if (j.contains("error")) {
    const nlohmann::json& e = j["error"];
    if (!e.is_object()) violation("error is not an object", answer);
    for (const char* key : {"code", "message", "path"}) {
      if (!e.contains(key) || !e[key].is_string()) violation(std::string("error.") + key + " is not a string", answer);
    }
    if (e["code"].get<std::string>().empty() || e["message"].get<std::string>().empty()) {
      violation("error.code or error.message is empty", answer);
    }
    if (e["code"] == "internal") violation("an internal error (an exception escaped the parser)", answer);
    return;
  }
  // What an answer echoes of its input (the YAML reader's "tree", a GGUF
  // header's "metadata") holds the file's own values, not byte counts the
  // core computed: a key "x_bytes: -8" in the file is not a violation.
  for (const auto& [key, value] : j.items()) {
    if (key != "tree" && key != "metadata") check_bytes(value, "." + key, answer);
  }
}

// Entry points that answer something else (an importer's parsed value): only
// the sanitizers judge them.
template <typename T>
requires(!std::is_convertible_v<T, std::string>) void check_answer(const T&) {}

}  // namespace vram::fuzz

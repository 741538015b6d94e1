// Path-aware reading of JSON objects with clear errors.
//
// Every getter validates the type and range of one key and, on failure, throws
// vram::Failure whose path names the key ("model.config.hidden_size"). Callers
// catch at the public API boundary (status.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vram/status.h"

namespace vram {

using json = nlohmann::json;

// Largest integer we accept for a size field by default: 2^24 = 16,777,216.
// Real hidden sizes are <= 2^15 and vocabularies <= 2^19, so this only rejects
// mistakes, and it keeps products of three sizes far below 2^63.
inline constexpr int64_t kMaxSize = int64_t{1} << 24;

class JsonReader {
 public:
  // `j` must outlive the reader. `path` is the dotted path of `j` itself.
  JsonReader(const json& j, std::string path);

  const json& raw() const { return *j_; }
  const std::string& path() const { return path_; }
  std::string child_path(const std::string& key) const;

  bool has(const std::string& key) const;         // present and not null
  bool has_key(const std::string& key) const;     // present, maybe null
  const json* get(const std::string& key) const;  // nullptr if absent or null

  // Integers. `lo`/`hi` bound the accepted range (inclusive).
  int64_t int_req(const std::string& key, int64_t lo = 1, int64_t hi = kMaxSize) const;
  int64_t int_or(const std::string& key, int64_t fallback, int64_t lo = 1, int64_t hi = kMaxSize) const;
  std::optional<int64_t> int_opt(const std::string& key, int64_t lo = 1, int64_t hi = kMaxSize) const;

  // Finite doubles in [lo, hi].
  double num_or(const std::string& key, double fallback, double lo, double hi) const;
  std::optional<double> num_opt(const std::string& key, double lo, double hi) const;

  bool bool_or(const std::string& key, bool fallback) const;
  std::string str_or(const std::string& key, const std::string& fallback) const;
  std::optional<std::string> str_opt(const std::string& key) const;
  std::vector<std::string> str_list_or(const std::string& key, const std::vector<std::string>& fallback) const;

  // Nested object. Fails with wrong_type if present but not an object.
  std::optional<JsonReader> object_opt(const std::string& key) const;
  JsonReader object_req(const std::string& key) const;

 private:
  const json* j_;
  std::string path_;
};

// Parse text into JSON; bad text fails with code bad_json at `path`.
json parse_json_text(const std::string& text, const std::string& path);

// "llama" -> `"llama"` in messages.
std::string quoted(const std::string& s);

}  // namespace vram

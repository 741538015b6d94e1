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

// Human-readable sizes in request files (seed 004 writes "num_parameters":
// "7B"; README "Input rules"). A string is digits, optionally a '.' and more
// digits, then a unit, nothing else (no spaces, signs or exponents):
// - kCount: K = 10^3, M = 10^6, B = 10^9, T = 10^12 (either case: "7B", "7b",
//   "6.7B", "125M");
// - kBytes: B = 1; KB, MB, GB, TB = 10^3..10^12; KiB, MiB, GiB, TiB =
//   2^10..2^40 (exactly these spellings: "80GB", "80GiB", "512MiB").
// The value must be a whole number (of parameters, of bytes). A bare "G",
// "Gb" or "gib" (which could mean either GB or GiB, or bits), a second '.',
// or anything else fails with out_of_range / wrong_type naming `path`.
enum class SizeUnit { kCount, kBytes };
int64_t parse_size(const std::string& text, SizeUnit unit, const std::string& path);

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

  // A count or a byte size, as an integer or as a human-readable string
  // (parse_size below), in [lo, hi].
  std::optional<int64_t> size_opt(const std::string& key, SizeUnit unit, int64_t lo, int64_t hi) const;
  // GiB as a number, or a byte size string ("80GB", "80GiB") converted to GiB.
  std::optional<double> gib_opt(const std::string& key, double lo, double hi) const;

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

// Parse text into JSON. Fails (vram::Failure) with out_of_range when the text
// is larger than limits::kMaxInputBytes or nests deeper than
// limits::kMaxJsonDepth, and with bad_json, at `path`, for invalid text (the
// message gives line and column) or a key given twice in one object (the
// path names it). Every text entry point (api.h *_json, the CLI) parses here.
json parse_json_text(const std::string& text, const std::string& path);

// Fails with out_of_range when an input of `bytes` exceeds
// limits::kMaxInputBytes: callers that read files check before reading.
void check_input_size(uint64_t bytes, const std::string& path);

// "llama" -> `"llama"` in messages.
std::string quoted(const std::string& s);

}  // namespace vram

// Reading the JSON files the CLI is given (requests, model configs, DeepSpeed
// configs, probe reports) the way the core reads text: the size limit
// (limits::kMaxInputBytes) before the file is read whole, then
// parse_json_text (line and column, duplicate keys, nesting depth).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "vram/api.h"

namespace vram::cli {

// Reads `file` into `text`, never more than `limit` + 1 bytes: a regular
// file's size is checked before reading, and a pipe, FIFO or /dev/stdin
// (which has no size) is read in 64 KiB pieces and refused as soon as it
// passes `limit`. kCannotRead: the file could not be opened or read;
// kTooLarge: `*bytes` is the size seen (the file's size, or how much was read
// before it passed the limit).
enum class BoundedRead { kOk, kCannotRead, kTooLarge };
BoundedRead read_bounded(const std::string& file, uint64_t limit, std::string& text, uint64_t* bytes);

// The text of `file`. On failure `error` is the {"error": ...} object (code
// bad_json "cannot read", or out_of_range for a file over the limit) at
// `path`, the request path the file fills ("model.config", "" for a request).
bool read_text_file(const std::string& file, const std::string& path, std::string& text, json& error);

// read_text_file, then parse_json_text; messages start with the file name.
std::optional<json> read_json_file(const std::string& file, const std::string& path, json& error);

}  // namespace vram::cli

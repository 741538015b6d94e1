// Reading the JSON files the CLI is given (requests, model configs, DeepSpeed
// configs, probe reports) the way the core reads text: the size limit
// (limits::kMaxInputBytes) before the file is read whole, then
// parse_json_text (line and column, duplicate keys, nesting depth).
#pragma once

#include <optional>
#include <string>

#include "vram/api.h"

namespace vram::cli {

// The text of `file`. On failure `error` is the {"error": ...} object (code
// bad_json "cannot read", or out_of_range for a file over the limit) at
// `path`, the request path the file fills ("model.config", "" for a request).
bool read_text_file(const std::string& file, const std::string& path, std::string& text, json& error);

// read_text_file, then parse_json_text; messages start with the file name.
std::optional<json> read_json_file(const std::string& file, const std::string& path, json& error);

}  // namespace vram::cli

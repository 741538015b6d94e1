// Reading configuration files for `vram-probe import` / `estimate --from`:
// JSON parsed as JSON, anything else as YAML 1.2 through yaml-cpp, into the
// JSON tree core's importer reads (vram/import.h). The page builds the same
// tree with the npm `yaml` package (site/src/lib/import.js).
#pragma once

#include <optional>
#include <string>

#include "vram/json_reader.h"

namespace vram::cli {

// YAML text -> JSON tree with YAML 1.2 core-schema scalars (null, bool, int,
// float; quoted scalars stay strings), the resolution the npm `yaml`
// package applies. Integral floats become integers, as JSON.stringify writes
// them. Fails (throws Failure) with bad_json naming `file` and the line.
json yaml_to_json(const std::string& text, const std::string& file);

// Integral floats (500000.0, 1e9) as integers, in place: what JSON.parse
// then JSON.stringify make of them on the page, so both sides hand core the
// same tree.
void normalize_numbers(json& j);

// A file's text as a tree: JSON when it parses as JSON, otherwise YAML (the
// page's order, site/src/lib/import.js). Either nests at most
// limits::kMaxJsonDepth levels. Fails (throws Failure) naming `file`.
json config_tree(const std::string& text, const std::string& file);

// A file's tree (config_tree). Fails with the file named when it is missing,
// over vram::kMaxImportBytes (a bounded read: a regular file's size is
// checked before reading, a pipe's while reading), or malformed.
json read_config_tree(const std::string& path);

// One framework file's text, as `vram-probe import FILE` reads it, through
// the core's importer: import_files' answer as JSON text, or
// {"error": {...}}. The entry point of the import_file fuzz target
// (tests/fuzz); never throws.
std::string import_file_json(const std::string& text);

}  // namespace vram::cli

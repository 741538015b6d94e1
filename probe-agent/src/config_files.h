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
// them; a number that is not finite becomes ".inf", "-.inf" or ".nan". The
// rules of one imported file (vram/import.h: npm yaml's alias rule, at most
// kMaxImportValues values, no duplicate key, one document, the nesting
// limit) are checked as the text is read (yaml_tree.cpp). Fails (throws
// Failure) with bad_json or out_of_range naming `file` and the line.
json yaml_to_json(const std::string& text, const std::string& file);

// Integral floats (500000.0, 1e9) as integers, in place: what JSON.parse
// then JSON.stringify make of them on the page, so both sides hand core the
// same tree.
void normalize_numbers(json& j);

// A file's text as a tree: JSON when it parses as JSON, otherwise YAML (the
// page's order, site/src/lib/import.js), either under the rules of one
// imported file (vram/import.h). Fails (throws Failure) naming `file` and the
// line.
json config_tree(const std::string& text, const std::string& file);

// A file's tree (config_tree). Fails with the file named when it is missing,
// over vram::kMaxImportBytes (a bounded read: a regular file's size is
// checked before reading, a pipe's while reading), or malformed.
json read_config_tree(const std::string& path);

// YAML text through yaml_to_json alone (no JSON first, no importer): its
// tree as {"tree": ...}, or {"error": {...}}. The entry point of the yaml
// fuzz target (tests/fuzz), whose seeds include alias bombs; never throws.
std::string yaml_tree_json(const std::string& text);

// One framework file's text, as `vram-probe import FILE` reads it, through
// the core's importer: import_files' answer as JSON text, or
// {"error": {...}}. The entry point of the import_file fuzz target
// (tests/fuzz); never throws.
std::string import_file_json(const std::string& text);

}  // namespace vram::cli

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

// A file's tree: JSON when it parses as JSON, otherwise YAML. Fails with the
// file named when it is missing, over vram::kMaxImportBytes (checked before
// reading), or malformed.
json read_config_tree(const std::string& path);

}  // namespace vram::cli

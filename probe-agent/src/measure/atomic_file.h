// Whole-or-nothing file output: a report is either complete or absent.
#pragma once

#include <string>

#include "measure/status.h"

namespace vram::probe {

// Writes `contents` to a temporary file next to `path`, flushes it to disk and
// renames it over `path` (rename(2) is atomic within a file system). On any
// failure the temporary file is removed and `path` is left untouched.
Status WriteFileAtomically(const std::string& path, const std::string& contents);

// Whether WriteFileAtomically(path, ...) can work now: `path` is not a
// directory and a file can be created (and is removed again) next to it.
Status CheckWritable(const std::string& path);

}  // namespace vram::probe

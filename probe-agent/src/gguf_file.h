// A local .gguf file -> the request's model.gguf / model.mmproj inventory
// (vram/gguf.h), reading only the header.
#pragma once

#include <string>

#include "vram/json_reader.h"
#include "vram/status.h"

namespace vram::cli {

// The inventory of `path`; errors name the file and `field` ("model.gguf").
// A split file (`NAME-00001-of-00003.gguf`, llama.cpp gguf-split) is read
// shard by shard from the same directory: the first shard's metadata, every
// shard's tensors, each with its `shard` (0-based) and its offset in that
// shard.
Result<json> read_gguf_file(const std::string& path, const std::string& field);

}  // namespace vram::cli

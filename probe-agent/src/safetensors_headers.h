// Local safetensors headers -> the request's model.safetensors inventory
// (vram/checkpoint.h), reading only each file's header.
#pragma once

#include <string>

#include "vram/json_reader.h"
#include "vram/status.h"

namespace vram::cli {

// `path` is a model.safetensors.index.json (its weight_map's shards are read
// from the same directory), a directory (its index, else every *.safetensors
// in it), or one .safetensors file. Returns {"tensors": [{name, dtype, shape,
// shard}], "metadata": {"total_size"}}; errors name the file.
Result<json> read_safetensors_inventory(const std::string& path);

// The header of one .safetensors file: 8-byte little-endian length, then that
// many bytes of JSON (huggingface/safetensors README "Format"). The length is
// checked against the file size and the 100 MB limit before anything is read;
// each tensor's data_offsets against its dtype x shape and the file.
Result<json> read_safetensors_header(const std::string& file);

}  // namespace vram::cli

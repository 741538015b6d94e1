// The checkpoint inventory's private pieces (vram/checkpoint.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vram/json_reader.h"
#include "vram/model.h"

namespace vram::detail {

struct TensorIn {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int bits = 0;
  int64_t numel = 0;
  int64_t bytes = 0;  // ceil(numel x bits / 8)
};

// Reads and checks model.safetensors (limits: vram/checkpoint.h) and fills the
// summary's stored totals. Throws Failure naming the field.
std::vector<TensorIn> read_inventory(const JsonReader& inventory, CheckpointSummary& sum);

// Builds the spec from the tensors; `config` (may be nullptr) supplies what
// shapes cannot say. Throws Failure.
void build_from_tensors(const std::vector<TensorIn>& tensors, const json* config, const std::string& path,
                        ModelSpec& spec);

}  // namespace vram::detail

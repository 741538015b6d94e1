// Any model from its checkpoint's tensor list (issue 14 part 2).
//
// A safetensors file starts with an 8-byte little-endian header length and a
// JSON header naming every tensor's dtype and shape (huggingface/safetensors
// README "Format"; safetensors/src/tensor.rs). The page reads those headers
// from the Hub and the CLI from local files; both hand the core the same
// inventory as the request's `model.safetensors`:
//
//   {"tensors": [{"name": "model.layers.0.self_attn.q_proj.weight",
//                 "dtype": "BF16", "shape": [4096, 4096]}, ...],
//    "metadata": {"total_size": 16060522496}}   // model.safetensors.index.json's
//
// From it the core builds a ModelSpec: every tensor's bytes as stored, the
// parameters they stand for once dequantised (GPTQ / AWQ packed int32, FP8
// with scales, MXFP4 blocks, bitsandbytes 4-bit packed bytes), each tensor
// placed by transformers' module names into a role (embeddings, attention,
// MLP, experts, router, norms, head, vision / audio towers), and the
// architecture facts inferred from the shapes. What it cannot place is listed
// and counted as weights (trainable under full training).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vram/json_reader.h"
#include "vram/model.h"
#include "vram/status.h"

namespace vram {

// Limits, checked before anything is allocated for the inventory.
namespace checkpoint_limits {
// safetensors' own reader refuses headers above 100,000,000 bytes
// (safetensors/src/tensor.rs MAX_HEADER_SIZE); the CLI checks the same.
inline constexpr int64_t kMaxHeaderBytes = 100'000'000;
// DeepSeek-V3's checkpoint lists about 91,000 tensors (61 layers x 256 experts
// x 3 projections, each with an FP8 scale); ten times that is plenty.
inline constexpr int64_t kMaxTensors = 1'000'000;
inline constexpr int64_t kMaxNameLength = 1024;
inline constexpr int64_t kMaxRank = 8;
// A single tensor above 2^40 elements is an input mistake (no checkpoint is near).
inline constexpr int64_t kMaxDim = int64_t{1} << 40;
}  // namespace checkpoint_limits

// Bits per element of a safetensors dtype name (safetensors/src/tensor.rs
// Dtype: BOOL, U8, I8, F8_*, I16, U16, F16, BF16, I32, U32, F32, F64, I64,
// U64, and the sub-byte F4 / F6_*); 0 for an unknown name.
int dtype_bits(const std::string& dtype);

// A request's `model` object (with `config`, `custom`, `safetensors`) ->
// ModelSpec. `path` is the object's JSON path ("model"). With `safetensors`
// and a config whose model_type has an exact adapter, the adapter builds the
// spec and the checkpoint is the cross-check (spec.checkpoint); otherwise the
// spec is built from the tensors, with the config (when given) supplying the
// head_dim, head counts, experts per token and other facts shapes cannot say.
Result<ModelSpec> model_from_sources(const json& model, const std::string& path);

// The inventory alone (config may be nullptr) -> ModelSpec built from tensors.
Result<ModelSpec> model_from_safetensors(const json& inventory, const json* config, const std::string& path);

// {"model_params", "checkpoint_params", "difference", "matches", "explained": [...]}
// for a spec that carries a checkpoint, or null.
json checkpoint_json(const ModelSpec& spec);

}  // namespace vram

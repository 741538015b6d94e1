// Private: the single-GPU training step estimate.
#pragma once

#include "vram/estimate.h"
#include "vram/gpus.h"
#include "vram/request.h"

namespace vram::train {

// Reserved/allocated gap of the caching allocator for static-shape training.
// No sourced typical value exists (research/memory-internals.md §1.6); the
// default counts only what the allocator provably adds and the probe's
// reserved/allocated ratio calibrates it (overheads.fragmentation).
inline constexpr double kDefaultFragmentation = 0.0;

Result<Estimate> estimate_train(const Request& req);

}  // namespace vram::train

// Private: the single-GPU training step estimate.
#pragma once

#include "vram/gpus.h"
#include "vram/request.h"
#include "vram/result.h"

namespace vram::train {

// Reserved/allocated gap of the caching allocator for static-shape training.
// No sourced typical value exists (research/memory-internals.md §1.6); the
// default counts only what the allocator provably adds and the probe's
// reserved/allocated ratio calibrates it (overheads.fragmentation).
inline constexpr double kDefaultFragmentation = 0.0;

Result<Estimate> estimate_train(const Request& req);

// Largest micro-batch whose per-GPU peak fits `capacity`, 0 if none: each
// rank's micro-batch-independent terms are computed once, then only the
// terms that scale with the micro-batch per probe.
int64_t max_micro_batch(const Request& req, int64_t capacity);

}  // namespace vram::train

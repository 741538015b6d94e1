// Private: the step's tensors replayed through the caching-allocator model
// (caching_allocator.h), for torch.cuda.max_memory_reserved and what
// nvidia-smi shows (issue 13).
//
// The load part of the timeline runs once; the step runs twice, so the
// second step finds the blocks the first one cached, as every step after the
// first does in training (the estimate is of a steady-state step). Steps of
// other shapes can run before those two (`before`: a dataset padded to the
// longest sample of each batch gives every step its own length, and the
// allocator keeps the blocks of each: CUDACachingAllocator.cpp returns
// segments to the device only in release_cached_blocks, on empty_cache() or
// when a cudaMalloc fails). Every
// piece of a tensor is its own malloc on the tensor's stream (Tensor::stream,
// the default stream unless a term says otherwise); managed tensors (paged
// optimizer states) bypass the allocator.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "memory/caching_allocator.h"
#include "memory/timeline.h"
#include "vram/request.h"

namespace vram::memory {

struct ReservedReplay {
  // memory_reserved at each moment of `moments` (same order), in the second step.
  std::vector<int64_t> reserved;
  int64_t peak_reserved = 0;   // max_memory_reserved over the load and both steps
  int64_t peak_allocated = 0;  // the allocator's max_memory_allocated (block-rounded)
  int64_t segments = 0;        // segments at the end
  int64_t device_allocs = 0;   // cudaMalloc (or page-mapping) calls
  int64_t ooms = 0;            // failed mallocs (with a capacity)
  int64_t retries = 0;         // mallocs that freed the whole cache and retried (with a capacity)
  int64_t capacity = 0;        // the bound it ran under (DeviceLimits::capacity; 0 = none); set by the caller
  // At the moment `detail_moment`: cached free bytes by the tensor whose
  // malloc created the segment they sit in, largest first: which tensor sizes
  // cause the fragmentation.
  std::vector<std::pair<std::string, int64_t>> causes;
  int64_t largest_free_block = 0;  // at `detail_moment`
};

// The allocator settings of a request: allocator.conf, then the explicit
// allocator.* fields over it (the request parser has validated the text).
AllocatorConfig allocator_config(const AllocatorOptions& o);

// `detail_moment` indexes `moments` (-1: no detail, the fast path searches use).
// `before`: steps replayed once each, in order, after the load and before
// the two steps of `timeline`; only their step part runs (the load is
// `timeline`'s), and each must free what it allocates, as a step does.
ReservedReplay replay_reserved(const Timeline& timeline, const std::vector<Moment>& moments,
                               const AllocatorConfig& config, const DeviceLimits& limits, int detail_moment = -1,
                               const std::vector<const Timeline*>& before = {});

}  // namespace vram::memory

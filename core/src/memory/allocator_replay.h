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
//
// Use (docs/architecture.md "The allocator replay"):
//   - one timeline, allocated and reserved bytes per phase:
//       auto moments = memory::replay(tl);
//       auto rr = memory::replay_reserved(tl, moments, config, limits);
//       // moments[i].allocated, rr.reserved[i]
//   - many timelines on one load (a search's probes, the padded steps): the
//     load replayed once, each step from a copy of its allocator state:
//       const memory::LoadedAllocator loaded(load, config, limits);
//       auto rr = memory::replay_reserved(loaded, tl, moments);  // tl starts with `load`
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
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
  int64_t ooms = 0;            // failed mallocs (with a capacity; 1 when the replay stopped at the first)
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

// The caching allocator after a timeline's load part (every event before
// Timeline::step_begin), with the handles of the load's mallocs and the
// tensor behind each new segment: the state every step on that load starts
// from. Built once per load and bound; a replay copies it (flat arrays), so
// the load's events, thousands for 4-bit weights quantised on load, run once.
//
// A load that fails under its capacity is replayed up to its first failed
// malloc only (ooms() 1): all a bounded replay stopping at the first failed
// malloc needs to know; no step is replayed from it.
class LoadedAllocator {
 public:
  LoadedAllocator(const Timeline& load, const AllocatorConfig& config, const DeviceLimits& limits);
  // This load without its capacity, copied instead of replayed again, when
  // the capacity never acted on it (CachingAllocator::limits_idle); null
  // otherwise.
  std::unique_ptr<LoadedAllocator> without_bound() const;

  const DeviceLimits& limits() const { return alloc_.limits(); }
  // Failed mallocs of the load itself (with a capacity).
  int64_t ooms() const { return alloc_.stats().num_ooms; }
  // Whether `tl` starts with this load (as far as counts tell: a copy of the
  // load with a step appended passes), so that a step can be replayed from
  // it (never from a load known to fail).
  bool starts(const Timeline& tl) const {
    return std::min(tl.step_begin(), tl.events().size()) == events_ && tl.tensors().size() >= tensors_ &&
           tl.mallocs() >= mallocs_ && !fails_;
  }

 private:
  friend class StepReplayer;
  CachingAllocator alloc_;
  std::vector<Handle> handles_;                             // by Tensor::first_malloc
  std::vector<char> live_;                                  // by tensor: allocated and not freed in the load
  std::vector<std::pair<uint64_t, const char*>> creators_;  // a new segment's address, the tensor that made it
  size_t events_ = 0;                                       // the load's events (Timeline::step_begin)
  size_t tensors_ = 0;                                      // its tensors
  int64_t mallocs_ = 0;
  bool fails_ = false;  // failed under its capacity; replayed up to there
};

// `timeline` must start with the load `loaded` was built from (the same
// tensors, events and pieces: a copy of it, with the step appended), or be
// the step alone (Timeline::step_begin 0, as `before`), which a caller that
// reads no moment of it builds without copying the load.
// `detail_moment` indexes `moments` (-1: no detail, the fast path searches
// use). `before`: steps replayed once each, in order, before the two steps
// of `timeline`, each either a timeline on the same load (its step part
// runs) or a step alone (Timeline::step_begin 0: no copy of the load to
// build); each must free what it allocates, as a step does. With `stop_at_oom` the replay
// stops at the first failed malloc (ooms 1; the other figures are partial):
// enough for a caller that then replays without the bound.
ReservedReplay replay_reserved(const LoadedAllocator& loaded, const Timeline& timeline,
                               const std::vector<Moment>& moments, int detail_moment = -1,
                               const std::vector<const Timeline*>& before = {}, bool stop_at_oom = false);

// The same in one call, for a timeline replayed once: loads `timeline`'s own
// load part, then replays.
ReservedReplay replay_reserved(const Timeline& timeline, const std::vector<Moment>& moments,
                               const AllocatorConfig& config, const DeviceLimits& limits, int detail_moment = -1,
                               const std::vector<const Timeline*>& before = {});

}  // namespace vram::memory

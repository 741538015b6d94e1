// Private: a model of PyTorch's CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator), pure C++, no
// CUDA. Feed it the step's tensor allocations and frees in order and it gives
// what torch.cuda.memory_stats() would report: allocated bytes (rounded block
// sizes), reserved bytes (cudaMalloc'd segments or mapped pages), their peaks,
// segment counts and the free-but-unreleasable bytes that are fragmentation.
//
// Usage:
//   auto conf = parse_alloc_conf("expandable_segments:True");   // or AllocatorConfig{}
//   if (!conf.ok()) { /* conf.error().message names the key */ }
//   CachingAllocator alloc(conf.value(), DeviceLimits{.capacity = 79 * kGiB});
//   Handle w = alloc.malloc(weight_bytes);         // handle > 0, or kOutOfMemory
//   Handle a = alloc.malloc(act_bytes);
//   alloc.free(a);
//   int64_t peak_reserved = alloc.stats().reserved_bytes.all.peak;
//
// What the model follows, rule by rule, is cited in caching_allocator.cpp
// next to each function (same names as the source). What it leaves out:
// CUDA graphs / private pools, record_stream and its events (a freed block is
// reusable at once), IPC, the cudaMallocAsync backend, free-memory callbacks,
// multiple devices (one instance = one device). Addresses are synthetic (a
// bump counter), so ties between equal-size free blocks break by allocation
// order rather than by the real cudaMalloc address.
//
// State: flat arrays (blocks, pools as memory/block_set.h, expandable
// segments, handles), so an allocator copies like a value: a replay can keep
// the state after the load and start every step from a copy of it
// (allocator_replay.h). Speed: each operation is a binary search over the
// pool's few size classes plus relinking a block in its class's list (a
// walk only for an address between two of the class's), without a heap
// allocation once the arrays have grown (tests/bench/estimate_bench.cpp,
// BM_AllocatorReplay80Layers).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "vram/status.h"

namespace vram::memory {

inline constexpr int64_t kKiB = 1024;
inline constexpr int64_t kMiB = 1024 * kKiB;
inline constexpr int64_t kGiB = 1024 * kMiB;

// Constants of CUDACachingAllocator.cpp (top of the file), same names.
inline constexpr int64_t kMinBlockSize = 512;         // every size is rounded up to a multiple of 512 B
inline constexpr int64_t kSmallSize = 1 * kMiB;       // largest "small" (small-pool) request
inline constexpr int64_t kSmallBuffer = 2 * kMiB;     // small requests are packed in 2 MiB segments
inline constexpr int64_t kMinLargeAlloc = 10 * kMiB;  // large requests below this share a 20 MiB segment
inline constexpr int64_t kLargeBuffer = 20 * kMiB;    // that 20 MiB segment
inline constexpr int64_t kRoundLarge = 2 * kMiB;      // larger segments are rounded up to 2 MiB

// max_split_size when max_split_size_mb is not set (the source's SIZE_MAX).
inline constexpr int64_t kNoMaxSplitSize = std::numeric_limits<int64_t>::max();

// The allocator's settings: what PYTORCH_CUDA_ALLOC_CONF sets
// (c10/cuda/CUDAAllocatorConfig.{h,cpp}); defaults are PyTorch's.
struct AllocatorConfig {
  // max_split_size_mb × 1 MiB: free blocks this large or larger are never
  // split, and serve only requests >= it (within max_non_split_rounding).
  int64_t max_split_size = kNoMaxSplitSize;
  // max_non_split_rounding_mb × 1 MiB (default kLargeBuffer): how much larger
  // than a request >= max_split_size an oversize cached block may be.
  int64_t max_non_split_rounding_size = kLargeBuffer;
  // garbage_collection_threshold in (0, 1); 0 = off. Acts only when
  // DeviceLimits::allowed_memory_maximum is set (the source requires
  // set_per_process_memory_fraction).
  double garbage_collection_threshold = 0.0;
  // roundup_power2_divisions per power-of-two size interval: entry i covers
  // requests in [2^i MiB, 2^(i+1) MiB); entry 0 also covers smaller ones and
  // entry 15 larger ones. 0 or 1 = plain 512-byte rounding.
  std::array<int64_t, 16> roundup_power2_divisions{};
  // expandable_segments:True — one growable segment per pool and stream,
  // mapped in 2 MiB (small pool) / 20 MiB (large pool) pages.
  bool expandable_segments = false;

  // Parsed and kept, but they change nothing in this model:
  bool backend_cuda_malloc_async = false;  // backend:cudaMallocAsync (the model is the native backend)
  double per_process_memory_fraction = 0;  // newest PyTorch key; pass DeviceLimits instead
};

// Parses a PYTORCH_CUDA_ALLOC_CONF string ("key:value,key:value", spaces
// ignored, roundup_power2_divisions also as "[256:1,512:2,>:4]") with the
// keys and value rules of CUDAAllocatorConfig::parseArgs. On a bad string the
// error's path is "PYTORCH_CUDA_ALLOC_CONF.<key>" and its message names the
// key and what is wrong (code errc::kUnknownValue for an unknown key or
// value, kOutOfRange for a number outside its range, kWrongType for a value
// or separator that does not parse). An empty string gives the defaults.
// Values must be plain decimal numbers (PyTorch's stoi would also take
// "128abc" as 128).
Result<AllocatorConfig> parse_alloc_conf(std::string_view text);

// What the device lets the allocator have.
struct DeviceLimits {
  // Bytes cudaMalloc / cuMemCreate can hand out in total (the card's memory
  // minus the CUDA context, NCCL buffers, other processes); 0 = unlimited.
  // A segment that would go past it fails like cudaMalloc's OOM and takes
  // the allocator's retry path. With expandable segments it also sizes the
  // reserved address space (the source reserves 9/8 of the device memory).
  int64_t capacity = 0;
  // torch.cuda.set_per_process_memory_fraction(f): f × total device memory,
  // in bytes; 0 = not set. Checked before every new segment (also with
  // expandable segments, against the 2/20 MiB-rounded size), and enables
  // garbage_collection_threshold.
  int64_t allowed_memory_maximum = 0;
};

// One of torch.cuda.memory_stats()'s counters: "<name>.<pool>.current/peak".
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;  // highest `current` since construction or reset_peak_stats()
};

// The same counter for all pools ("all") and split by pool.
struct StatArray {
  Stat all;
  Stat small_pool;  // blocks of rounded size <= kSmallSize
  Stat large_pool;
};

// Mirrors c10's DeviceStats (the fields a memory estimate needs).
struct AllocatorStats {
  // allocated_bytes: sum of the *rounded* sizes of live blocks — what
  // torch.cuda.memory_allocated() / max_memory_allocated() return. A block
  // that was not split keeps its whole size (a 13 MiB request holding an
  // unsplit 14 MiB segment counts 14 MiB).
  StatArray allocated_bytes;
  // reserved_bytes: cudaMalloc'd segments plus mapped expandable pages —
  // torch.cuda.memory_reserved() / max_memory_reserved().
  StatArray reserved_bytes;
  // requested_bytes: sum of the callers' unrounded sizes of live blocks.
  StatArray requested_bytes;
  // inactive_split_bytes: free blocks that are part of a segment still
  // partly in use — cached memory empty_cache() cannot return (the source
  // does not count expandable segments here). inactive_split is their number.
  StatArray inactive_split_bytes;
  StatArray inactive_split;
  StatArray allocation;       // number of live blocks
  StatArray segment;          // number of cudaMalloc'd segments (expandable segments are not counted, as in the source)
  Stat oversize_allocations;  // live blocks >= max_split_size
  Stat oversize_segments;     // segments >= max_split_size

  int64_t num_alloc_retries = 0;  // mallocs that had to flush the whole cache and retry
  int64_t num_ooms = 0;           // mallocs that failed after that retry
  int64_t num_device_alloc = 0;   // cudaMalloc calls + page-mapping calls (expandable)
  int64_t num_device_free = 0;    // cudaFree calls + page-unmapping calls (expandable)
};

// A live allocation. Valid from malloc() until free(); after that the same
// number may be handed out again.
using Handle = int32_t;
inline constexpr Handle kNullHandle = 0;       // malloc(0): PyTorch returns a null pointer without the allocator
inline constexpr Handle kOutOfMemory = -1;     // the allocation failed (recorded in ooms())
inline constexpr Handle kInvalidRequest = -2;  // negative size

// One failed malloc (PyTorch raises torch.OutOfMemoryError here).
struct OutOfMemory {
  int64_t malloc_index = 0;     // 0-based number of the malloc() call that failed
  int64_t requested_bytes = 0;  // the caller's size
  int64_t alloc_size = 0;       // the segment size it needed: the "Tried to allocate" of PyTorch's message
  int stream = 0;
  int64_t allocated_bytes = 0;  // allocated after the cache flush, at the failure
  int64_t reserved_bytes = 0;   // reserved after the cache flush, at the failure
};

// torch.cuda.memory_snapshot()'s view of one segment: a cudaMalloc'd
// segment, or one contiguous mapped range of an expandable segment.
struct SegmentInfo {
  struct Block {
    int64_t size = 0;
    int64_t requested_size = 0;  // 0 for a free block
    bool allocated = false;
  };
  uint64_t address = 0;  // synthetic
  int64_t total_size = 0;
  int64_t allocated_size = 0;
  int stream = 0;
  bool is_large = false;
  bool is_expandable = false;
  std::vector<Block> blocks;  // in address order
};

// What one successful malloc() did (CachingAllocator::last_fit): the request
// rounded (round_size), and either the size of the cached block it took
// (best fit, before any split) or the size of the segment it created.
// allocator_replay.cpp reads it to tell whether a second run of a step can
// differ from the first.
struct MallocFit {
  int64_t size = 0;     // round_size(bytes)
  int64_t taken = 0;    // the cached block's size; 0 when a new segment was made
  int64_t created = 0;  // the new segment's size (get_allocation_size); 0 when served from the cache
  int32_t stream = 0;
  bool small = false;  // the pool
};

// One device's DeviceCachingAllocator. Not thread-safe (the model is
// replayed by one caller); a copy is an independent allocator in the same
// state.
class CachingAllocator {
 public:
  explicit CachingAllocator(AllocatorConfig config = {}, DeviceLimits limits = {});
  ~CachingAllocator();
  CachingAllocator(CachingAllocator&&) noexcept;
  CachingAllocator& operator=(CachingAllocator&&) noexcept;
  CachingAllocator(const CachingAllocator&);
  CachingAllocator& operator=(const CachingAllocator&);

  // Allocates `bytes` on `stream` (any int; blocks are reused only on the
  // stream that allocated them; 0 = the default stream). Returns a handle
  // > 0, kNullHandle for 0 bytes, kOutOfMemory when even the retry after
  // freeing the cache fails (nothing is thrown; the failure is in ooms() and
  // stats().num_ooms), kInvalidRequest for a negative size. Requests of 1 EiB
  // or more are kOutOfMemory without touching the allocator, as in PyTorch.
  Handle malloc(int64_t bytes, int stream = 0);
  // Frees a live handle; false (and nothing changes) for anything else.
  // kNullHandle is accepted and does nothing (returns true).
  bool free(Handle handle);

  // torch.cuda.empty_cache(): releases every entirely free segment and, with
  // expandable segments, unmaps every entirely free page.
  void empty_cache();
  // torch.cuda.reset_peak_memory_stats(): every peak becomes its current value.
  void reset_peak_stats();

  const AllocatorStats& stats() const;
  // The last successful malloc() of a non-zero size (MallocFit).
  const MallocFit& last_fit() const;
  const AllocatorConfig& config() const;
  const DeviceLimits& limits() const;
  // Whether the limits never changed what happened: no malloc failed, none
  // retried, nothing was given back to the device, no expandable segment's
  // address space was sized by them. Such an allocator is in the state it
  // would be in under any larger limits (set_limits).
  bool limits_idle() const;
  // Runs on under other limits; only what limits_idle() allows (a larger
  // bound than one that was idle) keeps the state what it would have been.
  void set_limits(const DeviceLimits& limits);
  // Every failed malloc, in order.
  const std::vector<OutOfMemory>& ooms() const;

  // The largest cached free block (mapped, not in use) in either pool, on any
  // stream: what torch.cuda's cacheInfo reports, without its cudaMemGetInfo
  // starting guess. 0 when the cache is empty.
  int64_t largest_free_block() const;
  // reserved - allocated now: cached bytes not in use.
  int64_t cached_free_bytes() const;
  // The rounded block size behind a live handle (what it adds to
  // allocated_bytes), 0 if the handle is not live.
  int64_t block_size(Handle handle) const;
  // The synthetic address of a live handle's block (SegmentInfo::address
  // of a segment equals the address of its first block), 0 if not live.
  uint64_t address(Handle handle) const;
  // Every segment with its blocks, by address (torch.cuda.memory_snapshot()).
  // O(blocks); for tests and reports, not for the replay loop.
  std::vector<SegmentInfo> snapshot() const;
  // The cached free bytes of each segment that has any (snapshot()'s
  // total_size - allocated_size), with its address, in no order; O(blocks),
  // without the block lists.
  std::vector<std::pair<uint64_t, int64_t>> cached_by_segment() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vram::memory

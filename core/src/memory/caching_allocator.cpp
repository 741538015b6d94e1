// The caching allocator model. Functions carry the names of their
// counterparts in c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator,
// ExpandableSegment) and c10/cuda/CUDAAllocatorConfig.cpp, and each rule says
// where it comes from. Followed: the PyTorch 2.4–2.8 allocator (max_split_size
// rules with max_non_split_rounding_size, expandable segments) and the newer
// upstream fix that release_available_cached_blocks() skips expandable blocks.
#include "memory/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <deque>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace vram::memory {
namespace {

struct BlockPool;
struct ExpandableSegment;

// CUDACachingAllocator.cpp struct Block (device, events, stream_uses and
// history left out).
struct Block {
  int64_t size = 0;            // block size in bytes
  int64_t requested_size = 0;  // memory originally requested
  uint64_t ptr = 0;            // synthetic address
  int stream = 0;              // allocation stream
  BlockPool* pool = nullptr;   // owning pool
  Block* prev = nullptr;       // neighbours in the same segment
  Block* next = nullptr;
  ExpandableSegment* es = nullptr;  // expandable_segment_
  int64_t gc_count_base = 0;        // pool's get_free_blocks_call_count when cached
  bool allocated = false;
  bool mapped = true;  // false: unmapped address space of an expandable segment
  bool live = false;   // false: on the model's free list of Block objects
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

// CUDACachingAllocator.cpp BlockComparatorSize(): (stream, size, address).
struct BySize {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};
// BlockComparatorAddress(): (stream, address), for unmapped blocks.
struct ByAddress {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->ptr < b->ptr;
  }
};

// struct BlockPool: cached free blocks and unmapped expandable ranges.
struct BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}
  std::set<Block*, BySize> blocks;
  std::set<Block*, ByAddress> unmapped;
  const bool is_small;
  int64_t get_free_blocks_call_count = 0;
};

// struct ExpandableSegment: a reserved virtual range mapped in pages of
// segment_size (kSmallBuffer for the small pool, kLargeBuffer for the large
// one: find_expandable_block()). The block list is the truth of what is
// mapped; this only turns byte ranges into whole pages like map()/unmap().
struct ExpandableSegment {
  uint64_t base = 0;
  int64_t segment_size = 0;
  int64_t size = 0;  // max_handles_ * segment_size_

  struct Range {
    uint64_t ptr = 0;
    int64_t size = 0;
  };
  // map(): pages [segmentLeft(ptr), segmentRight(ptr + size)).
  Range pages_covering(uint64_t ptr, int64_t bytes) const {
    const int64_t begin = static_cast<int64_t>(ptr - base) / segment_size;
    const int64_t end = (static_cast<int64_t>(ptr - base) + bytes + segment_size - 1) / segment_size;
    return {base + static_cast<uint64_t>(begin * segment_size), (end - begin) * segment_size};
  }
  // unmap(): the whole pages inside [ptr, ptr + size): [segmentRight(ptr),
  // segmentLeft(ptr + size)); size 0 when there is none.
  Range pages_inside(uint64_t ptr, int64_t bytes) const {
    const int64_t begin = (static_cast<int64_t>(ptr - base) + segment_size - 1) / segment_size;
    const int64_t end = (static_cast<int64_t>(ptr - base) + bytes) / segment_size;
    if (begin >= end) return {ptr, 0};
    return {base + static_cast<uint64_t>(begin * segment_size), (end - begin) * segment_size};
  }
};

// AllocParams: the rounded request and where it goes.
struct AllocParams {
  int64_t size = 0;  // round_size(orig_size)
  int stream = 0;
  BlockPool* pool = nullptr;
  int64_t alloc_size = 0;  // get_allocation_size(size)
  Block* block = nullptr;
};

void increase_stat(Stat& s, int64_t amount) {
  s.current += amount;
  s.peak = std::max(s.peak, s.current);
}
void decrease_stat(Stat& s, int64_t amount) { s.current -= amount; }
// get_stat_types_for_pool(): AGGREGATE plus the block's pool.
void increase(StatArray& a, const BlockPool& pool, int64_t amount) {
  increase_stat(a.all, amount);
  increase_stat(pool.is_small ? a.small_pool : a.large_pool, amount);
}
void decrease(StatArray& a, const BlockPool& pool, int64_t amount) {
  decrease_stat(a.all, amount);
  decrease_stat(pool.is_small ? a.small_pool : a.large_pool, amount);
}
void reset_peak(Stat& s) { s.peak = s.current; }
void reset_peak(StatArray& a) {
  reset_peak(a.all);
  reset_peak(a.small_pool);
  reset_peak(a.large_pool);
}

// Address space given to an expandable segment when no capacity is known.
constexpr int64_t kUnlimitedAddressSpace = int64_t{1} << 44;  // 16 TiB
// NativeCachingAllocator::allocate(): "Tried to allocate more than 1EB memory".
constexpr int64_t kOneExaByte = int64_t{1} << 60;

}  // namespace

struct CachingAllocator::Impl {
  AllocatorConfig config;
  DeviceLimits limits;
  AllocatorStats stats;
  std::vector<OutOfMemory> ooms;

  BlockPool large_blocks{false};
  BlockPool small_blocks{true};
  // total_allocated_memory: bytes of segments and mapped pages.
  int64_t total_allocated_memory = 0;
  bool set_fraction = false;

  // Block objects: stable addresses, recycled through a free list.
  std::deque<Block> arena;
  std::vector<Block*> spare_blocks;
  std::deque<ExpandableSegment> segments_arena;
  std::vector<ExpandableSegment*> spare_segments;
  std::vector<Block*> handles{nullptr};  // handles[h] for live h; [0] = kNullHandle
  std::vector<Handle> spare_handles;
  uint64_t next_address = uint64_t{1} << 32;
  int64_t malloc_calls = 0;

  Impl(AllocatorConfig c, DeviceLimits l) : config(c), limits(l) { set_fraction = limits.allowed_memory_maximum > 0; }

  Block* new_block(int stream, int64_t size, BlockPool* pool, uint64_t ptr) {
    Block* b;
    if (!spare_blocks.empty()) {
      b = spare_blocks.back();
      spare_blocks.pop_back();
      *b = Block{};
    } else {
      b = &arena.emplace_back();
    }
    b->stream = stream;
    b->size = size;
    b->pool = pool;
    b->ptr = ptr;
    b->live = true;
    return b;
  }
  void delete_block(Block* b) {
    b->live = false;
    spare_blocks.push_back(b);
  }

  // BlockPool::insert_into_blocks(): caches a block and stamps its gc age.
  void insert_into_blocks(BlockPool& pool, Block* b) {
    b->gc_count_base = pool.get_free_blocks_call_count;
    pool.blocks.insert(b);
  }

  // CUDAAllocatorConfig::roundup_power2_divisions(size): intervals of powers
  // of two from 1 MiB (index 0, also everything smaller) to 64 GiB (index 15,
  // also everything larger).
  int64_t roundup_power2_divisions(int64_t size) const {
    const int log_size = std::bit_width(static_cast<uint64_t>(size)) - 1;
    const int index = std::clamp(log_size - 20, 0, 15);
    return config.roundup_power2_divisions[static_cast<size_t>(index)];
  }

  // roundup_power2_next_division(): the next of `divisions` equal steps
  // between the two powers of two around size.
  static int64_t roundup_power2_next_division(int64_t size, int64_t divisions) {
    if (std::has_single_bit(static_cast<uint64_t>(size))) return size;
    const int64_t power2_floor = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(size)));
    const int64_t power2_division = power2_floor >> (std::bit_width(static_cast<uint64_t>(divisions)) - 1);
    if (power2_division == 0) return power2_floor << 1;
    const int64_t round_size_floor = size & ~(power2_division - 1);
    return round_size_floor == size ? size : round_size_floor + power2_division;
  }

  // round_size(): at least kMinBlockSize, then either the power-of-two
  // division (when more than one division is configured for the size's
  // interval and the size exceeds kMinBlockSize × divisions) or a multiple
  // of kMinBlockSize.
  int64_t round_size(int64_t size) const {
    if (size < kMinBlockSize) return kMinBlockSize;
    const int64_t divisions = roundup_power2_divisions(size);
    if (divisions > 1 && size > kMinBlockSize * divisions) return roundup_power2_next_division(size, divisions);
    return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
  }

  // get_pool(): rounded size <= kSmallSize goes to the small pool.
  BlockPool& get_pool(int64_t size) { return size <= kSmallSize ? small_blocks : large_blocks; }

  // get_allocation_size(): small -> a 2 MiB segment; below 10 MiB -> a
  // 20 MiB segment; else the size rounded up to 2 MiB.
  static int64_t get_allocation_size(int64_t size) {
    if (size <= kSmallSize) return kSmallBuffer;
    if (size < kMinLargeAlloc) return kLargeBuffer;
    return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
  }

  // should_split(): small pool (or expandable segments) when at least
  // kMinBlockSize is left; large pool only for requests below max_split_size
  // and when more than kSmallSize is left.
  bool should_split(const Block* block, int64_t size) const {
    const int64_t remaining = block->size - size;
    if (block->pool->is_small || config.expandable_segments) return remaining >= kMinBlockSize;
    return size < config.max_split_size && remaining > kSmallSize;
  }

  // get_free_block(): best fit — the smallest cached block of the same
  // stream with size >= the request (lower_bound on (stream, size, address)).
  bool get_free_block(AllocParams& p) {
    BlockPool& pool = *p.pool;
    // Block reuse is aged only when garbage collection can run.
    if (set_fraction && config.garbage_collection_threshold > 0.0) ++pool.get_free_blocks_call_count;
    Block key;
    key.stream = p.stream;
    key.size = p.size;
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
    // Expandable segments: a free block followed by unmapped space counts as
    // the size it can grow to, so a block that cannot grow is preferred. (The
    // source's other branch, expandable segments switched off after blocks
    // were created, cannot happen here: the config is fixed.)
    if ((*it)->es != nullptr) {
      auto expandable_size = [](const Block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->es != nullptr && next != pool.blocks.end() && (*next)->stream == p.stream &&
             expandable_size(*next) < expandable_size(*it)) {
        it = next++;
      }
    }
    // "Do not return an oversized block for a large request": below
    // max_split_size never take a block >= max_split_size.
    if (p.size < config.max_split_size && (*it)->size >= config.max_split_size) return false;
    // "Allow oversized block size to be rounded up but within a limit":
    // at or above max_split_size take a block only if it is less than
    // max_non_split_rounding_size (default kLargeBuffer) larger.
    if (p.size >= config.max_split_size && (*it)->size >= p.size + config.max_non_split_rounding_size) return false;
    p.block = *it;
    pool.blocks.erase(it);
    return true;
  }

  // alloc_block(): a new segment of alloc_size (cudaMalloc), or with
  // expandable segments more mapped pages. Fails like cudaMalloc's
  // cudaErrorMemoryAllocation when the device capacity would be exceeded.
  bool alloc_block(AllocParams& p, bool is_retry) {
    const int64_t size = p.alloc_size;
    if (is_retry) stats.num_alloc_retries += 1;
    // set_per_process_memory_fraction: checked against alloc_size even with
    // expandable segments, as in the source.
    if (set_fraction && total_allocated_memory + size > limits.allowed_memory_maximum) return false;
    if (config.expandable_segments) {
      p.block = try_allocate_expandable_block(p.stream, *p.pool, p.size);
      return p.block != nullptr;
    }
    if (limits.capacity > 0 && total_allocated_memory + size > limits.capacity) return false;
    total_allocated_memory += size;
    const uint64_t ptr = next_address;
    next_address += static_cast<uint64_t>((size + kRoundLarge - 1) / kRoundLarge * kRoundLarge);
    p.block = new_block(p.stream, size, p.pool, ptr);
    increase(stats.segment, *p.pool, 1);
    increase(stats.reserved_bytes, *p.pool, size);
    if (size >= config.max_split_size) increase_stat(stats.oversize_segments, 1);
    stats.num_device_alloc++;
    return true;
  }

  // release_block(): cudaFree of an entire, unsplit, cached segment.
  void release_block(Block* block) {
    stats.num_device_free++;
    total_allocated_memory -= block->size;
    decrease(stats.segment, *block->pool, 1);
    decrease(stats.reserved_bytes, *block->pool, block->size);
    if (block->size >= config.max_split_size) decrease_stat(stats.oversize_segments, 1);
    block->pool->blocks.erase(block);
    delete_block(block);
  }

  // release_available_cached_blocks(): with max_split_size set, free the
  // smallest oversize cached block of the stream that is >= max(size,
  // max_split_size); if there is none, free oversize blocks from the largest
  // down until that many bytes are freed. Expandable blocks are skipped
  // (newer upstream; older versions asserted on them).
  bool release_available_cached_blocks(const AllocParams& p) {
    if (config.max_split_size == kNoMaxSplitSize) return false;
    BlockPool& pool = *p.pool;
    Block key;
    key.stream = p.stream;
    key.size = std::max(p.size, config.max_split_size);
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != p.stream || (*it)->es != nullptr) {
      if (it == pool.blocks.begin()) return false;
      int64_t total_released = 0;
      --it;  // the largest block of a stream at or before ours
      while (total_released < key.size && (*it)->size >= config.max_split_size && (*it)->stream == p.stream) {
        auto cur = it;
        const bool is_first = cur == pool.blocks.begin();
        if (!is_first) --it;
        if ((*cur)->es == nullptr) {
          total_released += (*cur)->size;
          release_block(*cur);
        }
        if (is_first) break;
      }
      if (total_released < key.size) return false;
    } else {
      release_block(*it);
    }
    return true;
  }

  // release_cached_blocks() = empty_cache(): release_blocks() on both pools
  // (events are not modelled, so nothing to synchronize first).
  bool release_cached_blocks() {
    release_blocks(large_blocks);
    release_blocks(small_blocks);
    return true;
  }

  // release_blocks(): cudaFree every cached block that is a whole segment;
  // for expandable segments unmap the whole free pages of every cached
  // block, and drop a segment left entirely unmapped.
  void release_blocks(BlockPool& pool) {
    std::vector<Block*> to_unmap;
    for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
      Block* block = *it;
      ++it;
      if (block->es != nullptr) {
        to_unmap.push_back(block);
      } else if (block->prev == nullptr && block->next == nullptr) {
        release_block(block);
      }
    }
    for (Block* block : to_unmap) {
      unmap_block(block);
      if (block->prev == nullptr && block->next == nullptr) release_expandable_segment(block);
    }
  }

  // release_expandable_segment(): the segment is one unmapped block again.
  void release_expandable_segment(Block* block) {
    block->pool->unmapped.erase(block);
    spare_segments.push_back(block->es);
    delete_block(block);
  }

  // unmap_block(): unmaps the whole pages inside a cached expandable block;
  // the partial pages at its ends stay as free mapped blocks.
  void unmap_block(Block* block) {
    const auto unmapped = block->es->pages_inside(block->ptr, block->size);
    if (unmapped.size == 0) return;
    BlockPool& pool = *block->pool;
    pool.blocks.erase(block);
    const int64_t before_size = static_cast<int64_t>(unmapped.ptr - block->ptr);
    if (before_size > 0) {
      Block* before_free = new_block(block->stream, before_size, &pool, block->ptr);
      before_free->es = block->es;
      splice(before_free, block->prev, block);
      insert_into_blocks(pool, before_free);
    }
    const int64_t after_size = block->size - (before_size + unmapped.size);
    if (after_size > 0) {
      Block* after_free =
          new_block(block->stream, after_size, &pool, unmapped.ptr + static_cast<uint64_t>(unmapped.size));
      after_free->es = block->es;
      splice(after_free, block, block->next);
      insert_into_blocks(pool, after_free);
    }
    block->ptr = unmapped.ptr;
    block->size = unmapped.size;
    block->mapped = false;
    try_merge_blocks(block, block->prev, pool);
    try_merge_blocks(block, block->next, pool);
    pool.unmapped.insert(block);
    total_allocated_memory -= unmapped.size;
    decrease(stats.reserved_bytes, pool, unmapped.size);
    stats.num_device_free++;
  }

  // Block::splice(): puts b between before and after.
  static void splice(Block* b, Block* before, Block* after) {
    if (before != nullptr) before->next = b;
    b->prev = before;
    if (after != nullptr) after->prev = b;
    b->next = after;
  }

  // find_expandable_block(): the lowest address of the stream's expandable
  // segments where free and unmapped blocks together give `size` bytes (an
  // unmapped block, or the free block just before it); else a new segment
  // (one unmapped block spanning its whole address space).
  Block* find_expandable_block(int stream, BlockPool& pool, int64_t size) {
    auto allocatable = [](const Block* b) { return b != nullptr && !b->allocated; };
    auto has_available_address_space = [&](const Block* b) {
      int64_t bytes = 0;
      while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
      }
      return bytes >= size;
    };
    Block key;
    key.stream = stream;
    for (auto it = pool.unmapped.lower_bound(&key); it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
      Block* c = *it;
      if (allocatable(c->prev)) c = c->prev;
      if (has_available_address_space(c)) return c;
    }
    // ExpandableSegment(): 2 MiB pages for the small pool, 20 MiB for the
    // large one; address space for 9/8 of the device memory.
    const int64_t segment_size = pool.is_small ? kSmallBuffer : kLargeBuffer;
    const int64_t device_memory = limits.capacity > 0 ? limits.capacity : kUnlimitedAddressSpace;
    const int64_t max_handles = (device_memory + device_memory / 8 + segment_size - 1) / segment_size;
    ExpandableSegment* es;
    if (!spare_segments.empty()) {
      es = spare_segments.back();
      spare_segments.pop_back();
    } else {
      es = &segments_arena.emplace_back();
    }
    const auto align = static_cast<uint64_t>(segment_size);
    next_address = (next_address + align - 1) / align * align;
    *es = ExpandableSegment{next_address, segment_size, max_handles * segment_size};
    next_address += static_cast<uint64_t>(es->size);
    Block* candidate = new_block(stream, es->size, &pool, es->base);
    candidate->mapped = false;
    candidate->es = es;
    pool.unmapped.insert(candidate);
    return candidate;
  }

  // map_block(): maps the pages covering the first `size` bytes of an
  // unmapped block (cuMemCreate fails past the device capacity: nothing is
  // mapped then), splits off the rest, merges with free neighbours, caches it.
  bool map_block(Block* to_map, int64_t size) {
    const auto mapped_range = to_map->es->pages_covering(to_map->ptr, size);
    if (mapped_range.size == 0) return false;
    if (limits.capacity > 0 && total_allocated_memory + mapped_range.size > limits.capacity) return false;
    BlockPool& pool = *to_map->pool;
    pool.unmapped.erase(to_map);
    to_map->mapped = true;
    if (mapped_range.size < to_map->size) {
      Block* remaining = new_block(to_map->stream, to_map->size - mapped_range.size, &pool,
                                   to_map->ptr + static_cast<uint64_t>(mapped_range.size));
      remaining->mapped = false;
      remaining->es = to_map->es;
      splice(remaining, to_map, to_map->next);
      pool.unmapped.insert(remaining);
      to_map->size = mapped_range.size;
    }
    try_merge_blocks(to_map, to_map->prev, pool);
    try_merge_blocks(to_map, to_map->next, pool);
    insert_into_blocks(pool, to_map);
    total_allocated_memory += mapped_range.size;
    increase(stats.reserved_bytes, pool, mapped_range.size);
    stats.num_device_alloc++;
    return true;
  }

  // try_allocate_expandable_block(): map just the pages needed at the
  // lowest fitting address, merging with the free block before them.
  Block* try_allocate_expandable_block(int stream, BlockPool& pool, int64_t size) {
    Block* candidate = find_expandable_block(stream, pool, size);
    if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size))) return nullptr;
    while (candidate->size < size) {
      const int64_t remaining = size - candidate->size;
      Block* new_candidate = candidate->next;
      // Invariant "free -> unmapped -> *" (find_expandable_block checked the
      // room); guarded so a broken invariant is an OOM, not a crash.
      if (new_candidate == nullptr || new_candidate->mapped) return nullptr;
      if (!map_block(new_candidate, std::min(remaining, new_candidate->size))) return nullptr;
      candidate = new_candidate;
    }
    pool.blocks.erase(candidate);
    return candidate;
  }

  // garbage_collect_cached_blocks(): above threshold × allowed memory, free
  // cached whole segments of the large pool that have waited at least the
  // average number of get_free_block() calls, repeatedly, until the excess
  // is reclaimed.
  void garbage_collect_cached_blocks() {
    const auto gc_threshold =
        static_cast<int64_t>(config.garbage_collection_threshold * static_cast<double>(limits.allowed_memory_maximum));
    if (total_allocated_memory <= gc_threshold) return;
    const int64_t target_size = total_allocated_memory - gc_threshold;
    int64_t gc_reclaimed = 0;
    auto gc_count = [&](const Block* b) { return large_blocks.get_free_blocks_call_count - b->gc_count_base; };
    int64_t total_age = 0;
    int64_t freeable_block_count = 0;
    for (const Block* b : large_blocks.blocks) {
      if (!b->is_split()) {
        total_age += gc_count(b);
        ++freeable_block_count;
      }
    }
    if (freeable_block_count == 0) return;
    bool block_freed = true;
    while (gc_reclaimed < target_size && block_freed && freeable_block_count > 0) {
      const double age_threshold = static_cast<double>(total_age) / static_cast<double>(freeable_block_count);
      block_freed = false;
      for (auto it = large_blocks.blocks.begin(); it != large_blocks.blocks.end();) {
        Block* block = *it;
        ++it;
        if (!block->is_split() && block->es == nullptr && static_cast<double>(gc_count(block)) >= age_threshold) {
          block_freed = true;
          gc_reclaimed += block->size;
          total_age -= gc_count(block);
          freeable_block_count--;
          release_block(block);
        }
      }
    }
  }

  // alloc_found_block(): split the block when should_split() says so (the
  // front part is handed out, the rest cached) and count it.
  Block* alloc_found_block(const AllocParams& p, int64_t orig_size, bool split_remainder) {
    const int64_t size = p.size;
    BlockPool& pool = *p.pool;
    Block* block = p.block;
    const bool already_split = block->is_split();
    if (split_remainder) {
      Block* remaining = block;
      block = new_block(p.stream, size, &pool, remaining->ptr);
      block->es = remaining->es;
      block->prev = remaining->prev;
      if (block->prev != nullptr) block->prev->next = block;
      block->next = remaining;
      remaining->prev = block;
      remaining->ptr += static_cast<uint64_t>(size);
      remaining->size -= size;
      insert_into_blocks(pool, remaining);
      if (already_split && block->es == nullptr) {
        // An already-split inactive block shrinks by size bytes.
        decrease(stats.inactive_split_bytes, pool, block->size);
      } else if (block->es == nullptr) {
        // A new inactive split block of remaining->size bytes.
        increase(stats.inactive_split_bytes, pool, remaining->size);
        increase(stats.inactive_split, pool, 1);
      }
    } else if (already_split && block->es == nullptr) {
      // An inactive split block becomes active.
      decrease(stats.inactive_split_bytes, pool, block->size);
      decrease(stats.inactive_split, pool, 1);
    }
    block->allocated = true;
    block->requested_size = orig_size;
    increase(stats.allocation, pool, 1);
    increase(stats.allocated_bytes, pool, block->size);
    increase(stats.requested_bytes, pool, block->requested_size);
    if (block->size >= config.max_split_size) increase_stat(stats.oversize_allocations, 1);
    return block;
  }

  // try_merge_blocks(): dst absorbs a free neighbour src of the same
  // mapped state; returns the bytes absorbed.
  int64_t try_merge_blocks(Block* dst, Block* src, BlockPool& pool) {
    if (src == nullptr || src->allocated || dst->mapped != src->mapped) return 0;
    if (dst->prev == src) {  // [src dst]
      dst->ptr = src->ptr;
      dst->prev = src->prev;
      if (dst->prev != nullptr) dst->prev->next = dst;
    } else {  // [dst src]
      dst->next = src->next;
      if (dst->next != nullptr) dst->next->prev = dst;
    }
    const int64_t subsumed_size = src->size;
    dst->size += subsumed_size;
    if (src->mapped) {
      pool.blocks.erase(src);
    } else {
      pool.unmapped.erase(src);
    }
    delete_block(src);
    return subsumed_size;
  }

  // free_block(): merge with free neighbours, cache, and count the change
  // of inactive split blocks (not for expandable segments).
  void free_block(Block* block) {
    const int64_t requested_size = block->requested_size;
    BlockPool& pool = *block->pool;
    int64_t net_change_inactive_split_blocks = 0;
    int64_t net_change_inactive_split_size = 0;
    for (Block* merge_candidate : {block->prev, block->next}) {
      const int64_t subsumed_size = try_merge_blocks(block, merge_candidate, pool);
      if (subsumed_size > 0) {
        net_change_inactive_split_blocks -= 1;
        net_change_inactive_split_size -= subsumed_size;
      }
    }
    insert_into_blocks(pool, block);
    if (block->is_split()) {
      net_change_inactive_split_blocks += 1;
      net_change_inactive_split_size += block->size;
    }
    if (block->es == nullptr) {
      if (net_change_inactive_split_blocks > 0) increase(stats.inactive_split, pool, net_change_inactive_split_blocks);
      if (net_change_inactive_split_blocks < 0) decrease(stats.inactive_split, pool, -net_change_inactive_split_blocks);
      if (net_change_inactive_split_size > 0)
        increase(stats.inactive_split_bytes, pool, net_change_inactive_split_size);
      if (net_change_inactive_split_size < 0)
        decrease(stats.inactive_split_bytes, pool, -net_change_inactive_split_size);
    }
    // The source's active / active_bytes equal allocation / allocated_bytes
    // here (no record_stream), so they are not kept separately.
    decrease(stats.requested_bytes, pool, requested_size);
  }

  // DeviceCachingAllocator::malloc(): cached block, else garbage collection
  // and a new segment, else free oversize cached blocks and retry, else free
  // the whole cache and retry, else out of memory.
  Handle malloc(int64_t orig_size, int stream) {
    if (orig_size < 0) return kInvalidRequest;
    if (orig_size == 0) return kNullHandle;  // NativeCachingAllocator::allocate(): size 0 skips malloc
    if (orig_size >= kOneExaByte) return kOutOfMemory;
    const int64_t index = malloc_calls++;
    AllocParams p;
    p.size = round_size(orig_size);
    p.stream = stream;
    p.pool = &get_pool(p.size);
    p.alloc_size = get_allocation_size(p.size);
    bool block_found = get_free_block(p);
    if (!block_found) {
      if (set_fraction && config.garbage_collection_threshold > 0.0) garbage_collect_cached_blocks();
      block_found = alloc_block(p, false) || (release_available_cached_blocks(p) && alloc_block(p, false)) ||
                    (release_cached_blocks() && alloc_block(p, true));
    }
    if (!block_found) {
      stats.num_ooms += 1;
      ooms.push_back(OutOfMemory{index, orig_size, p.alloc_size, stream, stats.allocated_bytes.all.current,
                                 stats.reserved_bytes.all.current});
      return kOutOfMemory;
    }
    const bool split_remainder = should_split(p.block, p.size);
    Block* block = alloc_found_block(p, orig_size, split_remainder);
    Handle h;
    if (!spare_handles.empty()) {
      h = spare_handles.back();
      spare_handles.pop_back();
    } else {
      h = static_cast<Handle>(handles.size());
      handles.push_back(nullptr);
    }
    handles[static_cast<size_t>(h)] = block;
    return h;
  }

  Block* live_block(Handle h) const {
    if (h <= 0 || static_cast<size_t>(h) >= handles.size()) return nullptr;
    return handles[static_cast<size_t>(h)];
  }

  // DeviceCachingAllocator::free().
  bool free(Handle h) {
    if (h == kNullHandle) return true;
    Block* block = live_block(h);
    if (block == nullptr) return false;
    handles[static_cast<size_t>(h)] = nullptr;
    spare_handles.push_back(h);
    block->allocated = false;
    decrease(stats.allocation, *block->pool, 1);
    decrease(stats.allocated_bytes, *block->pool, block->size);
    if (block->size >= config.max_split_size) decrease_stat(stats.oversize_allocations, 1);
    free_block(block);
    return true;
  }

  // cacheInfo() / cache_info_aux(): the largest cached block. Blocks are
  // ordered by stream first, so the largest of each stream is the last
  // before the next stream.
  static int64_t largest_in(const BlockPool& pool) {
    int64_t largest = 0;
    auto it = pool.blocks.begin();
    while (it != pool.blocks.end()) {
      Block key;
      key.stream = (*it)->stream;
      key.size = std::numeric_limits<int64_t>::max();
      key.ptr = std::numeric_limits<uint64_t>::max();
      auto end_of_stream = pool.blocks.upper_bound(&key);
      largest = std::max(largest, (*std::prev(end_of_stream))->size);
      it = end_of_stream;
    }
    return largest;
  }

  std::vector<SegmentInfo> snapshot() const {
    std::vector<SegmentInfo> result;
    for (const Block& head : arena) {
      if (!head.live || !head.mapped) continue;
      // One segment per cudaMalloc, or per contiguous mapped range of an
      // expandable segment (DeviceCachingAllocator::snapshot()).
      if (head.prev != nullptr && head.prev->mapped) continue;
      SegmentInfo& s = result.emplace_back();
      s.address = head.ptr;
      s.stream = head.stream;
      s.is_large = !head.pool->is_small;
      s.is_expandable = head.es != nullptr;
      for (const Block* b = &head; b != nullptr && b->mapped; b = b->next) {
        s.blocks.push_back({b->size, b->allocated ? b->requested_size : 0, b->allocated});
        s.total_size += b->size;
        if (b->allocated) s.allocated_size += b->size;
      }
    }
    std::sort(result.begin(), result.end(),
              [](const SegmentInfo& a, const SegmentInfo& b) { return a.address < b.address; });
    return result;
  }
};

// ---- PYTORCH_CUDA_ALLOC_CONF ------------------------------------------------

namespace {

// CUDAAllocatorConfig::lexArgs(): ',', ':', '[' and ']' are tokens of their
// own, spaces are dropped, everything else accumulates into words.
std::vector<std::string> lex_args(std::string_view env) {
  std::vector<std::string> config;
  std::string buf;
  for (char ch : env) {
    if (ch == ',' || ch == ':' || ch == '[' || ch == ']') {
      if (!buf.empty()) config.push_back(std::move(buf));
      buf.clear();
      config.emplace_back(1, ch);
    } else if (ch != ' ') {
      buf.push_back(ch);
    }
  }
  if (!buf.empty()) config.push_back(std::move(buf));
  return config;
}

// CUDAAllocatorConfig::parseArgs() and its parse* helpers, with the
// source's checks; every failure names the key.
class ConfigParser {
 public:
  explicit ConfigParser(std::vector<std::string> tokens) : config_(std::move(tokens)) {}

  AllocatorConfig parse() {
    for (size_t i = 0; i < config_.size(); i++) {
      const std::string key = config_[i];
      if (key == "max_split_size_mb") {
        // parseMaxSplitSize(): "must be > kLargeBuffer / 1 MiB" (20).
        out_.max_split_size = mebibytes_above_large_buffer(i, key) * kMiB;
      } else if (key == "max_non_split_rounding_mb") {
        // parseMaxNonSplitRoundingSize(): the same bound.
        out_.max_non_split_rounding_size = mebibytes_above_large_buffer(i, key) * kMiB;
      } else if (key == "garbage_collection_threshold") {
        // parseGarbageCollectionThreshold(): strictly between 0 and 1.
        const double v = to_double(value(i, key), key);
        if (!(v > 0.0 && v < 1.0)) {
          bad(errc::kOutOfRange, key, key + " is invalid, set it in (0.0, 1.0) (got " + config_[i] + ")");
        }
        out_.garbage_collection_threshold = v;
      } else if (key == "roundup_power2_divisions") {
        parse_roundup_power2_divisions(i, key);
      } else if (key == "backend") {
        // parseAllocatorConfig(): native or cudaMallocAsync.
        const std::string& v = value(i, key);
        if (v != "native" && v != "cudaMallocAsync") {
          bad(errc::kUnknownValue, key,
              "Unknown allocator backend '" + v + "', options are native and cudaMallocAsync");
        }
        out_.backend_cuda_malloc_async = v == "cudaMallocAsync";
      } else if (key == "expandable_segments") {
        out_.expandable_segments = to_bool(i, key);
      } else if (key == "release_lock_on_cudamalloc" || key == "release_lock_on_hipmalloc" ||
                 key == "pinned_use_cuda_host_register" || key == "pinned_use_hip_host_register" ||
                 key == "pinned_use_background_threads" || key == "graph_capture_record_stream_reuse") {
        to_bool(i, key);  // True/False; no effect on device memory
      } else if (key == "pinned_num_register_threads") {
        // parsePinnedNumRegisterThreads(): a power of two, at most 128.
        const int64_t v = to_int(value(i, key), key);
        if (!std::has_single_bit(static_cast<uint64_t>(v)) || v > 128) {
          bad(errc::kOutOfRange, key, key + " has to be a power of 2 and at most 128 (got " + config_[i] + ")");
        }
      } else if (key == "pinned_reserve_segment_size_mb") {
        // parsePinnedReserveSegmentSize(): greater than 0.
        if (to_int(value(i, key), key) <= 0) bad(errc::kOutOfRange, key, key + " has to be greater than 0");
      } else if (key == "per_process_memory_fraction") {
        // parsePerProcessMemoryFraction() (newest PyTorch): within [0, 1].
        const double v = to_double(value(i, key), key);
        if (!(v >= 0.0 && v <= 1.0)) bad(errc::kOutOfRange, key, key + " is invalid, set it in [0.0, 1.0]");
        out_.per_process_memory_fraction = v;
      } else {
        bad(errc::kUnknownValue, key, "Unrecognized CachingAllocator option: " + key);
      }
      // Options are separated by ',' (a trailing one is accepted).
      if (i + 1 < config_.size()) consume_token(++i, ',', key);
    }
    return out_;
  }

 private:
  // Every message names the key.
  [[noreturn]] static void bad(const char* code, const std::string& key, const std::string& message) {
    fail(code, "PYTORCH_CUDA_ALLOC_CONF." + key,
         message.find(key) == std::string::npos ? key + ": " + message : message);
  }

  // consumeToken().
  void consume_token(size_t i, char c, const std::string& key) const {
    if (i >= config_.size() || config_[i] != std::string(1, c)) {
      bad(errc::kWrongType, key,
          "Error parsing CachingAllocator settings at " + key + ", expected '" + std::string(1, c) + "'" +
              (i < config_.size() ? " but found '" + config_[i] + "'" : " at the end"));
    }
  }

  // ':' then the value token; i moves onto the value.
  const std::string& value(size_t& i, const std::string& key) const {
    consume_token(++i, ':', key);
    if (++i >= config_.size()) bad(errc::kWrongType, key, "Error, expecting " + key + " value");
    return config_[i];
  }

  // stoi(), strictly: decimal digits only, within int's range.
  static int64_t to_int(const std::string& s, const std::string& key) {
    if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      bad(errc::kWrongType, key, key + " expects a non-negative integer (got '" + s + "')");
    }
    const int64_t v = std::stoll(s);
    if (v > std::numeric_limits<int>::max()) bad(errc::kOutOfRange, key, key + " is too large (got " + s + ")");
    return v;
  }

  // stod(), strictly: the whole token must be a number.
  static double to_double(const std::string& s, const std::string& key) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size())
      bad(errc::kWrongType, key, key + " expects a number (got '" + s + "')");
    return v;
  }

  // "Expected a single True/False argument for <key>".
  bool to_bool(size_t& i, const std::string& key) const {
    consume_token(++i, ':', key);
    ++i;
    if (i >= config_.size() || (config_[i] != "True" && config_[i] != "False")) {
      bad(errc::kUnknownValue, key, "Expected a single True/False argument for " + key);
    }
    return config_[i] == "True";
  }

  int64_t mebibytes_above_large_buffer(size_t& i, const std::string& key) const {
    const int64_t v = to_int(value(i, key), key);
    if (v <= kLargeBuffer / kMiB) {
      bad(errc::kOutOfRange, key,
          "CachingAllocator option " + key + " too small, must be > " + std::to_string(kLargeBuffer / kMiB) + " (got " +
              config_[i] + ")");
    }
    return v;
  }

  // parseRoundUpPower2Divisions(): one power of two for every interval, or
  // "[a:d, b:d, >:d]" where a, b are sizes in MiB (powers of two) whose
  // interval gets d (0 or a power of two); the first entry also fills every
  // interval below it, '>' fills from the last entry's interval (that one
  // included, as the source does) to the end; unnamed intervals stay 0.
  void parse_roundup_power2_divisions(size_t& i, const std::string& key) {
    auto& divisions = out_.roundup_power2_divisions;
    const std::string& first = value(i, key);
    if (first != "[") {
      const int64_t v = to_int(first, key);
      if (!std::has_single_bit(static_cast<uint64_t>(v))) {
        bad(errc::kOutOfRange, key, "For roundups, the divisions has to be power of 2 (got " + first + ")");
      }
      divisions.fill(v);
      return;
    }
    bool first_value = true;
    size_t last_index = 0;
    while (++i < config_.size() && config_[i] != "]") {
      const std::string interval = config_[i];
      consume_token(++i, ':', key);
      if (++i >= config_.size()) bad(errc::kWrongType, key, "Error parsing roundup_power2_divisions value");
      const int64_t v = to_int(config_[i], key);
      if (v != 0 && !std::has_single_bit(static_cast<uint64_t>(v))) {
        bad(errc::kOutOfRange, key,
            "For roundups, the divisions has to be power of 2 or 0 to disable roundup (got " + config_[i] + ")");
      }
      if (interval == ">") {
        std::fill(divisions.begin() + static_cast<std::ptrdiff_t>(last_index), divisions.end(), v);
      } else {
        const int64_t mib = to_int(interval, key);
        if (!std::has_single_bit(static_cast<uint64_t>(mib))) {
          bad(errc::kOutOfRange, key, "For roundups, the intervals have to be power of 2 (got " + interval + ")");
        }
        const size_t index =
            std::min(static_cast<size_t>(std::bit_width(static_cast<uint64_t>(mib)) - 1), divisions.size() - 1);
        if (first_value) {
          std::fill(divisions.begin(), divisions.begin() + static_cast<std::ptrdiff_t>(index), v);
          first_value = false;
        }
        divisions[index] = v;
        last_index = index;
      }
      if (i + 1 >= config_.size()) bad(errc::kWrongType, key, "Error parsing roundup_power2_divisions, expected ']'");
      if (config_[i + 1] != "]") consume_token(++i, ',', key);
    }
    if (i >= config_.size()) bad(errc::kWrongType, key, "Error parsing roundup_power2_divisions, expected ']'");
  }

  std::vector<std::string> config_;
  AllocatorConfig out_;
};

}  // namespace

Result<AllocatorConfig> parse_alloc_conf(std::string_view text) {
  return attempt<AllocatorConfig>([&] { return ConfigParser(lex_args(text)).parse(); });
}

// ---- CachingAllocator ----------------------------------------------------------

CachingAllocator::CachingAllocator(AllocatorConfig config, DeviceLimits limits)
    : impl_(std::make_unique<Impl>(config, limits)) {}
CachingAllocator::~CachingAllocator() = default;
CachingAllocator::CachingAllocator(CachingAllocator&&) noexcept = default;
CachingAllocator& CachingAllocator::operator=(CachingAllocator&&) noexcept = default;

Handle CachingAllocator::malloc(int64_t bytes, int stream) { return impl_->malloc(bytes, stream); }
bool CachingAllocator::free(Handle handle) { return impl_->free(handle); }
void CachingAllocator::empty_cache() { impl_->release_cached_blocks(); }

// resetPeakStats(): every peak becomes the current value.
void CachingAllocator::reset_peak_stats() {
  AllocatorStats& s = impl_->stats;
  for (StatArray* a : {&s.allocated_bytes, &s.reserved_bytes, &s.requested_bytes, &s.inactive_split_bytes,
                       &s.inactive_split, &s.allocation, &s.segment}) {
    reset_peak(*a);
  }
  reset_peak(s.oversize_allocations);
  reset_peak(s.oversize_segments);
}

const AllocatorStats& CachingAllocator::stats() const { return impl_->stats; }
const AllocatorConfig& CachingAllocator::config() const { return impl_->config; }
const DeviceLimits& CachingAllocator::limits() const { return impl_->limits; }
const std::vector<OutOfMemory>& CachingAllocator::ooms() const { return impl_->ooms; }

int64_t CachingAllocator::largest_free_block() const {
  return std::max(Impl::largest_in(impl_->large_blocks), Impl::largest_in(impl_->small_blocks));
}
int64_t CachingAllocator::cached_free_bytes() const {
  return impl_->stats.reserved_bytes.all.current - impl_->stats.allocated_bytes.all.current;
}
int64_t CachingAllocator::block_size(Handle handle) const {
  const Block* b = impl_->live_block(handle);
  return b == nullptr ? 0 : b->size;
}
uint64_t CachingAllocator::address(Handle handle) const {
  const Block* b = impl_->live_block(handle);
  return b == nullptr ? 0 : b->ptr;
}
std::vector<SegmentInfo> CachingAllocator::snapshot() const { return impl_->snapshot(); }

}  // namespace vram::memory

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
#include <limits>
#include <string>
#include <vector>

#include "memory/block_set.h"

namespace vram::memory {
namespace {

// Blocks, pools and expandable segments refer to each other by index into
// the allocator's arrays (the source's pointers), so the whole state is
// plain arrays: copying an allocator copies them.
using BlockId = int32_t;
constexpr BlockId kNoBlock = -1;

// CUDACachingAllocator.cpp struct Block (device, events, stream_uses and
// history left out).
struct Block {
  int64_t size = 0;            // block size in bytes
  int64_t requested_size = 0;  // memory originally requested
  uint64_t ptr = 0;            // synthetic address
  int64_t gc_count_base = 0;   // pool's get_free_blocks_call_count when cached
  int32_t stream = 0;          // allocation stream
  BlockId prev = kNoBlock;     // neighbours in the same segment
  BlockId next = kNoBlock;
  int32_t es = -1;     // expandable_segment_ (index), -1 for none
  bool small = false;  // owning pool: the small one, else the large one
  bool allocated = false;
  bool mapped = true;  // false: unmapped address space of an expandable segment
  bool live = false;   // false: on the model's free list of Block objects
  bool is_split() const { return prev != kNoBlock || next != kNoBlock; }
};

// struct BlockPool: cached free blocks by (stream, size, address) and
// unmapped expandable ranges by (stream, address). `releasable` holds the
// cached blocks release_blocks() can act on (whole segments and expandable
// blocks), in the same order, so freeing the cache, which PyTorch does before
// every retry of a malloc near the card's capacity, walks those alone and
// not every cached split block (a 4-bit model's load caches thousands). A
// cached block keeps its kind while cached: only its neighbours change, from
// one block to another. So `releasable` is built from `blocks` when first
// read (keep_releasable) and kept from then on: a replay that never frees its
// cache (no card, or one it never fills) never pays for it.
struct BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}
  BlockSet blocks;
  BlockSet releasable;
  BlockSet unmapped;
  bool is_small;
  bool releasable_kept = false;
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
  bool small = false;      // the pool: get_pool(size)
  int64_t alloc_size = 0;  // get_allocation_size(size)
  BlockId block = kNoBlock;
};

void increase_stat(Stat& s, int64_t amount) {
  s.current += amount;
  s.peak = std::max(s.peak, s.current);
}
void decrease_stat(Stat& s, int64_t amount) { s.current -= amount; }
// get_stat_types_for_pool(): AGGREGATE plus the block's pool.
void increase(StatArray& a, bool small, int64_t amount) {
  increase_stat(a.all, amount);
  increase_stat(small ? a.small_pool : a.large_pool, amount);
}
void decrease(StatArray& a, bool small, int64_t amount) {
  decrease_stat(a.all, amount);
  decrease_stat(small ? a.small_pool : a.large_pool, amount);
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
  MallocFit last_fit;

  BlockPool large_blocks{false};
  BlockPool small_blocks{true};
  // total_allocated_memory: bytes of segments and mapped pages.
  int64_t total_allocated_memory = 0;
  bool set_fraction = false;

  // Block objects, recycled through a free list.
  std::vector<Block> arena;
  std::vector<BlockId> spare_blocks;
  std::vector<ExpandableSegment> segments_arena;
  std::vector<int32_t> spare_segments;
  std::vector<BlockId> handles{kNoBlock};  // handles[h] for live h; [0] = kNullHandle
  std::vector<Handle> spare_handles;
  uint64_t next_address = uint64_t{1} << 32;
  int64_t malloc_calls = 0;

  // Whether any size interval has more than one roundup_power2_divisions
  // division (round_size() then looks its interval up).
  bool power2_rounding = false;

  Impl(AllocatorConfig c, DeviceLimits l) : config(c), limits(l) {
    set_fraction = limits.allowed_memory_maximum > 0;
    power2_rounding = std::any_of(config.roundup_power2_divisions.begin(), config.roundup_power2_divisions.end(),
                                  [](int64_t d) { return d > 1; });
  }

  Block& at(BlockId b) { return arena[static_cast<size_t>(b)]; }
  const Block& at(BlockId b) const { return arena[static_cast<size_t>(b)]; }
  BlockPool& pool_of(BlockId b) { return at(b).small ? small_blocks : large_blocks; }
  ExpandableSegment& segment(int32_t es) { return segments_arena[static_cast<size_t>(es)]; }
  // A block's place in its pool's sets.
  BlockSet::Entry key(BlockId b) const {
    const Block& x = at(b);
    return {x.size, x.ptr, x.stream, b};
  }
  BlockSet::Entry address_key(BlockId b) const {
    const Block& x = at(b);
    return {0, x.ptr, x.stream, b};
  }

  BlockId new_block(int stream, int64_t size, bool small, uint64_t ptr) {
    Block x;
    x.stream = stream;
    x.size = size;
    x.small = small;
    x.ptr = ptr;
    x.live = true;
    if (spare_blocks.empty()) {
      arena.push_back(x);
      return static_cast<BlockId>(arena.size()) - 1;
    }
    const BlockId b = spare_blocks.back();
    spare_blocks.pop_back();
    at(b) = x;
    return b;
  }
  void delete_block(BlockId b) {
    at(b).live = false;
    spare_blocks.push_back(b);
  }

  bool releasable(BlockId b) const { return at(b).es >= 0 || !at(b).is_split(); }
  // Whether `pool.releasable` is kept and lists b.
  bool kept_releasable(const BlockPool& pool, BlockId b) const { return pool.releasable_kept && releasable(b); }
  // pool.releasable, built from pool.blocks on first use (BlockPool).
  const BlockSet& keep_releasable(BlockPool& pool) {
    if (!pool.releasable_kept) {
      pool.blocks.for_each([&](const BlockSet::Entry& e) {
        if (releasable(e.id)) pool.releasable.insert(e);
      });
      pool.releasable_kept = true;
    }
    return pool.releasable;
  }

  // BlockPool::insert_into_blocks(): caches a block and stamps its gc age.
  void insert_into_blocks(BlockPool& pool, BlockId b) {
    at(b).gc_count_base = pool.get_free_blocks_call_count;
    pool.blocks.insert(key(b));
    if (kept_releasable(pool, b)) pool.releasable.insert(key(b));
  }
  // Takes a block out of the cache (the source's pool.blocks.erase(block)).
  void remove_from_blocks(BlockPool& pool, BlockId b) {
    pool.blocks.erase(key(b));
    if (kept_releasable(pool, b)) pool.releasable.erase(key(b));
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
    const int64_t divisions = power2_rounding ? roundup_power2_divisions(size) : 0;
    if (divisions > 1 && size > kMinBlockSize * divisions) return roundup_power2_next_division(size, divisions);
    return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
  }

  // get_pool(): rounded size <= kSmallSize goes to the small pool.
  static bool is_small_size(int64_t size) { return size <= kSmallSize; }
  BlockPool& get_pool(bool small) { return small ? small_blocks : large_blocks; }

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
  bool should_split(BlockId block, int64_t size) const {
    const int64_t remaining = at(block).size - size;
    if (at(block).small || config.expandable_segments) return remaining >= kMinBlockSize;
    return size < config.max_split_size && remaining > kSmallSize;
  }

  // get_free_block(): best fit — the smallest cached block of the same
  // stream with size >= the request (lower_bound on (stream, size, address)).
  bool get_free_block(AllocParams& p) {
    BlockPool& pool = get_pool(p.small);
    // Block reuse is aged only when garbage collection can run.
    if (set_fraction && config.garbage_collection_threshold > 0.0) ++pool.get_free_blocks_call_count;
    BlockSet::Pos it = pool.blocks.lower_bound({p.size, 0, p.stream, kNoBlock});
    if (pool.blocks.at_end(it)) return false;
    BlockId found = pool.blocks.at(it).id;
    if (at(found).stream != p.stream) return false;
    // Expandable segments: a free block followed by unmapped space counts as
    // the size it can grow to, so a block that cannot grow is preferred. (The
    // source's other branch, expandable segments switched off after blocks
    // were created, cannot happen here: the config is fixed.)
    if (at(found).es >= 0) {
      auto expandable_size = [&](BlockId b) {
        const Block& x = at(b);
        return x.size + (x.next != kNoBlock && !at(x.next).mapped ? at(x.next).size : 0);
      };
      BlockSet::Pos next = pool.blocks.next(it);
      while (at(pool.blocks.at(it).id).es >= 0 && !pool.blocks.at_end(next) &&
             pool.blocks.at(next).stream == p.stream &&
             expandable_size(pool.blocks.at(next).id) < expandable_size(pool.blocks.at(it).id)) {
        it = next;
        next = pool.blocks.next(next);
      }
      found = pool.blocks.at(it).id;
    }
    // "Do not return an oversized block for a large request": below
    // max_split_size never take a block >= max_split_size.
    if (p.size < config.max_split_size && at(found).size >= config.max_split_size) return false;
    // "Allow oversized block size to be rounded up but within a limit":
    // at or above max_split_size take a block only if it is less than
    // max_non_split_rounding_size (default kLargeBuffer) larger.
    if (p.size >= config.max_split_size && at(found).size >= p.size + config.max_non_split_rounding_size) return false;
    p.block = found;
    pool.blocks.erase_at(it);
    if (kept_releasable(pool, found)) pool.releasable.erase(key(found));
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
      p.block = try_allocate_expandable_block(p.stream, get_pool(p.small), p.size);
      return p.block != kNoBlock;
    }
    if (limits.capacity > 0 && total_allocated_memory + size > limits.capacity) return false;
    total_allocated_memory += size;
    const uint64_t ptr = next_address;
    next_address += static_cast<uint64_t>((size + kRoundLarge - 1) / kRoundLarge * kRoundLarge);
    p.block = new_block(p.stream, size, p.small, ptr);
    increase(stats.segment, p.small, 1);
    increase(stats.reserved_bytes, p.small, size);
    if (size >= config.max_split_size) increase_stat(stats.oversize_segments, 1);
    stats.num_device_alloc++;
    return true;
  }

  // release_block(): cudaFree of an entire, unsplit, cached segment.
  void release_block(BlockId block) {
    const Block& b = at(block);
    stats.num_device_free++;
    total_allocated_memory -= b.size;
    decrease(stats.segment, b.small, 1);
    decrease(stats.reserved_bytes, b.small, b.size);
    if (b.size >= config.max_split_size) decrease_stat(stats.oversize_segments, 1);
    remove_from_blocks(pool_of(block), block);
    delete_block(block);
  }

  // release_available_cached_blocks(): with max_split_size set, free the
  // smallest oversize cached block of the stream that is >= max(size,
  // max_split_size); if there is none, free oversize blocks from the largest
  // down until that many bytes are freed. Expandable blocks are skipped
  // (newer upstream; older versions asserted on them).
  bool release_available_cached_blocks(const AllocParams& p) {
    if (config.max_split_size == kNoMaxSplitSize) return false;
    BlockPool& pool = get_pool(p.small);
    const int64_t wanted = std::max(p.size, config.max_split_size);
    BlockSet::Pos it = pool.blocks.lower_bound({wanted, 0, p.stream, kNoBlock});
    if (pool.blocks.at_end(it) || pool.blocks.at(it).stream != p.stream || at(pool.blocks.at(it).id).es >= 0) {
      if (pool.blocks.is_begin(it)) return false;
      // The blocks to free, from the largest of a stream at or before ours
      // down (chosen first, freed after: freeing moves the set's entries).
      std::vector<BlockId> release;
      int64_t total_released = 0;
      it = pool.blocks.prev(it);
      while (total_released < wanted && pool.blocks.at(it).size >= config.max_split_size &&
             pool.blocks.at(it).stream == p.stream) {
        const BlockSet::Pos cur = it;
        const bool is_first = pool.blocks.is_begin(cur);
        if (!is_first) it = pool.blocks.prev(it);
        if (at(pool.blocks.at(cur).id).es < 0) {
          total_released += pool.blocks.at(cur).size;
          release.push_back(pool.blocks.at(cur).id);
        }
        if (is_first) break;
      }
      for (BlockId b : release) release_block(b);
      if (total_released < wanted) return false;
    } else {
      release_block(pool.blocks.at(it).id);
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
    std::vector<BlockId> to_release;
    std::vector<BlockId> to_unmap;
    keep_releasable(pool).for_each([&](const BlockSet::Entry& e) {
      const Block& b = at(e.id);
      if (b.es >= 0) {
        to_unmap.push_back(e.id);
      } else if (b.prev == kNoBlock && b.next == kNoBlock) {
        to_release.push_back(e.id);
      }
    });
    for (BlockId b : to_release) release_block(b);
    for (BlockId b : to_unmap) {
      unmap_block(b);
      if (at(b).prev == kNoBlock && at(b).next == kNoBlock) release_expandable_segment(b);
    }
  }

  // release_expandable_segment(): the segment is one unmapped block again.
  void release_expandable_segment(BlockId block) {
    pool_of(block).unmapped.erase(address_key(block));
    spare_segments.push_back(at(block).es);
    delete_block(block);
  }

  // unmap_block(): unmaps the whole pages inside a cached expandable block;
  // the partial pages at its ends stay as free mapped blocks.
  void unmap_block(BlockId block) {
    const auto unmapped = segment(at(block).es).pages_inside(at(block).ptr, at(block).size);
    if (unmapped.size == 0) return;
    BlockPool& pool = pool_of(block);
    remove_from_blocks(pool, block);
    const int64_t before_size = static_cast<int64_t>(unmapped.ptr - at(block).ptr);
    if (before_size > 0) {
      const BlockId before_free = new_block(at(block).stream, before_size, at(block).small, at(block).ptr);
      at(before_free).es = at(block).es;
      splice(before_free, at(block).prev, block);
      insert_into_blocks(pool, before_free);
    }
    const int64_t after_size = at(block).size - (before_size + unmapped.size);
    if (after_size > 0) {
      const BlockId after_free =
          new_block(at(block).stream, after_size, at(block).small, unmapped.ptr + static_cast<uint64_t>(unmapped.size));
      at(after_free).es = at(block).es;
      splice(after_free, block, at(block).next);
      insert_into_blocks(pool, after_free);
    }
    at(block).ptr = unmapped.ptr;
    at(block).size = unmapped.size;
    at(block).mapped = false;
    try_merge_blocks(block, at(block).prev, pool);
    try_merge_blocks(block, at(block).next, pool);
    pool.unmapped.insert(address_key(block));
    total_allocated_memory -= unmapped.size;
    decrease(stats.reserved_bytes, pool.is_small, unmapped.size);
    stats.num_device_free++;
  }

  // Block::splice(): puts b between before and after.
  void splice(BlockId b, BlockId before, BlockId after) {
    if (before != kNoBlock) at(before).next = b;
    at(b).prev = before;
    if (after != kNoBlock) at(after).prev = b;
    at(b).next = after;
  }

  // find_expandable_block(): the lowest address of the stream's expandable
  // segments where free and unmapped blocks together give `size` bytes (an
  // unmapped block, or the free block just before it); else a new segment
  // (one unmapped block spanning its whole address space).
  BlockId find_expandable_block(int stream, BlockPool& pool, int64_t size) {
    auto allocatable = [&](BlockId b) { return b != kNoBlock && !at(b).allocated; };
    auto has_available_address_space = [&](BlockId b) {
      int64_t bytes = 0;
      while (bytes < size && allocatable(b)) {
        bytes += at(b).size;
        b = at(b).next;
      }
      return bytes >= size;
    };
    for (BlockSet::Pos it = pool.unmapped.lower_bound({0, 0, stream, kNoBlock});
         !pool.unmapped.at_end(it) && pool.unmapped.at(it).stream == stream; it = pool.unmapped.next(it)) {
      BlockId c = pool.unmapped.at(it).id;
      if (allocatable(at(c).prev)) c = at(c).prev;
      if (has_available_address_space(c)) return c;
    }
    // ExpandableSegment(): 2 MiB pages for the small pool, 20 MiB for the
    // large one; address space for 9/8 of the device memory.
    const int64_t segment_size = pool.is_small ? kSmallBuffer : kLargeBuffer;
    const int64_t device_memory = limits.capacity > 0 ? limits.capacity : kUnlimitedAddressSpace;
    const int64_t max_handles = (device_memory + device_memory / 8 + segment_size - 1) / segment_size;
    int32_t es;
    if (!spare_segments.empty()) {
      es = spare_segments.back();
      spare_segments.pop_back();
    } else {
      es = static_cast<int32_t>(segments_arena.size());
      segments_arena.emplace_back();
    }
    const auto align = static_cast<uint64_t>(segment_size);
    next_address = (next_address + align - 1) / align * align;
    segment(es) = ExpandableSegment{next_address, segment_size, max_handles * segment_size};
    next_address += static_cast<uint64_t>(segment(es).size);
    const BlockId candidate = new_block(stream, segment(es).size, pool.is_small, segment(es).base);
    at(candidate).mapped = false;
    at(candidate).es = es;
    pool.unmapped.insert(address_key(candidate));
    return candidate;
  }

  // map_block(): maps the pages covering the first `size` bytes of an
  // unmapped block (cuMemCreate fails past the device capacity: nothing is
  // mapped then), splits off the rest, merges with free neighbours, caches it.
  bool map_block(BlockId to_map, int64_t size) {
    const auto mapped_range = segment(at(to_map).es).pages_covering(at(to_map).ptr, size);
    if (mapped_range.size == 0) return false;
    if (limits.capacity > 0 && total_allocated_memory + mapped_range.size > limits.capacity) return false;
    BlockPool& pool = pool_of(to_map);
    pool.unmapped.erase(address_key(to_map));
    at(to_map).mapped = true;
    if (mapped_range.size < at(to_map).size) {
      const BlockId remaining = new_block(at(to_map).stream, at(to_map).size - mapped_range.size, at(to_map).small,
                                          at(to_map).ptr + static_cast<uint64_t>(mapped_range.size));
      at(remaining).mapped = false;
      at(remaining).es = at(to_map).es;
      splice(remaining, to_map, at(to_map).next);
      pool.unmapped.insert(address_key(remaining));
      at(to_map).size = mapped_range.size;
    }
    try_merge_blocks(to_map, at(to_map).prev, pool);
    try_merge_blocks(to_map, at(to_map).next, pool);
    insert_into_blocks(pool, to_map);
    total_allocated_memory += mapped_range.size;
    increase(stats.reserved_bytes, pool.is_small, mapped_range.size);
    stats.num_device_alloc++;
    return true;
  }

  // try_allocate_expandable_block(): map just the pages needed at the
  // lowest fitting address, merging with the free block before them.
  BlockId try_allocate_expandable_block(int stream, BlockPool& pool, int64_t size) {
    BlockId candidate = find_expandable_block(stream, pool, size);
    if (!at(candidate).mapped && !map_block(candidate, std::min(at(candidate).size, size))) return kNoBlock;
    while (at(candidate).size < size) {
      const int64_t remaining = size - at(candidate).size;
      const BlockId new_candidate = at(candidate).next;
      // Invariant "free -> unmapped -> *" (find_expandable_block checked the
      // room); guarded so a broken invariant is an OOM, not a crash.
      if (new_candidate == kNoBlock || at(new_candidate).mapped) return kNoBlock;
      if (!map_block(new_candidate, std::min(remaining, at(new_candidate).size))) return kNoBlock;
      candidate = new_candidate;
    }
    remove_from_blocks(pool, candidate);
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
    auto gc_count = [&](BlockId b) { return large_blocks.get_free_blocks_call_count - at(b).gc_count_base; };
    int64_t total_age = 0;
    int64_t freeable_block_count = 0;
    keep_releasable(large_blocks).for_each([&](const BlockSet::Entry& e) {
      if (!at(e.id).is_split()) {
        total_age += gc_count(e.id);
        ++freeable_block_count;
      }
    });
    if (freeable_block_count == 0) return;
    bool block_freed = true;
    while (gc_reclaimed < target_size && block_freed && freeable_block_count > 0) {
      const double age_threshold = static_cast<double>(total_age) / static_cast<double>(freeable_block_count);
      block_freed = false;
      // Chosen in set order, freed after (freeing moves the set's entries).
      std::vector<BlockId> old;
      large_blocks.releasable.for_each([&](const BlockSet::Entry& e) {
        if (!at(e.id).is_split() && at(e.id).es < 0 && static_cast<double>(gc_count(e.id)) >= age_threshold) {
          old.push_back(e.id);
        }
      });
      for (BlockId b : old) {
        block_freed = true;
        gc_reclaimed += at(b).size;
        total_age -= gc_count(b);
        freeable_block_count--;
        release_block(b);
      }
    }
  }

  // alloc_found_block(): split the block when should_split() says so (the
  // front part is handed out, the rest cached) and count it.
  BlockId alloc_found_block(const AllocParams& p, int64_t orig_size, bool split_remainder) {
    const int64_t size = p.size;
    BlockPool& pool = get_pool(p.small);
    BlockId block = p.block;
    const bool already_split = at(block).is_split();
    if (split_remainder) {
      const BlockId remaining = block;
      block = new_block(p.stream, size, p.small, at(remaining).ptr);
      at(block).es = at(remaining).es;
      at(block).prev = at(remaining).prev;
      if (at(block).prev != kNoBlock) at(at(block).prev).next = block;
      at(block).next = remaining;
      at(remaining).prev = block;
      at(remaining).ptr += static_cast<uint64_t>(size);
      at(remaining).size -= size;
      insert_into_blocks(pool, remaining);
      if (already_split && at(block).es < 0) {
        // An already-split inactive block shrinks by size bytes.
        decrease(stats.inactive_split_bytes, pool.is_small, at(block).size);
      } else if (at(block).es < 0) {
        // A new inactive split block of remaining->size bytes.
        increase(stats.inactive_split_bytes, pool.is_small, at(remaining).size);
        increase(stats.inactive_split, pool.is_small, 1);
      }
    } else if (already_split && at(block).es < 0) {
      // An inactive split block becomes active.
      decrease(stats.inactive_split_bytes, pool.is_small, at(block).size);
      decrease(stats.inactive_split, pool.is_small, 1);
    }
    Block& b = at(block);
    b.allocated = true;
    b.requested_size = orig_size;
    increase(stats.allocation, pool.is_small, 1);
    increase(stats.allocated_bytes, pool.is_small, b.size);
    increase(stats.requested_bytes, pool.is_small, b.requested_size);
    if (b.size >= config.max_split_size) increase_stat(stats.oversize_allocations, 1);
    return block;
  }

  // try_merge_blocks(): dst absorbs a free neighbour src of the same
  // mapped state; returns the bytes absorbed.
  int64_t try_merge_blocks(BlockId dst, BlockId src, BlockPool& pool) {
    if (src == kNoBlock || at(src).allocated || at(dst).mapped != at(src).mapped) return 0;
    // Out of its set before its neighbour's key changes.
    if (at(src).mapped) {
      remove_from_blocks(pool, src);
    } else {
      pool.unmapped.erase(address_key(src));
    }
    Block& d = at(dst);
    const Block& s = at(src);
    if (d.prev == src) {  // [src dst]
      d.ptr = s.ptr;
      d.prev = s.prev;
      if (d.prev != kNoBlock) at(d.prev).next = dst;
    } else {  // [dst src]
      d.next = s.next;
      if (d.next != kNoBlock) at(d.next).prev = dst;
    }
    const int64_t subsumed_size = s.size;
    d.size += subsumed_size;
    delete_block(src);
    return subsumed_size;
  }

  // free_block(): merge with free neighbours, cache, and count the change
  // of inactive split blocks (not for expandable segments).
  void free_block(BlockId block) {
    const int64_t requested_size = at(block).requested_size;
    const bool small = at(block).small;
    BlockPool& pool = get_pool(small);
    int64_t net_change_inactive_split_blocks = 0;
    int64_t net_change_inactive_split_size = 0;
    for (BlockId merge_candidate : {at(block).prev, at(block).next}) {
      // (try_merge_blocks' first test, here to skip the call for an allocated neighbour)
      if (merge_candidate == kNoBlock || at(merge_candidate).allocated) continue;
      const int64_t subsumed_size = try_merge_blocks(block, merge_candidate, pool);
      if (subsumed_size > 0) {
        net_change_inactive_split_blocks -= 1;
        net_change_inactive_split_size -= subsumed_size;
      }
    }
    insert_into_blocks(pool, block);
    if (at(block).is_split()) {
      net_change_inactive_split_blocks += 1;
      net_change_inactive_split_size += at(block).size;
    }
    if (at(block).es < 0) {
      if (net_change_inactive_split_blocks > 0) increase(stats.inactive_split, small, net_change_inactive_split_blocks);
      if (net_change_inactive_split_blocks < 0)
        decrease(stats.inactive_split, small, -net_change_inactive_split_blocks);
      if (net_change_inactive_split_size > 0)
        increase(stats.inactive_split_bytes, small, net_change_inactive_split_size);
      if (net_change_inactive_split_size < 0)
        decrease(stats.inactive_split_bytes, small, -net_change_inactive_split_size);
    }
    // The source's active / active_bytes equal allocation / allocated_bytes
    // here (no record_stream), so they are not kept separately.
    decrease(stats.requested_bytes, small, requested_size);
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
    p.small = is_small_size(p.size);
    p.alloc_size = get_allocation_size(p.size);
    bool block_found = get_free_block(p);
    last_fit = {p.size, block_found ? at(p.block).size : 0, 0, stream, p.small};
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
    if (last_fit.taken == 0) last_fit.created = at(p.block).size;
    const bool split_remainder = should_split(p.block, p.size);
    const BlockId block = alloc_found_block(p, orig_size, split_remainder);
    Handle h;
    if (!spare_handles.empty()) {
      h = spare_handles.back();
      spare_handles.pop_back();
    } else {
      h = static_cast<Handle>(handles.size());
      handles.push_back(kNoBlock);
    }
    handles[static_cast<size_t>(h)] = block;
    return h;
  }

  BlockId live_block(Handle h) const {
    if (h <= 0 || static_cast<size_t>(h) >= handles.size()) return kNoBlock;
    return handles[static_cast<size_t>(h)];
  }

  // DeviceCachingAllocator::free().
  bool free(Handle h) {
    if (h == kNullHandle) return true;
    const BlockId block = live_block(h);
    if (block == kNoBlock) return false;
    handles[static_cast<size_t>(h)] = kNoBlock;
    spare_handles.push_back(h);
    Block& b = at(block);
    b.allocated = false;
    decrease(stats.allocation, b.small, 1);
    decrease(stats.allocated_bytes, b.small, b.size);
    if (b.size >= config.max_split_size) decrease_stat(stats.oversize_allocations, 1);
    free_block(block);
    return true;
  }

  // cacheInfo() / cache_info_aux(): the largest cached block. Blocks are
  // ordered by stream first, so the largest of each stream is the last
  // before the next stream.
  static int64_t largest_in(const BlockPool& pool) {
    int64_t largest = 0;
    BlockSet::Pos it = pool.blocks.begin();
    while (!pool.blocks.at_end(it)) {
      const int32_t stream = pool.blocks.at(it).stream;
      const BlockSet::Pos end_of_stream = pool.blocks.lower_bound(
          {std::numeric_limits<int64_t>::max(), std::numeric_limits<uint64_t>::max(), stream, kNoBlock});
      // The key above is past every block of the stream but one of that
      // exact size and address, which cannot exist (addresses are below 2^64 - 1).
      largest = std::max(largest, pool.blocks.at(pool.blocks.prev(end_of_stream)).size);
      it = end_of_stream;
    }
    return largest;
  }

  std::vector<SegmentInfo> snapshot() const {
    std::vector<SegmentInfo> result;
    for (size_t i = 0; i < arena.size(); ++i) {
      const Block& head = arena[i];
      if (!head.live || !head.mapped) continue;
      // One segment per cudaMalloc, or per contiguous mapped range of an
      // expandable segment (DeviceCachingAllocator::snapshot()).
      if (head.prev != kNoBlock && at(head.prev).mapped) continue;
      SegmentInfo& s = result.emplace_back();
      s.address = head.ptr;
      s.stream = head.stream;
      s.is_large = !head.small;
      s.is_expandable = head.es >= 0;
      for (BlockId b = static_cast<BlockId>(i); b != kNoBlock && at(b).mapped; b = at(b).next) {
        const Block& x = at(b);
        s.blocks.push_back({x.size, x.allocated ? x.requested_size : 0, x.allocated});
        s.total_size += x.size;
        if (x.allocated) s.allocated_size += x.size;
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
CachingAllocator::CachingAllocator(const CachingAllocator& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
CachingAllocator& CachingAllocator::operator=(const CachingAllocator& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}

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
const MallocFit& CachingAllocator::last_fit() const { return impl_->last_fit; }
const AllocatorConfig& CachingAllocator::config() const { return impl_->config; }
const DeviceLimits& CachingAllocator::limits() const { return impl_->limits; }
// The limits act in alloc_block() and map_block() (a failure then frees
// cached segments or retries, or fails), in garbage_collect_cached_blocks()
// (only with a memory fraction) and in the size of an expandable segment's
// address space.
bool CachingAllocator::limits_idle() const {
  const AllocatorStats& s = impl_->stats;
  return s.num_ooms == 0 && s.num_alloc_retries == 0 && s.num_device_free == 0 && !impl_->config.expandable_segments &&
         !impl_->set_fraction;
}
void CachingAllocator::set_limits(const DeviceLimits& limits) {
  impl_->limits = limits;
  impl_->set_fraction = limits.allowed_memory_maximum > 0;
}
const std::vector<OutOfMemory>& CachingAllocator::ooms() const { return impl_->ooms; }

int64_t CachingAllocator::largest_free_block() const {
  return std::max(Impl::largest_in(impl_->large_blocks), Impl::largest_in(impl_->small_blocks));
}
int64_t CachingAllocator::cached_free_bytes() const {
  return impl_->stats.reserved_bytes.all.current - impl_->stats.allocated_bytes.all.current;
}
int64_t CachingAllocator::block_size(Handle handle) const {
  const BlockId b = impl_->live_block(handle);
  return b == kNoBlock ? 0 : impl_->at(b).size;
}
uint64_t CachingAllocator::address(Handle handle) const {
  const BlockId b = impl_->live_block(handle);
  return b == kNoBlock ? 0 : impl_->at(b).ptr;
}
std::vector<SegmentInfo> CachingAllocator::snapshot() const { return impl_->snapshot(); }

std::vector<std::pair<uint64_t, int64_t>> CachingAllocator::cached_by_segment() const {
  std::vector<std::pair<uint64_t, int64_t>> out;
  const auto& arena = impl_->arena;
  for (size_t i = 0; i < arena.size(); ++i) {
    const Block& head = arena[i];
    // Segments as snapshot() cuts them.
    if (!head.live || !head.mapped || (head.prev != kNoBlock && impl_->at(head.prev).mapped)) continue;
    int64_t unused = 0;
    for (BlockId b = static_cast<BlockId>(i); b != kNoBlock && impl_->at(b).mapped; b = impl_->at(b).next) {
      if (!impl_->at(b).allocated) unused += impl_->at(b).size;
    }
    if (unused > 0) out.emplace_back(head.ptr, unused);
  }
  return out;
}

}  // namespace vram::memory

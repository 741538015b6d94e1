// The caching allocator model against numbers worked by hand from
// c10/cuda/CUDACachingAllocator.cpp (round_size, get_allocation_size,
// get_free_block, should_split, free_block, the malloc retry path) and
// c10/cuda/CUDAAllocatorConfig.cpp (parseArgs). Each test derives its
// expected figures in a comment.
#include "memory/caching_allocator.h"

#include <gtest/gtest.h>

#include <vector>

namespace vram::memory {
namespace {

constexpr int64_t MiB(double m) { return static_cast<int64_t>(m * static_cast<double>(kMiB)); }

AllocatorConfig conf(const char* text) {
  auto r = parse_alloc_conf(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : AllocatorConfig{};
}

// Block sizes of the segment at `index` in address order, with a flag for
// allocated ones: {size, allocated}.
std::vector<std::pair<int64_t, bool>> blocks_of(const CachingAllocator& a, size_t index) {
  std::vector<std::pair<int64_t, bool>> out;
  const auto segments = a.snapshot();
  if (index >= segments.size()) return out;
  for (const auto& b : segments[index].blocks) out.emplace_back(b.size, b.allocated);
  return out;
}

using Blocks = std::vector<std::pair<int64_t, bool>>;

// ---- sizes and segments --------------------------------------------------------

// 1.5 MiB rounds to itself (a multiple of 512), is > kSmallSize so goes to
// the large pool, and is < kMinLargeAlloc (10 MiB): get_allocation_size gives
// a kLargeBuffer (20 MiB) segment. should_split: 18.5 MiB left > kSmallSize,
// so the block is split and memory_allocated counts only 1.5 MiB; the 18.5 MiB
// remainder is an inactive split block.
TEST(CachingAllocator, OnePointFiveMibRequestTakesATwentyMibSegment) {
  CachingAllocator a;
  ASSERT_GT(a.malloc(MiB(1.5)), 0);
  EXPECT_EQ(a.stats().allocated_bytes.all.current, MiB(1.5));
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(20));
  EXPECT_EQ(a.stats().reserved_bytes.large_pool.current, MiB(20));
  EXPECT_EQ(a.stats().segment.all.current, 1);
  EXPECT_EQ(a.stats().num_device_alloc, 1);
  EXPECT_EQ(a.stats().inactive_split.all.current, 1);
  EXPECT_EQ(a.stats().inactive_split_bytes.all.current, MiB(18.5));
  EXPECT_EQ(blocks_of(a, 0), (Blocks{{MiB(1.5), true}, {MiB(18.5), false}}));
}

// The second 1.5 MiB request finds the 18.5 MiB free block (best fit in the
// large pool), splits it again (17 MiB left > 1 MiB): no second cudaMalloc.
TEST(CachingAllocator, TwoOnePointFiveMibRequestsShareOneSegment) {
  CachingAllocator a;
  ASSERT_GT(a.malloc(MiB(1.5)), 0);
  ASSERT_GT(a.malloc(MiB(1.5)), 0);
  EXPECT_EQ(a.stats().allocated_bytes.all.current, MiB(3));
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(20));
  EXPECT_EQ(a.stats().num_device_alloc, 1);
  // The shrinking inactive block: 18.5 - 1.5 = 17 MiB, still one block.
  EXPECT_EQ(a.stats().inactive_split_bytes.all.current, MiB(17));
  EXPECT_EQ(a.stats().inactive_split.all.current, 1);
  EXPECT_EQ(blocks_of(a, 0), (Blocks{{MiB(1.5), true}, {MiB(1.5), true}, {MiB(17), false}}));
}

// 300 KiB = 307200 B = 600 × 512, <= kSmallSize: the small pool, whose
// segments are kSmallBuffer (2 MiB); split since 2 MiB - 300 KiB >= 512.
TEST(CachingAllocator, ThreeHundredKibRequestTakesATwoMibSmallSegment) {
  CachingAllocator a;
  ASSERT_GT(a.malloc(300 * kKiB), 0);
  EXPECT_EQ(a.stats().allocated_bytes.all.current, 307200);
  EXPECT_EQ(a.stats().allocated_bytes.small_pool.current, 307200);
  EXPECT_EQ(a.stats().reserved_bytes.small_pool.current, MiB(2));
  EXPECT_EQ(a.stats().reserved_bytes.large_pool.current, 0);
  EXPECT_EQ(a.stats().inactive_split_bytes.small_pool.current, MiB(2) - 307200);
}

// round_size: below kMinBlockSize -> 512; otherwise up to a multiple of 512.
// memory_allocated counts the rounded sizes: 512 + 1024 + 512; the
// requested_bytes stat keeps the callers' 1 + 1000 + 512.
TEST(CachingAllocator, SizesRoundUpTo512Bytes) {
  CachingAllocator a;
  const Handle one = a.malloc(1);
  const Handle thousand = a.malloc(1000);
  const Handle exact = a.malloc(512);
  EXPECT_EQ(a.block_size(one), 512);
  EXPECT_EQ(a.block_size(thousand), 1024);
  EXPECT_EQ(a.block_size(exact), 512);
  EXPECT_EQ(a.stats().allocated_bytes.all.current, 2048);
  EXPECT_EQ(a.stats().requested_bytes.all.current, 1513);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(2));  // all three in one small segment
}

// >= kMinLargeAlloc: the segment is the size rounded up to kRoundLarge (2 MiB).
// 12 MiB -> a 12 MiB segment, nothing left. 13 MiB -> 14 MiB; 1 MiB left is
// not > kSmallSize, so the block is not split and memory_allocated counts all
// 14 MiB. 10.5 MiB -> 12 MiB with 1.5 MiB left > 1 MiB: split, 10.5 counted.
TEST(CachingAllocator, LargeRequestsGetTwoMibRoundedSegments) {
  CachingAllocator a;
  const Handle twelve = a.malloc(MiB(12));
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(12));
  EXPECT_EQ(a.block_size(twelve), MiB(12));
  const Handle thirteen = a.malloc(MiB(13));
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(12 + 14));
  EXPECT_EQ(a.block_size(thirteen), MiB(14));
  const Handle ten_half = a.malloc(MiB(10.5));
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(12 + 14 + 12));
  EXPECT_EQ(a.block_size(ten_half), MiB(10.5));
  EXPECT_EQ(a.stats().allocated_bytes.all.current, MiB(12 + 14 + 10.5));
  EXPECT_EQ(a.stats().requested_bytes.all.current, MiB(12 + 13 + 10.5));
  EXPECT_EQ(a.stats().segment.all.current, 3);
}

// The boundaries, exactly: get_pool() sends a rounded size <= kSmallSize
// (1 MiB) to the small pool (a 2 MiB segment); 1 MiB + 1 rounds to
// 1 MiB + 512 and goes to the large pool (a 20 MiB segment). A 10 MiB request
// is not < kMinLargeAlloc, so it gets its own 10 MiB segment, not 20 MiB.
TEST(CachingAllocator, PoolAndSegmentBoundariesAreExact) {
  CachingAllocator a;
  a.malloc(kSmallSize);
  EXPECT_EQ(a.stats().reserved_bytes.small_pool.current, MiB(2));
  EXPECT_EQ(a.stats().allocated_bytes.small_pool.current, MiB(1));
  a.malloc(kSmallSize + 1);
  EXPECT_EQ(a.stats().reserved_bytes.large_pool.current, MiB(20));
  EXPECT_EQ(a.stats().allocated_bytes.large_pool.current, MiB(1) + 512);
  CachingAllocator b;
  b.malloc(kMinLargeAlloc);
  EXPECT_EQ(b.stats().reserved_bytes.all.current, MiB(10));
  b.malloc(kMinLargeAlloc - 512);
  EXPECT_EQ(b.stats().reserved_bytes.all.current, MiB(30));
}

// ---- reuse, best fit, split and merge -------------------------------------------------

// A freed block stays cached (reserved unchanged) and serves the next request
// of a size it fits: no new cudaMalloc. An 8 MiB request takes the cached
// 12 MiB block and splits it (4 MiB left > 1 MiB).
TEST(CachingAllocator, FreedBlockIsReusedWithoutANewSegment) {
  CachingAllocator a;
  ASSERT_TRUE(a.free(a.malloc(MiB(12))));
  EXPECT_EQ(a.stats().allocated_bytes.all.current, 0);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(12));
  EXPECT_EQ(a.largest_free_block(), MiB(12));
  const Handle again = a.malloc(MiB(12));
  EXPECT_EQ(a.stats().num_device_alloc, 1);
  ASSERT_TRUE(a.free(again));
  const Handle eight = a.malloc(MiB(8));
  EXPECT_EQ(a.block_size(eight), MiB(8));
  EXPECT_EQ(a.stats().num_device_alloc, 1);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(12));
  EXPECT_EQ(a.stats().inactive_split_bytes.all.current, MiB(4));
}

// Cached 12, 16 and 14 MiB segments (each a whole unsplit block). 13 MiB takes
// the smallest that fits, 14 MiB (1 MiB left: not split); 11 MiB then takes
// 12 MiB (1 MiB left: not split). The 16 MiB block stays free.
TEST(CachingAllocator, BestFitPicksTheSmallestFittingBlock) {
  CachingAllocator a;
  const Handle h12 = a.malloc(MiB(12));
  const Handle h16 = a.malloc(MiB(16));
  const Handle h14 = a.malloc(MiB(14));
  a.free(h12);
  a.free(h16);
  a.free(h14);
  const Handle thirteen = a.malloc(MiB(13));
  EXPECT_EQ(a.block_size(thirteen), MiB(14));
  const Handle eleven = a.malloc(MiB(11));
  EXPECT_EQ(a.block_size(eleven), MiB(12));
  EXPECT_EQ(a.stats().num_device_alloc, 3);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(42));
  EXPECT_EQ(a.stats().allocated_bytes.all.current, MiB(26));
  EXPECT_EQ(a.largest_free_block(), MiB(16));
  // Segments in address order: 12 (in use), 16 (free), 14 (in use).
  EXPECT_EQ(blocks_of(a, 0), (Blocks{{MiB(12), true}}));
  EXPECT_EQ(blocks_of(a, 1), (Blocks{{MiB(16), false}}));
  EXPECT_EQ(blocks_of(a, 2), (Blocks{{MiB(14), true}}));
}

// 1.5, 3 and 5 MiB (each < 10 MiB) carve one 20 MiB segment: 18.5, 15.5 and
// 10.5 MiB left, each > 1 MiB so split. 9.5 MiB then takes the 10.5 MiB
// remainder whole (1 MiB left is not > kSmallSize): allocated = all 20 MiB.
TEST(CachingAllocator, SplittingATwentyMibSegmentLeavesRemainders) {
  CachingAllocator a;
  a.malloc(MiB(1.5));
  a.malloc(MiB(3));
  a.malloc(MiB(5));
  EXPECT_EQ(blocks_of(a, 0), (Blocks{{MiB(1.5), true}, {MiB(3), true}, {MiB(5), true}, {MiB(10.5), false}}));
  EXPECT_EQ(a.stats().inactive_split_bytes.all.current, MiB(10.5));
  const Handle last = a.malloc(MiB(9.5));
  EXPECT_EQ(a.block_size(last), MiB(10.5));
  EXPECT_EQ(a.stats().allocated_bytes.all.current, MiB(20));
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(20));
  EXPECT_EQ(a.stats().inactive_split_bytes.all.current, 0);
  EXPECT_EQ(a.stats().inactive_split.all.current, 0);
  EXPECT_EQ(a.stats().num_device_alloc, 1);
}

// [1.5][3][5][10.5 free]: freeing 3 leaves two inactive split blocks (3 and
// 10.5 = 13.5 MiB); freeing 5 merges it with both neighbours into 18.5 MiB;
// freeing 1.5 merges the whole segment back into one unsplit 20 MiB block,
// which is no longer "inactive split" and which empty_cache() releases.
TEST(CachingAllocator, FreedBlocksMergeWithFreeNeighbours) {
  CachingAllocator a;
  const Handle h15 = a.malloc(MiB(1.5));
  const Handle h3 = a.malloc(MiB(3));
  const Handle h5 = a.malloc(MiB(5));
  a.free(h3);
  EXPECT_EQ(blocks_of(a, 0), (Blocks{{MiB(1.5), true}, {MiB(3), false}, {MiB(5), true}, {MiB(10.5), false}}));
  EXPECT_EQ(a.stats().inactive_split.all.current, 2);
  EXPECT_EQ(a.stats().inactive_split_bytes.all.current, MiB(13.5));
  a.free(h5);
  EXPECT_EQ(blocks_of(a, 0), (Blocks{{MiB(1.5), true}, {MiB(18.5), false}}));
  EXPECT_EQ(a.stats().inactive_split.all.current, 1);
  EXPECT_EQ(a.stats().inactive_split_bytes.all.current, MiB(18.5));
  EXPECT_EQ(a.stats().inactive_split_bytes.all.peak, MiB(18.5));
  a.free(h15);
  EXPECT_EQ(blocks_of(a, 0), (Blocks{{MiB(20), false}}));
  EXPECT_EQ(a.stats().inactive_split.all.current, 0);
  EXPECT_EQ(a.stats().inactive_split_bytes.all.current, 0);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes.all.current, 0);
  EXPECT_EQ(a.stats().segment.all.current, 0);
  EXPECT_EQ(a.stats().num_device_free, 1);
  EXPECT_TRUE(a.snapshot().empty());
}

// empty_cache() releases only whole free segments: a segment with a live
// block keeps its free remainder.
TEST(CachingAllocator, EmptyCacheKeepsSegmentsThatAreStillInUse) {
  CachingAllocator a;
  a.malloc(MiB(1.5));            // 20 MiB segment, in use
  a.free(a.malloc(MiB(30)));     // 30 MiB segment, free
  a.free(a.malloc(100 * kKiB));  // 2 MiB small segment, free
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(52));
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(20));
  EXPECT_EQ(a.stats().num_device_free, 2);
  EXPECT_EQ(a.stats().inactive_split_bytes.all.current, MiB(18.5));
}

// Blocks are reused only on the stream that allocated them.
TEST(CachingAllocator, BlocksAreReusedOnlyOnTheirStream) {
  CachingAllocator a;
  a.free(a.malloc(MiB(12), /*stream=*/0));
  a.malloc(MiB(12), /*stream=*/1);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(24));
  EXPECT_EQ(a.stats().num_device_alloc, 2);
  a.malloc(MiB(12), /*stream=*/0);
  EXPECT_EQ(a.stats().num_device_alloc, 2);
}

// ---- max_split_size_mb ---------------------------------------------------------

// Free 64 MiB, then ask for 16 MiB. Default: best fit takes the 64 MiB block
// and splits it (48 MiB left): reserved stays 64 MiB. max_split_size_mb:40:
// get_free_block refuses a block >= 40 MiB for a request < 40 MiB, so a new
// 16 MiB segment: reserved 80 MiB, two segments.
TEST(CachingAllocator, MaxSplitSizeKeepsBigBlocksWholeAndCostsASegment) {
  CachingAllocator plain;
  plain.free(plain.malloc(MiB(64)));
  const Handle p16 = plain.malloc(MiB(16));
  EXPECT_EQ(plain.block_size(p16), MiB(16));
  EXPECT_EQ(plain.stats().reserved_bytes.all.current, MiB(64));
  EXPECT_EQ(plain.stats().segment.all.current, 1);

  CachingAllocator capped(conf("max_split_size_mb:40"));
  capped.free(capped.malloc(MiB(64)));
  EXPECT_EQ(capped.stats().oversize_segments.current, 1);
  const Handle c16 = capped.malloc(MiB(16));
  EXPECT_EQ(capped.block_size(c16), MiB(16));
  EXPECT_EQ(capped.stats().reserved_bytes.all.current, MiB(80));
  EXPECT_EQ(capped.stats().segment.all.current, 2);
}

// With max_split_size_mb:40 a cached 64 MiB block serves a request >= 40 MiB
// whole (never split) only if it is less than max_non_split_rounding (20 MiB)
// larger: 50 MiB takes it (64 < 70, allocated counts 64 MiB); 44 MiB does not
// (64 >= 64) and gets its own 44 MiB segment.
TEST(CachingAllocator, OversizeBlockServesOnlyRequestsWithinTwentyMib) {
  CachingAllocator a(conf("max_split_size_mb:40"));
  a.free(a.malloc(MiB(64)));
  const Handle fifty = a.malloc(MiB(50));
  EXPECT_EQ(a.block_size(fifty), MiB(64));
  EXPECT_EQ(a.stats().oversize_allocations.current, 1);
  EXPECT_EQ(a.stats().num_device_alloc, 1);
  a.free(fifty);
  const Handle forty_four = a.malloc(MiB(44));
  EXPECT_EQ(a.block_size(forty_four), MiB(44));
  EXPECT_EQ(a.stats().num_device_alloc, 2);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(108));
}

// max_non_split_rounding_mb:30 widens that window: 44 MiB now takes the
// cached 64 MiB block (64 < 74).
TEST(CachingAllocator, MaxNonSplitRoundingWidensTheOversizeWindow) {
  CachingAllocator a(conf("max_split_size_mb:40,max_non_split_rounding_mb:30"));
  a.free(a.malloc(MiB(64)));
  EXPECT_EQ(a.block_size(a.malloc(MiB(44))), MiB(64));
  EXPECT_EQ(a.stats().num_device_alloc, 1);
}

// ---- roundup_power2_divisions ----------------------------------------------------

// roundup_power2_divisions:4 — 5 MiB + 1 B lies in [4, 8) MiB, whose quarters
// are 4, 5, 6, 7 MiB: rounds to 6 MiB (default: 5 MiB + 512). 1200 B is not
// > 512 × 4 so keeps 512-byte rounding (1536). A power of two stays as is.
TEST(CachingAllocator, RoundupPower2DivisionsRoundsToTheNextDivision) {
  CachingAllocator plain;
  EXPECT_EQ(plain.block_size(plain.malloc(MiB(5) + 1)), MiB(5) + 512);
  CachingAllocator a(conf("roundup_power2_divisions:4"));
  EXPECT_EQ(a.block_size(a.malloc(MiB(5) + 1)), MiB(6));
  EXPECT_EQ(a.block_size(a.malloc(1200)), 1536);
  EXPECT_EQ(a.block_size(a.malloc(MiB(8))), MiB(8));
  // 300 MiB + 1 in [256, 512) MiB: quarters of 64 MiB -> 320 MiB.
  EXPECT_EQ(a.block_size(a.malloc(MiB(300) + 1)), MiB(320));
}

// The list form: "[1:2,64:8,>:4]" — 1 (index 0) gets 2 and fills nothing
// below it; 64 MiB (index 6) gets 8; '>' fills from index 6 itself onward
// with 4 (the source's fill starts at the last index, overwriting it).
// Intervals 1..5 stay 0.
TEST(CachingAllocator, RoundupPower2DivisionsListFillsIntervals) {
  const AllocatorConfig c = conf("roundup_power2_divisions:[1:2,64:8,>:4]");
  const std::array<int64_t, 16> expected = {2, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};
  EXPECT_EQ(c.roundup_power2_divisions, expected);
  CachingAllocator a(c);
  // 1.5 MiB + 1 in [1, 2) MiB, halves of 512 KiB... 2 divisions: 1 and 1.5 MiB -> 2 MiB.
  EXPECT_EQ(a.block_size(a.malloc(MiB(1.5) + 1)), MiB(2));
  // 5 MiB + 1 in [4, 8) MiB: interval 2 is 0 -> plain rounding.
  EXPECT_EQ(a.block_size(a.malloc(MiB(5) + 1)), MiB(5) + 512);
  // 100 MiB in [64, 128) MiB: quarters of 16 MiB -> 112 MiB.
  EXPECT_EQ(a.block_size(a.malloc(MiB(100))), MiB(112));
}

// ---- expandable_segments ---------------------------------------------------------

// Growing then shrinking, one tensor at a time: 12, 24, 36, 24, 12 MiB.
// Default: each larger request finds no cached block big enough and gets its
// own segment (12 + 24 + 36 = 72 MiB, three cudaMallocs); the shrinking ones
// reuse the exact 24 and 12 MiB blocks. Expandable: 12 MiB maps one 20 MiB
// page; 24 MiB finds the free 20 MiB block before the unmapped space and maps
// one more page (40 MiB); 36 MiB fits in those 40 MiB; so do 24 and 12.
// Reserved 40 MiB, two map calls.
TEST(CachingAllocator, ExpandableSegmentsReserveLessForGrowingTensors) {
  const std::vector<double> sizes = {12, 24, 36, 24, 12};
  CachingAllocator plain;
  CachingAllocator expandable(conf("expandable_segments:True"));
  for (double s : sizes) {
    plain.free(plain.malloc(MiB(s)));
    expandable.free(expandable.malloc(MiB(s)));
  }
  EXPECT_EQ(plain.stats().reserved_bytes.all.peak, MiB(72));
  EXPECT_EQ(plain.stats().num_device_alloc, 3);
  EXPECT_EQ(expandable.stats().reserved_bytes.all.peak, MiB(40));
  EXPECT_EQ(expandable.stats().num_device_alloc, 2);
  EXPECT_EQ(expandable.stats().allocated_bytes.all.peak, MiB(36));
  // One mapped range of 40 MiB, entirely free; not counted as a cudaMalloc
  // segment nor as inactive split memory (as in the source).
  EXPECT_EQ(blocks_of(expandable, 0), (Blocks{{MiB(40), false}}));
  EXPECT_EQ(expandable.stats().segment.all.current, 0);
  EXPECT_EQ(expandable.stats().inactive_split_bytes.all.current, 0);
  // empty_cache() unmaps both pages; the segment goes away.
  expandable.empty_cache();
  EXPECT_EQ(expandable.stats().reserved_bytes.all.current, 0);
  EXPECT_EQ(expandable.stats().num_device_free, 1);
  EXPECT_TRUE(expandable.snapshot().empty());
}

// Live tensors pack into the segment at 512-byte granularity (should_split
// with expandable segments: any remainder >= 512 B): 12 + 12 + 12 MiB live
// map two pages (40 MiB; default: three 12 MiB segments, 36 MiB). Freeing the
// middle one leaves a 12 MiB hole that only unmaps whole pages: none here.
TEST(CachingAllocator, ExpandableSegmentsMapWholePagesAndUnmapOnlyFreePages) {
  CachingAllocator a(conf("expandable_segments:True"));
  const Handle x = a.malloc(MiB(12));
  const Handle y = a.malloc(MiB(12));
  const Handle z = a.malloc(MiB(12));
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(40));
  EXPECT_EQ(blocks_of(a, 0), (Blocks{{MiB(12), true}, {MiB(12), true}, {MiB(12), true}, {MiB(4), false}}));
  a.free(y);
  a.empty_cache();  // the 12 MiB hole (12..24 MiB) and the 4 MiB tail hold no whole 20 MiB page
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(40));
  a.free(z);  // merges: 24..40 MiB free -> page 20..40 is whole
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(20));
  EXPECT_EQ(blocks_of(a, 0), (Blocks{{MiB(12), true}, {MiB(8), false}}));
  a.free(x);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes.all.current, 0);
}

// get_free_block() with expandable segments: a free block followed by
// unmapped space counts as the size it can grow to, so a smaller request
// prefers a hole that cannot grow. [x 12][y 12][z 12][4 free | unmapped]
// with y freed: 4 MiB could take the 4 MiB tail block exactly, but that one
// "is" 4 MiB + the unmapped rest; the 12 MiB hole is chosen and split.
TEST(CachingAllocator, ExpandableSegmentsPreferBlocksThatCannotGrow) {
  CachingAllocator a(conf("expandable_segments:True"));
  a.malloc(MiB(12));
  const Handle y = a.malloc(MiB(12));
  a.malloc(MiB(12));
  a.free(y);
  a.malloc(MiB(4));
  EXPECT_EQ(blocks_of(a, 0),
            (Blocks{{MiB(12), true}, {MiB(4), true}, {MiB(8), false}, {MiB(12), true}, {MiB(4), false}}));
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(40));
}

// Small requests use 2 MiB pages in a small-pool expandable segment.
TEST(CachingAllocator, ExpandableSmallPoolUsesTwoMibPages) {
  CachingAllocator a(conf("expandable_segments:True"));
  for (int i = 0; i < 5; ++i) a.malloc(500 * kKiB);  // 2500 KiB live -> two 2 MiB pages
  EXPECT_EQ(a.stats().reserved_bytes.small_pool.current, MiB(4));
  EXPECT_EQ(a.stats().allocated_bytes.small_pool.current, 2500 * kKiB);
}

// ---- capacity, retry and OOM -----------------------------------------------------

// Capacity 64 MiB. A cached 40 MiB segment blocks a 50 MiB cudaMalloc
// (40 + 50 > 64); max_split_size is unset so release_available_cached_blocks
// does nothing; release_cached_blocks frees the 40 MiB and the retry
// succeeds (one retry, one cudaFree). Then 20 MiB cannot fit (50 + 20 > 64)
// even after flushing an empty cache: out of memory, reported, not thrown.
TEST(CachingAllocator, OomRetryFreesTheCacheThenReportsOutOfMemory) {
  CachingAllocator a({}, DeviceLimits{.capacity = MiB(64)});
  a.free(a.malloc(MiB(40)));
  const Handle fifty = a.malloc(MiB(50));
  ASSERT_GT(fifty, 0);
  EXPECT_EQ(a.stats().num_alloc_retries, 1);
  EXPECT_EQ(a.stats().num_device_free, 1);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(50));
  EXPECT_EQ(a.stats().reserved_bytes.all.peak, MiB(50));

  EXPECT_EQ(a.malloc(MiB(20)), kOutOfMemory);
  EXPECT_EQ(a.stats().num_ooms, 1);
  EXPECT_EQ(a.stats().num_alloc_retries, 2);
  ASSERT_EQ(a.ooms().size(), 1u);
  EXPECT_EQ(a.ooms()[0].malloc_index, 2);
  EXPECT_EQ(a.ooms()[0].requested_bytes, MiB(20));
  EXPECT_EQ(a.ooms()[0].alloc_size, MiB(20));
  EXPECT_EQ(a.ooms()[0].allocated_bytes, MiB(50));
  EXPECT_EQ(a.ooms()[0].reserved_bytes, MiB(50));
  // Nothing changed; the allocator goes on.
  EXPECT_EQ(a.stats().allocated_bytes.all.current, MiB(50));
  EXPECT_GT(a.malloc(MiB(10)), 0);
}

// With max_split_size_mb:40, cached oversize blocks of 44 and 80 MiB and a
// capacity of 130 MiB: 56 MiB cannot reuse the 80 MiB block (80 >= 56 + 20)
// nor cudaMalloc (124 + 56 > 130). release_available_cached_blocks frees the
// smallest oversize block >= 56 MiB — the 80 MiB one only — and the second
// attempt succeeds without the full flush: 44 + 56 = 100 MiB reserved.
TEST(CachingAllocator, OomPathFirstReleasesJustEnoughOversizeBlocks) {
  CachingAllocator a(conf("max_split_size_mb:40"), DeviceLimits{.capacity = MiB(130)});
  const Handle h44 = a.malloc(MiB(44));
  const Handle h80 = a.malloc(MiB(80));
  a.free(h44);
  a.free(h80);
  ASSERT_GT(a.malloc(MiB(56)), 0);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(100));
  EXPECT_EQ(a.stats().num_device_free, 1);
  EXPECT_EQ(a.stats().num_alloc_retries, 0);
  EXPECT_EQ(a.largest_free_block(), MiB(44));
}

// The same when no single block is big enough: oversize blocks are freed from
// the largest down until the request's size is reached. Cached 48 and 44 MiB,
// capacity 100 MiB, request 60 MiB: free 48 (48 < 60), then 44 (92 >= 60).
TEST(CachingAllocator, OomPathReleasesSeveralOversizeBlocksFromTheLargest) {
  CachingAllocator a(conf("max_split_size_mb:40"), DeviceLimits{.capacity = MiB(100)});
  const Handle h48 = a.malloc(MiB(48));
  const Handle h44 = a.malloc(MiB(44));
  a.free(h48);
  a.free(h44);
  ASSERT_GT(a.malloc(MiB(60)), 0);
  EXPECT_EQ(a.stats().num_device_free, 2);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(60));
  EXPECT_EQ(a.stats().num_alloc_retries, 0);
}

// Expandable segments under a capacity: the OOM retry unmaps free pages of
// the segment. Capacity 60 MiB: 30 MiB maps 2 pages (40 MiB), freed; 50 MiB
// needs 3 pages and finds 40 mapped free MiB + 20 more = 60: fits. Then a
// second stream needs its own segment: 20 MiB more than 60 -> OOM after
// unmapping nothing free (all 60 MiB hold a live block).
TEST(CachingAllocator, ExpandableSegmentsRespectTheCapacity) {
  CachingAllocator a(conf("expandable_segments:True"), DeviceLimits{.capacity = MiB(60)});
  a.free(a.malloc(MiB(30)));
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(40));
  ASSERT_GT(a.malloc(MiB(50)), 0);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(60));
  EXPECT_EQ(a.malloc(MiB(5), /*stream=*/1), kOutOfMemory);
  EXPECT_EQ(a.stats().num_ooms, 1);
  EXPECT_EQ(a.stats().reserved_bytes.all.current, MiB(60));  // 10 MiB free tail stays: not a whole page
}

// garbage_collection_threshold:0.5 with set_per_process_memory_fraction
// giving 200 MiB: before a new segment, GC runs once reserved > 100 MiB.
// get_free_block() calls of the large pool, in order: 1.5 MiB (a 20 MiB
// segment whose 18.5 MiB remainder is cached, split, at call 1), 19 and 19 MiB
// (their own 20 MiB segments, kept), 24 MiB (cached at call 4), 30 MiB
// (cached at call 5): 114 MiB reserved. At call 6 (40 MiB) the whole cached
// segments are 24 MiB aged 2 and 30 MiB aged 1 (split blocks do not count):
// the mean 1.5 frees the 24 MiB one, which covers the 14 MiB over the
// threshold. Reserved 90 + 40 = 130 MiB; without GC 114 + 40 = 154 MiB.
TEST(CachingAllocator, GarbageCollectionFreesTheOldestCachedSegments) {
  const DeviceLimits fraction{.allowed_memory_maximum = MiB(200)};
  CachingAllocator gc(conf("garbage_collection_threshold:0.5"), fraction);
  CachingAllocator none({}, fraction);
  for (CachingAllocator* a : {&gc, &none}) {
    a->malloc(MiB(1.5));
    a->malloc(MiB(19));
    a->malloc(MiB(19));
    a->free(a->malloc(MiB(24)));
    a->free(a->malloc(MiB(30)));
    EXPECT_EQ(a->stats().reserved_bytes.all.current, MiB(114));
    ASSERT_GT(a->malloc(MiB(40)), 0);
  }
  EXPECT_EQ(gc.stats().reserved_bytes.all.current, MiB(130));
  EXPECT_EQ(gc.stats().num_device_free, 1);
  EXPECT_EQ(gc.largest_free_block(), MiB(30));
  EXPECT_EQ(none.stats().reserved_bytes.all.current, MiB(154));
  // The fraction also caps segments: 48 MiB fits no cached block and
  // 154 + 48 > 200, so the cache is flushed (the whole 24 and 30 MiB
  // segments; the split 18.5 MiB block stays) and the retry fits: 148 MiB.
  ASSERT_GT(none.malloc(MiB(48)), 0);
  EXPECT_EQ(none.stats().num_alloc_retries, 1);
  EXPECT_EQ(none.stats().num_device_free, 2);
  EXPECT_EQ(none.stats().reserved_bytes.all.current, MiB(148));
}

// ---- stats ------------------------------------------------------------------------

// Peaks follow the highest current value until reset_peak_memory_stats(),
// which sets each peak to its current value.
TEST(CachingAllocator, PeaksAreKeptUntilReset) {
  CachingAllocator a;
  const Handle x = a.malloc(MiB(12));
  const Handle y = a.malloc(MiB(14));
  a.free(x);
  a.free(y);
  EXPECT_EQ(a.stats().allocated_bytes.all.current, 0);
  EXPECT_EQ(a.stats().allocated_bytes.all.peak, MiB(26));
  EXPECT_EQ(a.stats().reserved_bytes.all.peak, MiB(26));
  a.reset_peak_stats();
  EXPECT_EQ(a.stats().allocated_bytes.all.peak, 0);
  EXPECT_EQ(a.stats().reserved_bytes.all.peak, MiB(26));
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes.all.current, 0);
  EXPECT_EQ(a.stats().reserved_bytes.all.peak, MiB(26));
  a.reset_peak_stats();
  EXPECT_EQ(a.stats().reserved_bytes.all.peak, 0);
  a.malloc(MiB(4));
  EXPECT_EQ(a.stats().reserved_bytes.all.peak, MiB(20));
  EXPECT_EQ(a.cached_free_bytes(), MiB(16));
}

// Handles: 0 bytes gives the null handle, negative sizes are refused, a
// handle frees once.
TEST(CachingAllocator, HandlesAreCheckedOnFree) {
  CachingAllocator a;
  EXPECT_EQ(a.malloc(0), kNullHandle);
  EXPECT_TRUE(a.free(kNullHandle));
  EXPECT_EQ(a.malloc(-1), kInvalidRequest);
  const Handle h = a.malloc(MiB(12));
  EXPECT_TRUE(a.free(h));
  EXPECT_FALSE(a.free(h));
  EXPECT_FALSE(a.free(12345));
  EXPECT_EQ(a.block_size(h), 0);
  EXPECT_EQ(a.stats().allocation.all.current, 0);
  EXPECT_EQ(a.stats().allocation.all.peak, 1);
}

// ---- PYTORCH_CUDA_ALLOC_CONF -------------------------------------------------------

TEST(CachingAllocatorConfig, ParsesTheDocumentedOptions) {
  const auto r = parse_alloc_conf(
      "expandable_segments:True, max_split_size_mb:128,garbage_collection_threshold:0.6,roundup_power2_divisions:4");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.value().expandable_segments);
  EXPECT_EQ(r.value().max_split_size, 128 * kMiB);
  EXPECT_DOUBLE_EQ(r.value().garbage_collection_threshold, 0.6);
  EXPECT_EQ(r.value().roundup_power2_divisions[0], 4);
  EXPECT_EQ(r.value().roundup_power2_divisions[15], 4);
  EXPECT_EQ(r.value().max_non_split_rounding_size, kLargeBuffer);

  const auto defaults = parse_alloc_conf("");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults.value().max_split_size, kNoMaxSplitSize);
  EXPECT_FALSE(defaults.value().expandable_segments);

  const auto others = parse_alloc_conf(
      "backend:native,release_lock_on_cudamalloc:False,pinned_use_cuda_host_register:True,"
      "pinned_num_register_threads:8,expandable_segments:False,");
  EXPECT_TRUE(others.ok()) << others.error().message;
  const auto async = parse_alloc_conf("backend:cudaMallocAsync");
  ASSERT_TRUE(async.ok());
  EXPECT_TRUE(async.value().backend_cuda_malloc_async);
}

TEST(CachingAllocatorConfig, NamesTheBadKey) {
  struct Case {
    const char* text;
    const char* path;
    const char* code;
  };
  const Case cases[] = {
      {"expandable_segment:True", "PYTORCH_CUDA_ALLOC_CONF.expandable_segment", errc::kUnknownValue},
      {"max_split_size_mb:20", "PYTORCH_CUDA_ALLOC_CONF.max_split_size_mb", errc::kOutOfRange},  // must be > 20
      {"max_split_size_mb:big", "PYTORCH_CUDA_ALLOC_CONF.max_split_size_mb", errc::kWrongType},
      {"max_split_size_mb", "PYTORCH_CUDA_ALLOC_CONF.max_split_size_mb", errc::kWrongType},
      {"max_non_split_rounding_mb:8", "PYTORCH_CUDA_ALLOC_CONF.max_non_split_rounding_mb", errc::kOutOfRange},
      {"garbage_collection_threshold:1.0", "PYTORCH_CUDA_ALLOC_CONF.garbage_collection_threshold", errc::kOutOfRange},
      {"garbage_collection_threshold:0", "PYTORCH_CUDA_ALLOC_CONF.garbage_collection_threshold", errc::kOutOfRange},
      {"expandable_segments:true", "PYTORCH_CUDA_ALLOC_CONF.expandable_segments", errc::kUnknownValue},
      {"roundup_power2_divisions:3", "PYTORCH_CUDA_ALLOC_CONF.roundup_power2_divisions", errc::kOutOfRange},
      {"roundup_power2_divisions:[100:2]", "PYTORCH_CUDA_ALLOC_CONF.roundup_power2_divisions", errc::kOutOfRange},
      {"roundup_power2_divisions:[256:2", "PYTORCH_CUDA_ALLOC_CONF.roundup_power2_divisions", errc::kWrongType},
      {"backend:cuda", "PYTORCH_CUDA_ALLOC_CONF.backend", errc::kUnknownValue},
      {"pinned_num_register_threads:256", "PYTORCH_CUDA_ALLOC_CONF.pinned_num_register_threads", errc::kOutOfRange},
      {"max_split_size_mb:128 expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF.max_split_size_mb",
       errc::kWrongType},  // spaces are dropped: "128expandable_segments"
      {"max_split_size_mb:128;expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF.max_split_size_mb", errc::kWrongType},
  };
  for (const Case& c : cases) {
    const auto r = parse_alloc_conf(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().path, c.path) << c.text;
    EXPECT_EQ(r.error().code, c.code) << c.text << ": " << r.error().message;
    const std::string key = std::string(c.path).substr(std::string("PYTORCH_CUDA_ALLOC_CONF.").size());
    EXPECT_NE(r.error().message.find(key), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace vram::memory

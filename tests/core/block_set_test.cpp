// memory/block_set.h against the structure it stands for: the source's
// std::set<Block*, BlockComparatorSize> (c10/cuda/CUDACachingAllocator.cpp),
// here a std::set of entries with the same (stream, size, address) order.
// Random inserts, erases and lookups on both must agree at every step, over
// few and many sizes per stream (size classes of one block and of hundreds).
#include "memory/block_set.h"

#include <gtest/gtest.h>

#include <iterator>
#include <random>
#include <set>
#include <vector>

namespace vram::memory {
namespace {

struct Less {
  bool operator()(const BlockSet::Entry& a, const BlockSet::Entry& b) const { return BlockSet::less(a, b); }
};
using Model = std::set<BlockSet::Entry, Less>;

bool same(const BlockSet::Entry& a, const BlockSet::Entry& b) {
  return a.size == b.size && a.ptr == b.ptr && a.stream == b.stream && a.id == b.id;
}

// Every entry in order, walked with next() and back with prev().
void expect_equal(const BlockSet& set, const Model& model) {
  std::vector<BlockSet::Entry> walked;
  for (BlockSet::Pos p = set.begin(); !set.at_end(p); p = set.next(p)) walked.push_back(set.at(p));
  std::vector<BlockSet::Entry> each;
  set.for_each([&](const BlockSet::Entry& e) { each.push_back(e); });
  ASSERT_EQ(walked.size(), model.size());
  ASSERT_EQ(each.size(), model.size());
  ASSERT_EQ(set.empty(), model.empty());
  size_t i = 0;
  for (const auto& e : model) {
    ASSERT_TRUE(same(walked[i], e)) << "entry " << i;
    ASSERT_TRUE(same(each[i], e)) << "entry " << i;
    ++i;
  }
  if (model.empty()) return;
  // prev() from the last entry back to begin() visits them in reverse.
  BlockSet::Pos p = set.begin();
  for (size_t k = 1; k < walked.size(); ++k) p = set.next(p);
  for (size_t k = walked.size(); k-- > 0;) {
    ASSERT_TRUE(same(set.at(p), walked[k]));
    ASSERT_EQ(set.is_begin(p), k == 0);
    if (k > 0) p = set.prev(p);
  }
}

// Random operations on a set and its model: `sizes` distinct sizes,
// `streams` streams; ids from next_id up.
void churn(BlockSet& set, Model& model, uint32_t seed, int sizes, int streams, int steps, int32_t& next_id) {
  std::mt19937 rng(seed);
  auto random_key = [&] {
    BlockSet::Entry e;
    e.stream = static_cast<int32_t>(rng() % static_cast<uint32_t>(streams)) - 1;  // -1 sorts first
    e.size = 512 * (1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(sizes)));
    e.ptr = (uint64_t{1} << 32) + 512 * static_cast<uint64_t>(rng() % 4096);
    return e;
  };
  for (int step = 0; step < steps; ++step) {
    const uint32_t op = rng() % 10;
    if (op < 5 || model.empty()) {  // insert a key not in the set
      BlockSet::Entry e = random_key();
      if (model.count(e) != 0) continue;
      e.id = next_id++;
      set.insert(e);
      model.insert(e);
    } else if (op < 7) {  // erase a present entry by key
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      set.erase(*it);
      model.erase(it);
    } else {  // lower_bound of any key, then erase at that place (best fit)
      BlockSet::Entry key = random_key();
      if (op == 9) key.ptr = 0;  // get_free_block()'s lookup
      const BlockSet::Pos p = set.lower_bound(key);
      const auto it = model.lower_bound(key);
      ASSERT_EQ(set.at_end(p), it == model.end()) << "step " << step;
      // The entry before it (largest_in() steps back from the end of a stream).
      ASSERT_EQ(set.is_begin(p), it == model.begin()) << "step " << step;
      if (it != model.begin()) ASSERT_TRUE(same(set.at(set.prev(p)), *std::prev(it))) << "step " << step;
      if (it == model.end()) continue;
      ASSERT_TRUE(same(set.at(p), *it)) << "step " << step;
      if (op >= 8) {
        set.erase_at(p);
        model.erase(it);
      }
    }
    if (step % 97 == 0) expect_equal(set, model);
  }
  expect_equal(set, model);
}

// One random run, then a copy: an independent set in the same state, which
// goes on working (classes emptied and made again, their ids recycled)
// while the original is emptied.
void run(uint32_t seed, int sizes, int streams, int steps) {
  BlockSet set;
  Model model;
  int32_t next_id = 0;
  churn(set, model, seed, sizes, streams, steps, next_id);
  BlockSet copy = set;
  Model kept = model;
  while (!model.empty()) {
    set.erase(*model.begin());
    model.erase(model.begin());
  }
  expect_equal(set, model);
  churn(copy, kept, seed + 1000, sizes, streams, steps, next_id);
  // The emptied original takes entries again.
  churn(set, model, seed + 2000, sizes, streams, steps / 4, next_id);
}

TEST(BlockSet, AgreesWithAnOrderedSetOverFewSizes) {
  for (uint32_t seed = 1; seed <= 20; ++seed) run(seed, 3, 1, 3000);
}

TEST(BlockSet, AgreesWithAnOrderedSetOverManySizesAndStreams) {
  for (uint32_t seed = 1; seed <= 20; ++seed) run(seed, 400, 3, 3000);
}

TEST(BlockSet, LowestAddressOfTheSmallestFittingSizeComesFirst) {
  BlockSet set;
  // Three blocks of 2 KiB on stream 0 at descending addresses, one of 1 KiB,
  // and one 2 KiB block on stream 1.
  set.insert({2048, 0x3000, 0, 1});
  set.insert({2048, 0x2000, 0, 2});
  set.insert({1024, 0x9000, 0, 3});
  set.insert({2048, 0x1000, 1, 4});
  set.insert({2048, 0x2800, 0, 5});
  // Best fit for 1.5 KiB on stream 0: the 2 KiB block at the lowest address.
  BlockSet::Pos p = set.lower_bound({1536, 0, 0, -1});
  EXPECT_EQ(set.at(p).id, 2);
  p = set.next(p);
  EXPECT_EQ(set.at(p).id, 5);
  p = set.next(p);
  EXPECT_EQ(set.at(p).id, 1);
  p = set.next(p);
  EXPECT_EQ(set.at(p).id, 4);  // the next stream
  set.erase_at(set.lower_bound({1536, 0, 0, -1}));
  EXPECT_EQ(set.at(set.lower_bound({1536, 0, 0, -1})).id, 5);
  EXPECT_EQ(set.at(set.lower_bound({1024, 0, 0, -1})).id, 3);
  EXPECT_TRUE(set.at_end(set.lower_bound({4096, 0, 1, -1})));
}

}  // namespace
}  // namespace vram::memory

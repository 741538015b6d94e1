// The allocator replay's second step, skipped when it repeats the first
// (allocator_replay.cpp second_run_repeats): over random steps, replay_reserved
// must give what the caching allocator gives when the load and both steps are
// run through it malloc by malloc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "memory/allocator_replay.h"
#include "memory/caching_allocator.h"
#include "memory/timeline.h"

namespace vram {
namespace {

using memory::CachingAllocator;
using memory::Event;
using memory::kMiB;
using memory::Timeline;

// A load of a few tensors (one freed, leaving a cached block), then a step of
// random allocations and frees on one or two streams with marks between them.
// With `free_all` the step frees everything it allocates, as training steps
// do (the case the skip can take); otherwise half of the tensors live at its
// end stay (the skip must not be taken).
Timeline random_step(std::mt19937_64& rng, bool free_all) {
  std::uniform_int_distribution<int> pick(0, 99);
  const auto size = [&] {
    const int r = pick(rng);
    if (r < 25) return int64_t{1} + static_cast<int64_t>(rng() % (1 * kMiB));  // small pool
    if (r < 50) return int64_t{1} * kMiB + static_cast<int64_t>(rng() % (9 * kMiB));
    if (r < 90) return static_cast<int64_t>(1 + rng() % 8) * 8 * kMiB;  // a few repeated sizes
    return 10 * kMiB + static_cast<int64_t>(rng() % (200 * kMiB));
  };
  Timeline tl;
  tl.alloc("weights", "w0", 300 * kMiB);
  const auto temp = tl.alloc("weights", "w1", size());
  tl.alloc("weights", "w2", size());
  tl.free(temp);
  tl.begin_step();
  std::vector<Timeline::Id> live;
  // Tensor names (the causes of cached bytes are by the tensor that made a segment).
  static const char* const kNames[] = {"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"};
  const int events = 20 + pick(rng);
  for (int e = 0; e < events; ++e) {
    const int r = pick(rng);
    if (r < 10) {
      tl.mark(e % 2 == 0 ? "forward" : "backward", "mark");
    } else if (r < 55 || live.empty()) {
      const int32_t stream = pick(rng) < 15 ? memory::kReduceScatterStream : memory::kDefaultStream;
      const char* name = kNames[rng() % 8];
      live.push_back(stream == memory::kDefaultStream ? tl.alloc("activations", name, size())
                                                      : tl.alloc_on(stream, "gradients", name, size()));
    } else {
      const size_t i = rng() % live.size();
      tl.free(live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  tl.mark("optimizer", "end");
  for (size_t i = 0; i < live.size(); ++i) {
    if (free_all || i % 2 == 0) tl.free(live[i]);
  }
  return tl;
}

// What the allocator reports when the load runs once and the step twice,
// every malloc and free in order; reserved at each mark of the second step,
// and at its `detail`-th mark the largest cached block and the cached bytes
// by the tensor that made their segment, largest first (ties by name).
struct Direct {
  std::vector<int64_t> reserved_at_marks;
  std::vector<std::pair<std::string, int64_t>> causes;
  int64_t peak_reserved = 0;
  int64_t peak_allocated = 0;
  int64_t segments = 0;
  int64_t device_allocs = 0;
  int64_t largest_free = 0;
};
Direct run_directly(const Timeline& tl, int detail) {
  CachingAllocator alloc;
  std::vector<memory::Handle> handle(tl.tensors().size(), memory::kNullHandle);
  std::vector<memory::Handle> earlier(tl.tensors().size(), memory::kNullHandle);
  std::map<uint64_t, std::string> creator;
  const auto& events = tl.events();
  const auto apply = [&](const Event& ev) {
    const auto i = static_cast<size_t>(ev.index);
    if (ev.op == Event::Op::kAlloc) {
      // A tensor allocated again while live (the second step of one the
      // first kept) keeps its earlier block, freed with it, first
      // (allocator_replay.cpp StepReplayer::free_tensor).
      earlier[i] = handle[i];
      const int64_t made = alloc.stats().num_device_alloc;
      handle[i] = alloc.malloc(tl.tensors()[i].bytes, tl.tensors()[i].stream);
      if (alloc.stats().num_device_alloc != made) creator[alloc.address(handle[i])] = tl.tensors()[i].name;
    } else if (ev.op == Event::Op::kFree && handle[i] != memory::kNullHandle) {
      alloc.free(earlier[i]);
      alloc.free(handle[i]);
      earlier[i] = handle[i] = memory::kNullHandle;
    }
  };
  for (size_t e = 0; e < tl.step_begin(); ++e) apply(events[e]);
  Direct d;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t e = tl.step_begin(); e < events.size(); ++e) {
      apply(events[e]);
      if (pass == 0 || events[e].op != Event::Op::kMark) continue;
      if (static_cast<int>(d.reserved_at_marks.size()) == detail) {
        d.largest_free = alloc.largest_free_block();
        std::map<std::string, int64_t> by_name;
        for (const auto& [address, unused] : alloc.cached_by_segment()) by_name[creator[address]] += unused;
        d.causes.assign(by_name.begin(), by_name.end());
        std::stable_sort(d.causes.begin(), d.causes.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
      }
      d.reserved_at_marks.push_back(alloc.stats().reserved_bytes.all.current);
    }
  }
  d.peak_reserved = alloc.stats().reserved_bytes.all.peak;
  d.peak_allocated = alloc.stats().allocated_bytes.all.peak;
  d.segments = alloc.stats().segment.all.current;
  d.device_allocs = alloc.stats().num_device_alloc;
  return d;
}

TEST(ReplayRepeat, TheReplayEqualsTheAllocatorRunStepByStep) {
  std::mt19937_64 rng(20261129);
  for (int round = 0; round < 400; ++round) {
    const bool free_all = round % 4 != 3;
    const Timeline tl = random_step(rng, free_all);
    // One moment per mark of the step; the detail at none, or at one of them.
    std::vector<memory::Moment> moments;
    for (size_t e = tl.step_begin(); e < tl.events().size(); ++e) {
      if (tl.events()[e].op != Event::Op::kMark) continue;
      memory::Moment m;
      m.event = static_cast<int32_t>(e);
      moments.push_back(m);
    }
    for (const int detail : {-1, static_cast<int>(rng() % moments.size())}) {
      const Direct d = run_directly(tl, detail);
      const memory::ReservedReplay r = memory::replay_reserved(tl, moments, {}, {}, detail);
      ASSERT_EQ(r.reserved, d.reserved_at_marks) << "round " << round;
      EXPECT_EQ(r.peak_reserved, d.peak_reserved) << "round " << round;
      EXPECT_EQ(r.peak_allocated, d.peak_allocated) << "round " << round;
      EXPECT_EQ(r.segments, d.segments) << "round " << round;
      EXPECT_EQ(r.device_allocs, d.device_allocs) << "round " << round;
      if (detail < 0) continue;
      EXPECT_EQ(r.largest_free_block, d.largest_free) << "round " << round;
      EXPECT_EQ(r.causes, d.causes) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace vram

// fit::largest_fitting: the searches behind fit.max_micro_batch and
// fit.max_seq_len give the same answer from any start and probe few values.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "fit.h"

namespace vram {
namespace {

TEST(LargestFitting, SameAnswerFromAnyStart) {
  for (const int64_t answer :
       {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1000}, int64_t{4096}, int64_t{65535}, int64_t{65536}}) {
    for (const int64_t start :
         {int64_t{1}, int64_t{3}, int64_t{999}, int64_t{1000}, int64_t{1001}, int64_t{65536}, int64_t{1} << 20}) {
      std::set<int64_t> probed;
      const int64_t got = fit::largest_fitting(
          [&](int64_t v) {
            EXPECT_GE(v, 1);
            EXPECT_LE(v, 65536);
            probed.insert(v);
            return v <= answer;
          },
          65536, start);
      EXPECT_EQ(got, answer) << "start " << start;
      // Doubling or halving to a bracket, then bisection: about 2 log2 probes.
      EXPECT_LE(probed.size(), 34U) << "answer " << answer << " start " << start;
    }
  }
}

TEST(LargestFitting, AStartNearTheAnswerProbesLess) {
  int64_t near = 0, far = 0;
  const auto fits = [](int64_t v) { return v <= 5000; };
  fit::largest_fitting([&](int64_t v) { return ++near, fits(v); }, int64_t{1} << 20, 4096);
  fit::largest_fitting([&](int64_t v) { return ++far, fits(v); }, int64_t{1} << 20, 1);
  EXPECT_LT(near, far);
}

}  // namespace
}  // namespace vram

// Peak and timeline bookkeeping against scripted samples.
#include "measure/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace vram::probe {
namespace {

Sample At(std::int64_t t_ms, std::optional<std::uint64_t> process, std::optional<std::uint64_t> device) {
  Sample s;
  s.t_ms = t_ms;
  s.process_used_bytes = process;
  s.device_used_bytes = device;
  return s;
}

TEST(Sampler, PeakIsTheLargestValueOfEachSeriesAndWhenItCame) {
  Sampler sampler(16);
  sampler.Add(At(0, 100, 1000));
  sampler.Add(At(20, 700, 1500));
  sampler.Add(At(40, 300, 2500));
  sampler.Add(At(60, 700, 900));  // ties do not move the peak's time
  EXPECT_EQ(sampler.samples(), 4u);
  EXPECT_EQ(sampler.peak().process_used_bytes, 700u);
  EXPECT_EQ(sampler.peak().process_t_ms, 20);
  EXPECT_EQ(sampler.peak().device_used_bytes, 2500u);
  EXPECT_EQ(sampler.peak().device_t_ms, 40);
}

TEST(Sampler, UnknownValuesNeverBecomeThePeak) {
  Sampler sampler(16);
  sampler.Add(At(0, std::nullopt, std::nullopt));
  EXPECT_FALSE(sampler.peak().process_used_bytes.has_value());
  EXPECT_FALSE(sampler.peak().device_used_bytes.has_value());
  sampler.Add(At(20, 0, 5));
  sampler.Add(At(40, std::nullopt, std::nullopt));
  EXPECT_EQ(sampler.peak().process_used_bytes, 0u);
  EXPECT_EQ(sampler.peak().device_used_bytes, 5u);
}

TEST(Timeline, KeepsEverySampleUntilFull) {
  Timeline timeline(8);
  for (int i = 0; i < 7; ++i) timeline.Add(At(i * 20, i, 10 * i));
  const std::vector<Sample> points = timeline.Points();
  ASSERT_EQ(points.size(), 7u);
  EXPECT_EQ(timeline.stride(), 1u);
  EXPECT_EQ(points[3].t_ms, 60);
  EXPECT_EQ(points[3].process_used_bytes, 3u);
}

TEST(Timeline, HalvesIntoMaximaAndDoublesTheStrideWhenFull) {
  Timeline timeline(4);
  // process: 5 1 2 9 | device: 1 8 3 4
  timeline.Add(At(0, 5, 1));
  timeline.Add(At(20, 1, 8));
  timeline.Add(At(40, 2, 3));
  timeline.Add(At(60, 9, 4));
  const std::vector<Sample> points = timeline.Points();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(timeline.stride(), 2u);
  // Each point: t_ms of its first sample, maximum of each series.
  EXPECT_EQ(points[0].t_ms, 0);
  EXPECT_EQ(points[0].process_used_bytes, 5u);
  EXPECT_EQ(points[0].device_used_bytes, 8u);
  EXPECT_EQ(points[1].t_ms, 40);
  EXPECT_EQ(points[1].process_used_bytes, 9u);
  EXPECT_EQ(points[1].device_used_bytes, 4u);

  // The next sample waits in a partial bucket, shown as the last point.
  timeline.Add(At(80, 3, 3));
  ASSERT_EQ(timeline.Points().size(), 3u);
  EXPECT_EQ(timeline.Points().back().t_ms, 80);
}

TEST(Timeline, StaysBoundedAndKeepsASpikeOverALongRun) {
  Timeline timeline(64);
  constexpr int kSamples = 100000;  // 33 minutes at 20 ms
  for (int i = 0; i < kSamples; ++i) timeline.Add(At(i * 20, i == 4321 ? 999 : 1, 2));
  const std::vector<Sample> points = timeline.Points();
  EXPECT_LE(points.size(), 64u + 1u);
  std::uint64_t highest = 0;
  for (const Sample& p : points) highest = std::max(highest, p.process_used_bytes.value_or(0));
  EXPECT_EQ(highest, 999u);
  EXPECT_EQ(points.front().t_ms, 0);
}

TEST(Timeline, MergeKeepsAKnownValueOverAnUnknownOne) {
  const Sample merged = Timeline::Merge(At(0, std::nullopt, 7), At(20, 4, std::nullopt));
  EXPECT_EQ(merged.t_ms, 0);
  EXPECT_EQ(merged.process_used_bytes, 4u);
  EXPECT_EQ(merged.device_used_bytes, 7u);
}

}  // namespace
}  // namespace vram::probe

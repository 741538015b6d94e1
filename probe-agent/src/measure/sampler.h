// Peak and bounded timeline over memory samples. Pure bookkeeping: the watch
// loop feeds it, tests feed it scripted values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace vram::probe {

struct Sample {
  std::int64_t t_ms = 0;  // since the command started
  std::optional<std::uint64_t> process_used_bytes;
  std::optional<std::uint64_t> device_used_bytes;
};

// The largest value of each series and when it was first reached. The two
// maxima may come from different samples.
struct Peak {
  std::optional<std::uint64_t> process_used_bytes;
  std::optional<std::int64_t> process_t_ms;
  std::optional<std::uint64_t> device_used_bytes;
  std::optional<std::int64_t> device_t_ms;
};

// At most `capacity` points however long the run. Each point covers `stride`
// consecutive samples and holds the maximum of each series over them, with
// the t_ms of the first: an upper envelope, so decimation never hides a
// spike. When the buffer fills, neighbouring points merge pairwise and the
// stride doubles.
class Timeline {
 public:
  // `capacity` is rounded up to an even number of at least 2.
  explicit Timeline(std::size_t capacity);

  void Add(const Sample& sample);

  // Completed points followed by the partial bucket still being filled.
  std::vector<Sample> Points() const;
  std::size_t stride() const { return stride_; }
  std::size_t capacity() const { return capacity_; }

  // The envelope of two samples: per-series maximum, t_ms of `first`.
  static Sample Merge(const Sample& first, const Sample& second);

 private:
  std::size_t capacity_;
  std::size_t stride_ = 1;
  std::vector<Sample> points_;
  std::optional<Sample> pending_;
  std::size_t pending_count_ = 0;
};

class Sampler {
 public:
  explicit Sampler(std::size_t timeline_capacity) : timeline_(timeline_capacity) {}

  void Add(const Sample& sample);

  const Peak& peak() const { return peak_; }
  const Timeline& timeline() const { return timeline_; }
  std::size_t samples() const { return samples_; }

 private:
  Peak peak_;
  Timeline timeline_;
  std::size_t samples_ = 0;
};

}  // namespace vram::probe

#include "measure/sampler.h"

#include <algorithm>

namespace vram::probe {
namespace {

std::optional<std::uint64_t> Max(const std::optional<std::uint64_t>& a, const std::optional<std::uint64_t>& b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

}  // namespace

Timeline::Timeline(std::size_t capacity) : capacity_(std::max<std::size_t>(2, capacity + capacity % 2)) {
  points_.reserve(capacity_);
}

Sample Timeline::Merge(const Sample& first, const Sample& second) {
  Sample merged;
  merged.t_ms = first.t_ms;
  merged.process_used_bytes = Max(first.process_used_bytes, second.process_used_bytes);
  merged.device_used_bytes = Max(first.device_used_bytes, second.device_used_bytes);
  return merged;
}

void Timeline::Add(const Sample& sample) {
  pending_ = pending_ ? Merge(*pending_, sample) : sample;
  if (++pending_count_ < stride_) return;
  points_.push_back(*pending_);
  pending_.reset();
  pending_count_ = 0;
  if (points_.size() < capacity_) return;
  // Full: halve by merging neighbours, so each point now spans twice as many
  // samples.
  for (std::size_t i = 0; i < points_.size() / 2; ++i) points_[i] = Merge(points_[2 * i], points_[2 * i + 1]);
  points_.resize(points_.size() / 2);
  stride_ *= 2;
}

std::vector<Sample> Timeline::Points() const {
  std::vector<Sample> out = points_;
  if (pending_) out.push_back(*pending_);
  return out;
}

void Sampler::Add(const Sample& sample) {
  ++samples_;
  timeline_.Add(sample);
  if (sample.process_used_bytes &&
      (!peak_.process_used_bytes || *sample.process_used_bytes > *peak_.process_used_bytes)) {
    peak_.process_used_bytes = sample.process_used_bytes;
    peak_.process_t_ms = sample.t_ms;
  }
  if (sample.device_used_bytes && (!peak_.device_used_bytes || *sample.device_used_bytes > *peak_.device_used_bytes)) {
    peak_.device_used_bytes = sample.device_used_bytes;
    peak_.device_t_ms = sample.t_ms;
  }
}

}  // namespace vram::probe

// A scripted Collectives for tests: no NCCL, no GPU. It plays NCCL's memory
// by raising a FakeSource's readings (FakeSource::AddBytes), so that
// MeasureNccl sees what a real run would show through NVML.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "measure/collectives.h"
#include "probe/fake_source.h"

namespace vram::probe {

class FakeCollectives final : public Collectives {
 public:
  // `meter` is the source whose readings the fake raises. Its device indices
  // are taken to be the CUDA indices passed to Prepare() (tests number both
  // alike).
  explicit FakeCollectives(FakeSource* meter) : meter_(meter) {}

  void set_version(std::string version) { version_ = std::move(version); }
  // Bytes each rank gains at ncclCommInitAll and at the first all-reduce, by
  // rank (position in Prepare's device list); missing ranks gain nothing.
  void set_init_bytes(std::vector<std::uint64_t> per_rank) { init_bytes_ = std::move(per_rank); }
  void set_first_collective_bytes(std::vector<std::uint64_t> per_rank) {
    first_collective_bytes_ = std::move(per_rank);
  }
  // Makes the step fail with `status` (after raising nothing).
  void set_init_error(Status status) { init_error_ = std::move(status); }
  void set_all_reduce_error(Status status) { all_reduce_error_ = std::move(status); }

  const std::vector<unsigned>& devices() const { return devices_; }
  std::size_t bytes() const { return bytes_; }
  bool initialized() const { return initialized_; }
  int all_reduces() const { return all_reduces_; }
  int releases() const { return releases_; }

  std::string_view name() const override { return "fake"; }
  Result<std::string> Version() override { return version_; }
  Status Prepare(const std::vector<unsigned>& cuda_devices, std::size_t bytes) override;
  Status InitCommunicators() override;
  Status AllReduceOnce() override;
  Status Release() override;

 private:
  void Raise(const std::vector<std::uint64_t>& per_rank);

  FakeSource* meter_;
  std::string version_ = "2.21.5";
  std::vector<std::uint64_t> init_bytes_;
  std::vector<std::uint64_t> first_collective_bytes_;
  Status init_error_;
  Status all_reduce_error_;
  std::vector<unsigned> devices_;
  std::size_t bytes_ = 0;
  bool initialized_ = false;
  int all_reduces_ = 0;
  int releases_ = 0;
};

}  // namespace vram::probe

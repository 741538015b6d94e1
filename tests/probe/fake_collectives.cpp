#include "probe/fake_collectives.h"

#include <string>

namespace vram::probe {

void FakeCollectives::Raise(const std::vector<std::uint64_t>& per_rank) {
  for (std::size_t rank = 0; rank < devices_.size() && rank < per_rank.size(); ++rank) {
    meter_->AddBytes(devices_[rank], per_rank[rank]);
  }
}

Status FakeCollectives::Prepare(const std::vector<unsigned>& cuda_devices, std::size_t bytes) {
  devices_ = cuda_devices;
  bytes_ = bytes;
  // The all-reduce buffer is this process's memory too (cudaMalloc), so it
  // shows in every reading from the base on and must not count as NCCL's.
  for (unsigned device : devices_) meter_->AddBytes(device, bytes);
  return Status::Ok();
}

Status FakeCollectives::InitCommunicators() {
  if (devices_.empty()) return Status(StatusCode::kInternal, "fake ncclCommInitAll before Prepare");
  if (!init_error_.ok()) return init_error_;
  Raise(init_bytes_);
  initialized_ = true;
  return Status::Ok();
}

Status FakeCollectives::AllReduceOnce() {
  if (!initialized_) return Status(StatusCode::kInternal, "fake ncclAllReduce before ncclCommInitAll");
  if (!all_reduce_error_.ok()) return all_reduce_error_;
  if (all_reduces_ == 0) Raise(first_collective_bytes_);
  ++all_reduces_;
  return Status::Ok();
}

Status FakeCollectives::Release() {
  ++releases_;
  initialized_ = false;
  return Status::Ok();
}

}  // namespace vram::probe

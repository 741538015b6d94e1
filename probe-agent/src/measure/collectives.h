// What `vram-probe nccl` drives: one process running a collective over
// several GPUs (ncclCommInitAll, the single-process form of nccl.h), so that
// the memory NCCL takes can be read around each step (nccl_memory.h).
//
// The real implementation loads NCCL with dlopen and needs the CUDA runtime
// (nccl_collectives.h); tests use FakeCollectives (tests/probe/fake_collectives.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "measure/status.h"

namespace vram::probe {

class Collectives {
 public:
  virtual ~Collectives() = default;

  // "nccl" or "fake".
  virtual std::string_view name() const = 0;

  // The library's version, "2.21.5", from ncclGetVersion.
  virtual Result<std::string> Version() = 0;

  // Per device, in this order: cudaSetDevice, cudaMalloc(bytes) for the
  // all-reduce buffer, cudaStreamCreate. `cuda_devices` are CUDA runtime
  // indices; their order is the ranks' order.
  virtual Status Prepare(const std::vector<unsigned>& cuda_devices, std::size_t bytes) = 0;

  // ncclCommInitAll over the prepared devices: one communicator per device.
  virtual Status InitCommunicators() = 0;

  // ncclGroupStart; an in-place ncclAllReduce (float32, sum) of the prepared
  // buffer on every device; ncclGroupEnd; cudaStreamSynchronize on each.
  virtual Status AllReduceOnce() = 0;

  // ncclCommDestroy every communicator, then cudaFree and cudaStreamDestroy
  // on every device. Safe to call after any failure and more than once.
  virtual Status Release() = 0;
};

}  // namespace vram::probe

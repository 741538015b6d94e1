// MemorySource over the CUDA runtime. Built only where CMake finds the CUDA
// toolkit (VRAM_PROBE_HAVE_CUDA); the runtime is linked statically so that
// vram-probe starts on machines without the toolkit, and without a driver
// every call returns cudaErrorInsufficientDriver (35) as a kNoGpu Status.
//
// What CUDA can and cannot tell (research/memory-internals.md §8.1):
// cudaMemGetInfo creates a context in this process first and reports the
// memory visible to CUDA (total excludes the driver reserve); per-process
// numbers and accounting need NVML.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "measure/memory_source.h"

namespace vram::probe {

class CudaSource final : public MemorySource {
 public:
  // Calls cudaGetDeviceCount, which fails fast without a driver.
  static Result<std::unique_ptr<CudaSource>> Open();

  std::string_view name() const override { return "cuda"; }
  Result<SystemFacts> System() override;
  Result<unsigned> DeviceCount() override;
  Result<GpuFacts> Device(unsigned index) override;
  Result<DeviceMemory> Memory(unsigned index) override;
  Result<std::vector<ProcessMemory>> Processes(unsigned index) override;
  Result<std::optional<std::uint64_t>> AccountingMaxBytes(unsigned index, std::uint32_t pid) override;
  Status CreateContext(unsigned index) override;

 private:
  CudaSource() = default;
};

}  // namespace vram::probe

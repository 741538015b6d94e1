// Where GPU memory numbers come from: NVML (nvml_source), the CUDA runtime
// (cuda_source) or a scripted fake for tests (tests/probe/fake_source.h).
//
// Every field a driver may not report is std::optional; it is written as JSON
// null, never 0 (STYLE.md "Probe agent", as gpustat and nvitop print N/A).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "measure/status.h"

namespace vram::probe {

// Driver-wide facts.
struct SystemFacts {
  std::optional<std::string> driver_version;        // "550.54.15" (nvidia-smi driver_version)
  std::optional<std::string> cuda_driver_version;   // "12.4": the CUDA version the driver supports
  std::optional<std::string> cuda_runtime_version;  // "13.0": the runtime linked into vram-probe
};

// One device memory reading, in bytes. With NVML v2:
// total = reserved + used + free (research/memory-internals.md §8.1).
struct DeviceMemory {
  std::optional<std::uint64_t> total;
  std::optional<std::uint64_t> reserved;
  std::optional<std::uint64_t> used;
  std::optional<std::uint64_t> free;
};

// Static facts about one device plus a memory reading taken when the facts
// were gathered. Names follow nvidia-smi --query-gpu.
struct GpuFacts {
  unsigned index = 0;
  std::optional<std::string> name;
  std::optional<std::string> uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  DeviceMemory memory;
  std::optional<std::string> compute_capability;  // "8.0"
  std::optional<bool> mig_enabled;                // current MIG mode
};

// One process holding memory on a device. used_bytes is null when the driver
// cannot tell (NVML_VALUE_NOT_AVAILABLE under WDDM, nvitop libnvml.py).
struct ProcessMemory {
  std::uint32_t pid = 0;
  std::optional<std::uint64_t> used_bytes;
};

class MemorySource {
 public:
  virtual ~MemorySource() = default;

  // "nvml", "cuda" or "fake": written as the report's "source".
  virtual std::string_view name() const = 0;

  virtual Result<SystemFacts> System() = 0;
  virtual Result<unsigned> DeviceCount() = 0;
  virtual Result<GpuFacts> Device(unsigned index) = 0;
  virtual Result<DeviceMemory> Memory(unsigned index) = 0;

  // Processes with a compute context on the device.
  virtual Result<std::vector<ProcessMemory>> Processes(unsigned index) = 0;

  // The driver's high-water mark for `pid` (NVML accounting maxMemoryUsage,
  // research §8.3). nullopt when accounting is off or unsupported.
  virtual Result<std::optional<std::uint64_t>> AccountingMaxBytes(unsigned index, std::uint32_t pid) = 0;

  // Creates this process's context on the device (cudaFree(0)). Only a
  // source that owns a GPU runtime can do that; the others return
  // kNotSupported.
  virtual Status CreateContext(unsigned index);
};

// Memory `pid` holds on the device: its ProcessMemory entry, nullopt when the
// process is not listed or the driver cannot tell.
Result<std::optional<std::uint64_t>> ProcessUsedBytes(MemorySource& source, unsigned index, std::uint32_t pid);

// Facts for every device. Fails when the count fails; a device whose facts
// fail is reported with the index only and the failure appended to `errors`.
Result<std::vector<GpuFacts>> AllDevices(MemorySource& source, std::vector<Status>* errors);

// "12.4" from the driver's CUDA version integer 12040
// (NVML_CUDA_DRIVER_VERSION_MAJOR(v) = v / 1000, MINOR = (v % 1000) / 10 in
// nvml.h; cudaDriverGetVersion uses the same encoding).
std::string CudaVersionString(int encoded);

}  // namespace vram::probe

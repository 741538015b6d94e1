// `vram-probe overheads`: the fixed memory cost of a CUDA context on this
// GPU, driver and CUDA version (research/memory-internals.md §2.1, open item
// §10.1), to calibrate the estimator's overheads.cuda_context_bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "measure/memory_source.h"
#include "measure/status.h"

namespace vram::probe {

struct OverheadsResult {
  unsigned device = 0;  // index in the meter's numbering (NVML = nvidia-smi)
  // The answer: this process's NVML usedGpuMemory after cudaFree(0), or the
  // device `used` delta when the driver does not list processes.
  std::optional<std::uint64_t> cuda_context_bytes;
  std::string method;   // "nvml_process_used" or "device_used_delta"
  DeviceMemory before;  // meter reading before the context existed
  DeviceMemory after;   // meter reading after
  std::optional<std::uint64_t> process_used_bytes;
  // cudaMemGetInfo after the context: total excludes the driver reserve.
  DeviceMemory cuda_mem_get_info;
  std::optional<std::string> cuda_module_loading;  // $CUDA_MODULE_LOADING (lazy loading shrinks the context)
  std::vector<Status> errors;
};

// `meter` reads memory without creating a context (NVML); `runtime` creates
// one (CUDA). They may be the same object (tests use one FakeSource). The
// two indices name the same physical GPU in each numbering.
Result<OverheadsResult> MeasureOverheads(MemorySource& meter, unsigned meter_index, MemorySource& runtime,
                                         unsigned runtime_index);

}  // namespace vram::probe

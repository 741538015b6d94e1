#include "measure/overheads.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace vram::probe {

Result<OverheadsResult> MeasureOverheads(MemorySource& meter, unsigned meter_index, MemorySource& runtime,
                                         unsigned runtime_index) {
  OverheadsResult result;
  result.device = meter_index;
  if (const char* loading = std::getenv("CUDA_MODULE_LOADING")) result.cuda_module_loading = std::string(loading);
  const auto self = static_cast<std::uint32_t>(getpid());

  Result<DeviceMemory> before = meter.Memory(meter_index);
  if (!before.ok()) return before.status();
  result.before = before.value();

  // Other processes allocating meanwhile would pollute the device delta.
  Result<std::vector<ProcessMemory>> others = meter.Processes(meter_index);
  if (others.ok()) {
    for (const ProcessMemory& p : others.value()) {
      if (p.pid == self) continue;
      result.errors.push_back(Status(StatusCode::kDeviceBusy,
                                     "process " + std::to_string(p.pid) + " holds memory on device " +
                                         std::to_string(meter_index) + "; the device delta may include its changes"));
    }
  }

  Status created = runtime.CreateContext(runtime_index);
  if (!created.ok()) return created;

  Result<DeviceMemory> after = meter.Memory(meter_index);
  if (!after.ok()) return after.status();
  result.after = after.value();

  Result<std::optional<std::uint64_t>> own = ProcessUsedBytes(meter, meter_index, self);
  if (own.ok()) {
    result.process_used_bytes = own.value();
  } else {
    result.errors.push_back(own.status());
  }

  if (&runtime != &meter) {
    Result<DeviceMemory> cuda = runtime.Memory(runtime_index);
    if (cuda.ok()) {
      result.cuda_mem_get_info = cuda.value();
    } else {
      result.errors.push_back(cuda.status());
    }
  }

  if (result.process_used_bytes) {
    result.cuda_context_bytes = result.process_used_bytes;
    result.method = "nvml_process_used";
  } else if (result.before.used && result.after.used && *result.after.used >= *result.before.used) {
    result.cuda_context_bytes = *result.after.used - *result.before.used;
    result.method = "device_used_delta";
  } else {
    result.method = "none";
    result.errors.push_back(
        Status(StatusCode::kNotSupported, "neither the process list nor the device reading measured the context"));
  }
  return result;
}

}  // namespace vram::probe

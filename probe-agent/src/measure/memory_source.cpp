#include "measure/memory_source.h"

#include <string>
#include <utility>

namespace vram::probe {

Status MemorySource::CreateContext(unsigned /*index*/) {
  return Status(StatusCode::kNotSupported, "the " + std::string(name()) + " source cannot create a CUDA context");
}

Result<std::optional<std::uint64_t>> ProcessUsedBytes(MemorySource& source, unsigned index, std::uint32_t pid) {
  Result<std::vector<ProcessMemory>> processes = source.Processes(index);
  if (!processes.ok()) return processes.status();
  for (const ProcessMemory& p : processes.value()) {
    if (p.pid == pid) return p.used_bytes;
  }
  return std::optional<std::uint64_t>();
}

Result<std::vector<GpuFacts>> AllDevices(MemorySource& source, std::vector<Status>* errors) {
  Result<unsigned> count = source.DeviceCount();
  if (!count.ok()) return count.status();
  std::vector<GpuFacts> gpus;
  for (unsigned i = 0; i < count.value(); ++i) {
    Result<GpuFacts> facts = source.Device(i);
    if (facts.ok()) {
      gpus.push_back(std::move(facts.value()));
    } else {
      GpuFacts bare;
      bare.index = i;
      gpus.push_back(bare);
      if (errors != nullptr) errors->push_back(facts.status());
    }
  }
  return gpus;
}

std::string CudaVersionString(int encoded) {
  return std::to_string(encoded / 1000) + "." + std::to_string((encoded % 1000) / 10);
}

}  // namespace vram::probe

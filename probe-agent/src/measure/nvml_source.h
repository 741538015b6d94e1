// MemorySource over NVML, loaded at run time with dlopen.
//
// The CUDA toolkit on build machines ships no NVML header or link library
// (DESIGN.md §4), so the few types and entry points the probe uses are
// declared in measure/nvml_api.h (nvml.h's signatures) and resolved with
// dlsym in nvml_source.cpp. A missing library or driver is a Status with code
// kNoGpu, never a crash.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "measure/memory_source.h"

namespace vram::probe {

// The soname the NVIDIA driver installs (nvidia-ml-py loads the same name).
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

class NvmlSource final : public MemorySource {
 public:
  // Loads `library` and calls nvmlInit_v2. Tests pass the path of a fake
  // library; everyone else keeps the default.
  static Result<std::unique_ptr<NvmlSource>> Open(const std::string& library = kNvmlLibrary);

  ~NvmlSource() override;
  NvmlSource(const NvmlSource&) = delete;
  NvmlSource& operator=(const NvmlSource&) = delete;

  std::string_view name() const override { return "nvml"; }
  Result<SystemFacts> System() override;
  Result<unsigned> DeviceCount() override;
  Result<GpuFacts> Device(unsigned index) override;
  Result<DeviceMemory> Memory(unsigned index) override;
  Result<std::vector<ProcessMemory>> Processes(unsigned index) override;
  Result<std::optional<std::uint64_t>> AccountingMaxBytes(unsigned index, std::uint32_t pid) override;

  struct Api;  // resolved entry points, defined in nvml_source.cpp

 private:
  NvmlSource(void* handle, std::unique_ptr<Api> api);

  Result<void*> Handle(unsigned index);
  Result<std::vector<ProcessMemory>> ProcessList(void* device, bool mps);

  void* library_ = nullptr;
  std::unique_ptr<Api> api_;
  bool memory_v2_usable_ = true;
};

}  // namespace vram::probe

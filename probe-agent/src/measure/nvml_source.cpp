#include "measure/nvml_source.h"

#include <dlfcn.h>

#include <array>
#include <cstring>
#include <string>
#include <utility>

#include "measure/error_handling.h"

namespace vram::probe {
namespace {

// ---- NVML ABI, declared here because no nvml.h is available at build time. ----
// Layouts from nvml.h as mirrored by nvitop nvitop/api/libnvml.py
// (c_nvmlMemory_v1_t, c_nvmlMemory_v2_t, c_nvmlProcessInfo_v1/v2/v3_t) and
// pynvml nvml.py (c_nvmlAccountingStats_t).

// nvmlMemory_t (v1): {total, free, used}.
struct NvmlMemoryV1 {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlMemory_v2_t: {version, total, reserved, free, used}.
struct NvmlMemoryV2 {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(NvmlMemoryV2) == 40, "nvmlMemory_v2_t is 40 bytes on LP64");

// nvmlMemory_v2 = sizeof(nvmlMemory_v2_t) | (2 << 24): NVML_STRUCT_VERSION in
// nvml.h; nvitop libnvml.py:821 computes the same value.
constexpr unsigned int kNvmlMemoryV2Version = sizeof(NvmlMemoryV2) | (2u << 24);

// nvmlProcessInfo_v1_t {pid, usedGpuMemory}: 16 bytes; v2 adds gpuInstanceId
// and computeInstanceId: 24 bytes; the short-lived v3 struct adds
// usedGpuCcProtectedMemory: 32 bytes (nvitop libnvml.py c_nvmlProcessInfo_*).
// All three keep pid at offset 0 and usedGpuMemory at offset 8.
constexpr std::size_t kProcessInfoV1Size = 16;
constexpr std::size_t kProcessInfoV2Size = 24;
constexpr std::size_t kProcessInfoV3Size = 32;
constexpr std::size_t kProcessPidOffset = 0;
constexpr std::size_t kProcessUsedOffset = 8;

// nvmlAccountingStats_t (pynvml nvml.py c_nvmlAccountingStats_t).
struct NvmlAccountingStats {
  unsigned int gpu_utilization;
  unsigned int memory_utilization;
  unsigned long long max_memory_usage;
  unsigned long long time;
  unsigned long long start_time;
  unsigned int is_running;
  unsigned int reserved[5];
};

// NVML_VALUE_NOT_AVAILABLE: (unsigned long long)-1 in nvml.h; nvitop compares
// usedGpuMemory with ULONGLONG_MAX.
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;

// Buffer sizes from nvml.h (pynvml nvml.py: NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
// NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80).
constexpr unsigned kNameBufferSize = 96;
constexpr unsigned kUuidBufferSize = 96;
constexpr unsigned kDriverVersionBufferSize = 80;

// NVML_DEVICE_MIG_ENABLE and NVML_FEATURE_ENABLED are 1 in nvml.h.
constexpr unsigned kMigEnable = 1;
constexpr int kFeatureEnabled = 1;

// nvitop sizes the second process-list call as count * 2 + 5 so that new
// processes appearing between the two calls still fit.
constexpr unsigned kProcessListAttempts = 4;

using NvmlDevice = void*;
using ProcessListFn = int (*)(NvmlDevice, unsigned*, void*);

template <typename Fn>
Fn Symbol(void* library, const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(library, symbol));
}

}  // namespace

// Members carry the NVML symbol names so that the expression text in error
// messages names the NVML call, as nvbandwidth's NVML_ASSERT does.
struct NvmlSource::Api {
  int (*nvmlInit_v2)() = nullptr;
  int (*nvmlShutdown)() = nullptr;
  const char* (*nvmlErrorString)(int) = nullptr;
  int (*nvmlSystemGetDriverVersion)(char*, unsigned) = nullptr;
  int (*nvmlSystemGetCudaDriverVersion)(int*) = nullptr;
  int (*nvmlDeviceGetCount_v2)(unsigned*) = nullptr;
  int (*nvmlDeviceGetHandleByIndex_v2)(unsigned, NvmlDevice*) = nullptr;
  int (*nvmlDeviceGetName)(NvmlDevice, char*, unsigned) = nullptr;
  int (*nvmlDeviceGetUUID)(NvmlDevice, char*, unsigned) = nullptr;
  int (*nvmlDeviceGetMemoryInfo)(NvmlDevice, NvmlMemoryV1*) = nullptr;
  int (*nvmlDeviceGetMemoryInfo_v2)(NvmlDevice, NvmlMemoryV2*) = nullptr;
  int (*nvmlDeviceGetCudaComputeCapability)(NvmlDevice, int*, int*) = nullptr;
  int (*nvmlDeviceGetMigMode)(NvmlDevice, unsigned*, unsigned*) = nullptr;
  int (*nvmlDeviceGetAccountingMode)(NvmlDevice, int*) = nullptr;
  int (*nvmlDeviceGetAccountingStats)(NvmlDevice, unsigned, NvmlAccountingStats*) = nullptr;
  ProcessListFn compute_processes = nullptr;
  std::size_t compute_stride = 0;
  std::string compute_symbol;
  ProcessListFn mps_processes = nullptr;
  std::size_t mps_stride = 0;
  std::string mps_symbol;

  const char* ErrorString(int rc) const { return nvmlErrorString != nullptr ? nvmlErrorString(rc) : ""; }
};

namespace {

// Chooses the newest process-list entry point and the struct it fills, the
// way nvitop's __determine_get_running_processes_version_suffix does: _v3
// fills the 24-byte v2 struct except on the drivers that have
// nvmlDeviceGetConfComputeMemSizeInfo but not
// nvmlDeviceGetRunningProcessDetailList, where it fills the 32-byte struct.
void ResolveProcessList(void* library, const std::string& base, ProcessListFn* fn, std::size_t* stride,
                        std::string* symbol) {
  const bool v3_struct = dlsym(library, "nvmlDeviceGetConfComputeMemSizeInfo") != nullptr &&
                         dlsym(library, "nvmlDeviceGetRunningProcessDetailList") == nullptr;
  if ((*fn = Symbol<ProcessListFn>(library, (base + "_v3").c_str())) != nullptr) {
    *stride = v3_struct ? kProcessInfoV3Size : kProcessInfoV2Size;
    *symbol = base + "_v3";
  } else if ((*fn = Symbol<ProcessListFn>(library, (base + "_v2").c_str())) != nullptr) {
    *stride = kProcessInfoV2Size;
    *symbol = base + "_v2";
  } else if ((*fn = Symbol<ProcessListFn>(library, base.c_str())) != nullptr) {
    *stride = kProcessInfoV1Size;
    *symbol = base;
  }
}

std::string TrimmedString(const char* buffer, std::size_t size) { return std::string(buffer, strnlen(buffer, size)); }

}  // namespace

Result<std::unique_ptr<NvmlSource>> NvmlSource::Open(const std::string& library_name) {
  dlerror();
  void* library = dlopen(library_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return Status(StatusCode::kNoGpu, "no NVIDIA driver: " + library_name +
                                          " not found (dlopen: " + (why != nullptr ? why : "unknown error") + ")");
  }
  auto api = std::make_unique<Api>();
  api->nvmlInit_v2 = Symbol<decltype(api->nvmlInit_v2)>(library, "nvmlInit_v2");
  api->nvmlShutdown = Symbol<decltype(api->nvmlShutdown)>(library, "nvmlShutdown");
  api->nvmlErrorString = Symbol<decltype(api->nvmlErrorString)>(library, "nvmlErrorString");
  api->nvmlSystemGetDriverVersion =
      Symbol<decltype(api->nvmlSystemGetDriverVersion)>(library, "nvmlSystemGetDriverVersion");
  api->nvmlSystemGetCudaDriverVersion =
      Symbol<decltype(api->nvmlSystemGetCudaDriverVersion)>(library, "nvmlSystemGetCudaDriverVersion_v2");
  if (api->nvmlSystemGetCudaDriverVersion == nullptr) {
    api->nvmlSystemGetCudaDriverVersion =
        Symbol<decltype(api->nvmlSystemGetCudaDriverVersion)>(library, "nvmlSystemGetCudaDriverVersion");
  }
  api->nvmlDeviceGetCount_v2 = Symbol<decltype(api->nvmlDeviceGetCount_v2)>(library, "nvmlDeviceGetCount_v2");
  api->nvmlDeviceGetHandleByIndex_v2 =
      Symbol<decltype(api->nvmlDeviceGetHandleByIndex_v2)>(library, "nvmlDeviceGetHandleByIndex_v2");
  api->nvmlDeviceGetName = Symbol<decltype(api->nvmlDeviceGetName)>(library, "nvmlDeviceGetName");
  api->nvmlDeviceGetUUID = Symbol<decltype(api->nvmlDeviceGetUUID)>(library, "nvmlDeviceGetUUID");
  api->nvmlDeviceGetMemoryInfo = Symbol<decltype(api->nvmlDeviceGetMemoryInfo)>(library, "nvmlDeviceGetMemoryInfo");
  api->nvmlDeviceGetMemoryInfo_v2 =
      Symbol<decltype(api->nvmlDeviceGetMemoryInfo_v2)>(library, "nvmlDeviceGetMemoryInfo_v2");
  api->nvmlDeviceGetCudaComputeCapability =
      Symbol<decltype(api->nvmlDeviceGetCudaComputeCapability)>(library, "nvmlDeviceGetCudaComputeCapability");
  api->nvmlDeviceGetMigMode = Symbol<decltype(api->nvmlDeviceGetMigMode)>(library, "nvmlDeviceGetMigMode");
  api->nvmlDeviceGetAccountingMode =
      Symbol<decltype(api->nvmlDeviceGetAccountingMode)>(library, "nvmlDeviceGetAccountingMode");
  api->nvmlDeviceGetAccountingStats =
      Symbol<decltype(api->nvmlDeviceGetAccountingStats)>(library, "nvmlDeviceGetAccountingStats");
  ResolveProcessList(library, "nvmlDeviceGetComputeRunningProcesses", &api->compute_processes, &api->compute_stride,
                     &api->compute_symbol);
  ResolveProcessList(library, "nvmlDeviceGetMPSComputeRunningProcesses", &api->mps_processes, &api->mps_stride,
                     &api->mps_symbol);

  const char* missing = nullptr;
  if (api->nvmlInit_v2 == nullptr)
    missing = "nvmlInit_v2";
  else if (api->nvmlShutdown == nullptr)
    missing = "nvmlShutdown";
  else if (api->nvmlDeviceGetCount_v2 == nullptr)
    missing = "nvmlDeviceGetCount_v2";
  else if (api->nvmlDeviceGetHandleByIndex_v2 == nullptr)
    missing = "nvmlDeviceGetHandleByIndex_v2";
  else if (api->nvmlDeviceGetMemoryInfo == nullptr && api->nvmlDeviceGetMemoryInfo_v2 == nullptr)
    missing = "nvmlDeviceGetMemoryInfo";
  if (missing != nullptr) {
    dlclose(library);
    return Status(StatusCode::kNvmlError,
                  library_name + " has no " + missing + ": the NVIDIA driver is too old for vram-probe");
  }

  // nvmlInit_v2 reports a loaded library without a kernel driver as
  // NVML_ERROR_DRIVER_NOT_LOADED, which NvmlCallStatus maps to kNoGpu.
  auto init = [&api]() -> Status {
    const Api& a = *api;
    auto error_string = [&a](int rc) { return a.ErrorString(rc); };
    VRAM_NVML_RETURN_IF_ERROR(error_string, a.nvmlInit_v2());
    return Status::Ok();
  };
  Status status = init();
  if (!status.ok()) {
    dlclose(library);
    const std::string prefix = status.code() == StatusCode::kNoGpu ? "no NVIDIA driver: " : "";
    return Status(status.code(), prefix + status.message());
  }
  return std::unique_ptr<NvmlSource>(new NvmlSource(library, std::move(api)));
}

NvmlSource::NvmlSource(void* handle, std::unique_ptr<Api> api) : library_(handle), api_(std::move(api)) {}

NvmlSource::~NvmlSource() {
  if (api_ != nullptr && api_->nvmlShutdown != nullptr) api_->nvmlShutdown();
  if (library_ != nullptr) dlclose(library_);
}

Result<SystemFacts> NvmlSource::System() {
  SystemFacts facts;
  if (api_->nvmlSystemGetDriverVersion != nullptr) {
    std::array<char, kDriverVersionBufferSize> buffer{};
    if (api_->nvmlSystemGetDriverVersion(buffer.data(), kDriverVersionBufferSize) == nvml_rc::kSuccess) {
      facts.driver_version = TrimmedString(buffer.data(), buffer.size());
    }
  }
  if (api_->nvmlSystemGetCudaDriverVersion != nullptr) {
    int version = 0;
    if (api_->nvmlSystemGetCudaDriverVersion(&version) == nvml_rc::kSuccess && version > 0) {
      facts.cuda_driver_version = CudaVersionString(version);
    }
  }
  return facts;
}

Result<unsigned> NvmlSource::DeviceCount() {
  auto error_string = [this](int rc) { return api_->ErrorString(rc); };
  unsigned count = 0;
  VRAM_NVML_RETURN_IF_ERROR(error_string, api_->nvmlDeviceGetCount_v2(&count));
  return count;
}

Result<void*> NvmlSource::Handle(unsigned index) {
  auto error_string = [this](int rc) { return api_->ErrorString(rc); };
  NvmlDevice device = nullptr;
  VRAM_NVML_RETURN_IF_ERROR(error_string, api_->nvmlDeviceGetHandleByIndex_v2(index, &device));
  return device;
}

Result<GpuFacts> NvmlSource::Device(unsigned index) {
  Result<void*> device = Handle(index);
  if (!device.ok()) return device.status();
  NvmlDevice handle = device.value();
  GpuFacts facts;
  facts.index = index;
  if (api_->nvmlDeviceGetName != nullptr) {
    std::array<char, kNameBufferSize> buffer{};
    if (api_->nvmlDeviceGetName(handle, buffer.data(), kNameBufferSize) == nvml_rc::kSuccess) {
      facts.name = TrimmedString(buffer.data(), buffer.size());
    }
  }
  if (api_->nvmlDeviceGetUUID != nullptr) {
    std::array<char, kUuidBufferSize> buffer{};
    if (api_->nvmlDeviceGetUUID(handle, buffer.data(), kUuidBufferSize) == nvml_rc::kSuccess) {
      facts.uuid = TrimmedString(buffer.data(), buffer.size());
    }
  }
  if (api_->nvmlDeviceGetCudaComputeCapability != nullptr) {
    int major = 0;
    int minor = 0;
    if (api_->nvmlDeviceGetCudaComputeCapability(handle, &major, &minor) == nvml_rc::kSuccess) {
      facts.compute_capability = std::to_string(major) + "." + std::to_string(minor);
    }
  }
  if (api_->nvmlDeviceGetMigMode != nullptr) {
    unsigned current = 0;
    unsigned pending = 0;
    // Pre-Ampere boards answer NVML_ERROR_NOT_SUPPORTED: mig_mode stays null.
    if (api_->nvmlDeviceGetMigMode(handle, &current, &pending) == nvml_rc::kSuccess)
      facts.mig_enabled = current == kMigEnable;
  }
  Result<DeviceMemory> memory = Memory(index);
  if (!memory.ok()) return memory.status();
  facts.memory = memory.value();
  return facts;
}

Result<DeviceMemory> NvmlSource::Memory(unsigned index) {
  Result<void*> device = Handle(index);
  if (!device.ok()) return device.status();
  auto error_string = [this](int rc) { return api_->ErrorString(rc); };
  DeviceMemory memory;
  if (api_->nvmlDeviceGetMemoryInfo_v2 != nullptr && memory_v2_usable_) {
    NvmlMemoryV2 v2{};
    v2.version = kNvmlMemoryV2Version;
    const int rc = api_->nvmlDeviceGetMemoryInfo_v2(device.value(), &v2);
    if (rc == nvml_rc::kSuccess) {
      memory.total = v2.total;
      memory.reserved = v2.reserved;
      memory.used = v2.used;
      memory.free = v2.free;
      return memory;
    }
    // Drivers before 510 export the symbol but reject the version (gpustat
    // nvml.py:175-200): fall back to v1 for the rest of the run.
    if (rc != nvml_rc::kArgumentVersionMismatch && rc != nvml_rc::kNotSupported && rc != nvml_rc::kFunctionNotFound) {
      return NvmlCallStatus(rc, api_->ErrorString(rc), "nvmlDeviceGetMemoryInfo_v2(device, &memory)", __FILE__,
                            __LINE__);
    }
    memory_v2_usable_ = false;
  }
  if (api_->nvmlDeviceGetMemoryInfo == nullptr) {
    return Status(StatusCode::kNotSupported, "nvmlDeviceGetMemoryInfo_v2 failed and v1 is missing");
  }
  NvmlMemoryV1 v1{};
  VRAM_NVML_RETURN_IF_ERROR(error_string, api_->nvmlDeviceGetMemoryInfo(device.value(), &v1));
  // v1 `used` includes the driver reserve (research §8.1), so `reserved` is
  // unknown rather than 0.
  memory.total = v1.total;
  memory.used = v1.used;
  memory.free = v1.free;
  return memory;
}

Result<std::vector<ProcessMemory>> NvmlSource::ProcessList(void* device, bool mps) {
  const ProcessListFn fn = mps ? api_->mps_processes : api_->compute_processes;
  const std::size_t stride = mps ? api_->mps_stride : api_->compute_stride;
  if (fn == nullptr) return Status(StatusCode::kNotSupported, "the driver has no process-list entry point");
  const std::string call = (mps ? api_->mps_symbol : api_->compute_symbol) + "(device, &count, infos)";

  // First call with no buffer: NVML_SUCCESS means no process, and
  // NVML_ERROR_INSUFFICIENT_SIZE sets `count` (PyTorch reportProcessMemoryInfo
  // and nvitop loop the same way).
  unsigned count = 0;
  int rc = fn(device, &count, nullptr);
  if (rc == nvml_rc::kSuccess) return std::vector<ProcessMemory>();
  if (rc != nvml_rc::kInsufficientSize) {
    return NvmlCallStatus(rc, api_->ErrorString(rc), call.c_str(), __FILE__, __LINE__);
  }
  std::vector<unsigned char> buffer;
  for (unsigned attempt = 0; attempt < kProcessListAttempts; ++attempt) {
    const unsigned capacity = count * 2 + 5;
    buffer.assign(static_cast<std::size_t>(capacity) * stride, 0);
    count = capacity;
    rc = fn(device, &count, buffer.data());
    if (rc != nvml_rc::kInsufficientSize) break;
  }
  if (rc != nvml_rc::kSuccess) return NvmlCallStatus(rc, api_->ErrorString(rc), call.c_str(), __FILE__, __LINE__);

  std::vector<ProcessMemory> processes;
  processes.reserve(count);
  for (unsigned i = 0; i < count && (i + 1) * stride <= buffer.size(); ++i) {
    const unsigned char* entry = buffer.data() + i * stride;
    unsigned pid = 0;
    unsigned long long used = 0;
    std::memcpy(&pid, entry + kProcessPidOffset, sizeof(pid));
    std::memcpy(&used, entry + kProcessUsedOffset, sizeof(used));
    ProcessMemory p;
    p.pid = pid;
    if (used != kNvmlValueNotAvailable) p.used_bytes = used;
    processes.push_back(p);
  }
  return processes;
}

Result<std::vector<ProcessMemory>> NvmlSource::Processes(unsigned index) {
  Result<void*> device = Handle(index);
  if (!device.ok()) return device.status();
  Result<std::vector<ProcessMemory>> compute = ProcessList(device.value(), false);
  if (!compute.ok()) return compute.status();
  std::vector<ProcessMemory> processes = std::move(compute.value());
  // MPS clients show up in the MPS list only (research §8.2); merge them.
  if (api_->mps_processes != nullptr) {
    Result<std::vector<ProcessMemory>> mps = ProcessList(device.value(), true);
    if (mps.ok()) {
      for (const ProcessMemory& m : mps.value()) {
        bool seen = false;
        for (const ProcessMemory& p : processes) seen = seen || p.pid == m.pid;
        if (!seen) processes.push_back(m);
      }
    }
  }
  return processes;
}

Result<std::optional<std::uint64_t>> NvmlSource::AccountingMaxBytes(unsigned index, std::uint32_t pid) {
  if (api_->nvmlDeviceGetAccountingMode == nullptr || api_->nvmlDeviceGetAccountingStats == nullptr)
    return std::optional<std::uint64_t>();
  Result<void*> device = Handle(index);
  if (!device.ok()) return device.status();
  int mode = 0;
  if (api_->nvmlDeviceGetAccountingMode(device.value(), &mode) != nvml_rc::kSuccess || mode != kFeatureEnabled) {
    return std::optional<std::uint64_t>();
  }
  NvmlAccountingStats stats{};
  const int rc = api_->nvmlDeviceGetAccountingStats(device.value(), pid, &stats);
  // NVML_ERROR_NOT_FOUND: the pid never ran on this device or fell out of the
  // driver's circular buffer of accounted processes (research §8.3).
  if (rc == nvml_rc::kNotFound || rc == nvml_rc::kNotSupported) return std::optional<std::uint64_t>();
  if (rc != nvml_rc::kSuccess) {
    return NvmlCallStatus(rc, api_->ErrorString(rc), "nvmlDeviceGetAccountingStats(device, pid, &stats)", __FILE__,
                          __LINE__);
  }
  if (stats.max_memory_usage == kNvmlValueNotAvailable) return std::optional<std::uint64_t>();
  return std::optional<std::uint64_t>(stats.max_memory_usage);
}

}  // namespace vram::probe

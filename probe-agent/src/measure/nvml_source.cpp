#include "measure/nvml_source.h"

#include <dlfcn.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "measure/error_handling.h"
#include "measure/nvml_api.h"

namespace vram::probe {
namespace {

// The NVML types and signatures come from measure/nvml_api.h (nvml.h's),
// which the test library tests/probe/fake_nvml.cpp defines against too.

// nvmlProcessInfo_v1_t {pid, usedGpuMemory}: 16 bytes; v2 adds gpuInstanceId
// and computeInstanceId: 24 bytes; the short-lived v3 struct adds
// usedGpuCcProtectedMemory: 32 bytes (nvitop libnvml.py c_nvmlProcessInfo_*;
// the same layout is nvml.h's nvmlProcessDetail_v1_t).
// All three keep pid at offset 0 and usedGpuMemory at offset 8.
constexpr std::size_t kProcessInfoV1Size = sizeof(nvmlProcessInfo_v1_t);
constexpr std::size_t kProcessInfoV2Size = sizeof(nvmlProcessInfo_v2_t);
constexpr std::size_t kProcessInfoV3Size = 32;
constexpr std::size_t kProcessPidOffset = offsetof(nvmlProcessInfo_v1_t, pid);
constexpr std::size_t kProcessUsedOffset = offsetof(nvmlProcessInfo_v1_t, usedGpuMemory);
static_assert(offsetof(nvmlProcessInfo_v2_t, pid) == kProcessPidOffset &&
                  offsetof(nvmlProcessInfo_v2_t, usedGpuMemory) == kProcessUsedOffset,
              "v1 and v2 process records share pid and usedGpuMemory offsets");

// nvitop sizes the second process-list call as count * 2 + 5 so that new
// processes appearing between the two calls still fit.
constexpr unsigned kProcessListAttempts = 4;

template <typename Fn>
Fn Symbol(void* library, const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(library, symbol));
}

// One process-list entry point (compute or MPS) at the version the driver
// has. Each version is called through its own nvml.h type: calling _v1 or
// _v3 through one shared pointer type would be a call through the wrong
// function type.
struct ProcessListApi {
  decltype(&::nvmlDeviceGetComputeRunningProcesses) v1 = nullptr;
  decltype(&::nvmlDeviceGetComputeRunningProcesses_v2) v2 = nullptr;
  decltype(&::nvmlDeviceGetComputeRunningProcesses_v3) v3 = nullptr;
  std::size_t stride = 0;
  std::string symbol;

  bool available() const { return v1 != nullptr || v2 != nullptr || v3 != nullptr; }

  // `buffer` holds `*count` records of `stride` bytes (or is null).
  nvmlReturn_t Call(nvmlDevice_t device, unsigned* count, unsigned char* buffer) const {
    if (v3 != nullptr) return v3(device, count, reinterpret_cast<nvmlProcessInfo_t*>(buffer));
    if (v2 != nullptr) return v2(device, count, reinterpret_cast<nvmlProcessInfo_v2_t*>(buffer));
    return v1(device, count, reinterpret_cast<nvmlProcessInfo_v1_t*>(buffer));
  }
};

}  // namespace

// Members carry the NVML symbol names so that the expression text in error
// messages names the NVML call, as nvbandwidth's NVML_ASSERT does.
struct NvmlSource::Api {
  decltype(&::nvmlInit_v2) nvmlInit_v2 = nullptr;
  decltype(&::nvmlShutdown) nvmlShutdown = nullptr;
  decltype(&::nvmlErrorString) nvmlErrorString = nullptr;
  decltype(&::nvmlSystemGetDriverVersion) nvmlSystemGetDriverVersion = nullptr;
  // nvmlSystemGetCudaDriverVersion_v2, or the unversioned one (same type).
  decltype(&::nvmlSystemGetCudaDriverVersion) nvmlSystemGetCudaDriverVersion = nullptr;
  decltype(&::nvmlDeviceGetCount_v2) nvmlDeviceGetCount_v2 = nullptr;
  decltype(&::nvmlDeviceGetHandleByIndex_v2) nvmlDeviceGetHandleByIndex_v2 = nullptr;
  decltype(&::nvmlDeviceGetName) nvmlDeviceGetName = nullptr;
  decltype(&::nvmlDeviceGetUUID) nvmlDeviceGetUUID = nullptr;
  decltype(&::nvmlDeviceGetMemoryInfo) nvmlDeviceGetMemoryInfo = nullptr;
  decltype(&::nvmlDeviceGetMemoryInfo_v2) nvmlDeviceGetMemoryInfo_v2 = nullptr;
  decltype(&::nvmlDeviceGetCudaComputeCapability) nvmlDeviceGetCudaComputeCapability = nullptr;
  decltype(&::nvmlDeviceGetMigMode) nvmlDeviceGetMigMode = nullptr;
  decltype(&::nvmlDeviceGetAccountingMode) nvmlDeviceGetAccountingMode = nullptr;
  decltype(&::nvmlDeviceGetAccountingStats) nvmlDeviceGetAccountingStats = nullptr;
  ProcessListApi compute_processes;
  ProcessListApi mps_processes;

  const char* ErrorString(int rc) const {
    return nvmlErrorString != nullptr ? nvmlErrorString(static_cast<nvmlReturn_t>(rc)) : "";
  }
};

namespace {

// Chooses the newest process-list entry point and the struct it fills, the
// way nvitop's __determine_get_running_processes_version_suffix does: _v3
// fills the 24-byte v2 struct except on the drivers that have
// nvmlDeviceGetConfComputeMemSizeInfo but not
// nvmlDeviceGetRunningProcessDetailList, where it fills the 32-byte struct.
// The compute and MPS entry points of one version have the same nvml.h type.
void ResolveProcessList(void* library, const std::string& base, ProcessListApi* api) {
  const bool v3_struct = dlsym(library, "nvmlDeviceGetConfComputeMemSizeInfo") != nullptr &&
                         dlsym(library, "nvmlDeviceGetRunningProcessDetailList") == nullptr;
  if ((api->v3 = Symbol<decltype(api->v3)>(library, (base + "_v3").c_str())) != nullptr) {
    api->stride = v3_struct ? kProcessInfoV3Size : kProcessInfoV2Size;
    api->symbol = base + "_v3";
  } else if ((api->v2 = Symbol<decltype(api->v2)>(library, (base + "_v2").c_str())) != nullptr) {
    api->stride = kProcessInfoV2Size;
    api->symbol = base + "_v2";
  } else if ((api->v1 = Symbol<decltype(api->v1)>(library, base.c_str())) != nullptr) {
    api->stride = kProcessInfoV1Size;
    api->symbol = base;
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
  ResolveProcessList(library, "nvmlDeviceGetComputeRunningProcesses", &api->compute_processes);
  ResolveProcessList(library, "nvmlDeviceGetMPSComputeRunningProcesses", &api->mps_processes);

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
    std::array<char, kNvmlDriverVersionBufferSize> buffer{};
    if (api_->nvmlSystemGetDriverVersion(buffer.data(), kNvmlDriverVersionBufferSize) == nvml_rc::kSuccess) {
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
  nvmlDevice_t device = nullptr;
  VRAM_NVML_RETURN_IF_ERROR(error_string, api_->nvmlDeviceGetHandleByIndex_v2(index, &device));
  return device;
}

Result<GpuFacts> NvmlSource::Device(unsigned index) {
  Result<void*> device = Handle(index);
  if (!device.ok()) return device.status();
  const nvmlDevice_t handle = static_cast<nvmlDevice_t>(device.value());
  GpuFacts facts;
  facts.index = index;
  if (api_->nvmlDeviceGetName != nullptr) {
    std::array<char, kNvmlDeviceNameBufferSize> buffer{};
    if (api_->nvmlDeviceGetName(handle, buffer.data(), kNvmlDeviceNameBufferSize) == nvml_rc::kSuccess) {
      facts.name = TrimmedString(buffer.data(), buffer.size());
    }
  }
  if (api_->nvmlDeviceGetUUID != nullptr) {
    std::array<char, kNvmlDeviceUuidBufferSize> buffer{};
    if (api_->nvmlDeviceGetUUID(handle, buffer.data(), kNvmlDeviceUuidBufferSize) == nvml_rc::kSuccess) {
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
      facts.mig_enabled = current == kNvmlDeviceMigEnable;
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
  const nvmlDevice_t handle = static_cast<nvmlDevice_t>(device.value());
  DeviceMemory memory;
  if (api_->nvmlDeviceGetMemoryInfo_v2 != nullptr && memory_v2_usable_) {
    nvmlMemory_v2_t v2{};
    v2.version = kNvmlMemoryV2Version;
    const int rc = api_->nvmlDeviceGetMemoryInfo_v2(handle, &v2);
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
  nvmlMemory_t v1{};
  VRAM_NVML_RETURN_IF_ERROR(error_string, api_->nvmlDeviceGetMemoryInfo(handle, &v1));
  // v1 `used` includes the driver reserve (research §8.1), so `reserved` is
  // unknown rather than 0.
  memory.total = v1.total;
  memory.used = v1.used;
  memory.free = v1.free;
  return memory;
}

Result<std::vector<ProcessMemory>> NvmlSource::ProcessList(void* device, bool mps) {
  const ProcessListApi& list = mps ? api_->mps_processes : api_->compute_processes;
  const std::size_t stride = list.stride;
  if (!list.available()) return Status(StatusCode::kNotSupported, "the driver has no process-list entry point");
  const nvmlDevice_t handle = static_cast<nvmlDevice_t>(device);
  const std::string call = list.symbol + "(device, &count, infos)";

  // First call with no buffer: NVML_SUCCESS means no process, and
  // NVML_ERROR_INSUFFICIENT_SIZE sets `count` (PyTorch reportProcessMemoryInfo
  // and nvitop loop the same way).
  unsigned count = 0;
  int rc = list.Call(handle, &count, nullptr);
  if (rc == nvml_rc::kSuccess) return std::vector<ProcessMemory>();
  if (rc != nvml_rc::kInsufficientSize) {
    return NvmlCallStatus(rc, api_->ErrorString(rc), call.c_str(), __FILE__, __LINE__);
  }
  std::vector<unsigned char> buffer;
  for (unsigned attempt = 0; attempt < kProcessListAttempts; ++attempt) {
    const unsigned capacity = count * 2 + 5;
    buffer.assign(static_cast<std::size_t>(capacity) * stride, 0);
    count = capacity;
    rc = list.Call(handle, &count, buffer.data());
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
  if (api_->mps_processes.available()) {
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
  const nvmlDevice_t handle = static_cast<nvmlDevice_t>(device.value());
  nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
  if (api_->nvmlDeviceGetAccountingMode(handle, &mode) != nvml_rc::kSuccess || mode != NVML_FEATURE_ENABLED) {
    return std::optional<std::uint64_t>();
  }
  nvmlAccountingStats_t stats{};
  const int rc = api_->nvmlDeviceGetAccountingStats(handle, pid, &stats);
  // NVML_ERROR_NOT_FOUND: the pid never ran on this device or fell out of the
  // driver's circular buffer of accounted processes (research §8.3).
  if (rc == nvml_rc::kNotFound || rc == nvml_rc::kNotSupported) return std::optional<std::uint64_t>();
  if (rc != nvml_rc::kSuccess) {
    return NvmlCallStatus(rc, api_->ErrorString(rc), "nvmlDeviceGetAccountingStats(device, pid, &stats)", __FILE__,
                          __LINE__);
  }
  if (stats.maxMemoryUsage == kNvmlValueNotAvailable) return std::optional<std::uint64_t>();
  return std::optional<std::uint64_t>(stats.maxMemoryUsage);
}

}  // namespace vram::probe

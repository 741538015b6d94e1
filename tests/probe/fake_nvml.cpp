// A fake libnvidia-ml.so for NvmlSource tests: defines the NVML entry points
// vram-probe resolves with dlsym against the declarations of
// probe-agent/src/measure/nvml_api.h (nvml.h's signatures), so the compiler
// checks that each one has the type the probe calls it through, and serves
// scripted values. Tests steer it through FakeNvmlConfigure, found with dlsym
// on the same library (declared in fake_nvml.h).
//
// Built twice (tests/CMakeLists.txt): as a current driver (nvmlMemory_v2,
// nvmlSystemGetCudaDriverVersion_v2, the _v3 compute process list, no MPS
// list) and, with FAKE_NVML_LEGACY, as a pre-510 driver: v1 memory only, the
// unversioned CUDA version call, the unversioned compute process list
// (16-byte nvmlProcessInfo_v1_t) and the _v2 MPS list.
#include "fake_nvml.h"

#include <cstdio>
#include <cstring>

#include "measure/nvml_api.h"

using vram::probe::kNvmlMemoryV2Version;
using vram::probe::kNvmlValueNotAvailable;

namespace {

// 80 GiB with a 512 MiB driver reserve and 1 GiB in use.
constexpr unsigned long long kGiB = 1ull << 30;
constexpr unsigned long long kTotal = 80 * kGiB;
constexpr unsigned long long kReserved = kGiB / 2;
constexpr unsigned long long kUsed = kGiB;

nvmlReturn_t g_init_rc = NVML_SUCCESS;
unsigned g_process_count = 0;
int g_grow_by = 0;  // processes that appear after the first process-list call
int g_process_calls = 0;
int g_device_marker = 0;

// g_process_count processes at the first call, g_grow_by more from the second
// on, in whichever nvmlProcessInfo struct the entry point fills.
template <typename Info>
nvmlReturn_t ComputeProcesses(unsigned* count, Info* infos) {
  ++g_process_calls;
  unsigned live = g_process_count;
  if (g_process_calls >= 2) live += static_cast<unsigned>(g_grow_by);
  if (*count < live || infos == nullptr) {
    const bool empty = live == 0;
    *count = live;
    return empty ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < live; ++i) {
    infos[i].pid = 1000 + i;
    // The last process's usage is NVML_VALUE_NOT_AVAILABLE, as under WDDM.
    infos[i].usedGpuMemory = (i + 1 == live && live > 1) ? kNvmlValueNotAvailable : (i + 1) * kGiB;
    if constexpr (sizeof(Info) > sizeof(nvmlProcessInfo_v1_t)) {
      infos[i].gpuInstanceId = 0xFFFFFFFFu;
      infos[i].computeInstanceId = 0xFFFFFFFFu;
    }
  }
  *count = live;
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

void FakeNvmlConfigure(int init_rc, unsigned process_count, int grow_by) {
  g_init_rc = static_cast<nvmlReturn_t>(init_rc);
  g_process_count = process_count;
  g_grow_by = grow_by;
  g_process_calls = 0;
}

int FakeNvmlProcessCalls() { return g_process_calls; }

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2() { return g_init_rc; }
__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown() { return NVML_SUCCESS; }
__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t rc) {
  return rc == NVML_ERROR_DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Fake Error";
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned length) {
  std::snprintf(version, length, "%s", "550.54.15");
  return NVML_SUCCESS;
}

#if !defined(FAKE_NVML_LEGACY)
__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  *version = 12040;
  return NVML_SUCCESS;
}
#else
__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  *version = 11040;
  return NVML_SUCCESS;
}
#endif

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  *count = 1;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index,
                                                                                  nvmlDevice_t* device) {
  if (index != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(&g_device_marker);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t, char* name, unsigned length) {
  std::snprintf(name, length, "%s", "NVIDIA H100 80GB HBM3");
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t, char* uuid, unsigned length) {
  std::snprintf(uuid, length, "%s", "GPU-01234567-89ab-cdef-0123-456789abcdef");
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t* memory) {
  memory->total = kTotal;
  memory->used = kUsed + kReserved;
  memory->free = kTotal - kUsed - kReserved;
  return NVML_SUCCESS;
}

#if !defined(FAKE_NVML_LEGACY)
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t, nvmlMemory_v2_t* memory) {
  if (memory->version != kNvmlMemoryV2Version) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  memory->total = kTotal;
  memory->reserved = kReserved;
  memory->used = kUsed;
  memory->free = kTotal - kUsed - kReserved;
  return NVML_SUCCESS;
}
#endif

#if !defined(FAKE_NVML_LEGACY)
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t,
                                                                                            unsigned* count,
                                                                                            nvmlProcessInfo_t* infos) {
  return ComputeProcesses(count, infos);
}
#else
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t, unsigned* count,
                                                                                         nvmlProcessInfo_v1_t* infos) {
  return ComputeProcesses(count, infos);
}

// MPS clients: pid 1000 (also in the compute list, so it is merged away) and
// pid 2000 with 5 GiB.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(
    nvmlDevice_t, unsigned* count, nvmlProcessInfo_v2_t* infos) {
  constexpr unsigned kMps = 2;
  if (*count < kMps || infos == nullptr) {
    *count = kMps;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  infos[0] = nvmlProcessInfo_v2_t{1000, kGiB, 0xFFFFFFFFu, 0xFFFFFFFFu};
  infos[1] = nvmlProcessInfo_v2_t{2000, 5 * kGiB, 0xFFFFFFFFu, 0xFFFFFFFFu};
  *count = kMps;
  return NVML_SUCCESS;
}
#endif

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t, int* major,
                                                                                       int* minor) {
  *major = 9;
  *minor = 0;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t, unsigned*, unsigned*) {
  return NVML_ERROR_NOT_SUPPORTED;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t, nvmlEnableState_t* mode) {
  *mode = NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetAccountingStats(nvmlDevice_t, unsigned pid,
                                                                                 nvmlAccountingStats_t* stats) {
  std::memset(stats, 0, sizeof(*stats));
  stats->maxMemoryUsage = 3 * kGiB + pid;
  return NVML_SUCCESS;
}

}  // extern "C"

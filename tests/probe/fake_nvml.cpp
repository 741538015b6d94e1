// A fake libnvidia-ml.so for NvmlSource tests: exports the NVML entry points
// vram-probe resolves with dlsym, with the ABI of nvml.h (layouts as in
// nvitop nvitop/api/libnvml.py), and serves scripted values. Tests steer it
// through FakeNvmlConfigure, found with dlsym on the same library.
#include <cstdio>
#include <cstring>

namespace {

// nvmlReturn_t values (nvml.h).
constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kInsufficientSize = 7;
constexpr int kArgumentVersionMismatch = 25;

struct Memory {
  unsigned long long total, free, used;
};
struct MemoryV2 {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
struct ProcessInfoV2 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
struct AccountingStats {
  unsigned int gpu_utilization, memory_utilization;
  unsigned long long max_memory_usage, time, start_time;
  unsigned int is_running;
  unsigned int reserved[5];
};

// nvmlMemory_v2 = sizeof(nvmlMemory_v2_t) | (2 << 24) (nvitop libnvml.py:821).
constexpr unsigned kMemoryV2Version = sizeof(MemoryV2) | (2u << 24);

// 80 GiB with a 512 MiB driver reserve and 1 GiB in use.
constexpr unsigned long long kGiB = 1ull << 30;
constexpr unsigned long long kTotal = 80 * kGiB;
constexpr unsigned long long kReserved = kGiB / 2;
constexpr unsigned long long kUsed = kGiB;

int g_init_rc = kSuccess;
unsigned g_process_count = 0;
int g_grow_by = 0;  // processes that appear after the first process-list call
int g_process_calls = 0;
int g_device_marker = 0;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void FakeNvmlConfigure(int init_rc, unsigned process_count, int grow_by) {
  g_init_rc = init_rc;
  g_process_count = process_count;
  g_grow_by = grow_by;
  g_process_calls = 0;
}

__attribute__((visibility("default"))) int FakeNvmlProcessCalls() { return g_process_calls; }

__attribute__((visibility("default"))) int nvmlInit_v2() { return g_init_rc; }
__attribute__((visibility("default"))) int nvmlShutdown() { return kSuccess; }
__attribute__((visibility("default"))) const char* nvmlErrorString(int rc) {
  return rc == 9 ? "Driver Not Loaded" : "Fake Error";
}

__attribute__((visibility("default"))) int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  std::snprintf(version, length, "%s", "550.54.15");
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  *version = 12040;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = 1;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index != 0) return kInvalidArgument;
  *device = &g_device_marker;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetName(void*, char* name, unsigned length) {
  std::snprintf(name, length, "%s", "NVIDIA H100 80GB HBM3");
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetUUID(void*, char* uuid, unsigned length) {
  std::snprintf(uuid, length, "%s", "GPU-01234567-89ab-cdef-0123-456789abcdef");
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void*, Memory* memory) {
  memory->total = kTotal;
  memory->used = kUsed + kReserved;
  memory->free = kTotal - kUsed - kReserved;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo_v2(void*, MemoryV2* memory) {
  if (memory->version != kMemoryV2Version) return kArgumentVersionMismatch;
  memory->total = kTotal;
  memory->reserved = kReserved;
  memory->used = kUsed;
  memory->free = kTotal - kUsed - kReserved;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetComputeRunningProcesses_v3(void*, unsigned* count,
                                                                                   ProcessInfoV2* infos) {
  ++g_process_calls;
  unsigned live = g_process_count;
  if (g_process_calls >= 2) live += static_cast<unsigned>(g_grow_by);
  if (*count < live || infos == nullptr) {
    const bool empty = live == 0;
    *count = live;
    return empty ? kSuccess : kInsufficientSize;
  }
  for (unsigned i = 0; i < live; ++i) {
    infos[i].pid = 1000 + i;
    // The last process's usage is NVML_VALUE_NOT_AVAILABLE, as under WDDM.
    infos[i].used_gpu_memory = (i + 1 == live && live > 1) ? ~0ull : (i + 1) * kGiB;
    infos[i].gpu_instance_id = 0xFFFFFFFFu;
    infos[i].compute_instance_id = 0xFFFFFFFFu;
  }
  *count = live;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetCudaComputeCapability(void*, int* major, int* minor) {
  *major = 9;
  *minor = 0;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetMigMode(void*, unsigned*, unsigned*) { return kNotSupported; }

__attribute__((visibility("default"))) int nvmlDeviceGetAccountingMode(void*, int* mode) {
  *mode = 1;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetAccountingStats(void*, unsigned pid, AccountingStats* stats) {
  std::memset(stats, 0, sizeof(*stats));
  stats->max_memory_usage = 3 * kGiB + pid;
  return kSuccess;
}

}  // extern "C"

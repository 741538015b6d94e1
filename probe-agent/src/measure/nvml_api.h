// The NVML types and entry points vram-probe uses, declared once, with the
// exact C signatures of NVIDIA's nvml.h (NVML_API_VERSION 13, the header of
// the CUDA 13 toolkit's cuda_nvml_dev component; read from the copy NVIDIA
// vendors in NVIDIA/go-nvml gen/nvml/nvml.h at 2f9e261). The CUDA 13.0 wheels
// installed here (/usr/local/cuda-13.0) carry no nvml.h, and vram-probe must
// build without one anyway, so the subset it needs lives here.
//
// Two users, one set of types:
// - nvml_source.cpp resolves each entry point with dlsym and calls it through
//   a pointer of type decltype(&nvmlXxx), the type declared below;
// - tests/probe/fake_nvml.cpp defines the same functions, so the compiler
//   checks each definition against these declarations.
// A call through a pointer whose type differs from the callee's is undefined
// behaviour ([expr.call]); UBSan's -fsanitize=function stops on it, which is
// how the sanitizer suite found the two files declaring their own types.
//
// Nothing here is defined by this program: the declarations only give
// decltype its types. vram-probe never links against libnvidia-ml.
#pragma once

extern "C" {

// nvml.h: `typedef struct nvmlDevice_st* nvmlDevice_t;` (opaque to callers).
typedef struct nvmlDevice_st* nvmlDevice_t;

// nvml.h `typedef enum nvmlReturn_enum { ... } nvmlReturn_t;`: the values the
// probe names (nvml.h lists NVML_SUCCESS = 0 .. NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30
// and NVML_ERROR_UNKNOWN = 999).
typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

// nvml.h `typedef enum nvmlEnableState_enum`.
typedef enum nvmlEnableState_enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;

// nvml.h nvmlMemory_t (v1).
typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;  // includes the driver reserve
} nvmlMemory_t;

// nvml.h nvmlMemory_v2_t.
typedef struct nvmlMemory_v2_st {
  unsigned int version;  // nvmlMemory_v2 (below)
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

// nvml.h nvmlProcessInfo_v1_t.
typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

// nvml.h `nvmlProcessInfo_v2_t, nvmlProcessInfo_t` (the _v3 entry points take
// nvmlProcessInfo_t; some drivers fill a 32-byte struct through it, see
// nvml_source.cpp ResolveProcessList).
typedef struct nvmlProcessInfo_v2_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

// nvml.h nvmlAccountingStats_t.
typedef struct nvmlAccountingStats_st {
  unsigned int gpuUtilization;
  unsigned int memoryUtilization;
  unsigned long long maxMemoryUsage;
  unsigned long long time;
  unsigned long long startTime;
  unsigned int isRunning;
  unsigned int reserved[5];
} nvmlAccountingStats_t;

// The entry points, as nvml.h declares them (DECLDIR is empty off Windows).
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char* nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode);
nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device, nvmlEnableState_t* mode);
nvmlReturn_t nvmlDeviceGetAccountingStats(nvmlDevice_t device, unsigned int pid, nvmlAccountingStats_t* stats);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v1_t* infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                        nvmlProcessInfo_v2_t* infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                        nvmlProcessInfo_t* infos);

}  // extern "C"

namespace vram::probe {

// Layout checks against nvml.h on LP64 (nvitop nvitop/api/libnvml.py mirrors
// the same structs with ctypes).
static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t is 24 bytes");
static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes");
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t is 16 bytes");
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t is 24 bytes");
static_assert(sizeof(nvmlAccountingStats_t) == 56, "nvmlAccountingStats_t is 56 bytes");

// nvml.h: `#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)`, i.e.
// sizeof(nvmlMemory_v2_t) | (2 << 24).
inline constexpr unsigned int kNvmlMemoryV2Version = static_cast<unsigned int>(sizeof(nvmlMemory_v2_t)) | (2u << 24);

// nvml.h buffer sizes: NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE,
// NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE.
inline constexpr unsigned int kNvmlDeviceNameBufferSize = 96;
inline constexpr unsigned int kNvmlDeviceUuidBufferSize = 96;
inline constexpr unsigned int kNvmlDriverVersionBufferSize = 80;

// nvml.h: `#define NVML_DEVICE_MIG_ENABLE 0x1`.
inline constexpr unsigned int kNvmlDeviceMigEnable = 1;

// nvml.h: `#define NVML_VALUE_NOT_AVAILABLE (-1)`, read from an unsigned long
// long field (usedGpuMemory, maxMemoryUsage) as ULLONG_MAX.
inline constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;

}  // namespace vram::probe

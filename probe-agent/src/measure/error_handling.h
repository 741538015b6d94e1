// Error macros for NVML, NCCL and CUDA calls.
//
// Modelled on NVIDIA/nvbandwidth error_handling.h (CUDA_ASSERT, NVML_ASSERT):
// the message carries the library's error name, the failing expression and
// file:line. Unlike nvbandwidth, nothing here exits or aborts: the macros
// RETURN a Status from the enclosing function (which returns Status or
// Result<T>), so the caller decides what to print and which exit code to use.
#pragma once

#include <string>

#include "measure/nvml_api.h"
#include "measure/status.h"

namespace vram::probe {

// nvmlReturn_t values used by the probe, from the nvmlReturn_t enum in nvml.h
// as declared once in measure/nvml_api.h.
namespace nvml_rc {
inline constexpr int kSuccess = NVML_SUCCESS;
inline constexpr int kUninitialized = NVML_ERROR_UNINITIALIZED;
inline constexpr int kInvalidArgument = NVML_ERROR_INVALID_ARGUMENT;
inline constexpr int kNotSupported = NVML_ERROR_NOT_SUPPORTED;
inline constexpr int kNoPermission = NVML_ERROR_NO_PERMISSION;
inline constexpr int kNotFound = NVML_ERROR_NOT_FOUND;
inline constexpr int kInsufficientSize = NVML_ERROR_INSUFFICIENT_SIZE;
inline constexpr int kDriverNotLoaded = NVML_ERROR_DRIVER_NOT_LOADED;
inline constexpr int kLibraryNotFound = NVML_ERROR_LIBRARY_NOT_FOUND;
inline constexpr int kFunctionNotFound = NVML_ERROR_FUNCTION_NOT_FOUND;
inline constexpr int kGpuIsLost = NVML_ERROR_GPU_IS_LOST;
inline constexpr int kArgumentVersionMismatch = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
inline constexpr int kGpuNotFound = NVML_ERROR_GPU_NOT_FOUND;
inline constexpr int kUnknown = NVML_ERROR_UNKNOWN;
}  // namespace nvml_rc

// ncclResult_t values used by the probe, from the ncclResult_t enum in nccl.h
// (NCCL 2.28: ncclSuccess = 0 .. ncclInProgress = 7).
namespace nccl_rc {
inline constexpr int kSuccess = 0;
}  // namespace nccl_rc

// "NVML_ERROR_NOT_SUPPORTED" for 3, "NVML_ERROR_<n>" for values this table
// does not know.
std::string NvmlErrorName(int rc);

// Builds the Status for a failed NVML call. `description` is nvmlErrorString's
// text when the library provides it, or empty.
Status NvmlCallStatus(int rc, const char* description, const char* expr, const char* file, int line);

// "ncclUnhandledCudaError" for 1, "ncclResult_<n>" for values nccl.h does not
// name.
std::string NcclErrorName(int rc);

// Builds the Status (kNcclError) for a failed NCCL call. `description` is
// ncclGetErrorString's text, or empty.
Status NcclCallStatus(int rc, const char* description, const char* expr, const char* file, int line);

// Builds the Status for a failed CUDA runtime call from the values of
// cudaGetErrorName / cudaGetErrorString.
Status CudaCallStatus(int rc, const char* name, const char* description, const char* expr, const char* file, int line);

// "file.cpp:123" with the directory part dropped.
std::string SourceLocation(const char* file, int line);

}  // namespace vram::probe

// Returns early with the Status of `expr` when it is not OK.
#define VRAM_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::vram::probe::Status vram_status_ = (expr); \
    if (!vram_status_.ok()) return vram_status_; \
  } while (0)

// `error_string` is a callable mapping an nvmlReturn_t to its text (the
// dlsym'd nvmlErrorString, which may be absent: pass a lambda that copes).
#define VRAM_NVML_RETURN_IF_ERROR(error_string, expr)                                                                \
  do {                                                                                                               \
    const int vram_nvml_rc_ = static_cast<int>(expr);                                                                \
    if (vram_nvml_rc_ != ::vram::probe::nvml_rc::kSuccess) {                                                         \
      return ::vram::probe::NvmlCallStatus(vram_nvml_rc_, (error_string)(vram_nvml_rc_), #expr, __FILE__, __LINE__); \
    }                                                                                                                \
  } while (0)

// `error_string` maps an ncclResult_t to its text (the dlsym'd
// ncclGetErrorString; see NcclLibrary::ErrorString).
#define VRAM_NCCL_RETURN_IF_ERROR(error_string, expr)                                                                \
  do {                                                                                                               \
    const int vram_nccl_rc_ = static_cast<int>(expr);                                                                \
    if (vram_nccl_rc_ != ::vram::probe::nccl_rc::kSuccess) {                                                         \
      return ::vram::probe::NcclCallStatus(vram_nccl_rc_, (error_string)(vram_nccl_rc_), #expr, __FILE__, __LINE__); \
    }                                                                                                                \
  } while (0)

// Available only to files that include the CUDA runtime headers first
// (CUDART_VERSION is defined by cuda_runtime_api.h), so this header never
// drags CUDA into builds without it.
#ifdef CUDART_VERSION
#define VRAM_CUDA_RETURN_IF_ERROR(expr)                                                                      \
  do {                                                                                                       \
    const cudaError_t vram_cuda_rc_ = (expr);                                                                \
    if (vram_cuda_rc_ != cudaSuccess) {                                                                      \
      return ::vram::probe::CudaCallStatus(static_cast<int>(vram_cuda_rc_), cudaGetErrorName(vram_cuda_rc_), \
                                           cudaGetErrorString(vram_cuda_rc_), #expr, __FILE__, __LINE__);    \
    }                                                                                                        \
  } while (0)
#endif

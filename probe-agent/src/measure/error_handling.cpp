#include "measure/error_handling.h"

#include <cstring>
#include <string>

namespace vram::probe {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kNoGpu:
      return "no_gpu";
    case StatusCode::kNotSupported:
      return "not_supported";
    case StatusCode::kNvmlError:
      return "nvml_error";
    case StatusCode::kCudaError:
      return "cuda_error";
    case StatusCode::kInvalidArgument:
      return "bad_argument";
    case StatusCode::kIoError:
      return "io_error";
    case StatusCode::kExecFailed:
      return "exec_failed";
    case StatusCode::kDeviceBusy:
      return "device_busy";
    case StatusCode::kProcessNotSeen:
      return "process_not_seen";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kNcclError:
      return "nccl_error";
  }
  return "internal";
}

std::string NvmlErrorName(int rc) {
  // Names and values of the nvmlReturn_t enum in nvml.h (pynvml nvml.py keeps
  // the same list as NVML_ERROR_* constants).
  switch (rc) {
    case 0:
      return "NVML_SUCCESS";
    case 1:
      return "NVML_ERROR_UNINITIALIZED";
    case 2:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case 3:
      return "NVML_ERROR_NOT_SUPPORTED";
    case 4:
      return "NVML_ERROR_NO_PERMISSION";
    case 5:
      return "NVML_ERROR_ALREADY_INITIALIZED";
    case 6:
      return "NVML_ERROR_NOT_FOUND";
    case 7:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case 8:
      return "NVML_ERROR_INSUFFICIENT_POWER";
    case 9:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case 10:
      return "NVML_ERROR_TIMEOUT";
    case 11:
      return "NVML_ERROR_IRQ_ISSUE";
    case 12:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case 13:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case 14:
      return "NVML_ERROR_CORRUPTED_INFOROM";
    case 15:
      return "NVML_ERROR_GPU_IS_LOST";
    case 16:
      return "NVML_ERROR_RESET_REQUIRED";
    case 17:
      return "NVML_ERROR_OPERATING_SYSTEM";
    case 18:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case 19:
      return "NVML_ERROR_IN_USE";
    case 20:
      return "NVML_ERROR_MEMORY";
    case 21:
      return "NVML_ERROR_NO_DATA";
    case 22:
      return "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED";
    case 23:
      return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case 24:
      return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case 25:
      return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case 26:
      return "NVML_ERROR_DEPRECATED";
    case 27:
      return "NVML_ERROR_NOT_READY";
    case 28:
      return "NVML_ERROR_GPU_NOT_FOUND";
    case 29:
      return "NVML_ERROR_INVALID_STATE";
    case 999:
      return "NVML_ERROR_UNKNOWN";
    default:
      return "NVML_ERROR_" + std::to_string(rc);
  }
}

std::string SourceLocation(const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash != nullptr ? slash + 1 : file) + ":" + std::to_string(line);
}

Status NvmlCallStatus(int rc, const char* description, const char* expr, const char* file, int line) {
  StatusCode code = StatusCode::kNvmlError;
  if (rc == nvml_rc::kDriverNotLoaded || rc == nvml_rc::kLibraryNotFound || rc == nvml_rc::kGpuNotFound) {
    code = StatusCode::kNoGpu;
  } else if (rc == nvml_rc::kNotSupported || rc == nvml_rc::kFunctionNotFound) {
    code = StatusCode::kNotSupported;
  }
  std::string message = "NVML error " + std::to_string(rc) + " " + NvmlErrorName(rc);
  if (description != nullptr && *description != '\0') message += ": " + std::string(description);
  message += " in " + std::string(expr) + " at " + SourceLocation(file, line);
  return Status(code, message);
}

std::string NcclErrorName(int rc) {
  // Names and values of the ncclResult_t enum in nccl.h (NCCL 2.28).
  switch (rc) {
    case 0:
      return "ncclSuccess";
    case 1:
      return "ncclUnhandledCudaError";
    case 2:
      return "ncclSystemError";
    case 3:
      return "ncclInternalError";
    case 4:
      return "ncclInvalidArgument";
    case 5:
      return "ncclInvalidUsage";
    case 6:
      return "ncclRemoteError";
    case 7:
      return "ncclInProgress";
    default:
      return "ncclResult_" + std::to_string(rc);
  }
}

Status NcclCallStatus(int rc, const char* description, const char* expr, const char* file, int line) {
  std::string message = "NCCL error " + std::to_string(rc) + " " + NcclErrorName(rc);
  if (description != nullptr && *description != '\0') message += ": " + std::string(description);
  message += " in " + std::string(expr) + " at " + SourceLocation(file, line);
  return Status(StatusCode::kNcclError, message);
}

Status CudaCallStatus(int rc, const char* name, const char* description, const char* expr, const char* file, int line) {
  // cudaError_t values from driver_types.h (CUDA 13) that mean "no usable
  // driver or GPU here": 34 (the libcuda.so found is the toolkit's link-time
  // library, not a driver), 35 cudaErrorInsufficientDriver, 100
  // cudaErrorNoDevice.
  constexpr int kCudaErrorLinkTimeLibcuda = 34;
  constexpr int kCudaErrorInsufficientDriver = 35;
  constexpr int kCudaErrorNoDevice = 100;
  const bool no_gpu = rc == kCudaErrorLinkTimeLibcuda || rc == kCudaErrorInsufficientDriver || rc == kCudaErrorNoDevice;
  std::string message = "CUDA error " + std::to_string(rc) + " " + (name != nullptr ? name : "cudaError");
  if (description != nullptr && *description != '\0') message += ": " + std::string(description);
  message += " in " + std::string(expr) + " at " + SourceLocation(file, line);
  return Status(no_gpu ? StatusCode::kNoGpu : StatusCode::kCudaError, message);
}

}  // namespace vram::probe

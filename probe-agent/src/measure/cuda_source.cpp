#include "measure/cuda_source.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "measure/error_handling.h"

namespace vram::probe {
namespace {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": the form nvidia-smi and
// nvmlDeviceGetUUID print, so CUDA and NVML devices can be matched by UUID.
std::string FormatUuid(const cudaUUID_t& uuid) {
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    out += hex;
  }
  return out;
}

Status CheckCount(int* count) {
  VRAM_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(count));
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CudaSource>> CudaSource::Open() {
  int count = 0;
  Status status = CheckCount(&count);
  if (!status.ok()) return status;
  return std::unique_ptr<CudaSource>(new CudaSource());
}

Result<SystemFacts> CudaSource::System() {
  SystemFacts facts;
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) facts.cuda_driver_version = CudaVersionString(driver);
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess && runtime > 0) {
    facts.cuda_runtime_version = CudaVersionString(runtime);
  }
  return facts;
}

Result<unsigned> CudaSource::DeviceCount() {
  int count = 0;
  VRAM_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  return static_cast<unsigned>(count);
}

Result<GpuFacts> CudaSource::Device(unsigned index) {
  cudaDeviceProp prop{};
  VRAM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, static_cast<int>(index)));
  GpuFacts facts;
  facts.index = index;
  facts.name = std::string(prop.name);
  facts.uuid = FormatUuid(prop.uuid);
  facts.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  // totalGlobalMem needs no context; used/free would (cudaMemGetInfo), so
  // device facts leave them null rather than allocate a context to read them.
  facts.memory.total = static_cast<std::uint64_t>(prop.totalGlobalMem);
  return facts;
}

Result<DeviceMemory> CudaSource::Memory(unsigned index) {
  VRAM_CUDA_RETURN_IF_ERROR(cudaSetDevice(static_cast<int>(index)));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  VRAM_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  DeviceMemory memory;
  memory.total = total_bytes;
  memory.free = free_bytes;
  memory.used = total_bytes - free_bytes;
  return memory;
}

Result<std::vector<ProcessMemory>> CudaSource::Processes(unsigned /*index*/) {
  return Status(StatusCode::kNotSupported, "the CUDA runtime cannot list processes; NVML can");
}

Result<std::optional<std::uint64_t>> CudaSource::AccountingMaxBytes(unsigned /*index*/, std::uint32_t /*pid*/) {
  return std::optional<std::uint64_t>();
}

Status CudaSource::CreateContext(unsigned index) {
  VRAM_CUDA_RETURN_IF_ERROR(cudaSetDevice(static_cast<int>(index)));
  // cudaFree(0) is the customary way to force the lazy primary context into
  // existence without allocating anything.
  VRAM_CUDA_RETURN_IF_ERROR(cudaFree(nullptr));
  return Status::Ok();
}

}  // namespace vram::probe

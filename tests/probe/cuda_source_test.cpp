// CudaSource on a machine without a driver: a clear error, not a crash.
#include <gtest/gtest.h>

#include <string>

#if defined(VRAM_PROBE_HAVE_CUDA)
#include "measure/cuda_source.h"
#endif

namespace vram::probe {
namespace {

#if defined(VRAM_PROBE_HAVE_CUDA)

TEST(CudaSource, NoDriverIsCudaError35InsufficientDriver) {
  Result<std::unique_ptr<CudaSource>> source = CudaSource::Open();
  if (source.ok()) GTEST_SKIP() << "a CUDA driver and GPU are present here";
  EXPECT_EQ(source.status().code(), StatusCode::kNoGpu);
  const std::string& message = source.status().message();
  // With the static runtime and no libcuda.so.1 the runtime answers
  // cudaErrorInsufficientDriver (35); a driver without a GPU answers
  // cudaErrorNoDevice (100).
  const bool insufficient_driver = message.find("CUDA error 35 cudaErrorInsufficientDriver") != std::string::npos;
  const bool no_device = message.find("CUDA error 100 cudaErrorNoDevice") != std::string::npos;
  EXPECT_TRUE(insufficient_driver || no_device) << message;
  EXPECT_NE(message.find("cudaGetDeviceCount(count)"), std::string::npos) << message;
  EXPECT_NE(message.find("cuda_source.cpp:"), std::string::npos) << message;
}

#else

TEST(CudaSource, NotBuiltWithoutTheToolkit) { GTEST_SKIP() << "vram-probe was built without the CUDA runtime"; }

#endif

}  // namespace
}  // namespace vram::probe

// The real Collectives: NCCL through NcclLibrary (dlopen) plus the CUDA
// runtime for buffers and streams. nccl_collectives.cpp is compiled only
// where CMake finds the CUDA toolkit (VRAM_PROBE_HAVE_CUDA);
// elsewhere nccl_collectives_without_cuda.cpp makes OpenNccl() answer
// kNotSupported.
#pragma once

#include <memory>

#include "measure/collectives.h"
#include "measure/status.h"

namespace vram::probe {

// Loads NCCL ($NCCL_LIBRARY or libnccl.so.2, see nccl_library.h). Touches no
// GPU: without a driver the first CUDA call in Prepare() fails with
// cudaErrorInsufficientDriver (35), a kNoGpu Status.
Result<std::unique_ptr<Collectives>> OpenNccl();

}  // namespace vram::probe

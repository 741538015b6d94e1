// OpenNccl() for builds without the CUDA toolkit: NCCL needs device buffers
// and streams from the CUDA runtime, which this build does not have.
#include "measure/nccl_collectives.h"

namespace vram::probe {

Result<std::unique_ptr<Collectives>> OpenNccl() {
  return Status(StatusCode::kNotSupported,
                "vram-probe was built without the CUDA runtime, which the NCCL measurement needs");
}

}  // namespace vram::probe

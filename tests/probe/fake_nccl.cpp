// A fake libnccl.so for NcclLibrary tests: defines the NCCL entry points
// vram-probe resolves with dlsym against the declarations of
// probe-agent/src/measure/nccl_api.h (nccl.h's signatures), so the compiler
// checks that each one has the type the probe calls it through. It reports
// version 2.21.5 and refuses to build communicators: there is no GPU behind it.
#include <cstddef>

#include "measure/nccl_api.h"

namespace {

// NCCL_VERSION(2, 21, 5) = 2 * 10000 + 21 * 100 + 5 (nccl.h, 2.9 and later).
constexpr int kVersionCode = 22105;

int g_group_depth = 0;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = kVersionCode;
  return ncclSuccess;
}

__attribute__((visibility("default"))) const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclInvalidArgument:
      return "invalid argument (fake NCCL)";
    case ncclInvalidUsage:
      return "invalid usage (fake NCCL has no GPU)";
    default:
      return "unknown result code";
  }
}

__attribute__((visibility("default"))) ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int*) {
  if (comms == nullptr || ndev < 1) return ncclInvalidArgument;
  return ncclInvalidUsage;
}

__attribute__((visibility("default"))) ncclResult_t ncclAllReduce(const void*, void*, std::size_t, ncclDataType_t,
                                                                  ncclRedOp_t, ncclComm_t comm, CUstream_st*) {
  return comm == nullptr ? ncclInvalidArgument : ncclInvalidUsage;
}

__attribute__((visibility("default"))) ncclResult_t ncclGroupStart() {
  ++g_group_depth;
  return ncclSuccess;
}

__attribute__((visibility("default"))) ncclResult_t ncclGroupEnd() {
  if (g_group_depth == 0) return ncclInvalidUsage;
  --g_group_depth;
  return ncclSuccess;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}

}  // extern "C"

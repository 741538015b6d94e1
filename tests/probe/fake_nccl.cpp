// A fake libnccl.so for NcclLibrary tests: exports the NCCL entry points
// vram-probe resolves with dlsym, with the C ABI of nccl.h (ncclResult_t,
// ncclDataType_t and ncclRedOp_t as int; ncclComm_t and cudaStream_t as
// pointers). It reports version 2.21.5 and refuses to build communicators:
// there is no GPU behind it.
#include <cstddef>

namespace {

// ncclResult_t values (nccl.h).
constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 4;
constexpr int kInvalidUsage = 5;

// NCCL_VERSION(2, 21, 5) = 2 * 10000 + 21 * 100 + 5 (nccl.h, 2.9 and later).
constexpr int kVersionCode = 22105;

int g_group_depth = 0;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  if (version == nullptr) return kInvalidArgument;
  *version = kVersionCode;
  return kSuccess;
}

__attribute__((visibility("default"))) const char* ncclGetErrorString(int result) {
  switch (result) {
    case kSuccess:
      return "no error";
    case kInvalidArgument:
      return "invalid argument (fake NCCL)";
    case kInvalidUsage:
      return "invalid usage (fake NCCL has no GPU)";
    default:
      return "unknown result code";
  }
}

__attribute__((visibility("default"))) int ncclCommInitAll(void** comms, int ndev, const int*) {
  if (comms == nullptr || ndev < 1) return kInvalidArgument;
  return kInvalidUsage;
}

__attribute__((visibility("default"))) int ncclAllReduce(const void*, void*, std::size_t, int, int, void* comm, void*) {
  return comm == nullptr ? kInvalidArgument : kInvalidUsage;
}

__attribute__((visibility("default"))) int ncclGroupStart() {
  ++g_group_depth;
  return kSuccess;
}

__attribute__((visibility("default"))) int ncclGroupEnd() {
  if (g_group_depth == 0) return kInvalidUsage;
  --g_group_depth;
  return kSuccess;
}

__attribute__((visibility("default"))) int ncclCommDestroy(void* comm) {
  return comm == nullptr ? kInvalidArgument : kSuccess;
}

}  // extern "C"

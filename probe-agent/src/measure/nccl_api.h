// The NCCL types and entry points vram-probe uses, declared once, with the
// exact C signatures of nccl.h (NCCL 2.28.9 as installed with the CUDA 13
// toolkit here: /usr/local/cuda-13.0/include/nccl.h, from the
// nvidia-nccl-cu13 2.28.9 wheel).
//
// Two users, one set of types (as measure/nvml_api.h for NVML):
// - nccl_library.cpp resolves each entry point with dlsym and calls it
//   through a pointer of type decltype(&ncclXxx);
// - tests/probe/fake_nccl.cpp defines the same functions, so the compiler
//   checks each definition against these declarations.
// nccl.h itself is not included: it needs cuda_runtime.h, and the NCCL
// loader is built (and tested) without the CUDA toolkit.
#pragma once

#include <cstddef>

extern "C" {

// nccl.h: `typedef struct ncclComm* ncclComm_t;` (opaque to callers).
typedef struct ncclComm* ncclComm_t;

// cudaStream_t is `typedef struct CUstream_st* cudaStream_t;` in the CUDA
// runtime's driver_types.h; naming the struct keeps the type identical to the
// one nccl_collectives.cpp gets from cuda_runtime_api.h.
struct CUstream_st;

// nccl.h ncclResult_t (all values of NCCL 2.28).
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

// nccl.h sizes ncclRedOp_t through ncclRedOp_dummy_t so that it stays the
// size of an int enum; ncclMaxRedOp is nccl.h's expression.
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

// nccl.h ncclDataType_t.
typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

// The entry points, as nccl.h declares them.
ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
const char* ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, CUstream_st* stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

}  // extern "C"

static_assert(sizeof(ncclResult_t) == sizeof(int) && sizeof(ncclRedOp_t) == sizeof(int) &&
                  sizeof(ncclDataType_t) == sizeof(int),
              "nccl.h's enums are int-sized");

// NCCL loaded at run time with dlopen, the way nvml_source.cpp loads NVML:
// no nccl.h at build time, the few types and entry points vram-probe calls
// declared here from nccl.h (NCCL 2.28, shipped with CUDA 13 as
// include/nccl.h) and resolved with dlsym. A missing library or symbol is a
// Status naming the library and the NCCL_LIBRARY variable, never a crash.
//
// Needs no CUDA runtime itself, so it is built (and tested) everywhere;
// nccl_collectives.cpp adds the CUDA calls.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "measure/status.h"

namespace vram::probe {

// The soname NCCL 2 installs (libnccl2 packages, the nvidia-nccl-cu* wheels;
// PyTorch's ProcessGroupNCCL links the same name).
inline constexpr const char* kNcclLibrary = "libnccl.so.2";
// Overrides the library path: NCCL_LIBRARY=/opt/nccl/lib/libnccl.so.2.
inline constexpr const char* kNcclLibraryVariable = "NCCL_LIBRARY";

// ncclComm_t is `typedef struct ncclComm* ncclComm_t;` in nccl.h: an opaque
// pointer that only NCCL dereferences.
struct NcclCommHandle;
using NcclComm = NcclCommHandle*;

// ncclResult_t, ncclDataType_t and ncclRedOp_t are C enums in nccl.h whose
// values fit an int (ncclRedOp_t is sized by ncclRedOp_dummy_t so that it
// stays int-sized), so the C ABI passes and returns them as int.
// cudaStream_t is `struct CUstream_st*`: passed as void* here so that this
// header needs no CUDA header.
inline constexpr int kNcclFloat32 = 7;  // ncclFloat32 = 7 (ncclDataType_t, nccl.h)
inline constexpr int kNcclSum = 0;      // ncclSum = 0 (ncclRedOp_t, nccl.h)

// Members carry the NCCL symbol names, so that the expression in an error
// message names the NCCL call (as NvmlSource::Api does).
struct NcclApi {
  int (*ncclGetVersion)(int* version) = nullptr;
  int (*ncclCommInitAll)(NcclComm* comms, int ndev, const int* devlist) = nullptr;
  int (*ncclAllReduce)(const void* sendbuff, void* recvbuff, std::size_t count, int datatype, int op, NcclComm comm,
                       void* stream) = nullptr;
  int (*ncclGroupStart)() = nullptr;
  int (*ncclGroupEnd)() = nullptr;
  int (*ncclCommDestroy)(NcclComm comm) = nullptr;
  const char* (*ncclGetErrorString)(int result) = nullptr;
};

class NcclLibrary {
 public:
  // Loads $NCCL_LIBRARY when it is set and not empty, else libnccl.so.2 from
  // the loader's search path.
  static Result<std::unique_ptr<NcclLibrary>> Open();
  // Loads `path` and resolves every NcclApi entry point.
  static Result<std::unique_ptr<NcclLibrary>> Open(const std::string& path);

  ~NcclLibrary();
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;

  const NcclApi& api() const { return api_; }
  const std::string& path() const { return path_; }

  // "2.28.9" from ncclGetVersion.
  Result<std::string> Version() const;

  // ncclGetErrorString's text for `rc`.
  const char* ErrorString(int rc) const;

 private:
  NcclLibrary(void* handle, std::string path, NcclApi api);

  void* handle_ = nullptr;
  std::string path_;
  NcclApi api_;
};

// "2.28.9" from NCCL_VERSION_CODE 22809. nccl.h encodes
// NCCL_VERSION(X,Y,Z) as X*1000 + Y*100 + Z up to 2.8 and as
// X*10000 + Y*100 + Z from 2.9 on; a code of 10000 or more is the new form.
std::string NcclVersionString(int code);

}  // namespace vram::probe

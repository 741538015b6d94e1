// NCCL loaded at run time with dlopen, the way nvml_source.cpp loads NVML:
// no nccl.h at build time, the few types and entry points vram-probe calls
// declared in measure/nccl_api.h from nccl.h (NCCL 2.28, shipped with CUDA 13
// as include/nccl.h) and resolved with dlsym. A missing library or symbol is a
// Status naming the library and the NCCL_LIBRARY variable, never a crash.
//
// Needs no CUDA runtime itself, so it is built (and tested) everywhere;
// nccl_collectives.cpp adds the CUDA calls.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "measure/nccl_api.h"
#include "measure/status.h"

namespace vram::probe {

// The soname NCCL 2 installs (libnccl2 packages, the nvidia-nccl-cu* wheels;
// PyTorch's ProcessGroupNCCL links the same name).
inline constexpr const char* kNcclLibrary = "libnccl.so.2";
// Overrides the library path: NCCL_LIBRARY=/opt/nccl/lib/libnccl.so.2.
inline constexpr const char* kNcclLibraryVariable = "NCCL_LIBRARY";

// The communicator handle of nccl.h (measure/nccl_api.h).
using NcclComm = ncclComm_t;

// Members carry the NCCL symbol names, so that the expression in an error
// message names the NCCL call (as NvmlSource::Api does). Each has the type of
// nccl.h's declaration (measure/nccl_api.h), the type the fake library in
// tests/probe/fake_nccl.cpp is compiled against too.
struct NcclApi {
  decltype(&::ncclGetVersion) ncclGetVersion = nullptr;
  decltype(&::ncclCommInitAll) ncclCommInitAll = nullptr;
  decltype(&::ncclAllReduce) ncclAllReduce = nullptr;
  decltype(&::ncclGroupStart) ncclGroupStart = nullptr;
  decltype(&::ncclGroupEnd) ncclGroupEnd = nullptr;
  decltype(&::ncclCommDestroy) ncclCommDestroy = nullptr;
  decltype(&::ncclGetErrorString) ncclGetErrorString = nullptr;
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

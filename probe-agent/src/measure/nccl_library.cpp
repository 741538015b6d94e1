#include "measure/nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "measure/error_handling.h"

namespace vram::probe {
namespace {

template <typename Fn>
Fn Symbol(void* library, const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(library, symbol));
}

}  // namespace

std::string NcclVersionString(int code) {
  constexpr int kNewEncoding = 10000;  // 2.9.0 = 20900; the old form ends at 2.8.x = 28xx
  const int major_unit = code >= kNewEncoding ? 10000 : 1000;
  return std::to_string(code / major_unit) + "." + std::to_string((code % major_unit) / 100) + "." +
         std::to_string(code % 100);
}

Result<std::unique_ptr<NcclLibrary>> NcclLibrary::Open() {
  const char* configured = std::getenv(kNcclLibraryVariable);
  return Open(configured != nullptr && *configured != '\0' ? std::string(configured) : std::string(kNcclLibrary));
}

Result<std::unique_ptr<NcclLibrary>> NcclLibrary::Open(const std::string& path) {
  dlerror();
  // RTLD_NODELETE: NCCL starts proxy threads and its statically linked CUDA
  // runtime registers exit handlers, so the code must stay mapped until the
  // process exits even after the handle is closed.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status(StatusCode::kNotSupported,
                  "NCCL not found: " + path +
                      " could not be loaded (dlopen: " + (why != nullptr ? why : "unknown error") +
                      "); install NCCL 2 or set " + kNcclLibraryVariable + " to the path of libnccl.so.2");
  }
  NcclApi api;
  api.ncclGetVersion = Symbol<decltype(api.ncclGetVersion)>(handle, "ncclGetVersion");
  api.ncclCommInitAll = Symbol<decltype(api.ncclCommInitAll)>(handle, "ncclCommInitAll");
  api.ncclAllReduce = Symbol<decltype(api.ncclAllReduce)>(handle, "ncclAllReduce");
  api.ncclGroupStart = Symbol<decltype(api.ncclGroupStart)>(handle, "ncclGroupStart");
  api.ncclGroupEnd = Symbol<decltype(api.ncclGroupEnd)>(handle, "ncclGroupEnd");
  api.ncclCommDestroy = Symbol<decltype(api.ncclCommDestroy)>(handle, "ncclCommDestroy");
  api.ncclGetErrorString = Symbol<decltype(api.ncclGetErrorString)>(handle, "ncclGetErrorString");

  const char* missing = nullptr;
  if (api.ncclGetVersion == nullptr)
    missing = "ncclGetVersion";
  else if (api.ncclCommInitAll == nullptr)
    missing = "ncclCommInitAll";
  else if (api.ncclAllReduce == nullptr)
    missing = "ncclAllReduce";
  else if (api.ncclGroupStart == nullptr)
    missing = "ncclGroupStart";
  else if (api.ncclGroupEnd == nullptr)
    missing = "ncclGroupEnd";
  else if (api.ncclCommDestroy == nullptr)
    missing = "ncclCommDestroy";
  else if (api.ncclGetErrorString == nullptr)
    missing = "ncclGetErrorString";
  if (missing != nullptr) {
    dlclose(handle);
    return Status(StatusCode::kNotSupported, path + " has no " + missing + ": it is not an NCCL 2 library (set " +
                                                 kNcclLibraryVariable + " to libnccl.so.2)");
  }
  return std::unique_ptr<NcclLibrary>(new NcclLibrary(handle, path, api));
}

NcclLibrary::NcclLibrary(void* handle, std::string path, NcclApi api)
    : handle_(handle), path_(std::move(path)), api_(api) {}

NcclLibrary::~NcclLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

const char* NcclLibrary::ErrorString(int rc) const {
  return api_.ncclGetErrorString != nullptr ? api_.ncclGetErrorString(static_cast<ncclResult_t>(rc)) : "";
}

Result<std::string> NcclLibrary::Version() const {
  auto error_string = [this](int rc) { return ErrorString(rc); };
  int code = 0;
  VRAM_NCCL_RETURN_IF_ERROR(error_string, api_.ncclGetVersion(&code));
  return NcclVersionString(code);
}

}  // namespace vram::probe

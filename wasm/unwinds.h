// _unwinds, in every module: how many failures have unwound in this instance.
// Core is built without C++ exceptions here (core/include/vram/status.h): a
// failure longjmps to the API's recover() and leaves what the failed work had
// allocated, so the facade (vram.js renew) replaces an instance whose count
// is not zero.
#pragma once

#include "vram/status.h"

namespace vram::wasm {

// Embind has no 64-bit integers without BigInt; the count is far below 2^53.
inline double unwinds() { return static_cast<double>(vram::unwind_count()); }

}  // namespace vram::wasm

// One libFuzzer harness for every text entry point of the core (vram/api.h):
// tests/fuzz/CMakeLists.txt builds it once per target with VRAM_FUZZ_ENTRY
// (the function) and VRAM_FUZZ_HEADER (where it is declared). The input is the
// text the CLI reads from a file and the page hands to the WASM module.
//
// Beyond "no crash, no sanitizer report", the answer is checked (fuzz_check.h):
// an answer that is not one JSON object, an error without code/message/path, or
// a negative or non-integral byte count aborts, so libFuzzer keeps the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include VRAM_FUZZ_HEADER

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  vram::fuzz::check_answer(VRAM_FUZZ_ENTRY(text));
  return 0;
}

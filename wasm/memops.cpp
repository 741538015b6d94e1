// memcpy, memmove and memset as WebAssembly's bulk-memory instructions
// (memory.copy, memory.fill), linked into every module ahead of Emscripten's
// libc (wasm/CMakeLists.txt vram_wasm_memops).
//
// Emscripten 3.1.6's own copies are loops: at -Oz (vram_core, vram_io) it
// links libc-optz, whose memcpy and memmove copy one byte per iteration
// (system/lib/libc/emscripten_memcpy.c and emscripten_memmove.c,
// EMSCRIPTEN_OPTIMIZE_FOR_OZ); at -O2 (vram_plan) musl's memmove, which
// copies backwards 4 bytes (a wasm32 size_t) at a time. The allocator
// replay's sorted block sets shift their entries with memmove
// (core/src/memory/block_set.h), so copying was 47 % of vram_plan's estimate
// and 19 % of vram_core's (node --cpu-prof of a --profiling-funcs link,
// 2026-11-29; README "Speed and size"). The engine runs memory.copy as one
// native copy (V8: a call into its C++ memmove).
//
// The instructions are WebAssembly's bulk memory operations proposal,
// standard since WebAssembly 2.0 and supported by Chrome 75, Firefox 79 and
// Safari 15 (webassembly.org/features), older than the page's own floor
// ('wasm-unsafe-eval': Chrome 97, Firefox 102, Safari 16; site/vite.config.js).
//
// Compiled with -mbulk-memory and without link-time optimisation, so that
// each builtin below is lowered to its instruction here, never back into a
// call of the function it defines.
#include <cstddef>

extern "C" {

void* memcpy(void* __restrict dest, const void* __restrict src, std::size_t n) {
  __builtin_memcpy(dest, src, n);
  return dest;
}

// memory.copy copies as if through a temporary buffer: overlapping ranges
// are handled (WebAssembly 2.0 core specification, 4.4.7 memory.copy).
void* memmove(void* dest, const void* src, std::size_t n) {
  __builtin_memmove(dest, src, n);
  return dest;
}

void* memset(void* dest, int c, std::size_t n) {
  __builtin_memset(dest, c, n);
  return dest;
}

}  // extern "C"

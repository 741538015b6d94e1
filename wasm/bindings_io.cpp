// Embind bindings of the import/export module (vram_io.wasm): reading
// framework files into a request and writing a request as a framework file.
// Loaded by the facade (vram.js) on the first import or export only, so the
// module every visit loads (bindings.cpp) carries none of this code. The same
// rules as bindings.cpp: JSON text in and out, no exception crosses.
#include <emscripten/bind.h>

#include "unwinds.h"
#include "vram/import.h"

EMSCRIPTEN_BINDINGS(vram_io) {
  emscripten::function("_importFiles", &vram::import_json);
  emscripten::function("_exportConfig", &vram::export_json);
  emscripten::function("_unwinds", &vram::wasm::unwinds);
}

// Embind bindings of the planner module (vram_plan.wasm): the layout planner
// (_plan) and "what would make it fit" (_suggest). Loaded by the planner's and
// the suggestions' Web Workers (site/src/lib/planner.js) on the first search,
// and by the facade (vram.js loadPlanner) where there are no workers, so the
// module every visit loads (bindings.cpp) carries none of the search code. The
// same rules as bindings.cpp: JSON text in and out, no exception crosses.
//
// _estimate, _modelInfo, _fields and _frameworkDefaults are here too: this is
// the full module, which carries every family, the safetensors reader,
// DeepSpeed configs, the inference estimate and the framework tables (every
// framework's defaults, the release table, the version rules). The module
// every visit loads carries the common families' training estimate under hf
// at its newest release only (core/lite/reach.cpp) and answers the rest with
// errc::kNotInModule; the facade then asks this one (vram.js).
//
// _version is here too: the facade reads the input limit
// (limits.max_input_bytes) from it before it copies a request into the
// module, and a worker that runs only this module has no core module to ask.
#include <emscripten/bind.h>

#include "unwinds.h"
#include "vram/api.h"

EMSCRIPTEN_BINDINGS(vram_plan) {
  emscripten::function("_plan", &vram::plan_json);
  emscripten::function("_estimate", &vram::estimate_json);
  emscripten::function("_modelInfo", &vram::model_info_json);
  emscripten::function("_fields", &vram::fields_json);
  emscripten::function("_frameworkDefaults", &vram::framework_defaults_json);
  emscripten::function("_suggest", &vram::suggest_json);
  emscripten::function("_time", &vram::time_json);
  emscripten::function("_version", &vram::version_json);
  emscripten::function("_unwinds", &vram::wasm::unwinds);
}

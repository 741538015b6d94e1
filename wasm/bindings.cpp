// Embind bindings: JSON text in, JSON text out (STYLE.md "The C++ <-> JS
// boundary"). Free functions and no class handles, so JS never has to
// call delete(). The underscore names mark them private: callers import the
// facade (vram.js), which parses the text and throws EstimatorError.
//
// core's api functions never throw (api.h): they catch every internal failure
// and return {"error": {"code", "message", "path"}}, so no C++ exception, which
// would reach JS as a bare number, crosses this boundary.
#include <emscripten/bind.h>

#include "vram/api.h"
#include "vram/import.h"

EMSCRIPTEN_BINDINGS(vram) {
  emscripten::function("_estimate", &vram::estimate_json);
  emscripten::function("_modelInfo", &vram::model_info_json);
  emscripten::function("_plan", &vram::plan_json);
  emscripten::function("_suggest", &vram::suggest_json);
  emscripten::function("_version", &vram::version_json);
  emscripten::function("_fields", &vram::fields_json);
  emscripten::function("_layoutOptions", &vram::layout_options_json);
  emscripten::function("_frameworkDefaults", &vram::framework_defaults_json);
  emscripten::function("_importFiles", &vram::import_json);
  emscripten::function("_exportConfig", &vram::export_json);
}

// Embind bindings: JSON text in, JSON text out (STYLE.md "The C++ <-> JS
// boundary"). Free functions and no class handles, so JS never has to
// call delete(). The underscore names mark them private: callers import the
// facade (vram.js), which parses the text and throws EstimatorError.
//
// core's api functions never throw (api.h): every failure stops at their
// recover() and comes back as {"error": {"code", "message", "path"}}, so
// nothing, neither a C++ exception (which would reach JS as a bare number) nor
// a longjmp, crosses this boundary. The modules' core is built without
// exceptions (status.h): a failure longjmps to the API's recover() and leaves
// what the failed work had allocated; _unwinds() counts them (unwinds.h),
// and the facade (vram.js) replaces an instance that has unwound.
//
// This is the module every visit loads (vram_core.wasm). Importing and
// exporting framework files (_importFiles, _exportConfig) live in a second
// module, bindings_io.cpp, that the page loads only when a user imports or
// exports: with link-time optimisation each module holds only the core code
// its bindings reach, and import/export (the file kinds, YAML-shaped exports,
// std::regex and the locale code it pulls in) was 71 KiB of this module's
// 325 KiB gzip (wasm/CMakeLists.txt has the measurements). The layout planner
// and the suggestions (_plan, _suggest) live in a third, bindings_plan.cpp,
// loaded by the planner's and the suggestions' Web Workers on their first
// search: this module went from 295.4 to 269.0 KiB (gzip -9 of the .wasm,
// -Oz + LTO, 2026-11-28; wasm/CMakeLists.txt). And this module is linked with
// core/lite/reach.cpp ahead of the core library (core/src/reach.h): it
// estimates training for the common Llama-shaped families under hf at its
// newest release only and answers every other request (another framework, a
// release, versions.*; _frameworkDefaults likewise) with errc::kNotInModule,
// which the facade sends to vram_plan.wasm (bindings_plan.cpp), the full module.
#include <emscripten/bind.h>

#include "unwinds.h"
#include "vram/api.h"

EMSCRIPTEN_BINDINGS(vram) {
  emscripten::function("_estimate", &vram::estimate_json);
  emscripten::function("_modelInfo", &vram::model_info_json);
  emscripten::function("_version", &vram::version_json);
  emscripten::function("_layoutOptions", &vram::layout_options_json);
  emscripten::function("_frameworkDefaults", &vram::framework_defaults_json);
  emscripten::function("_unwinds", &vram::wasm::unwinds);
}

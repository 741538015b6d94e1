// pybind11 bindings: JSON text in, JSON text out, the same entry points the
// CLI's --json and the WASM module call (core/include/vram/api.h), so Python,
// CLI and page give the same bytes for the same request. The functions are
// private (`vram_planner._core`); the package (vram_planner/__init__.py)
// encodes dicts, decodes results and raises EstimatorError.
//
// core's api functions never throw (api.h): every failure comes back as
// {"error": {"code", "message", "path"}}, so no C++ exception crosses into
// Python. The GIL is released while the core runs (a planner sweep takes tens
// of milliseconds), so Python threads may estimate in parallel.
#include <pybind11/pybind11.h>

#include <string>

#include "vram/api.h"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "VRAM Planner core: JSON text in, JSON text out (core/include/vram/api.h)";
  const auto release = py::call_guard<py::gil_scoped_release>();
  m.def("estimate_json", &vram::estimate_json, py::arg("request_text"), release,
        "Request JSON text -> result JSON text (what `vram-probe estimate --request FILE --json` prints).");
  m.def("model_info_json", &vram::model_info_json, py::arg("model_text"), release,
        "{\"config\": {...}} or {\"custom\": {...}} -> model summary JSON text (`vram-probe params --json`).");
  m.def("plan_json", &vram::plan_json, py::arg("request_text"), release,
        "Training request with parallel.gpus and gpu -> ranked layouts JSON text (`vram-probe plan --json`).");
  m.def("version_json", &vram::version_with_releases_json, release,
        "Schema, version, model types, GPUs, framework releases (`vram-probe version`).");
  m.def("fields_json", &vram::fields_json, release, "Every request field (`vram-probe fields --json`).");
  m.def("layout_options_json", &vram::layout_options_json, py::arg("parallel_text"), release,
        "A request's `parallel` object -> what data parallel comes to and which options the layout takes.");
  m.def("framework_defaults_json", &vram::framework_defaults_json, py::arg("query_text"), release,
        "{\"framework\", \"method\"} -> that framework's defaults (`vram-probe frameworks --json`).");
  m.attr("SCHEMA") = vram::kSchema;
}

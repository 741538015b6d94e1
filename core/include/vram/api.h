// JSON text in, JSON text out: the one vocabulary shared by the CLI's --json,
// the WASM module and the page (DESIGN.md §2). These functions never throw;
// failures come back as {"error": {"code", "message", "path"}}.
#pragma once

#include <string>

#include "vram/json_reader.h"

namespace vram {

// The result schema version, the `schema` field of every result.
inline constexpr const char* kSchema = "vram-planner/1";

// Request JSON (docs/schema.md) -> result JSON, pretty-printed with 2 spaces.
std::string estimate_json(const std::string& request_text);

// {"config": {...}} or {"custom": {...}} (the request's `model` object, or a
// whole request) -> model summary JSON: params_total, breakdown, facts.
std::string model_info_json(const std::string& model_text);

// Training request with parallel.gpus (the budget), gpu and an optional
// `plan` object {framework, top, allow_checkpointing, allow_offload} ->
// {"schema", "version", "plan": {candidates: [...], ...}} (vram/plan.h).
std::string plan_json(const std::string& request_text);

// What would make a training job fit its card (issue 18): {"schema",
// "version", "goal": "fit" | "headroom" | "none", "base": {peak_bytes,
// status, gpu, capacity_bytes}, "suggestions": [{key, title, patch (request
// fields to merge, JSON merge patch), peak_bytes, utilization, fits,
// headroom_ok, status, words, gpu, cost: {kind, step_time_factor, text,
// source}}], "notes"}; best (cheapest) first. `vram-probe estimate
// --suggest` adds `suggestions` to the estimate's result.
std::string suggest_json(const std::string& request_text);

// The time model alone (issue 31): {"schema", "version", "time": the
// estimate's `time` object} for the same request, without the memory
// estimate's searches (largest micro-batch, fewest GPUs). The page's time
// lane asks it; `estimate` carries the same object.
std::string time_json(const std::string& request_text);

// {"schema", "version", "supported_model_types", "gpus"}.
std::string version_json();

// version_json() plus "framework_releases": every framework's releases,
// oldest first, each with its date, libraries and source
// (vram/releases.h). What `vram-probe version` and Python's version() give;
// the WASM modules bind version_json only (the release table is not in the
// module every visit loads; the fields table lists each release's version
// and date).
std::string version_with_releases_json();

// Every request field as the core declares it (vram/fields.h): {"schema",
// "version", "fields": [{path, type, default, values, aliases, min, max,
// label, cli, cli_unit, url, doc}]}. The page's defaults and URL keys and the
// CLI's flags come from this table.
std::string fields_json();

// {"gpus", "tp", "pp", "cp", "zero", "fsdp"} (a request's `parallel` object)
// -> {"dp", "offload_optimizer", "offload_params", "distributed_optimizer"}:
// what data parallel comes to and which options the layout can take, by the
// rules the request parser applies (request.h).
std::string layout_options_json(const std::string& parallel_text);

// {"framework", "method"} (train.framework and train.method values, aliases
// accepted; method defaults to the core's) -> {"framework", "label",
// "method", "defaults": [{path, value, source}], "not_modelled"}: the
// defaults that framework's recipe for that method sets (vram/frameworks.h),
// the ones the estimate applies where a request leaves the field out.
std::string framework_defaults_json(const std::string& query_text);

// Same as the text functions, for native callers that hold parsed JSON.
json estimate(const json& request);
json model_info(const json& model);
json plan(const json& request);
json suggest(const json& request);
json time(const json& request);

// {"error": {...}} object for an Error.
json error_json(const Error& e);

}  // namespace vram

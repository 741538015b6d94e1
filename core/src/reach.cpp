// Every build but the first-visit WASM module: each seam call is the real
// code (reach.h; core/lite/reach.cpp is the other side).
#include "reach.h"

#include "families/family_list.h"
#include "families/registry_entries.h"
#include "gguf/model.h"
#include "import/import_context.h"
#include "infer/estimate_infer.h"
#include "infer/llama_cpp.h"
#include "infer/llama_cpp_options.h"
#include "json_text.h"
#include "speed/options.h"
#include "speed/time_json.h"
#include "vram/checkpoint.h"
#include "vram/gguf.h"

namespace vram::reach {

detail::Adapter find_adapter(const std::string& model_type, const std::string& /*path*/) {
#define VRAM_ADAPTER_IF(name) \
  if (model_type == #name) return detail::build_##name;
  VRAM_COMMON_FAMILIES(VRAM_ADAPTER_IF)
  VRAM_OTHER_FAMILIES(VRAM_ADAPTER_IF)
#undef VRAM_ADAPTER_IF
  return nullptr;
}

Result<ModelSpec> model_from_safetensors(const json& inventory, const json* config, const std::string& path) {
  return vram::model_from_safetensors(inventory, config, path);
}

json deepspeed_request_fields(const json& ds, std::vector<std::string>& notes) {
  return import::deepspeed_request_fields(ds, notes);
}

Result<ModelSpec> model_from_gguf(const json& model, const std::string& path) {
  return gguf::model_from_sources(model, path);
}

Result<ModelSpec> model_from_size(const json& size, const std::string& path) {
  return vram::model_from_size(size, path);
}

Result<Estimate> estimate_infer(const Request& req, infer::LoadMemo* memo) {
  if (infer::llama_cpp::is_engine(req.infer.engine)) return infer::llama_cpp::estimate(req);
  return infer::estimate_infer(req, memo);
}

void parse_infer(const JsonReader& request, Request& req) {
  if (auto i = request.object_opt("infer")) infer::parse_options(*i, req);
}

bool infers(const Request& req) { return req.task == Task::kInfer; }

Result<memory::AllocatorConfig> alloc_conf(std::string_view text, const std::string& /*path*/) {
  return memory::parse_alloc_conf(text);
}

bool skips_repeated_steps() { return true; }

void infer_fit(const Request& req, int64_t capacity, Estimate& e) {
  if (infer::llama_cpp::is_engine(req.infer.engine)) infer::llama_cpp::fit(req, capacity, e);
}

json infer_devices_json(const Estimate& e) { return e.devices.empty() ? json() : infer::llama_cpp::devices_json(e); }

json framework_defaults(const json& request, FrameworkJob& job, std::vector<FrameworkDefault>& applied) {
  job = framework_job(request);
  return with_framework_defaults(request, job, applied);
}

int64_t fsdp1_construct(memory::Timeline& tl, const memory::Fsdp1Units& u, const ModelSpec& m,
                        const memory::TrainablePlan& plan, int64_t budget) {
  if (!u.on) return 0;
  return memory::fsdp1_construct(tl, u, memory::fsdp1_tensors(m, plan, u.built), budget);
}

void fsdp1_adapter_pieces(memory::StatePieces& p, memory::RankState& rs, const Request& req,
                          const memory::TrainablePlan& plan, const memory::Dtypes& dt, const OptimizerInfo& opt,
                          const memory::Sharding& sh, const memory::Fsdp1Units& u) {
  memory::fsdp1_mixed_unit_grads(rs, req, plan, sh, u);
  memory::fsdp1_adapter_pieces(p, req, plan, dt, opt, rs.sz, u);
}

void read_time_fields(const JsonReader& request, Request& req) { speed::read_time_fields(request, req); }

json time_json(const json& request, const Request& req, const Estimate& e) {
  json t = speed::time_json(req, e);
  // On by default: the result says so (no silent default).
  const bool asked = request.is_object() && request.contains("time") && request["time"].is_object() &&
                     request["time"].contains("enabled");
  if (!asked) {
    json& notes = t["assumptions"];
    if (!notes.is_array()) notes = json::array();
    notes.insert(notes.begin(), "time.enabled true (the default): the time model's answer; false leaves it out");
  }
  return t;
}

std::string answer_text(const json& v) { return pretty_text(v); }

}  // namespace vram::reach

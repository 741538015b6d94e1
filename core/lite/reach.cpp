// The first-visit WASM module's side of the seam (core/src/reach.h): it
// carries the common Llama-shaped families and the training estimate of hf
// (the default framework) at its newest release, and answers everything else
// with errc::kNotInModule, naming the field that needs the full module, so
// that the page asks vram_plan.wasm, which carries everything (wasm/vram.js).
// Linked ahead of the vram_core library into vram_core.wasm
// (wasm/CMakeLists.txt) and into the native vram_lite_tests
// (tests/CMakeLists.txt); never into the CLI.
#include "reach.h"

#include "families/family_list.h"
#include "families/registry_entries.h"
#include "release_table.h"
#include "vram/fields.h"

namespace vram::reach {

namespace {

// The answer for what this module leaves out: the full module's answer is
// the request's answer.
[[noreturn]] void elsewhere(const std::string& path, const std::string& what) {
  std::string common;
#define VRAM_NAME(name) common += std::string(common.empty() ? "" : ", ") + #name;
  VRAM_COMMON_FAMILIES(VRAM_NAME)
#undef VRAM_NAME
  fail_to_api(Error{errc::kNotInModule,
                    what + " is estimated by the full module (vram_plan.wasm), which the page loads on first use; " +
                        "this module (vram_core.wasm) carries the training estimate of " + common + " configs",
                    path});
}

}  // namespace

detail::Adapter find_adapter(const std::string& model_type, const std::string& path) {
#define VRAM_ADAPTER_IF(name) \
  if (model_type == #name) return detail::build_##name;
  VRAM_COMMON_FAMILIES(VRAM_ADAPTER_IF)
#undef VRAM_ADAPTER_IF
#define VRAM_ELSEWHERE_IF(name) \
  if (model_type == #name) elsewhere(path, "model_type \"" #name "\"");
  VRAM_OTHER_FAMILIES(VRAM_ELSEWHERE_IF)
#undef VRAM_ELSEWHERE_IF
  return nullptr;
}

Result<ModelSpec> model_from_safetensors(const json& /*inventory*/, const json* /*config*/, const std::string& path) {
  elsewhere(path, "a model from its safetensors tensor list");
}

json deepspeed_request_fields(const json& /*ds*/, std::vector<std::string>& /*notes*/) {
  elsewhere("deepspeed", "a request with a DeepSpeed config");
}

Result<ModelSpec> model_from_gguf(const json& /*model*/, const std::string& path) {
  elsewhere(path + ".gguf", "a model from a GGUF file");
}

Result<ModelSpec> model_from_size(const json& /*size*/, const std::string& path) {
  elsewhere(path, "a model sized from a parameter count");
}

Result<Estimate> estimate_infer(const Request& /*req*/, infer::LoadMemo* /*memo*/) {
  elsewhere("task", "an inference request");
}

// Inference (task infer, or an infer object in a training request): the
// full module reads and estimates it, so no request this module holds infers.
void parse_infer(const JsonReader& request, Request& req) {
  if (req.task == Task::kInfer) elsewhere("task", "an inference request");
  elsewhere(request.child_path("infer"), "a request with an infer object");
}

bool infers(const Request& /*req*/) { return false; }

Result<memory::AllocatorConfig> alloc_conf(std::string_view /*text*/, const std::string& path) {
  elsewhere(path, "a request with PYTORCH_CUDA_ALLOC_CONF text");
}

bool skips_repeated_steps() { return false; }

void infer_fit(const Request& /*req*/, int64_t /*capacity*/, Estimate& /*e*/) {}

json infer_devices_json(const Estimate& /*e*/) { return nullptr; }

// hf at its newest release (release_table.h kHfNewest): no framework default
// (the request fields' own defaults are hf's) and no version rule applies, so
// the request is its own filled copy. A framework's recipe, a release or a
// library version needs the tables, which only the full module carries.
json framework_defaults(const json& request, FrameworkJob& job, std::vector<FrameworkDefault>& /*applied*/) {
  const bool has_train = request.is_object() && request.contains("train") && request["train"].is_object();
  if (has_train && request["train"].contains("framework")) {
    const json& text = request["train"]["framework"];
    const auto name = text.is_string() ? field("train.framework").canonical(text.get<std::string>()) : std::nullopt;
    if (name != defaults::kFramework) elsewhere("train.framework", "a request with train.framework " + text.dump());
  }
  if (request.is_object() && request.contains("versions")) {
    const json& v = request["versions"];
    elsewhere(v.is_object() && !v.empty() ? "versions." + v.begin().key() : "versions",
              "a request with library versions (versions)");
  }
  static const Framework kHf{defaults::kFramework, releases::kHfLabel, {}, {}};
  job = releases::newest_job(kHf, releases::to_release(releases::kHfNewest));
  json filled = request;
  if (has_train) filled["train"]["framework"] = kHf.name;
  return filled;
}

// Every training estimate calls it; only an FSDP1 layout has units, and
// those (their construction replay, and the release rules such as
// sync_module_states that shape it) the full module answers.
int64_t fsdp1_construct(memory::Timeline& /*tl*/, const memory::Fsdp1Units& u, const ModelSpec& /*m*/,
                        const memory::TrainablePlan& /*plan*/, int64_t /*budget*/) {
  if (u.on) elsewhere("parallel.fsdp", "an FSDP1 layout (FlatParameter units)");
  return 0;
}

// FSDP1 layouts never get past fsdp1_construct here.
void fsdp1_adapter_pieces(memory::StatePieces& /*p*/, memory::RankState& /*rs*/, const Request& /*req*/,
                          const memory::TrainablePlan& /*plan*/, const memory::Dtypes& /*dt*/,
                          const OptimizerInfo& /*opt*/, const memory::Sharding& /*sh*/,
                          const memory::Fsdp1Units& /*u*/) {}

void read_time_fields(const JsonReader& /*request*/, Request& /*req*/) {
  elsewhere("time", "a request with the time model (time.enabled false leaves it out)");
}

// Unreachable: read_time_fields refused every request with the time.
json time_json(const json& /*request*/, const Request& /*req*/, const Estimate& /*e*/) { return nullptr; }

std::string answer_text(const json& v) { return v.dump(2); }

}  // namespace vram::reach

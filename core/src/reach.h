// What a build of core can answer: the seam between the first-visit WASM
// module and every other build (issue 18, size).
//
// These calls reach the code a first visit does not need: the family
// builders beyond the common Llama-shaped ones, the safetensors and GGUF
// readers, the DeepSpeed config reader, quick sizing, inference (the
// request's infer object, the estimate, llama.cpp's too, and its fit), the
// PYTORCH_CUDA_ALLOC_CONF parser and the framework tables (every framework's
// defaults, the release table and the version rules), of which a first visit
// needs only hf at its newest release, and the time model. Core calls them
// only through these functions.
// core/src/reach.cpp (in the vram_core library) forwards
// each to the real code; core/lite/reach.cpp, linked into vram_core.wasm
// ahead of the library, defines the same symbols, so the linker never
// extracts the library's reach.o (an archive member is extracted only for a
// symbol still undefined) and link-time optimisation drops what only it
// reached. The lite versions answer errc::kNotInModule through fail_to_api()
// (status.h), which no recover() inside core stops, so the request's answer
// is either the full build's answer or "ask the full module"; the facade
// (wasm/vram.js) then asks vram_plan.wasm, which carries everything.
// Both files define exactly these symbols: one missing from the lite file
// would extract reach.o and fail the link with duplicate definitions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "memory/caching_allocator.h"
#include "memory/parallel_buffers.h"
#include "vram/families.h"
#include "vram/json_reader.h"
#include "vram/model.h"
#include "vram/releases.h"
#include "vram/request.h"
#include "vram/result.h"
#include "vram/status.h"

namespace vram::infer {
struct LoadMemo;
}  // namespace vram::infer

namespace vram::reach {

// The builder of model_type `model_type`, or nullptr when no adapter has
// that name (model_from_config then applies allow_generic). `path` is the
// model_type field's path, for the lite build's answer.
detail::Adapter find_adapter(const std::string& model_type, const std::string& path);

// model_from_safetensors (vram/checkpoint.h).
Result<ModelSpec> model_from_safetensors(const json& inventory, const json* config, const std::string& path);

// import::deepspeed_request_fields (import/import_context.h): the request
// fields a ds_config.json object sets.
json deepspeed_request_fields(const json& ds, std::vector<std::string>& notes);

// A request's `model` object with `gguf` (vram/gguf.h model_from_gguf) and
// `mmproj` (a projector file the spec carries); `path` is the object's path.
Result<ModelSpec> model_from_gguf(const json& model, const std::string& path);

// model_from_size (vram/families.h): quick sizing from a parameter count.
Result<ModelSpec> model_from_size(const json& size, const std::string& path);

// infer::estimate_infer (infer/estimate_infer.h), or the llama.cpp engines'
// estimate (infer/llama_cpp.h) for infer.engine llama_cpp, ollama, lmstudio.
// `memo`: what a sweep of estimates (the GPU table's cards, a search's
// probes) has replayed already (infer/replay.h LoadMemo).
Result<Estimate> estimate_infer(const Request& req, infer::LoadMemo* memo = nullptr);

// The inference half of `request` (the reader of the whole request), for
// task infer or a request with an `infer` object: the object's fields
// (infer/estimate_infer.h parse_options, llama.cpp's included) into
// req.infer. The lite build reads none of it: such a request is
// not_in_module there (at `task`, or at `infer` for a training request that
// carries one), so that build never holds an inference request (infers).
void parse_infer(const JsonReader& request, Request& req);

// Whether `req` is an inference request (task infer). Always false in the
// lite build, whose parse_infer leaves every inference request to the full
// module: the inference branches of the fit, the layout checks and the
// result writer are then left out of it at link time.
bool infers(const Request& req);

// The llama.cpp engines' answers on a card of `capacity` bytes (largest
// -ngl, longest context), added to `e`'s facts; nothing for other engines.
void infer_fit(const Request& req, int64_t capacity, Estimate& e);

// memory::parse_alloc_conf (memory/caching_allocator.h): the caching
// allocator's settings from PYTORCH_CUDA_ALLOC_CONF text (allocator.conf, at
// `path`). The lite build reads none: a request with allocator.conf is
// not_in_module there (expandable_segments and max_split_size_mb, the
// fields of their own, it answers).
Result<memory::AllocatorConfig> alloc_conf(std::string_view text, const std::string& path);

// Whether a replay may skip the second run of a step that provably repeats
// the first (memory/allocator_replay.cpp second_run_repeats). The lite build
// answers false: its replays run both steps, with the same answers, and the
// proof's code stays out of the first-visit module (1.4 KiB gzip).
bool skips_repeated_steps();

// The result's infer.devices for a llama.cpp estimate (null otherwise).
json infer_devices_json(const Estimate& e);

// framework_job then with_framework_defaults (vram/releases.h): the
// request's framework at its release in `job`, and a copy of the request with
// that framework's defaults and its library versions' rules filled in where
// it leaves a field out (`applied` lists them). Fails (fail()) as
// framework_job does. The lite build answers a request naming no framework
// but hf (and no release, no versions.*) and leaves every other to the full
// module (train.framework, versions.<library>).
json framework_defaults(const json& request, FrameworkJob& job, std::vector<FrameworkDefault>& applied);
// The time model (core/src/speed, issue 31). A request that asks for the
// result's `time` object (time.enabled, the default) has its time.* and
// hardware.* fields read here (speed/options.h read_time_fields): the
// first-visit module answers such a request with not_in_module at `time`
// while parsing it, before anything is estimated; the page asks it with
// time.enabled false and gets the time from the full module a moment later.
void read_time_fields(const JsonReader& request, Request& req);
// speed::time_json (speed/time_json.h): the result's `time` object; when
// `request` (as sent) does not set time.enabled, its assumptions say the
// default applied. The lite build never reaches it (read_time_fields refused).
json time_json(const json& request, const Request& req, const Estimate& e);

// memory::fsdp1_construct (memory/parallel_buffers.h): FSDP1's construction
// replay, unit by unit (0 bytes placed for any other layout). The lite build
// leaves FSDP1 layouts to the full
// module (its framework_defaults answers them not_in_module first): their
// construction, and the release rules (sync_module_states) that shape it.
int64_t fsdp1_construct(memory::Timeline& tl, const memory::Fsdp1Units& u, const ModelSpec& m,
                        const memory::TrainablePlan& plan, int64_t budget);
// memory::fsdp1_mixed_unit_grads, then memory::fsdp1_adapter_pieces
// (memory/parallel_buffers.h): the gradients of units that mix frozen and
// trainable parameters, and the LoRA units' shards, gradients, optimizer
// states and temporaries as FSDP1 allocates them; the lite build leaves `p`
// and `rs` as they are (FSDP1 layouts go to the full module at
// fsdp1_construct).
void fsdp1_adapter_pieces(memory::StatePieces& p, memory::RankState& rs, const Request& req,
                          const memory::TrainablePlan& plan, const memory::Dtypes& dt, const OptimizerInfo& opt,
                          const memory::Sharding& sh, const memory::Fsdp1Units& u);

// The answer's text, the bytes of v.dump(2): pretty_text (json_text.h),
// written without nlohmann/json's serializer, in the full build; v.dump(2)
// itself in the lite build, which carries that serializer for its error
// messages anyway and has no room for a second writer (issue 32, size).
std::string answer_text(const json& v);

}  // namespace vram::reach

// An inference request's `infer` object (estimate_infer.h parse_options):
// read only by the builds that estimate inference (core/src/reach.h
// parse_infer; the first-visit WASM module leaves inference to the full one).
#include <optional>
#include <string>

#include "infer/estimate_infer.h"
#include "infer/llama_cpp_options.h"
#include "vram/fields.h"
#include "vram/releases.h"

namespace vram::infer {

namespace {

// infer.engine_version is an engine's release, whose rules and defaults apply;
// infer.engine NAME@RELEASE (vllm@0.11.1, as train.framework takes a release)
// is its alias. Only engines with modelled releases take one: vLLM and SGLang
// a version, llama.cpp a source date (2025-12), Ollama a version (checked by
// infer/llama_cpp_options.cpp).
void parse_engine(const JsonReader& i, InferOptions& o) {
  const FieldSpec& spec = field("infer.engine");
  std::optional<std::string> alias;
  if (const json* v = i.get("engine")) {
    const std::string s = v->is_string() ? v->get<std::string>() : "";
    const size_t at = s.find('@');
    const auto name = spec.canonical(s.substr(0, at));
    if (!name || at + 1 == s.size()) {
      std::string allowed;
      for (const auto& x : spec.values) allowed += (allowed.empty() ? "" : ", ") + x;
      fail(errc::kUnknownValue, "infer.engine",
           "infer.engine " + v->dump() + " is not one of: " + allowed +
               " (optionally NAME@RELEASE, an alias of infer.engine_version)");
    }
    o.engine = *name;
    if (at != std::string::npos) alias = s.substr(at + 1);
  }
  o.engine_version = i.str_opt("engine_version");
  if (alias && o.engine_version && *alias != *o.engine_version) {
    fail(errc::kInconsistent, "infer.engine_version",
         "infer.engine_version \"" + *o.engine_version + "\" and infer.engine @" + *alias +
             " name two releases (NAME@RELEASE is an alias of infer.engine_version: give one)");
  }
  if (alias) o.engine_version = alias;
  if (!o.engine_version) return;
  const bool served = o.engine == "vllm" || o.engine == "sglang";
  if (!served && !llama_cpp::is_engine(o.engine)) {
    fail(errc::kUnknownValue, "infer.engine_version",
         "infer.engine_version: engine " + o.engine +
             " has no modelled releases (vllm, sglang, llama_cpp, ollama and lmstudio take one)");
  }
  if (served && !valid_version(*o.engine_version)) {
    fail(errc::kUnknownValue, "infer.engine_version",
         "infer.engine_version \"" + *o.engine_version + "\" is not a " + o.engine + " release (a version such as " +
             (o.engine == "vllm" ? "0.11.1" : "0.5.4") + ")");
  }
}

}  // namespace

void parse_options(const JsonReader& i, Request& req) {
  using limits::kMaxBatch;
  using limits::kMaxSeq;
  InferOptions& o = req.infer;
  o.batch = i.int_or("batch", defaults::kInferBatch, 1, kMaxBatch);
  o.context_len = i.int_or("context_len", defaults::kContextLen, 1, kMaxSeq);
  o.prompt_len = i.int_or("prompt_len", 0, 1, kMaxSeq);
  if (o.prompt_len > o.context_len) {
    fail(errc::kInconsistent, i.child_path("prompt_len"),
         i.child_path("prompt_len") + " (" + std::to_string(o.prompt_len) + ") exceeds " + i.child_path("context_len") +
             " (" + std::to_string(o.context_len) + ")");
  }
  o.images_per_prompt = i.int_or("images_per_prompt", 0, 0, 1024);
  o.weights_dtype = i.str_or("weights_dtype", defaults::kWeightsDtype);
  o.kv_dtype = i.str_or("kv_dtype", defaults::kKvDtype);
  parse_engine(i, o);
  o.context_len_given = i.get("context_len") != nullptr;
  o.weights_dtype_given = i.get("weights_dtype") != nullptr;
  o.entrypoint = enum_value(i, "entrypoint", field("infer.entrypoint")).value_or(defaults::kEntrypoint);
  o.gpu_memory_utilization = i.num_or("gpu_memory_utilization", defaults::kGpuMemoryUtilization, 0.01, 1.0);
  o.block_size = i.int_or("block_size", defaults::kBlockSize, 1, 4096);
  o.max_num_seqs = i.int_or("max_num_seqs", 0, 1, kMaxBatch);
  o.max_num_batched_tokens = i.int_or("max_num_batched_tokens", 0, 1, kMaxSeq);
  o.cuda_graphs = !i.bool_or("enforce_eager", defaults::kEnforceEager);
  llama_cpp::parse_options(i, req);
  o.mem_fraction_static = i.num_or("mem_fraction_static", 0.0, 0.01, 1.0);
  o.chunked_prefill_size = i.int_or("chunked_prefill_size", 0, 1, kMaxSeq);
  o.cuda_graph_max_bs = i.int_or("cuda_graph_max_bs", 0, 1, kMaxBatch);
}

}  // namespace vram::infer

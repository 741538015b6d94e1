// The llama.cpp engines' settings and defaults (infer/llama_cpp_options.h).
// llama.cpp's rules are read at three commits vendored by ollama/ollama
// (llama/llama.cpp/src, Makefile.sync FETCH_HEAD): ec98e2002 (Dec 2025,
// Ollama v0.13.5), 7049736b2d (Oct 2025, v0.12.6), de4c07f937 (May 2025,
// v0.6.8 .. v0.11.x). Ollama's own defaults are its envconfig/config.go,
// server/sched.go and llm/server.go at the tags named below.
#include "infer/llama_cpp_options.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "gguf/quant_preset.h"
#include "vram/gpus.h"

namespace vram::infer::llama_cpp {

namespace {

const Era kEras[] = {
    // llama-context.cpp: n_ctx = GGML_PAD(n_ctx, 256), n_ctx_seq = GGML_PAD(n_ctx / n_seq_max, 256);
    // llama-kv-cache-iswa.cpp: size_swa = GGML_PAD(min(size_base, n_swa * (unified ? n_seq : 1) + n_ubatch), 256);
    // llama_model_default_params n_gpu_layers 999; common.h flash_attn_type AUTO, n_ctx 0, fit_params true
    // (src/llama.cpp llama_params_fit_impl); llama-server's -np -1 = auto: 4 slots, kv_unified true
    // (tools/server/server.cpp "n_parallel is set to auto, using n_parallel = 4 and kv_unified = true",
    // PR #16736; in b7079, issue #17300; documented by PR #17997).
    {"2025-12", "ggml-org/llama.cpp ec98e2002", true, true, true, true, true, 0, true, true},
    // llama-model.cpp create_memory: per-stream ceil(n_ctx / n_seq) padded to get_padding (256 with
    // Flash Attention, 32 without); size_swa = min(size_base, GGML_PAD(n_swa * .. + n_ubatch, pad));
    // n_gpu_layers 999, flash_attn_type AUTO, common.h n_ctx 4096.
    {"2025-10", "ggml-org/llama.cpp 7049736b2d", false, true, true, true, true, 4096, false, false},
    // create_memory: one llama_kv_cache_unified of GGML_PAD(n_ctx, get_padding) cells for every layer
    // and sequence; n_gpu_layers 0 (CUDA), common.h flash_attn false, n_ctx 4096.
    {"2025-05", "ggml-org/llama.cpp de4c07f937", false, false, false, false, false, 4096, false, false},
};

const Era& era_named(const std::string& name, const std::string& path) {
  for (const auto& e : kEras) {
    if (name == e.name) return e;
  }
  fail(errc::kUnknownValue, path,
       path + " \"" + name +
           "\" is not a llama.cpp release the estimate knows: 2025-12, 2025-10 or 2025-05 (the "
           "llama.cpp source at or before your build's date)");
}

// "0.6.7" -> 600 + 7 (major x 10000 + minor x 100 + patch).
int64_t ollama_version(const std::string& v, const std::string& path) {
  int major = 0, minor = 0, patch = 0;
  char rest = 0;
  const std::string s = !v.empty() && v[0] == 'v' ? v.substr(1) : v;
  const int n = std::sscanf(s.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &rest);
  if (n < 2 || n > 3 || major < 0 || minor < 0 || minor > 99 || patch < 0 || patch > 99) {
    fail(errc::kWrongType, path, path + " \"" + v + "\" is not an Ollama version such as 0.6.7");
  }
  return major * 10000 + minor * 100 + patch;
}

constexpr int64_t kOllamaLatest = 1505;  // 0.15.5: the newest defaults modelled here

int64_t pad(int64_t x, int64_t n) { return (x + n - 1) / n * n; }

const char* kLlamaFields[] = {"ctx_size",     "n_gpu_layers", "n_batch",      "n_ubatch", "flash_attn",
                              "cache_type_k", "cache_type_v", "kv_unified",   "swa_full", "kv_offload",
                              "mmap",         "split_mode",   "tensor_split", "fit"};
// Fields of the other engines a llama.cpp request cannot take.
const char* kOtherFields[] = {
    "prompt_len",           "kv_dtype",         "images_per_prompt",      "entrypoint",    "gpu_memory_utilization",
    "block_size",           "max_num_seqs",     "max_num_batched_tokens", "enforce_eager", "mem_fraction_static",
    "chunked_prefill_size", "cuda_graph_max_bs"};

}  // namespace

bool is_engine(const std::string& engine) {
  return engine == "llama_cpp" || engine == "ollama" || engine == "lmstudio";
}

// An inference request's fields that its engine does not take.
void check_engine(const JsonReader& i, const Request& req) {
  const bool llama = is_engine(req.infer.engine);
  const std::vector<const char*> fields =
      llama ? std::vector<const char*>(std::begin(kOtherFields), std::end(kOtherFields))
            : std::vector<const char*>(std::begin(kLlamaFields), std::end(kLlamaFields));
  for (const char* k : fields) {
    if (!i.has(k)) continue;
    fail(errc::kInconsistent, i.child_path(k),
         i.child_path(k) + (llama ? " is not a setting of engine " + req.infer.engine +
                                        " (llama.cpp: infer.ctx_size, cache_type_k / cache_type_v, n_ubatch, ...)"
                                  : " is a setting of the llama.cpp engines (llama_cpp, ollama, lmstudio), not of " +
                                        req.infer.engine));
  }
}

void parse_options(const JsonReader& i, Request& req) {
  LlamaCppOptions& o = req.infer.llama;
  if (i.has("ctx_size")) o.ctx_size = i.int_req("ctx_size", 0, limits::kMaxSeq);
  if (i.has("n_gpu_layers")) o.n_gpu_layers = i.int_req("n_gpu_layers", -1, 100000);
  if (i.has("n_batch")) o.n_batch = i.int_req("n_batch", 1, limits::kMaxSeq);
  o.n_ubatch = i.int_or("n_ubatch", defaults::kNUbatch, 1, limits::kMaxSeq);
  o.flash_attn = enum_value(i, "flash_attn", field("infer.flash_attn"));
  o.cache_type_k_given = i.has("cache_type_k");
  o.cache_type_k = enum_value(i, "cache_type_k", field("infer.cache_type_k")).value_or(defaults::kCacheType);
  o.cache_type_v = enum_value(i, "cache_type_v", field("infer.cache_type_v"));
  if (i.has("kv_unified")) o.kv_unified = i.bool_or("kv_unified", false);
  if (i.has("swa_full")) o.swa_full = i.bool_or("swa_full", false);
  if (i.has("fit")) o.fit = i.bool_or("fit", true);
  o.kv_offload = i.bool_or("kv_offload", defaults::kKvOffload);
  o.mmap = i.bool_or("mmap", defaults::kMmap);
  o.split_mode = enum_value(i, "split_mode", field("infer.split_mode")).value_or(defaults::kSplitMode);
  for (const auto& s : i.str_list_or("tensor_split", {})) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0' || !(v >= 0) || v > 1e6) {
      fail(errc::kWrongType, i.child_path("tensor_split"),
           i.child_path("tensor_split") + " must list non-negative numbers, one per GPU (\"" + s + "\")");
    }
    o.tensor_split.push_back(v);
  }
  o.context_len_given = i.has("context_len");
  o.batch_given = i.has("batch");
  o.weights_dtype_given = i.has("weights_dtype");
  if (req.task == Task::kInfer) check_engine(i, req);
}

namespace {

// The context as llama.cpp sizes it: padded, split into streams, the SWA cache.
void size_context(Resolved& r, const gguf::Model& m, int64_t requested) {
  const int64_t wanted = requested == 0 ? m.hp.n_ctx_train : requested;
  const bool unified = r.kv_unified || !r.era->streams;
  r.n_stream = unified ? 1 : r.n_seq;
  // llama-context.cpp: n_batch = min(n_ctx, n_batch) (causal), n_ubatch = min(n_batch, n_ubatch), before padding.
  const int64_t batch = std::min(std::max<int64_t>(wanted, 1), r.n_batch);
  r.n_ubatch = std::min(batch, r.n_ubatch);
  const int64_t window = m.hp.n_swa * (unified ? r.n_seq : 1) + r.n_ubatch;
  if (r.era->pad_256) {
    int64_t n = pad(std::max<int64_t>(wanted, 1), 256);
    r.n_ctx_seq = unified ? n : pad(n / r.n_seq, 256);
    r.n_ctx = unified ? n : r.n_ctx_seq * r.n_seq;
    r.kv_cells = r.n_ctx_seq;
    r.kv_cells_swa = pad(std::min(r.kv_cells, window), 256);
  } else {
    const int64_t p = r.flash_attn ? 256 : 32;
    if (!r.era->streams) {
      r.n_ctx = pad(std::max<int64_t>(wanted, 1), p);
      r.kv_cells = r.n_ctx;
      r.n_ctx_seq = r.n_ctx / r.n_seq;
    } else {
      r.kv_cells = unified ? pad(wanted, p) : pad((wanted + r.n_seq - 1) / r.n_seq, p);
      r.n_ctx = unified ? r.kv_cells : r.kv_cells * r.n_seq;
      r.n_ctx_seq = unified ? r.n_ctx : r.kv_cells;
    }
    r.kv_cells_swa = r.era->swa_cache ? std::min(r.kv_cells, pad(window, p)) : r.kv_cells;
  }
  if (r.swa_full || !m.hp.any_swa()) r.kv_cells_swa = r.kv_cells;
}

// Cumulative split points of the layers over the GPUs (llama-model.cpp
// load_tensors: --tensor-split, or every device's free memory).
std::vector<double> split_points(const LlamaCppOptions& o, int32_t gpus, std::vector<std::string>& notes) {
  std::vector<double> share(static_cast<size_t>(gpus), 1.0);
  if (!o.tensor_split.empty()) {
    if (static_cast<int32_t>(o.tensor_split.size()) > gpus) {
      fail(errc::kInconsistent, "infer.tensor_split",
           "infer.tensor_split lists " + std::to_string(o.tensor_split.size()) + " shares for " + std::to_string(gpus) +
               " GPUs (parallel.gpus)");
    }
    std::fill(share.begin(), share.end(), 0.0);
    std::copy(o.tensor_split.begin(), o.tensor_split.end(), share.begin());
  } else if (gpus > 1) {
    notes.push_back("layers split evenly over the " + std::to_string(gpus) +
                    " GPUs: llama.cpp splits by each device's free memory, equal on identical idle cards");
  }
  double sum = 0;
  for (double s : share) sum += s;
  if (sum <= 0) fail(errc::kOutOfRange, "infer.tensor_split", "infer.tensor_split must give some GPU a share");
  std::vector<double> cumulative;
  double acc = 0;
  for (double s : share) cumulative.push_back((acc += s) / sum);
  return cumulative;
}

// llama.cpp (llama-server / llama-cli, common.h) and LM Studio, which runs
// llama.cpp: the request's flags, else the release's defaults.
int64_t resolve_llama(const Request& req, const gguf::Model& m, Resolved& r) {
  const LlamaCppOptions& o = req.infer.llama;
  auto& notes = r.assumptions;
  const auto& version = req.infer.engine_version;
  r.era = &era_named(version.value_or(kEras[0].name), "infer.engine_version");
  if (!version) {
    notes.push_back(std::string("llama.cpp release 2025-12: the rules of ") + r.era->source +
                    " (infer.engine_version 2025-10 or 2025-05 for older builds)");
  }
  if (r.engine == "lmstudio") {
    notes.push_back(
        "LM Studio runs llama.cpp: its Context Length is infer.ctx_size, GPU Offload infer.n_gpu_layers, "
        "Evaluation Batch Size infer.n_batch; what the request leaves out takes llama.cpp's defaults");
  }
  if (o.context_len_given) {
    fail(errc::kInconsistent, "infer.context_len",
         "infer.context_len is tokens per sequence; llama.cpp's context is infer.ctx_size (--ctx-size, the KV "
         "cells all --parallel sequences share)");
  }
  r.n_seq = req.infer.batch;
  r.kv_unified = o.kv_unified.value_or(false);
  const bool server = r.engine == "llama_cpp";
  if (!o.batch_given && server && r.era->np_auto) {
    r.n_seq = 4;
    r.kv_unified = o.kv_unified.value_or(true);
    notes.push_back(
        "--parallel auto: 4 slots sharing one unified KV cache of --ctx-size cells (llama-server "
        "since PR #16736; give infer.batch 1 for llama-cli or one slot)");
  } else if (!o.batch_given) {
    notes.push_back("--parallel 1: one sequence (common.h n_parallel)");
  }
  r.n_batch = o.n_batch.value_or(2048);
  if (!o.n_batch) notes.push_back("--batch-size 2048 (common.h n_batch)");
  if (o.flash_attn == std::string("auto") && !r.era->fa_auto) {
    fail(errc::kInconsistent, "infer.flash_attn",
         std::string("infer.flash_attn auto: in llama.cpp ") + r.era->name + " Flash Attention is on or off");
  }
  const std::string fa = o.flash_attn.value_or(r.era->fa_auto ? "auto" : "off");
  // llama-context.cpp: auto turns it on when every layer's Flash Attention
  // op lands on its KV cache's device, which --no-kv-offload breaks.
  r.flash_attn = fa == "on" || (fa == "auto" && o.kv_offload);
  if (!o.flash_attn)
    notes.push_back("--flash-attn " + fa + " (the release's default): " + (r.flash_attn ? "on" : "off"));
  r.swa_full = o.swa_full.value_or(false);
  const int64_t ngl = o.n_gpu_layers.value_or(-1);
  r.gpu_layers = ngl >= 0 ? ngl : r.era->all_layers ? 999 : 0;
  if (ngl < 0) {
    notes.push_back("--n-gpu-layers " + std::to_string(r.gpu_layers) +
                    (r.era->all_layers ? " (llama_model_default_params: every layer on the GPU)"
                                       : " (llama_model_default_params: no layer on the GPU)"));
  }
  r.type_k = gguf::ggml_type_named(o.cache_type_k);
  r.type_v = gguf::ggml_type_named(o.cache_type_v.value_or(defaults::kCacheType));
  if (o.fit && !r.era->fit) {
    fail(errc::kInconsistent, "infer.fit",
         std::string("infer.fit: llama.cpp ") + r.era->name + " has no --fit (it came with 2025-12)");
  }
  const bool fit = server && r.era->fit && o.fit.value_or(true);
  r.fit_ctx = fit && !o.ctx_size && r.era->n_ctx == 0;
  r.fit_layers = fit && ngl < 0;
  if (o.ctx_size) return *o.ctx_size;
  notes.push_back(r.era->n_ctx == 0 ? "--ctx-size 0: the model's context_length (" + std::to_string(m.hp.n_ctx_train) +
                                          "), common.h n_ctx"
                                    : "--ctx-size " + std::to_string(r.era->n_ctx) + " (common.h n_ctx)");
  return r.era->n_ctx;
}

// Ollama's defaults at its version, and how it starts its llama.cpp runner:
// --ctx-size num_ctx x OLLAMA_NUM_PARALLEL, --batch-size min(num_batch,
// num_ctx), --parallel OLLAMA_NUM_PARALLEL (llm/server.go, server/sched.go).
int64_t resolve_ollama(const Request& req, const gguf::Model& m, int64_t total_vram, Resolved& r) {
  const LlamaCppOptions& o = req.infer.llama;
  auto& notes = r.assumptions;
  const auto& version = req.infer.engine_version;
  const int64_t v = version ? ollama_version(*version, "infer.engine_version") : kOllamaLatest;
  if (!version) notes.push_back("Ollama 0.15.5's defaults (infer.engine_version names another version)");
  // The llama.cpp its runner vendors (Makefile.sync FETCH_HEAD): 7049736b2d
  // from 0.12, ec98e2002 from 0.13.5; older releases vendored copies with
  // 2025-05's rules.
  r.era = &era_named(v >= 1305 ? "2025-12" : v >= 1200 ? "2025-10" : "2025-05", "infer.engine_version");
  if (o.ctx_size) {
    fail(errc::kInconsistent, "infer.ctx_size",
         "infer.ctx_size is llama.cpp's -c; Ollama sets it to num_ctx x OLLAMA_NUM_PARALLEL: give num_ctx as "
         "infer.context_len");
  }
  int64_t num_ctx = req.infer.context_len;
  if (!o.context_len_given) {
    // envconfig OLLAMA_CONTEXT_LENGTH: 2048, 4096 from 0.6.7 (44b466eeb), by
    // total VRAM from 0.15.5 (0334ffa62: >= 47 GiB 262144, >= 23 GiB 32768).
    const int64_t gib = int64_t{1} << 30;
    num_ctx = v < 607                  ? 2048
              : v < 1505               ? 4096
              : total_vram >= 47 * gib ? 262144
              : total_vram >= 23 * gib ? 32768
                                       : 4096;
    notes.push_back("num_ctx " + std::to_string(num_ctx) + " (Ollama's default" +
                    (v >= 1505 ? std::string(total_vram > 0 ? " for this VRAM" : " without a GPU named") : "") + ")");
  }
  if (v >= 903 && m.hp.n_ctx_train > 0 && num_ctx > m.hp.n_ctx_train) {
    num_ctx = m.hp.n_ctx_train;  // llm/server.go since 0.9.3 (10a8e04a8): capped at n_ctx_train
    notes.push_back("num_ctx capped at the model's context_length " + std::to_string(num_ctx) + " (Ollama >= 0.9.3)");
  }
  r.n_seq = req.infer.batch;
  if (!o.batch_given) {
    // OLLAMA_NUM_PARALLEL auto: 4 (0.2.0), 2 (0.6.7, fe5b9bb21), 1 from 0.10.0 (20c3266e9).
    r.n_seq = v < 200 ? 1 : v < 607 ? 4 : v < 1000 ? 2 : 1;
    notes.push_back("OLLAMA_NUM_PARALLEL " + std::to_string(r.n_seq) + " (its default at this version)");
  }
  r.n_batch = std::min(o.n_batch.value_or(512), num_ctx);  // api.Options NumBatch 512
  // OLLAMA_FLASH_ATTENTION: off, or on for some architectures from 0.12.4
  // (fs/ggml/ggml.go FlashAttention(), fdb109469).
  const std::string& a = m.hp.arch;
  const bool fa_arch =
      v >= 1204 &&
      (a == "gemma3" || a == "gptoss" || a == "gpt-oss" || a == "qwen3" || a == "qwen3moe" ||
       (v >= 1305 && (a == "mistral3" || a == "olmo3" || a == "bert" || a == "qwen3vl" || a == "qwen3vlmoe")));
  r.flash_attn = o.flash_attn ? *o.flash_attn != "off" : fa_arch;
  if (!o.flash_attn)
    notes.push_back(std::string("OLLAMA_FLASH_ATTENTION ") + (r.flash_attn ? "on" : "off") +
                    " (Ollama's default for this architecture and version)");
  if (o.cache_type_v && *o.cache_type_v != o.cache_type_k) {
    fail(errc::kInconsistent, "infer.cache_type_v",
         "Ollama sets the K and V caches alike (OLLAMA_KV_CACHE_TYPE): infer.cache_type_v must equal cache_type_k");
  }
  std::string kv = o.cache_type_k;
  if (kv != "f16" && !r.flash_attn) {
    notes.push_back("OLLAMA_KV_CACHE_TYPE " + kv + " needs flash attention: Ollama keeps f16 (llm/server.go)");
    kv = "f16";
  }
  r.type_k = r.type_v = gguf::ggml_type_named(kv);
  // Its runner takes llama_context_default_params: swa_full true; embeddings on (llama/llama.go).
  r.swa_full = o.swa_full.value_or(true);
  r.embeddings = true;
  r.gpu_layers_auto = !o.n_gpu_layers || *o.n_gpu_layers < 0;
  r.gpu_layers = r.gpu_layers_auto ? 999 : *o.n_gpu_layers;
  return num_ctx * r.n_seq;
}

}  // namespace

Resolved resolve(const Request& req, const gguf::Model& m, int64_t total_vram) {
  const LlamaCppOptions& o = req.infer.llama;
  Resolved r;
  r.engine = req.infer.engine;
  const int64_t n_ctx = r.engine == "ollama" ? resolve_ollama(req, m, total_vram, r) : resolve_llama(req, m, r);
  if (gguf::ggml_type_named(o.cache_type_v.value_or("f16"))->quantized && r.engine != "ollama" && !r.flash_attn) {
    fail(errc::kInconsistent, "infer.cache_type_v",
         "infer.cache_type_v " + *o.cache_type_v +
             ": llama.cpp refuses a quantized V cache without Flash Attention (\"quantized V cache was requested, "
             "but this requires Flash Attention\", llama-context.cpp)");
  }
  r.n_ubatch = o.n_ubatch;
  if (r.engine == "ollama") r.kv_unified = o.kv_unified.value_or(false);
  r.n_ctx_train = m.hp.n_ctx_train;
  r.kv_offload = o.kv_offload;
  r.mmap = o.mmap;
  r.split_mode = o.split_mode;
  if (r.split_mode == "row") {
    fail(errc::kUnsupported, "infer.split_mode",
         "infer.split_mode row (matrices split by rows across GPUs, llama.cpp's split buffers) is not modelled; "
         "layer and none are");
  }
  r.gpus = r.split_mode == "none" ? 1 : static_cast<int32_t>(req.parallel.gpus);
  r.split = split_points(o, r.gpus, r.assumptions);
  size_context(r, m, n_ctx);
  return r;
}

Resolved with_context(Resolved r, const gguf::Model& m, int64_t n_ctx_requested) {
  size_context(r, m, n_ctx_requested);
  return r;
}

Resolved with_layers(Resolved r, int64_t gpu_layers) {
  r.gpu_layers = gpu_layers;
  r.gpu_layers_auto = false;
  return r;
}

}  // namespace vram::infer::llama_cpp

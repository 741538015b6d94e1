// SGLang as SGLang sizes itself (infer/serving.h; research
// inference-engines.md §4). Each tensor-parallel worker measures its free
// memory after torch.distributed starts, loads the weights, and gives its
// token pool what stays above (1 - mem_fraction_static) of that first
// measure; activations and CUDA graphs live in the part it leaves:
//
//   rest   = available after the weights - total x (1 - mem_fraction_static)
//   tokens = int(rest x 2^30 // cell_size),  cell = kv heads x head_dim x layers x 2 x dtype
//
// (python/sglang/srt/model_executor/model_runner.py profile_max_num_token,
// the same in every release read: code-index ids 4949127654, 40809990809,
// 432591181, 10267136; `total_gpu_memory` is init_torch_distributed's
// get_available_gpu_memory, the free memory before the weights, and
// get_available_gpu_memory returns GiB.) The pool's K and V buffers hold
// size + page_size slots (mem_cache/memory_pool.py MHATokenToKVPool), and
// the log prints them in GiB as "GB".
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "infer/replay.h"
#include "infer/serving.h"
#include "memory/overheads.h"
#include "vram/status.h"

namespace vram::infer {

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr const char* kNewest = "0.5.4";

// The server arguments SGLang derives from the card when absent.
struct Setup {
  std::string release;
  int64_t gpu_mem = 0;   // MiB, get_device_memory_capacity (nvidia-smi memory.total)
  int64_t total = 0;     // CUDA's total
  int64_t chunked = 0;   // --chunked-prefill-size
  int64_t graph_bs = 0;  // --cuda-graph-max-bs
  double fraction = 0;   // --mem-fraction-static
  std::string fraction_rule;
  int64_t context_len = 0;  // --context-length
};

// server_args.py _handle_gpu_memory_settings after PR #10975 (2025-09-27,
// "Use more general heuristics to set the default value of
// --mem-fraction-static"; code-index id 8356329): the chunked prefill size
// and the largest CUDA graph batch by the card's memory, then the memory
// reserved for activations and graphs in MB from them.
void defaults_by_memory(const Request& req, Setup& s) {
  const int64_t tp = req.parallel.tp;
  const int64_t g = s.gpu_mem;
  int64_t chunked = 16384;
  int64_t bs = 512;
  if (g < 20 * 1024) {
    chunked = 2048, bs = 8;  // T4, 4080
  } else if (g < 35 * 1024) {
    chunked = 2048, bs = tp < 4 ? 24 : 80;  // A10, 4090, 5090
  } else if (g < 60 * 1024) {
    chunked = 4096, bs = tp < 4 ? 32 : 160;  // A100 40GB, L40
  } else if (g < 160 * 1024) {
    chunked = 8192, bs = tp < 4 ? 256 : 512;  // H100, A100 80GB, H20, H200
  }
  s.chunked = req.infer.chunked_prefill_size > 0 ? req.infer.chunked_prefill_size : chunked;
  s.graph_bs = req.infer.cuda_graph_max_bs > 0 ? req.infer.cuda_graph_max_bs : bs;
}

// --mem-fraction-static when absent, by release:
// - from 0.5.3 (PR #10975): reserved = 512 + max(chunked, 2048) x 1.5 +
//   cuda_graph_max_bs x 2 + tp x pp / 8 x 1024 MB, at least 10 GiB on cards
//   over 60 GB; fraction = round((gpu_mem - reserved) / gpu_mem, 3);
// - 0.4.7 to 0.5.2 (PR #7054, 2025-06-10, "Simplify the heuristics"):
//   reserved GB = 2.8 + tp x pp / 10 under 35 GB, 9.5 + tp x pp / 2 under 90
//   GB, 12 + tp x pp / 2 under 160 GB, else 32;
// - before: by tensor parallel size, 0.88, 0.87 (tp >= 2), 0.85 (>= 4), 0.81
//   (>= 8), 0.79 (>= 16) (server_args.py __post_init__, research §4).
void mem_fraction(const Request& req, Setup& s) {
  if (req.infer.mem_fraction_static > 0) {
    s.fraction = req.infer.mem_fraction_static;
    s.fraction_rule = "given";
    return;
  }
  const double g = static_cast<double>(s.gpu_mem);
  const double p = static_cast<double>(req.parallel.tp * req.parallel.pp);
  if (at_least(s.release, "0.5.3")) {
    double reserved = 512 + static_cast<double>(std::max<int64_t>(s.chunked, 2048)) * 1.5 +
                      static_cast<double>(s.graph_bs) * 2 + p / 8 * 1024;
    if (g > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
    s.fraction = std::round((g - reserved) / g * 1000) / 1000;
    s.fraction_rule = "(GPU memory - " + std::to_string(static_cast<int64_t>(reserved)) +
                      " MB reserved for activations and CUDA graphs) / GPU memory (0.5.3+)";
  } else if (at_least(s.release, "0.4.7")) {
    const double gb = g / 1024;
    const double reserved = gb < 35 ? 2.8 + p / 10 : gb < 90 ? 9.5 + p / 2 : gb < 160 ? 12 + p / 2 : 32;
    s.fraction = std::round((gb - reserved) / gb * 1000) / 1000;
    s.fraction_rule = "(GPU memory - reserved by GPU class) / GPU memory (0.4.7 to 0.5.2)";
  } else {
    const int64_t tp = req.parallel.tp;
    s.fraction = tp >= 16 ? 0.79 : tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88;
    s.fraction_rule = "by tensor parallel size (before 0.4.7)";
  }
}

Setup setup(Estimate& e, const Request& req, const Serving& sv) {
  Setup s;
  s.release = engine_release(e, req.infer, kNewest);
  e.engine_release = s.release;
  if (!at_least(s.release, "0.3")) {
    fail(errc::kUnsupported, "infer.engine_version",
         "infer.engine_version " + s.release + ": SGLang before 0.3 is not modelled");
  }
  s.total = cuda_total_bytes(req, sv, "sglang");
  s.gpu_mem = sv.gpu != nullptr ? sv.gpu->total_mib : static_cast<int64_t>(*req.gpu.memory_gib * 1024.0);
  defaults_by_memory(req, s);
  mem_fraction(req, s);
  s.context_len = req.infer.context_len_given ? req.infer.context_len : req.model.max_position_embeddings;
  char f[16];
  std::snprintf(f, sizeof f, "%.3f", s.fraction);
  e.assumptions.push_back("SGLang " + s.release + ": mem_fraction_static " + f + " (" + s.fraction_rule +
                          "), chunked_prefill_size " + std::to_string(s.chunked) + ", cuda_graph_max_bs " +
                          std::to_string(s.graph_bs));
  if (req.model.text.sliding_window > 0 && req.model.text.sliding_layers > 0) {
    e.warnings.push_back(
        "SGLang gives sliding-window layers a pool of their own (--swa-full-tokens-ratio); the "
        "estimate sizes one pool for every layer at the full context");
  }
  if (sv.gpu != nullptr && req.model.stack("vision") != nullptr && req.infer.mem_fraction_static <= 0) {
    e.warnings.push_back(
        "SGLang lowers mem_fraction_static for multimodal models by the vision tower's size "
        "(adjust_mem_fraction_for_vlm); that adjustment is not modelled");
  }
  return s;
}

// What one worker holds before its weights: the CUDA context (512 MiB prior,
// research §2.1) and, with several GPUs, NCCL and the custom all-reduce
// buffers: SGLang logs "Init torch distributed ends. mem usage=1.77 GB" to
// 2.01 GB per GPU at TP = 8 (sgl-project/sglang PR #11716, H200), 1.5 GiB
// over the context.
int64_t before_weights(const Request& req, const Serving& sv) {
  const bool parallel = req.parallel.tp * req.parallel.pp > 1;
  return sv.fx.context + (parallel ? req.overheads.nccl_bytes.value_or(3 * kGiB / 2) : 0);
}

// The weights as loaded, one allocation per parameter tensor (a routed
// expert group one tensor per layer, FusedMoE), and the rotary cos/sin
// cache, which SGLang keeps in fp32 on CUDA (layers/rotary_embedding.py:
// "cache needs to be in FP32 for numerical stability"), then
// overheads.misc_bytes: the load of the worker's timeline.
ServingTimeline load_timeline(const Request& req, const Serving& sv, int64_t weights) {
  ServingTimeline run;
  std::vector<memory::Piece> pieces = weight_pieces(req.model, sv, true);
  pieces.push_back({rotary_cache_bytes(req.model, 4), 1});
  run.tl.alloc("weights", "weights", weights, pieces);
  run.tl.alloc("misc", "overheads.misc_bytes", req.overheads.misc_bytes);
  run.mark("weights_loaded", "weights loaded");
  return run;
}

// The rest of the worker's start-up on its timeline: the token pool's K and
// V buffers, one per layer each (mem_cache/memory_pool.py MHATokenToKVPool
// _create_buffers; MLA one latent buffer per layer), init_cublas's first
// matmul (model_runner.py: after init_memory_pool), then a prefill chunk's
// layer working set. NCCL's buffers and CUDA graphs are outside the replay.
std::string pool_phases(Estimate& e, const Request& req, const Serving& sv, ServingTimeline& run, const Sizes& z,
                        int64_t layers) {
  memory::Timeline& tl = run.tl;
  const int64_t per = std::max<int64_t>(req.model.text.attention == AttnKind::kMla ? layers : 2 * layers, 1);
  const memory::Timeline::Id pool = tl.alloc("kv_cache", "token pool", z.kv, {{z.kv / per, per}});
  run.mark("kv_allocated", "token pool allocated");
  const memory::Timeline::Id cublas = tl.alloc("cublas_workspace", "cuBLAS workspace", sv.fx.cublas);
  const memory::Timeline::Id chunk = tl.alloc("activations", "prefill chunk (one layer's working set)", z.prefill);
  run.mark("serving", sv.fx.graphs > 0 ? "serving (a prefill chunk, CUDA graphs captured)"
                                       : "serving (a prefill chunk, no CUDA graphs)");
  for (const memory::Timeline::Id id : {chunk, cublas, pool}) tl.free(id);
  const int64_t nccl = before_weights(req, sv) - sv.fx.context;
  for (const char* phase : {"weights_loaded", "kv_allocated", "serving"}) run.outside[phase] = {{"nccl", nccl}};
  run.outside["serving"]["cuda_graphs"] = sv.fx.graphs;
  const std::string formula = timeline_phases(e, req, sv, run, "SGLang's start-up (the token pool, a prefill chunk)");
  if (!formula.empty()) {
    e.components.push_back({"allocator", "Allocator cache (reserved - allocated)",
                            e.phases.back().parts.at("allocator"), formula, Pool::kAllocated});
  }
  return formula;
}

}  // namespace

// SGLang's start-up: the weights' load replayed through the caching
// allocator gives what SGLang measures, the free memory after it
// (get_available_gpu_memory empties the cache, then torch.cuda.mem_get_info:
// python/sglang/srt/utils/common.py @4e75f468), so "mem usage" and the pool
// are the load's reserved bytes, not its allocated ones.
Sizes sglang_serving(Estimate& e, const Request& req, const Serving& sv) {
  const Setup s = setup(e, req, sv);
  const LayerStack& t = req.model.text;
  const int64_t W =
      bytes::add(weights_per_gpu(req.model, *sv.fmt, sv.tp, false), rotary_cache_bytes(req.model, 4), kWeights);
  ServingTimeline run = load_timeline(req, sv, W);
  const int64_t used = reserved_at_last_mark(req, sv, run);
  const int64_t init = before_weights(req, sv);
  const double free0 = static_cast<double>(s.total - init);
  const double after = free0 - static_cast<double>(used);
  const double rest = after - free0 * (1.0 - s.fraction);
  const double cell = sv.kv_tok_full;
  const int64_t tokens = rest > 0 && cell > 0 ? static_cast<int64_t>(std::floor(rest / cell)) : 0;
  // K and V buffers of tokens + page_size (1) slots; MLA keeps one latent buffer.
  const bool mla = t.attention == AttnKind::kMla;
  const double half = cell * static_cast<double>(tokens + 1) / (mla ? 1.0 : 2.0);
  Sizes z;
  z.kv = ceil_bytes(mla ? half : 2 * half, kKv);
  z.prefill = ceil_bytes(sv.pre_tok * static_cast<double>(s.chunked), "the prefill activations");
  e.facts.push_back({"kv_tokens", tokens});
  e.facts.push_back({"max_model_len", s.context_len});
  e.facts.push_back({"chunked_prefill_size", s.chunked});
  e.facts.push_back({"weights_bytes", W});
  e.facts.push_back({"weights_mem_usage_bytes", used});
  e.facts.push_back(
      {"max_concurrent_sequences", s.context_len > 0 ? std::min<int64_t>(tokens / s.context_len, 1 << 30) : 0});
  e.facts.push_back({"max_context_len", std::min(tokens, s.context_len > 0 ? s.context_len : tokens)});
  const auto two = [](double b) { return std::round(b / 1073741824.0 * 100.0) / 100.0; };
  e.engine_log.push_back(
      {"sglang.weights_mem_usage", two(static_cast<double>(used)), "GiB",
       "Load weight end. avail mem=" + gib2(after) + " GB, mem usage=" + gib2(static_cast<double>(used)) + " GB."});
  e.engine_log.push_back({"sglang.avail_mem_after_weights", two(after), "GiB", "avail mem=" + gib2(after) + " GB"});
  e.engine_log.push_back(
      {"sglang.max_total_num_tokens", static_cast<double>(tokens), "tokens",
       mla ? "KV Cache is allocated. #tokens: " + std::to_string(tokens) + ", KV size: " + gib2(half) + " GB"
           : "KV Cache is allocated. #tokens: " + std::to_string(tokens) + ", K size: " + gib2(half) +
                 " GB, V size: " + gib2(half) + " GB"});
  e.engine_log.push_back({mla ? "sglang.kv_size" : "sglang.k_size", two(half), "GiB",
                          std::string(mla ? "KV" : "K") + " size: " + gib2(half) + " GB"});
  e.engine_log.push_back({"sglang.max_total_num_tokens_line", static_cast<double>(tokens), "tokens",
                          "max_total_num_tokens=" + std::to_string(tokens) + ", chunked_prefill_size=" +
                              std::to_string(s.chunked) + ", context_len=" + std::to_string(s.context_len)});
  char f[16];
  std::snprintf(f, sizeof f, "%.3f", s.fraction);
  e.components.push_back({"weights", "Weights", W,
                          std::string("linears as ") + sv.fmt->source +
                              (sv.tp > 1 ? " / tp " + std::to_string(sv.tp) : "") + " + fp32 rotary cos/sin cache",
                          Pool::kAllocated});
  e.components.push_back({"kv_cache", "KV cache (token pool)", z.kv,
                          std::to_string(tokens) + " tokens: (free " + gib2(free0) + " GiB x mem_fraction_static " + f +
                              " - weights) / " + std::to_string(ceil_bytes(cell, kKv)) + " B per token",
                          Pool::kAllocated});
  e.components.push_back(
      {"activations", "Prefill chunk (one layer's working set)", z.prefill,
       "chunked_prefill_size " + std::to_string(s.chunked) + " x " + std::to_string(ceil_bytes(sv.pre_tok)) + " B",
       Pool::kAllocated});
  e.components.push_back({"cuda_context", "CUDA context and NCCL", init,
                          "before the weights: context prior" +
                              std::string(req.parallel.tp > 1 ? " + NCCL / custom all-reduce (1.5 GiB prior)" : ""),
                          Pool::kOutside});
  if (sv.fx.graphs > 0) {
    e.components.push_back({"cuda_graphs", "CUDA graphs", sv.fx.graphs,
                            "batches up to cuda_graph_max_bs " + std::to_string(s.graph_bs) + "; 256 MiB prior",
                            Pool::kOutside});
  }
  z.allocator = pool_phases(e, req, sv, run, z, std::max<int64_t>(t.attention_layers() - t.kv_shared_layers, 1));
  if (tokens <= 0) {
    e.warnings.push_back(
        "SGLang cannot start: \"Not enough memory. Please try to increase --mem-fraction-static\" "
        "(the weights exceed mem_fraction_static of the free memory)");
  } else if (s.context_len > tokens) {
    e.warnings.push_back("SGLang's pool holds " + commas(tokens) + " tokens, fewer than one request of " +
                         commas(s.context_len) + ": requests are capped at the pool");
  }
  return z;
}

}  // namespace vram::infer

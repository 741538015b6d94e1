// vLLM (V1 engine) as vLLM sizes itself (infer/serving.h; research
// inference-engines.md §3, memory-internals.md §7.4). At start-up each
// worker loads the weights, runs one profile forward of max_num_batched_tokens
// tokens and the sampler over the last token of max_num_seqs dummy requests,
// and gives the KV cache what is left of gpu_memory_utilization x the card:
//
//   requested = total x gpu_memory_utilization              (gpu_worker.py init_device)
//   available = requested - (weights + torch peak increase of the profile
//               run + non-torch increase)                    (determine_available_memory)
//   blocks    = available // page_size // layers             (kv_cache_utils.py get_num_blocks)
//
// Sources, vllm-project/vllm: vllm/v1/worker/gpu_worker.py @35d5cda1
// (init_device, determine_available_memory, compile_or_warm_up_model),
// vllm/v1/core/kv_cache_utils.py @001cabc1 (get_num_blocks,
// get_max_concurrency_for_kv_cache_config, _get_kv_cache_groups_uniform_page_size),
// vllm/engine/arg_utils.py @99d7eb5d (_set_default_args), vllm/v1/sample/sampler.py
// @3e342658 and vllm/v1/sample/ops/topk_topp_sampler.py @3babc05a (the sampler),
// vllm/distributed/utils.py @5a6541db (get_pp_indices),
// vllm/model_executor/layers/rotary_embedding/base.py @072d10a0 (the cos/sin cache).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "infer/replay.h"
#include "infer/serving.h"
#include "memory/overheads.h"
#include "train/layout.h"
#include "vram/status.h"

namespace vram::infer {

using memory::ceil_div;

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
// The releases whose rules this file reads (see the header): 0.11.0 was run
// by llm-d's measurements (tests/fixtures/measured.json); the files read are of
// the 0.11 / 0.12 series.
constexpr const char* kNewest = "0.11.1";

// Everything vLLM decides before loading: the budget, the scheduler's limits,
// the length it serves, the graphs it captures.
struct Setup {
  std::string release;
  int64_t total = 0;          // torch.cuda.mem_get_info()[1]
  double requested = 0;       // total x gpu_memory_utilization
  int64_t max_model_len = 0;  // --max-model-len
  int64_t batched = 0;        // max_num_batched_tokens
  int64_t seqs = 0;           // max_num_seqs
  bool flashinfer_sampler = false;
  int64_t capture_max = 0;  // largest CUDA graph capture size, 0 with enforce_eager
  int64_t captures = 0;     // CUDA graph capture sizes
};

// vllm/engine/arg_utils.py @99d7eb5d _set_default_args: on a card of at
// least 70 GiB that is not an A100 (PR #17885: large batches slow the
// A100 down), `vllm serve` takes 8192 tokens and 1024 sequences per step,
// the LLM class 16384 and 1024; elsewhere 2048 / 8192 tokens and 256
// sequences. max_num_seqs never exceeds max_num_batched_tokens. V1 always
// chunks prefills, so the token budget is this default, not max_model_len.
void scheduler_defaults(Estimate& e, const Request& req, const Serving& sv, Setup& s) {
  const InferOptions& o = req.infer;
  std::string name = sv.gpu != nullptr ? sv.gpu->name : "";
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  const bool big = s.total >= 70 * kGiB && name.find("a100") == std::string::npos;
  const bool server = o.entrypoint != "offline";
  s.batched = o.max_num_batched_tokens > 0 ? o.max_num_batched_tokens
              : big                        ? (server ? 8192 : 16384)
                                           : (server ? 2048 : 8192);
  s.seqs = o.max_num_seqs > 0 ? o.max_num_seqs : std::min<int64_t>(big ? 1024 : 256, s.batched);
  if (o.max_num_batched_tokens == 0 || o.max_num_seqs == 0) {
    e.assumptions.push_back(std::string("vLLM's scheduler defaults for ") + (server ? "vllm serve" : "the LLM class") +
                            " on " + (big ? "a card of 70 GiB or more other than an A100" : "this card") +
                            ": max_num_batched_tokens " + std::to_string(s.batched) + ", max_num_seqs " +
                            std::to_string(s.seqs) + " (arg_utils.py _set_default_args)");
  }
}

// Which release's rules apply, and what differs between the releases modelled.
void release_rules(Estimate& e, const Request& req, Setup& s) {
  s.release = engine_release(e, req.infer, kNewest);
  e.engine_release = s.release;
  if (!at_least(s.release, "0.8")) {
    fail(errc::kUnsupported, "infer.engine_version",
         "infer.engine_version " + s.release +
             ": vLLM before 0.8 ran the V0 engine by default, which is not modelled (V1 only, 0.10 to 0.12)");
  }
  if (!at_least(s.release, "0.10") || at_least(s.release, "0.13")) {
    e.warnings.push_back("vLLM " + s.release +
                         " is outside the releases modelled (0.10 to 0.12): their rules are applied. Later "
                         "releases also subtract an estimate of CUDA graph memory before sizing the KV cache "
                         "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS) and print other lines");
  }
  // The sampler's top-k / top-p: FlashInfer's kernel in 0.11.0, where
  // flashinfer-python became a default dependency and the sampler used it
  // unless VLLM_USE_FLASHINFER_SAMPLER=0; PR #26859 (2025-10-15, after
  // 0.11.0) made it opt-in again, and the llm-d runs of 0.10 show the
  // PyTorch sort's footprint (tests/fixtures/measured.json).
  s.flashinfer_sampler = at_least(s.release, "0.11") && !at_least(s.release, "0.11.1");
  e.assumptions.push_back(std::string("vLLM's sampler sorts the logits with ") +
                          (s.flashinfer_sampler ? "FlashInfer's top-k/top-p kernel (0.11.0's default)"
                                                : "PyTorch's sort (FlashInfer's kernel is opt-in)"));
}

Setup setup(Estimate& e, const Request& req, const Serving& sv) {
  const InferOptions& o = req.infer;
  Setup s;
  release_rules(e, req, s);
  s.total = cuda_total_bytes(req, sv, "vllm");
  s.requested = static_cast<double>(s.total) * o.gpu_memory_utilization;
  scheduler_defaults(e, req, sv, s);
  // --max-model-len; absent, the model's own (vllm/config _get_and_verify_max_len
  // takes max_position_embeddings).
  s.max_model_len = o.context_len;
  if (!o.context_len_given) {
    if (req.model.max_position_embeddings <= 0) {
      fail(errc::kMissingField, "infer.context_len",
           "infer.context_len (vLLM's --max-model-len) is needed: the config has no max_position_embeddings");
    }
    s.max_model_len = req.model.max_position_embeddings;
    e.assumptions.push_back("max_model_len " + commas(s.max_model_len) +
                            ": the config's max_position_embeddings (infer.context_len absent)");
  }
  // CUDA graphs (vllm/config/compilation.py): capture sizes 1, 2, 4, then
  // every 8 below 256, every 16 from 256, up to min(2 x max_num_seqs, 512).
  if (o.cuda_graphs) {
    s.capture_max = std::min<int64_t>(2 * s.seqs, 512);
    for (int64_t size : {1, 2, 4}) s.captures += size <= s.capture_max ? 1 : 0;
    for (int64_t size = 8; size < 256 && size <= s.capture_max; size += 8) ++s.captures;
    for (int64_t size = 256; size <= s.capture_max; size += 16) ++s.captures;
  }
  return s;
}

// One pipeline stage on one tensor-parallel rank.
struct Stage {
  bool first = true;
  bool last = true;
  int64_t layers = 0;      // decoder layers on the stage
  int64_t attention = 0;   // of which cache keys and values
  int64_t weights = 0;     // "Model loading took"
  int64_t forward = 0;     // the profile forward's working set
  int64_t sampler = 0;     // the profile sampler's working set (last stage)
  int64_t activation = 0;  // torch peak increase of the profile run
  int64_t non_torch = 0;
  int64_t available = 0;  // "Available KV cache memory"
  // The profile run's tensors (profile_peak): the forward's, and the
  // sampler's, which it runs on (last stage only).
  std::vector<memory::Piece> forward_pieces;
  std::vector<memory::Piece> sampler_pieces;
  // The worker's start-up as a timeline (start_timeline), up to the end of
  // the profile run.
  ServingTimeline start;
};

// vllm/distributed/utils.py @5a6541db get_pp_indices: layers // pp on every
// stage, the remainder one each on the stages before the last.
std::vector<train::Stage> pp_stages(const Request& req) {
  const int64_t pp = req.parallel.pp;
  const LayerStack& t = req.model.text;
  std::vector<int64_t> parts(static_cast<size_t>(pp), t.layers / pp);
  for (int64_t i = 2; i < t.layers % pp + 2; ++i) parts[static_cast<size_t>(pp - i)] += 1;
  std::vector<train::Stage> out;
  int64_t begin = 0;
  for (int64_t r = 0; r < pp; ++r) {
    train::Stage s;
    s.index = r;
    s.first = r == 0;
    s.last = r == pp - 1;
    s.layers = parts[static_cast<size_t>(r)];
    s.moe_layers = t.count(LayerSet::kMoe, begin, s.layers);
    s.ssm_layers = t.count(LayerSet::kSsm, begin, s.layers);
    s.attention_layers = t.count(LayerSet::kAttention, begin, s.layers);
    s.first_layer = begin;
    begin += s.layers;
    out.push_back(s);
  }
  return out;
}

// The sampler's bytes per logit (rows x vocabulary) at its peak, beyond the
// 16-bit logits. PyTorch path (topk_topp_sampler.py @3babc05a
// apply_top_k_top_p; the dummy metadata sets top_k = vocab - 1 and top_p 0.9,
// so it sorts): the fp32 copy Sampler.forward makes (4), sort's values (4)
// and int64 indices (8), and inside torch.sort (aten/src/ATen/native/cuda/
// SortStable.cu launch_stable_sort_kernel) for 128 rows or more
// segmented_sort_pairs' int64 reverse indices (8) and CUB's
// DeviceSegmentedRadixSort temporaries, an alternate key (4) and value (8)
// buffer: 36. Fewer rows take segmented_sort_pairs_by_full_sort (two int2
// index buffers, 16, and the same 12 of CUB): 44; one row sorts its one
// segment with an nsort index buffer and CUB's 12: 28. FlashInfer
// (flashinfer_sample -> top_k_top_p_sampling_from_logits): the fp32 copy, the
// top-k masked logits and their softmax, 4 each: 12.
double sampler_bytes_per_logit(int64_t rows, bool flashinfer) {
  if (flashinfer) return 12;
  if (rows >= 128) return 36;
  return rows > 1 ? 44 : 28;
}

// The profile run (gpu_model_runner.py profile_run): _dummy_run of
// max_num_batched_tokens tokens split over min(max_num_seqs, tokens)
// dummy requests, then, on the last pipeline stage, _dummy_sampler_run on
// the last hidden state of each. The forward frees a layer's intermediates
// before the next (one layer's working set, Serving::pre_tok); the sampler
// runs while the forward's output [tokens, hidden] and the sampled rows
// [rows, hidden] (and their torch.rand_like copy) are held, over 16-bit
// logits of the padded vocabulary gathered from the tensor-parallel ranks
// (LogitsProcessor._gather_logits: all-gather, the local shard freed once
// gathered). The first matmul allocates cuBLAS's workspace.
void profile_peak(const Request& req, const Serving& sv, const Setup& s, Stage& st) {
  const ModelSpec& m = req.model;
  const int64_t T = s.batched;
  const int64_t h = m.text.hidden;
  const int64_t rows = std::min(s.seqs, T);
  st.forward = ceil_bytes(sv.pre_tok * static_cast<double>(T), "the profile run");
  st.forward_pieces = {{st.forward, 1}};
  if (!st.last) {
    // IntermediateTensors: hidden states and residual of max_num_tokens.
    const int64_t hidden = bytes::mul(bytes::mul(T, h), 2, "the profile run");
    st.forward = bytes::add(st.forward, 2 * hidden, "the profile run");
    st.forward_pieces.push_back({hidden, 2});
  } else {
    const int64_t vpad = ceil_div(m.vocab, 64 * sv.tp) * 64 * sv.tp;  // VocabParallelEmbedding pad_vocab_size
    const int64_t out = bytes::mul(bytes::mul(T, h), 2);
    const int64_t row = bytes::mul(bytes::mul(rows, h), 2);
    const int64_t logits16 = bytes::mul(bytes::mul(rows, vpad), 2, "the profile sampler");
    const int64_t rest = ceil_bytes(
        static_cast<double>(rows) * static_cast<double>(m.vocab) * sampler_bytes_per_logit(rows, s.flashinfer_sampler),
        "the profile sampler");
    st.sampler = bytes::add(bytes::add(bytes::add(out, 2 * row), logits16), rest, "the profile sampler");
    // The sort's temporaries as one allocation (their split is not modelled).
    st.sampler_pieces = {{out, 1}, {row, 2}, {logits16, 1}, {rest, 1}};
  }
}

// The worker's start-up up to the end of the profile run, as a timeline
// (infer/replay.h): the weights (weight_pieces of the stage's model, the
// rotary cache), overheads.misc_bytes; then the profile run inside
// memory_profiling: cuBLAS's workspace at the first matmul, the forward's
// layer working set, freed before the sampler runs. memory_profiling then
// calls torch.cuda.empty_cache() (vllm/utils/mem_utils.py @a6d5c390
// memory_profiling: gc.collect(); torch.cuda.empty_cache() after the yield).
ServingTimeline start_timeline(const Request& req, const Serving& sv, const Request& stage_req, const Stage& st) {
  ServingTimeline run;
  memory::Timeline& tl = run.tl;
  std::vector<memory::Piece> weights = weight_pieces(stage_req.model, sv, true);
  weights.push_back({rotary_cache_bytes(req.model, 2), 1});
  tl.alloc("weights", "weights", st.weights, weights);
  tl.alloc("misc", "overheads.misc_bytes", req.overheads.misc_bytes);
  run.mark("weights_loaded", "weights loaded");
  tl.alloc("cublas_workspace", "cuBLAS workspace", sv.fx.cublas);
  constexpr const char* kProfile = "profile run (max_num_batched_tokens forward, then the sampler)";
  // Two moments of one phase: the forward's layer, then the sampler (the
  // phase keeps the larger).
  const memory::Timeline::Id fwd =
      tl.alloc("activations", "profile forward (one layer's working set)", st.forward, st.forward_pieces);
  run.mark("profile", kProfile);
  tl.free(fwd);
  if (st.sampler > 0) {
    const memory::Timeline::Id sampler = tl.alloc("logits", "profile sampler", st.sampler, st.sampler_pieces);
    run.mark("profile", kProfile);
    tl.free(sampler);
  }
  run.outside["profile"] = {{"non_torch", st.non_torch}};
  run.empty_cache();
  return run;
}

// The torch peak increase of the profile run, as memory_profiling measures
// it (mem_utils.py @a6d5c390: allocated_bytes.all.peak after the run less
// its value before, reset_peak_memory_stats() at the start): the allocated
// view of the profile phase less that of the weights-loaded phase.
int64_t torch_peak_increase(const ServingTimeline& run) {
  int64_t loaded = 0;
  int64_t peak = 0;
  for (const memory::Moment& m : memory::replay(run.tl, false)) {
    if (m.phase == "weights_loaded") loaded = m.allocated;
    peak = std::max(peak, m.allocated);
  }
  return peak - loaded;
}

// What vLLM reserves for one stage of one tensor-parallel rank.
Stage stage_cost(const Request& req, const Serving& sv, const Setup& s, const train::Stage& ts) {
  Stage st;
  st.first = ts.first;
  st.last = ts.last;
  st.layers = ts.layers;
  // Attention layers of the stage (hybrid and cross-attention stacks keep
  // keys in fewer layers than they have).
  const LayerStack& t = req.model.text;
  const int64_t kv_layers = std::max<int64_t>(t.attention_layers() - t.kv_shared_layers, 0);
  st.attention = t.layers > 0 ? kv_layers * ts.layers / t.layers : 0;
  Request one = req;
  one.parallel.tp = 1;
  const Request stage_req = req.parallel.pp > 1 ? train::rank_request(one, ts) : one;
  // The weights as loaded (DeviceMemoryProfiler around load_model): the
  // Linears in their format, and the rotary cos/sin cache in the model dtype
  // (base.py: cache.to(dtype)).
  st.weights =
      bytes::add(weights_per_gpu(stage_req.model, *sv.fmt, sv.tp, false), rotary_cache_bytes(req.model, 2), kWeights);
  profile_peak(req, sv, s, st);
  // Non-torch memory, memory outside PyTorch's allocator that grows between
  // the snapshot taken after NCCL's initialisation and the end of the profile
  // run (kernel modules loaded, communicator buffers allocated on first use):
  // llm-d measured 0.13 GiB on one H100 and 0.55 GiB per GPU at TP = 2
  // (research memory-internals.md §7.4, vLLM 0.10 / 0.11).
  const bool parallel = req.parallel.tp * req.parallel.pp > 1;
  st.non_torch = req.overheads.nccl_bytes.value_or(parallel ? (int64_t{55} * kGiB) / 100 : (int64_t{13} * kGiB) / 100);
  st.start = start_timeline(req, sv, stage_req, st);
  st.activation = torch_peak_increase(st.start);
  st.available = static_cast<int64_t>(s.requested - static_cast<double>(st.weights) -
                                      static_cast<double>(st.activation) - static_cast<double>(st.non_torch));
  return st;
}

// The KV cache's blocks (kv_cache_utils.py @001cabc1). Full-attention
// layers share one block table; a model with sliding-window layers too gets
// one group per attention type, split into groups of equal size (the fewer
// type's count, or the larger when it is under 1.5 x the fewer;
// _get_kv_cache_groups_uniform_page_size), and one memory pool per layer of
// a group, shared by a layer of each group: blocks = available // page //
// group size, and each block holds block_size tokens of one group.
struct Layout {
  int64_t page = 0;    // bytes of one block of one layer
  int64_t groups = 1;  // KV cache groups
  int64_t group_size = 0;
  int64_t blocks = 0;
  int64_t tokens = 0;       // "GPU KV cache size: N tokens"
  double concurrency = 0;   // "Maximum concurrency for L tokens per request: X"
  int64_t per_request = 0;  // blocks one request of max_model_len takes
};

Layout kv_layout(const Request& req, const Serving& sv, const Setup& s, const Stage& st) {
  const InferOptions& o = req.infer;
  const LayerStack& t = req.model.text;
  Layout k;
  const double per_layer = kv_bytes_per_token(sv.sharded, sv.kv_elem, false, 0) /
                           static_cast<double>(std::max<int64_t>(t.attention_layers() - t.kv_shared_layers, 1));
  k.page = ceil_bytes(per_layer * static_cast<double>(o.block_size), kKv);
  const int64_t sliding =
      t.sliding_window > 0 ? std::min(st.attention, t.sliding_layers * st.layers / std::max<int64_t>(t.layers, 1)) : 0;
  const int64_t full = st.attention - sliding;
  const int64_t full_blocks = ceil_div(s.max_model_len, o.block_size);
  // SlidingWindowSpec.max_memory_usage_bytes: cdiv(min(window - 1 +
  // max_num_batched_tokens, max_model_len), block_size) + 1 blocks.
  const int64_t sliding_blocks =
      ceil_div(std::min(t.sliding_window - 1 + s.batched, s.max_model_len), o.block_size) + 1;
  if (sliding == 0 || full == 0) {
    k.group_size = std::max<int64_t>(st.attention, 1);
    k.per_request = sliding > 0 ? sliding_blocks : full_blocks;
  } else {
    const int64_t few = std::min(full, sliding);
    const int64_t many = std::max(full, sliding);
    k.group_size = 2 * many < 3 * few ? many : few;
    const int64_t full_groups = ceil_div(full, k.group_size);
    const int64_t sliding_groups = ceil_div(sliding, k.group_size);
    k.groups = full_groups + sliding_groups;
    k.per_request = full_groups * full_blocks + sliding_groups * sliding_blocks;
  }
  k.blocks = k.page > 0 && st.available > 0 ? st.available / k.page / k.group_size : 0;
  return k;
}

void finish_layout(const Request& req, Layout& k) {
  k.tokens = k.blocks / k.groups * req.infer.block_size;
  k.concurrency = k.per_request > 0 ? static_cast<double>(k.blocks) / static_cast<double>(k.per_request) : 0.0;
}

// The lines vLLM prints at start-up (INFO, one worker's; gpu_model_runner.py
// "Model loading took", gpu_worker.py "Available KV cache memory",
// kv_cache_utils.py report_kv_cache_config) and the figures of the
// memory_profiling result gpu_worker.py logs at DEBUG.
void engine_lines(Estimate& e, const Setup& s, const Stage& st, const Layout& k) {
  char conc[32];
  std::snprintf(conc, sizeof conc, "%.2f", k.concurrency);
  const auto gib = [](int64_t b) { return std::round(static_cast<double>(b) / 1073741824.0 * 100.0) / 100.0; };
  e.engine_log.push_back(
      {"vllm.model_loading", gib(st.weights), "GiB", "Model loading took " + gib2(st.weights) + " GiB"});
  e.engine_log.push_back({"vllm.peak_activation", gib(st.activation), "GiB",
                          "peak activation " + gib2(st.activation) + " GiB (memory profiling, DEBUG)"});
  e.engine_log.push_back(
      {"vllm.non_torch", gib(st.non_torch), "GiB", "non-torch memory " + gib2(st.non_torch) + " GiB (DEBUG)"});
  e.engine_log.push_back({"vllm.available_kv_cache", gib(st.available), "GiB",
                          "Available KV cache memory: " + gib2(st.available) + " GiB"});
  e.engine_log.push_back({"vllm.gpu_kv_cache_tokens", static_cast<double>(k.tokens), "tokens",
                          "GPU KV cache size: " + commas(k.tokens) + " tokens"});
  e.engine_log.push_back({"vllm.max_concurrency", std::round(k.concurrency * 100.0) / 100.0, "x",
                          "Maximum concurrency for " + commas(s.max_model_len) + " tokens per request: " + conc + "x"});
}

// The components of one worker of the tightest stage.
void vllm_components(Estimate& e, const Request& req, const Serving& sv, const Setup& s, const Stage& st,
                     const Layout& k, int64_t kv) {
  const std::string tp = sv.tp > 1 ? " / tp " + std::to_string(sv.tp) : "";
  const std::string pp = req.parallel.pp > 1 ? ", " + std::to_string(st.layers) + " layers of the stage" : "";
  e.components.push_back({"weights", "Weights", st.weights,
                          std::string("linears as ") + sv.fmt->source + tp + pp + " + rotary cos/sin cache",
                          Pool::kAllocated});
  e.components.push_back({"kv_cache", "KV cache", kv,
                          commas(k.blocks) + " blocks x " + std::to_string(req.infer.block_size) + " tokens x " +
                              std::to_string(k.group_size) + " layers (gpu_memory_utilization " + gib2(s.requested) +
                              " GiB - weights - profile peak - non-torch)",
                          Pool::kAllocated});
  e.components.push_back(
      {"activations", "Profile forward (one layer's working set)", st.forward,
       "max_num_batched_tokens " + commas(s.batched) + " x " + std::to_string(ceil_bytes(sv.pre_tok)) + " B",
       Pool::kAllocated});
  if (st.sampler > 0) {
    e.components.push_back(
        {"logits", "Profile sampler (logits, sort)", st.sampler,
         std::to_string(std::min(s.seqs, s.batched)) + " requests x vocab " + std::to_string(req.model.vocab) + " x " +
             std::to_string(
                 static_cast<int>(sampler_bytes_per_logit(std::min(s.seqs, s.batched), s.flashinfer_sampler))) +
             " B + 16-bit logits",
         Pool::kAllocated});
  }
  e.components.push_back(
      {"cublas_workspace", "cuBLAS/cuBLASLt workspaces", sv.fx.cublas, "one handle", Pool::kAllocated});
  e.components.push_back({"non_torch", "Non-torch memory", st.non_torch,
                          req.overheads.nccl_bytes ? "overheads.nccl_bytes (given)"
                                                   : "llm-d on H100: 0.13 GiB at one GPU, 0.55 GiB per GPU at TP = 2",
                          Pool::kOutside});
  if (sv.fx.graphs > 0) {
    e.components.push_back({"cuda_graphs", "CUDA graphs", sv.fx.graphs,
                            std::to_string(s.captures) + " capture sizes up to " + std::to_string(s.capture_max) +
                                "; 256 MiB prior (llm-d measured -0.88 to +1.03 GiB)",
                            Pool::kOutside});
  }
  e.components.push_back(
      {"cuda_context", "CUDA context", sv.fx.context,
       req.overheads.cuda_context_bytes ? "overheads.cuda_context_bytes" : "512 MiB lazy-loading prior (research §2.1)",
       Pool::kOutside});
}

// The rest of the tightest stage's start-up on its timeline, and the
// phases: after the profile run's empty_cache(), the KV cache tensors
// (gpu_model_runner.py _allocate_kv_cache_tensors: one torch.zeros of
// blocks x page bytes per layer of a group), the CUDA graphs (outside the
// replay: a prior), and the sampler again: compile_or_warm_up_model runs it
// after the graphs "to preallocate memory buffer for logits", so its blocks
// stay cached. The phases' allocated view is memory_profiling's (torch
// allocated bytes); their reserved view is the caching allocator's replay.
std::string serving_phases(Estimate& e, const Request& req, const Serving& sv, Stage& st, int64_t kv, const Layout& k) {
  ServingTimeline& run = st.start;
  memory::Timeline& tl = run.tl;
  const memory::Timeline::Id cache = tl.alloc("kv_cache", "KV cache tensors", kv, {{k.blocks * k.page, k.group_size}});
  const memory::Timeline::Id sampler =
      st.sampler > 0 ? tl.alloc("logits", "sampler warm-up", st.sampler, st.sampler_pieces) : -1;
  run.outside["serving"] = {{"non_torch", st.non_torch}, {"cuda_graphs", sv.fx.graphs}};
  run.mark("serving", sv.fx.graphs > 0 ? "serving (KV cache allocated, CUDA graphs captured)"
                                       : "serving (KV cache allocated, eager: no CUDA graphs)");
  if (sampler >= 0) tl.free(sampler);
  tl.free(cache);
  const std::string formula =
      timeline_phases(e, req, sv, run, "vLLM's start-up (the profile run, empty_cache(), the KV cache, the sampler)");
  if (!formula.empty()) {
    e.components.push_back({"allocator", "Allocator cache (reserved - allocated)",
                            e.phases.back().parts.at("allocator"), formula, Pool::kAllocated});
  }
  return formula;
}

}  // namespace

// vLLM's start-up: every stage's budget, the blocks of the tightest (the
// scheduler shares one block table, get_kv_cache_configs takes the minimum),
// and the phases: weights loaded, the profile run, the KV cache allocated with
// CUDA graphs captured and the sampler warmed up.
Sizes vllm_serving(Estimate& e, const Request& req, const Serving& sv) {
  const InferOptions& o = req.infer;
  const Setup s = setup(e, req, sv);
  std::vector<Stage> stages;
  Layout k;
  size_t tight = 0;
  for (const train::Stage& ts : pp_stages(req)) {
    stages.push_back(stage_cost(req, sv, s, ts));
    const Layout here = kv_layout(req, sv, s, stages.back());
    if (stages.size() == 1 || here.blocks < k.blocks) {
      k = here;
      tight = stages.size() - 1;
    }
  }
  finish_layout(req, k);
  Stage& st = stages[tight];
  Sizes z;
  z.prefill = st.forward;
  z.logits = st.sampler;
  z.kv = bytes::mul(bytes::mul(k.blocks, k.page, kKv), k.group_size, kKv);
  e.facts.push_back({"kv_blocks", k.blocks});
  e.facts.push_back({"kv_block_bytes", k.page * k.group_size});
  e.facts.push_back({"kv_tokens", k.tokens});
  e.facts.push_back({"max_model_len", s.max_model_len});
  e.facts.push_back({"max_num_seqs", s.seqs});
  e.facts.push_back({"max_num_batched_tokens", s.batched});
  e.facts.push_back({"weights_bytes", st.weights});
  e.facts.push_back({"activation_peak_bytes", st.activation});
  e.facts.push_back({"non_torch_bytes", st.non_torch});
  e.facts.push_back(
      {"max_concurrent_sequences", std::min(s.seqs, k.per_request > 0 ? k.blocks / k.per_request : int64_t{0})});
  e.facts.push_back({"max_context_len", std::min(k.tokens, s.max_model_len)});
  engine_lines(e, s, st, k);
  vllm_components(e, req, sv, s, st, k, z.kv);
  z.allocator = serving_phases(e, req, sv, st, z.kv, k);
  if (st.available <= 0) {
    e.warnings.push_back(
        "vLLM cannot start: \"No available memory for the cache blocks\" (the weights, the profile "
        "run and non-torch memory exceed gpu_memory_utilization x the GPU)");
  } else if (k.tokens < s.max_model_len) {
    e.warnings.push_back("vLLM cannot start: the KV cache holds " + commas(k.tokens) +
                         " tokens, fewer than one request of max_model_len " + commas(s.max_model_len) +
                         " (lower infer.context_len, raise gpu_memory_utilization or add GPUs)");
  } else if (k.per_request > 0 && k.blocks / k.per_request < o.batch) {
    e.warnings.push_back("only " + std::to_string(k.blocks / k.per_request) + " requests of " +
                         commas(s.max_model_len) + " tokens fit at once; the rest wait in the queue");
  }
  return z;
}

}  // namespace vram::infer

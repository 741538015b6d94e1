// Private: what serving a model costs, shared by the engines (infer/*.cpp):
// the weights in their serving format, the KV cache and prefill bytes per
// token, what lives outside the tensors (DESIGN.md §3 "Inference"; research
// §7), and the phases the estimate reports.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "infer/estimate_infer.h"
#include "memory/bytes.h"
#include "vram/gpus.h"
#include "vram/request.h"
#include "vram/result.h"

namespace vram::infer {

struct LoadMemo;  // infer/replay.h

// Whole bytes of a fractional figure, checked (memory/bytes.h).
inline int64_t ceil_bytes(double x, std::string_view what = "a memory figure") { return bytes::ceil(x, what); }
inline constexpr const char* kKv = "the KV cache";
inline constexpr const char* kWeights = "the weights";

struct Format {
  const char* name;
  double linear_bytes;  // bytes per Linear weight value
  int64_t group;        // values per scale group (0: one scale per output row)
  double scale_bytes;   // bytes per group (scale + zero point)
  const char* source;
  bool experts_only = false;  // quantises the routed experts only (the rest stays 16-bit)
  // bitsandbytes 4-bit: a multi-token forward dequantises the whole weight
  // (bitsandbytes/autograd/_functions.py matmul_4bit: gemv_4bit only when
  // A.numel() == A.shape[-1], i.e. one token; otherwise MatMul4Bit.forward
  // runs F.linear(A, F.dequantize_4bit(B, quant_state).to(A.dtype).t())).
  bool bnb4 = false;
};

// The serving format `n` names (infer.weights_dtype), or nullptr.
const Format* find_format(const std::string& n);
// Every format's name, for an error message.
std::string format_names();
// Bytes per KV-cache value of infer.kv_dtype `n`, or -1 when unknown.
double kv_elem_bytes(const std::string& n);

// Everything that does not depend on the batch and the context.
struct Fixed {
  int64_t weights = 0;
  int64_t cublas = 0;
  int64_t context = 0;
  int64_t graphs = 0;  // CUDA graphs (vLLM)
  int64_t nccl = 0;    // non-torch memory of tensor parallelism
};

// The serving job's costs that do not depend on the batch and the context,
// and the per-token ones: weights per GPU, KV / cross-attention / prefill
// bytes per token, what lives outside the tensors.
struct Serving {
  const Format* fmt = nullptr;
  std::string format_note;  // why fmt is not infer.weights_dtype (a quantised checkpoint), or ""
  double kv_elem = 2;
  int64_t tp = 1;
  bool vllm = false;
  bool sglang = false;
  bool paged = false;       // vLLM or SGLang: a paged cache sized to the GPU
  bool litgpt = false;      // LitGPT generate/base.py
  bool quant_head = false;  // lm_head quantised with the other Linears
  bool hf_mla = false;      // transformers caches MLA's decompressed heads
  ModelSpec sharded;        // heads and KV heads of one tensor-parallel rank
  double kv_tok_full = 0;
  double cross_tok = 0;
  double pre_tok = 0;
  double ssm_seq = 0;        // state-space cache bytes per sequence (Mamba), on one rank
  double image_seq = 0;      // image cross-attention keys/values per sequence (Mllama), on one rank
  int64_t image_tokens = 0;  // language-model tokens the prompt's images add to each sequence
  double vision_pre = 0;     // the vision / audio encoder's prefill working set per sequence
  // bitsandbytes 4-bit: 16-bit copies of the largest quantised weight that a
  // multi-token forward holds while it dequantises (0 for other formats).
  int64_t dequant = 0;
  Fixed fx;
  const GpuInfo* gpu = nullptr;
  // The loads already replayed in a sweep of estimates (infer/replay.h), or none.
  LoadMemo* memo = nullptr;
  double kv_tok_at(int64_t ctx) const { return kv_bytes_per_token(sharded, kv_elem, hf_mla, ctx); }
};

// The engine's release whose rules apply: infer.engine NAME@RELEASE's, else
// `newest` (the newest modelled), with the assumption that says which.
std::string engine_release(Estimate& e, const InferOptions& o, const char* newest);
// compare_versions(release, bound) >= 0 (vram/releases.h).
bool at_least(const std::string& release, const char* bound);

// Whether format `fmt` quantises group `g` (its Linears; lm_head only with
// `quant_head`; the routed experts only for an experts-only format).
bool quantized(const ParamGroup& g, const Format& fmt, bool quant_head);
// One quantised instance of `g` in `fmt`: codes and scales, without its bias.
int64_t quantized_bytes(const ParamGroup& g, const Format& fmt);
// Weights per GPU in format `fmt` on tensor-parallel degree `tp`.
int64_t weights_per_gpu(const ModelSpec& m, const Format& fmt, int64_t tp, bool quant_head);
// Validates the serving fields (Failure names the field) and computes the costs.
Serving serving(const Request& req);

struct Sizes {
  int64_t kv = 0;
  int64_t ssm = 0;  // state-space cache (Mamba): fixed per sequence
  int64_t prefill = 0;
  int64_t logits = 0;
  int64_t mask = 0;  // LitGPT's causal mask cache
  // The allocator component's formula when the caching-allocator replay
  // gave the reserved view (infer/replay.h), else "".
  std::string allocator;
};

// The 16-bit copies bitsandbytes 4-bit holds for a forward over `tokens`
// tokens per sequence of `batch` sequences.
int64_t dequant_bytes(const Serving& sv, int64_t batch, int64_t tokens);

// Each engine's phases (infer/generate.cpp, infer/vllm.cpp).
Sizes hf_generate(Estimate& e, const Request& req, const Serving& sv);
Sizes litgpt_generate(Estimate& e, const Request& req, const Serving& sv);
Sizes vllm_serving(Estimate& e, const Request& req, const Serving& sv);
Sizes sglang_serving(Estimate& e, const Request& req, const Serving& sv);

// What a serving engine holds outside the per-layer weights: the rotary
// cos/sin cache, max_position_embeddings x rotary dim of `elem` bytes per
// value, once per model (vLLM get_rope and SGLang's copy of it cache one
// instance per distinct rope configuration).
int64_t rotary_cache_bytes(const ModelSpec& m, int64_t elem);
// The card's total memory as CUDA reports it (torch.cuda.mem_get_info()[1]):
// the catalog card's usable bytes, or gpu.memory_gib less the driver reserve.
// Fails naming gpu.name when the request names no card.
int64_t cuda_total_bytes(const Request& req, const Serving& sv, const char* engine);
// GiB with two decimals, as the engines print them ("51.38").
std::string gib2(double bytes);
// An integer with thousands separators, as Python's f"{n:,}" prints it.
std::string commas(int64_t n);

// The result's components and assumptions (infer/report.cpp).
void serving_components(Estimate& e, const Request& req, const Serving& sv, const Sizes& z);
void serving_assumptions(Estimate& e, const Request& req, const Serving& sv);

}  // namespace vram::infer

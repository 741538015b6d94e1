// Inference speed (speed.h infer_time): the prefill of the prompts,
// compute-bound, in the engine's chunks; then each decode step, which reads
// every weight on the device and each sequence's keys and values once
// (bandwidth-bound at small batches, compute-bound at large ones), or waits
// for the host where eager PyTorch dispatches slower than the GPU runs.
//
// Built on the estimate's per-device weight bytes and KV bytes per token, so
// an engine that sizes those (hf, vllm, litgpt; later SGLang, llama.cpp)
// plugs in by its per-step host cost alone (kEngines).
#include <algorithm>
#include <cmath>

#include "infer/llama_cpp_options.h"
#include "speed/links.h"
#include "speed/speed.h"
#include "speed/work.h"

namespace vram::speed {

namespace {

int64_t fact(const Estimate& e, const char* key, int64_t fallback = 0) {
  for (const auto& [k, v] : e.facts) {
    if (k == key) return v;
  }
  return fallback;
}

int64_t component(const Estimate& e, const char* key) {
  for (const Component& c : e.components) {
    if (c.key == key) return c.bytes;
  }
  return 0;
}

// What an engine's host does per decode step, in eager-kernel dispatches
// (work.h host_time: 17.7-25.5 us each).
// - hf: transformers' LlamaDecoderLayer, 41 kernels, plus the dynamic
//   cache's two torch.cat: 43 a layer (work.cpp kLayerKernels);
// - litgpt: lit-gpt's block as gpt-fast copied it (47: two 8-kernel
//   RMSNorms, fused qkv, 16 for the rotary embedding, the cache's index_copy,
//   repeat_interleave, SDPA, the projection, the 5-kernel MLP, two adds);
// - vllm eager (enforce_eager): its fused layer, about 10 (fused add+RMSNorm
//   twice, qkv, rotary, cache write, paged attention, o_proj, gate_up,
//   SiluAndMul, down); with CUDA graphs (the default) a step replays one
//   captured graph, and what remains is the step's scheduling, input
//   preparation and sampling, taken as one eager layer's worth.
struct EngineHost {
  const char* engine;
  double per_layer;  // kernels per decoder layer per step
  double per_step;   // kernels per step outside the layers
};
constexpr EngineHost kEngines[] = {{"hf", 43, 10}, {"litgpt", 47, 10}, {"vllm", 10, 10}};
// llama.cpp's scheduling and sampling a step, with or without CUDA graphs
// (llama_graphs below): vLLM's graph figure, one eager layer's dispatch.
constexpr EngineHost kLlamaGraphs = {"llama_cpp", 10, 10};

// What launching a llama.cpp forward node by node (no CUDA graph: before
// compute capability 8.0, and every prompt micro-batch of more than one
// token) costs beyond replaying it as one graph, per layer: ggml's C++ launches,
// not PyTorch's Python dispatch. Measured as the time a token lost without
// graphs, LLaMA-2-7B (32 layers), by the PR that introduced them
// (ggml-org/llama.cpp PR #6766, JohannesGaessler 2024-04-19, ./main tg, q4_0:
// RTX 4090 138.31 -> 146.81 tokens/s, 0.419 ms a token; RTX 3090 116.31 ->
// 128.27, 0.802 ms) and by its author's issue (#6763, agray3 2024-04-19,
// llama-2-7b Q4_K_M on an H100-PCIe: 143.35 -> 163.83, 0.872 ms): 13.1-27.2
// us a layer, added to the GPU's time as those deltas were.
constexpr Range kLlamaEagerPerLayer = {0.419e-3 / 32, 0.872e-3 / 32};

// A bitsandbytes 4-bit Linear at batch 1 costs the host 28-43 us more than a
// 16-bit one (h2oai/h2ogpt perf.md, transformers backend, Llama-2-7B-chat:
// 32.57 against 40.93 tok/s on an RTX 4090, 23.88 against 30.98 on an A100, 224
// Linears a token): 1.65 eager dispatches. LLM.int8 (load_in_8bit) 377 us
// (9.21 tok/s on the RTX 4090): 21.
constexpr double kFourBitLinear = 1.65, kInt8Linear = 21;
// Double quantisation (nf4-dq, bnb_4bit_use_double_quant / LitGPT's
// bnb.nf4-dq) keeps the absmax in 8 bits: every 4-bit matmul first
// dequantises it and adds the offset, two more dispatches a Linear
// (bitsandbytes gemv_4bit: `if state.nested: absmax =
// dequantize_blockwise(state.absmax, state.state2); absmax += state.offset`,
// bitsandbytes/backends/cuda.py at 1c96995f, the same branch as
// bitsandbytes/functional.py in 0.41).
constexpr double kNestedAbsmax = 2;

bool four_bit_bnb(const std::string& dtype) { return dtype == "nf4" || dtype == "nf4-dq"; }

struct Shape {
  double weights = 0;       // bytes per device
  double kv_per_token = 0;  // bytes per device and token of context
  double state = 0;         // SSM state bytes per sequence
  double linear_flops = 0;  // per token, per device (2 x active Linear parameters / tp)
  double linears = 0;       // Linear modules a token passes through (host dispatch of quantised ones)
  double layers = 0;
  double attn_per_key = 0;  // FLOPs per token and key of context (2 x heads x head dims / tp, attention layers)
  double expert_share = 0;  // share of the weights in routed experts
  double experts = 0, experts_per_token = 0;
  // llama.cpp engines: what a decode step reads from host memory (the layers
  // -ngl leaves on the CPU, and with --no-kv-offload every layer's keys and
  // values), from the estimate's decode_* facts (infer/llama_cpp.cpp).
  bool llama = false;
  double host_weights = 0, host_kv_per_token = 0;
};

Shape shape_of(const Request& req, const Estimate& e) {
  const ModelSpec& md = req.model;
  const double tp = static_cast<double>(std::max<int64_t>(req.parallel.tp, 1));
  Shape s;
  s.weights = static_cast<double>(component(e, "weights"));
  s.kv_per_token = static_cast<double>(fact(e, "kv_bytes_per_token"));
  s.state =
      static_cast<double>(fact(e, "ssm_state_bytes")) / static_cast<double>(std::max<int64_t>(req.infer.batch, 1));
  double active = 0, experts = 0, total = 0;
  for (const ParamGroup& g : md.groups) {
    total += static_cast<double>(g.total());
    if (g.kind != ModuleKind::kLinear || g.stack != "text") continue;
    active += static_cast<double>(g.in_features * g.out_features) * static_cast<double>(g.instances * g.active_num) /
              static_cast<double>(g.active_den);
    s.linears += static_cast<double>(g.instances * g.active_num) / static_cast<double>(g.active_den);
    if (g.component == std::string(comp::kExperts)) experts += static_cast<double>(g.total());
  }
  if (md.tie_word_embeddings) active += static_cast<double>(md.text.hidden * md.vocab);
  s.linear_flops = 2.0 * active / tp;
  s.layers = static_cast<double>(md.text.layers);
  const LayerStack& t = md.text;
  s.attn_per_key = 2.0 * static_cast<double>(t.heads) *
                   static_cast<double>(t.head_dim + (t.v_head_dim > 0 ? t.v_head_dim : t.head_dim)) *
                   static_cast<double>(t.attention_layers()) / tp;
  s.expert_share = total > 0 ? experts / total : 0;
  s.experts = static_cast<double>(t.experts);
  s.experts_per_token = static_cast<double>(t.experts_per_token);
  if (infer::llama_cpp::is_engine(req.infer.engine)) {
    // Every GPU's weights (layer split runs the GPUs one after another) and
    // the host's, not the busiest GPU's alone.
    s.llama = true;
    s.weights = static_cast<double>(fact(e, "decode_gpu_weights_bytes"));
    s.kv_per_token = static_cast<double>(fact(e, "kv_gpu_bytes_per_token"));
    s.host_weights = static_cast<double>(fact(e, "decode_host_weights_bytes"));
    s.host_kv_per_token = static_cast<double>(fact(e, "kv_host_bytes_per_token"));
  }
  return s;
}

// llama.cpp replays one CUDA graph per decode step on NVIDIA cards of compute
// capability 8.0 (Ampere) and later (ggml/src/ggml-cuda/ggml-cuda.cu
// ggml_cuda_graph_set_enabled: cc < GGML_CUDA_CC_AMPERE sets
// disable_due_to_gpu_arch; GGML_CUDA_DISABLE_GRAPHS turns them off), so its
// host cost a token is the graph's launch and the step's scheduling and
// sampling, taken as vLLM's with graphs (one eager layer's dispatch). Older
// cards launch every node of the graph: not measured, so the eager
// transformers figure stands for it.
bool llama_graphs(const Machine& m) {
  const GpuInfo* card = find_gpu(m.gpu);
  return card != nullptr && std::string(card->vendor) == "nvidia" && card->sm >= 80;
}

const EngineHost& host_of(const std::string& engine) {
  for (const EngineHost& h : kEngines) {
    if (engine == h.engine) return h;
  }
  return kEngines[0];
}

// One decode step at batch B and mean context c.
std::vector<Term> decode_terms(const Request& req, const Machine& m, const Shape& s, double batch, double context) {
  const InferOptions& o = req.infer;
  // A routed expert is read when one of the batch's tokens picks it: of E
  // experts with k picked per token, 1 - (1 - k / E)^B are read.
  // (A product, not std::pow: the same bytes natively and in WASM.)
  double untouched = 1.0;
  for (int64_t b = 0; s.experts > 0 && b < static_cast<int64_t>(batch) && untouched > 1e-9; ++b) {
    untouched *= 1.0 - s.experts_per_token / s.experts;
  }
  const double read_experts = s.experts > 0 ? 1.0 - untouched : 1.0;
  const double weights = s.weights * (1.0 - s.expert_share + s.expert_share * read_experts);
  const double kv = batch * (s.kv_per_token * context + 2.0 * s.state);
  const Range mem = bandwidth_time(weights + kv, m.memory_gbs);
  const double flops = batch * (s.linear_flops + s.attn_per_key * context);
  const Range compute{flops / (m.matmul_tflops * 1e12), flops / (m.matmul_tflops * 1e12 * 0.75)};
  std::vector<Term> out;
  out.push_back({"decode_memory", "Weights and KV cache read", mem,
                 fmt(weights / 1e9) + " GB of weights" +
                     (s.experts > 0 ? " (" + fmt(read_experts * 100) + " % of the routed experts)" : std::string()) +
                     " + " + fmt(kv / 1e9) + " GB of keys and values (" + fmt(batch) + " sequences x " + fmt(context) +
                     " tokens) at " + fmt(m.memory_gbs) + " GB/s x " + bandwidth_share_text()});
  const Range extra_compute{std::max(0.0, compute.low - mem.low), std::max(0.0, compute.high - mem.high)};
  if (extra_compute.high > 0) {
    out.push_back({"decode_compute", "Compute beyond the reads", extra_compute,
                   fmt(flops / 1e12) + " TFLOP at " + fmt(m.matmul_tflops) + " TFLOPS x 0.75-1"});
  }
  if (s.host_weights + s.host_kv_per_token > 0) {
    // The layers on the CPU run between the GPU's, one after the other.
    const double host_kv = batch * s.host_kv_per_token * context;
    out.push_back({"decode_host_memory", "Host weights and KV cache read (CPU layers)",
                   bandwidth_time(s.host_weights + host_kv, m.host_memory_gbs),
                   fmt(s.host_weights / 1e9) + " GB of weights + " + fmt(host_kv / 1e9) +
                       " GB of keys and values in host memory at " + fmt(m.host_memory_gbs) + " GB/s x " +
                       bandwidth_share_text() + " (the GPU's measured share: none measured for CPUs)"});
  }
  const int64_t tp = req.parallel.tp;
  if (tp > 1) {
    const double bytes = batch * static_cast<double>(req.model.text.hidden) * 2 * 2 * s.layers;
    const int64_t calls = static_cast<int64_t>(2 * s.layers);
    out.push_back(
        {"decode_tp", "Tensor-parallel all-reduces",
         collective_seconds(m, Collective::kAllReduce, bytes, tp, std::min(tp, req.parallel.gpus_per_node), calls),
         collective_formula(m, Collective::kAllReduce, bytes, tp, tp, calls)});
  }
  const bool graphs = (o.engine == "vllm" && o.cuda_graphs) || (s.llama && llama_graphs(m));
  if (s.llama && !graphs) {
    out.push_back({"decode_launch", "Node-by-node launches (no CUDA graph)", kLlamaEagerPerLayer * s.layers,
                   fmt(s.layers) +
                       " layers x 13.1-27.2 us: what a token loses without CUDA graphs (llama.cpp PR #6766, "
                       "issue #6763: LLaMA-2-7B on RTX 3090 / 4090 / H100)"});
  }
  // llama.cpp's host: its scheduling and sampling alone (graphs or not); the
  // launches without graphs are the term above.
  const bool one_layer = graphs || s.llama;
  const EngineHost& eh = s.llama ? kLlamaGraphs : host_of(o.engine);
  double kernels = one_layer ? eh.per_layer : eh.per_layer * s.layers;
  kernels += eh.per_step;
  if (o.engine != "vllm" && four_bit_bnb(o.weights_dtype)) kernels += kFourBitLinear * s.linears;
  if (o.engine != "vllm" && o.weights_dtype == "nf4-dq") kernels += kNestedAbsmax * s.linears;
  if (o.engine == "hf" && o.weights_dtype == "int8") kernels += kInt8Linear * s.linears;
  const Range host = host_time(kernels);
  Range gpu;
  for (const Term& t : out) gpu += t.seconds;
  if (host.low > gpu.low || host.high > gpu.high) {
    out.push_back({"decode_host",
                   std::string("Host dispatch (") + o.engine + ")",
                   {std::max(0.0, host.low - gpu.low), std::max(0.0, host.high - gpu.high)},
                   fmt(kernels) + " kernel dispatches a step" + (graphs ? " (one CUDA graph replayed)" : "") +
                       " x 17.7-25.5 us: the GPU waits for the host where this exceeds its work"});
  }
  return out;
}

// The prefill of every prompt of the batch: the Linear layers' and the
// attention's FLOPs (causal: half the square) at the measured matmul rate,
// the weights read once per chunk the engine runs (vLLM: max_num_batched_tokens
// tokens a step; transformers and LitGPT: the whole batch at once).
// vLLM's prefill chunk: max_num_batched_tokens as given, else the engine's
// own default the memory estimate applied (its fact of the same name,
// infer/vllm.cpp scheduler_defaults). llama.cpp computes a prompt's batch in
// micro-batches of n_ubatch tokens, one graph each (llama-context.cpp
// llama_context::decode: `while (ubatch = balloc.split_simple(n_ubatch))` ->
// process_ubatch), each reading every weight: the n_ubatch its estimate
// resolved (a fact). Other engines prefill the prompt whole.
double prefill_chunk(const Request& req, const Estimate& e, double tokens) {
  if (infer::llama_cpp::is_engine(req.infer.engine)) {
    const int64_t ubatch = fact(e, "n_ubatch");
    return ubatch > 0 ? static_cast<double>(ubatch) : tokens;
  }
  if (req.infer.engine != "vllm") return tokens;
  if (req.infer.max_num_batched_tokens > 0) return static_cast<double>(req.infer.max_num_batched_tokens);
  for (const auto& [name, value] : e.facts) {
    if (name == "max_num_batched_tokens" && value > 0) return static_cast<double>(value);
  }
  return tokens;
}

std::vector<Term> prefill_terms(const Request& req, const Estimate& e, const Machine& m, const Shape& s, double batch,
                                double prompt) {
  const double tokens = batch * prompt;
  const double chunk = prefill_chunk(req, e, tokens);
  const double chunks = std::max(1.0, std::ceil(tokens / chunk));
  const double flops = tokens * (s.linear_flops + s.attn_per_key * prompt / 2);
  std::vector<Term> out;
  out.push_back(
      {"prefill_compute",
       "Prefill compute",
       {flops / (m.matmul_tflops * 1e12), flops / (m.matmul_tflops * 1e12 * 0.58)},
       fmt(tokens) + " prompt tokens: " + fmt(flops / 1e12) + " TFLOP at " + fmt(m.matmul_tflops) +
           " TFLOPS x 0.58-1 (matmuls at 0.75-1 of the card's best, attention at FlashAttention-2's 0.58-0.84)"});
  out.push_back({"prefill_weights", "Weights read per chunk", bandwidth_time(s.weights * chunks, m.memory_gbs),
                 fmt(chunks) + " chunk(s) of " + fmt(std::min(chunk, tokens)) + " tokens, each reading " +
                     fmt(s.weights / 1e9) + " GB"});
  if (s.llama) {
    // A prompt micro-batch is launched node by node (llama.cpp captures CUDA
    // graphs for single-token batches only), plus the step's scheduling.
    out.push_back({"prefill_host", "Host dispatch",
                   host_time((kLlamaGraphs.per_layer + kLlamaGraphs.per_step) * chunks) +
                       kLlamaEagerPerLayer * (s.layers * chunks),
                   fmt(chunks) + " micro-batch(es) launched node by node: " + fmt(s.layers) +
                       " layers x 13.1-27.2 us each (llama.cpp PR #6766) + the step's scheduling"});
  } else {
    const EngineHost& eh = host_of(req.infer.engine);
    out.push_back({"prefill_host", "Host dispatch", host_time((eh.per_layer * s.layers + eh.per_step) * chunks),
                   fmt(chunks) + " forward(s) dispatched"});
  }
  const int64_t tp = req.parallel.tp;
  if (tp > 1) {
    const double bytes = tokens * static_cast<double>(req.model.text.hidden) * 2 * 2 * s.layers;
    out.push_back({"prefill_tp", "Tensor-parallel all-reduces",
                   collective_seconds(m, Collective::kAllReduce, bytes, tp, std::min(tp, req.parallel.gpus_per_node),
                                      static_cast<int64_t>(2 * s.layers * chunks)),
                   collective_formula(m, Collective::kAllReduce, bytes, tp, tp)});
  }
  return out;
}

Range total(const std::vector<Term>& terms) {
  Range r;
  for (const Term& t : terms) r += t.seconds;
  return r;
}

// The tokens a sequence holds: infer.context_len, except for the llama.cpp
// engines, whose requests state the context as --ctx-size (the KV cells all
// --parallel sequences share; Ollama num_ctx x OLLAMA_NUM_PARALLEL) and refuse
// infer.context_len: the cells the estimate resolved (its ctx_size fact,
// padded as the release pads it, the model's context_length for --ctx-size 0)
// over its sequences. Before, the time model read the request's default 4096
// whatever --ctx-size said.
int64_t context_of(const Request& req, const Estimate& e) {
  if (!infer::llama_cpp::is_engine(req.infer.engine)) return req.infer.context_len;
  const int64_t cells = fact(e, "ctx_size");
  const int64_t seqs = std::max<int64_t>(1, fact(e, "parallel", 1));
  return cells > 0 ? std::max<int64_t>(1, cells / seqs) : req.infer.context_len;
}

}  // namespace

InferTime infer_time(const Request& req, const Estimate& e, const Machine& m) {
  const InferOptions& o = req.infer;
  InferTime out;
  const Shape s = shape_of(req, e);
  out.batch = o.batch;
  const int64_t context = context_of(req, e);
  out.prompt_len = o.prompt_len > 0 ? o.prompt_len : context;
  out.output_tokens = std::max<int64_t>(0, context - out.prompt_len);
  // A decode step reads the context so far: on average the prompt plus half
  // the generated tokens; at the full context when nothing is generated.
  out.mean_context = out.output_tokens > 0
                         ? static_cast<double>(out.prompt_len) + static_cast<double>(out.output_tokens) / 2
                         : static_cast<double>(context);
  const double batch = static_cast<double>(o.batch);
  out.terms = decode_terms(req, m, s, batch, out.mean_context);
  out.prefill_terms = prefill_terms(req, e, m, s, batch, static_cast<double>(out.prompt_len));
  out.decode_step_seconds = total(out.terms);
  out.ttft_seconds = total(out.prefill_terms);
  const Range& step = out.decode_step_seconds;
  out.decode_tokens_per_second_per_sequence = {1.0 / step.high, 1.0 / step.low};
  out.decode_tokens_per_second = {batch / step.high, batch / step.low};
  const double prompt_tokens = batch * static_cast<double>(out.prompt_len);
  out.prefill_tokens_per_second = {prompt_tokens / out.ttft_seconds.high, prompt_tokens / out.ttft_seconds.low};
  out.request_seconds = out.ttft_seconds + step * static_cast<double>(out.output_tokens);
  out.assumptions.push_back(
      "decode steps read every weight on the device and each sequence's keys and values once; TTFT prefills all " +
      fmt(batch) + " prompts together" +
      (o.engine == "vllm" ? " in chunks of max_num_batched_tokens"
       : s.llama          ? " in micro-batches of n_ubatch tokens, each reading every weight"
                          : std::string(" in one forward")));
  if (s.llama) {
    out.assumptions.push_back(
        llama_graphs(m)
            ? "llama.cpp replays a CUDA graph per decode step on this card (compute capability 8.0 or later): its "
              "scheduling and sampling are taken as one eager layer's dispatch; the layers on the CPU are read at "
              "the host's memory bandwidth (hardware.host_memory_gbs) after the GPU's"
            : "llama.cpp runs without CUDA graphs here (before compute capability 8.0, or no NVIDIA card): its "
              "node-by-node launches cost 13.1-27.2 us a layer more a token (measured against graphs on Ampere, "
              "Ada and Hopper cards: llama.cpp PR #6766, issue #6763; not measured on older cards)");
  }
  if (o.engine == "vllm" && o.cuda_graphs) {
    out.assumptions.push_back(
        "vLLM replays a CUDA graph per decode step: its scheduling and sampling are taken as one eager layer's "
        "dispatch (not measured here)");
  }
  return out;
}

}  // namespace vram::speed

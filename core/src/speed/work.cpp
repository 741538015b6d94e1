// One training micro-step's work on one pipeline rank (work.h), counted from
// the rank's view of the model (train/layout.h rank_request: tensor parallel
// already divides every Linear, head and width) and its trainable plan.
#include "speed/work.h"

#include <algorithm>
#include <cmath>

#include "memory/recipe.h"

namespace vram::speed {

namespace {

// The efficiencies the model cannot pin down, as ranges {slow, fast}.
struct Share {
  double slow;
  double fast;
};

// Matmuls of a real model against the card's best measured rate: torch.matmul
// at 4096^3 reached 0.75 (RTX 5090) to 0.92 (RTX 4090) of the same card's best
// size (zzc0721/torch-performance-test-data issues #200 and #78), and a
// transformer's GEMMs are of that order.
constexpr Share kMatmulShare{0.75, 1.0};
// FlashAttention-2, forward + backward: 50-73 % of the A100's 312 TFLOPS
// (Dao 2023, arXiv:2307.08691, abstract and §4.1), i.e. 0.58-0.84 of its
// 271.2 TFLOPS measured matmul rate; other cards are taken at the same
// share of their own matmul rate (FlashAttention-3 reaches more on H100,
// SDPA's math fallback less: the kernel is not something the model knows).
constexpr Share kFlashShare{0.58, 0.84};
// Memory bandwidth reached: 1,397 GB/s in gpt-fast's compiled Llama-2-7B
// decode and "about 1,700 GB/s" empirically at most, on an A100-80GB of
// 2,039 GB/s (pytorch-labs/gpt-fast README at 0f925b5d): 0.685-0.83.
constexpr Share kBandwidthShare{1397.0 / 2039.0, 1700.0 / 2039.0};
// Eager PyTorch dispatches each kernel from Python: 17.7-25.5 us a kernel.
// gpt-fast's eager Llama-2-7B decoded 25.5 tok/s on an A100 (PyTorch blog
// "Accelerating Generative AI with PyTorch II: GPT, Fast", 2023: "heavily CPU
// overhead bound"): 39 ms over 32 layers of 47 kernels (its model.py block:
// two 8-kernel RMSNorms, wqkv, 16 for the rotary embedding of q and k, the
// cache update, repeat_interleave, SDPA, wo, the 5-kernel MLP, two adds);
// transformers generate of Llama-2-7B-chat in 16 bits decoded 40.9 tok/s on an
// RTX 4090 host (h2oai/h2ogpt perf.md): 24.4 ms over 32 layers of 43 kernels
// (LlamaDecoderLayer below, plus the cache's two torch.cat).
constexpr Share kHostPerKernel{25.5e-6, 17.7e-6};  // {slow, fast} seconds

// Kernels of one decoder layer's forward in transformers' eager Llama
// (modeling_llama.py LlamaDecoderLayer): two RMSNorms of 8 (float cast, pow,
// mean, add, rsqrt, mul, cast, weight), q/k/v projections, rotary of 5 each
// for q and k, repeat_kv's 2 copies, SDPA, the output transpose, o_proj, two
// residual adds, the MLP's 5 (gate, up, act, mul, down): 41. Unsloth's fused
// layers: 1-kernel norms, one autograd function each for QKV and the MLP, an
// in-place rotary: about 29 with LoRA on every linear.
constexpr double kLayerKernels = 41;
constexpr double kUnslothLayerKernels = 29;
// PEFT's LoRA Linear adds about 5.5 per adapted layer: the input cast,
// lora_A, lora_B, the scaling, the add (dropout when > 0); a bitsandbytes
// 4-bit Linear one more (the dequantisation before its matmul).
constexpr double kLoraKernels = 5.5;
constexpr double kFourBitKernels = 1;

// Bytes moved per element by the memory-bound kernels of a layer's forward,
// in passes of the activation dtype (a read or a write of one element),
// counted from transformers' eager modules: RMSNorm 18 (the float32 upcast
// and back count double), a fused one (Liger, Unsloth, apex) 3, LayerNorm
// (one native kernel) 3; a residual add 3; the rotary embedding 10 per q/k
// element (2 in Unsloth's in-place kernel); the gated MLP's act and product 5
// per intermediate element (a plain MLP's act 2); dropout 2.5 (mask write,
// product); eager attention's score path 13 per score (the scaled, masked,
// fp32 softmax and its cast back). Backward reads about twice what forward
// does ("Efficient training on a single GPU", transformers docs: an
// activation's backward reads the gradient and the forward output and writes
// one gradient): 2x forward.
constexpr double kRmsEager = 18, kNormFused = 3, kResidual = 3, kRopeEager = 10, kRopeFused = 2, kGatedAct = 5,
                 kPlainAct = 2, kDropout = 2.5, kEagerScores = 13, kBackwardReads = 2;
// The loss over the vocabulary per token: the logits' float32 upcast,
// log-softmax, its gradient and the cast back, 34 B a logit in transformers'
// cross-entropy; a fused / chunked one (Liger FusedLinearCrossEntropy,
// Unsloth) writes the gradient in place: 8 B.
constexpr double kLossBytes = 34, kFusedLossBytes = 8;
// QLoRA: a 4-bit weight is read (0.5 B) and written dequantised (2 B) before
// every matmul it takes part in (bitsandbytes MatMul4Bit forward and
// backward, torchao NF4Tensor's to()).
constexpr double kDequantBytes = 2.5;

Range timed(double work, double rate, Share s) {
  if (work <= 0 || rate <= 0) return {};
  return {work / (rate * s.fast), work / (rate * s.slow)};
}

bool is_lm_head(const ParamGroup& g) { return g.component == std::string(comp::kLmHead); }

// The FLOPs of one micro-step's Linear layers (forward, backward,
// recomputation) and the kernels and dequantisation they bring.
void linear_work(const Request& r, const train::Stage& s, const memory::TrainablePlan& plan, StageWork& w) {
  const ModelSpec& md = r.model;
  const TrainOptions& t = r.train;
  const double vision_tokens =
      s.first ? static_cast<double>(t.micro_batch * t.images_per_sample * md.vision.encoder_tokens_per_image) : 0.0;
  // Layers below the lowest trainable one need no input gradient.
  const double dgrad_share =
      md.text.layers > 0
          ? 1.0 - std::min(1.0, static_cast<double>(plan.first_grad_layer) / static_cast<double>(md.text.layers))
          : 1.0;
  double fwd = 0, bwd = 0, lora = 0, lora_instances = 0, four_bit = 0, dequant = 0, text_fwd = 0;
  for (size_t i = 0; i < md.groups.size(); ++i) {
    const ParamGroup& g = md.groups[i];
    const memory::GroupPlan& gp = plan.groups[i];
    if (gp.trainable) w.trainable_tensors += static_cast<double>(gp.trainable_instances * (g.bias ? 2 : 1));
    if (g.kind != ModuleKind::kLinear) continue;
    const bool text = g.stack == "text";
    const double toks = text ? w.tokens : vision_tokens;
    w.linear_params += static_cast<double>(g.total());
    if (toks <= 0) continue;
    const double active =
        static_cast<double>(g.instances) * static_cast<double>(g.active_num) / static_cast<double>(g.active_den);
    const double mat = static_cast<double>(g.in_features) * static_cast<double>(g.out_features);
    const double f = 2.0 * toks * mat * active;
    fwd += f;
    if (text) text_fwd += f;
    const bool needs_input_grad = text ? (is_lm_head(g) || md.layer_span(g) == 0 || true) : plan.vision_needs_grad;
    if (needs_input_grad) bwd += f * (text && md.layer_span(g) > 0 ? dgrad_share : 1.0);
    if (gp.trainable && g.instances > 0) {
      bwd += f * static_cast<double>(gp.trainable_instances) / static_cast<double>(g.instances);
    }
    if (gp.lora) {
      lora +=
          2.0 * toks * static_cast<double>(gp.lora_params) * std::min(1.0, active / std::max<double>(1, g.instances));
      lora_instances += static_cast<double>(g.instances);
      w.trainable_tensors += 2.0 * static_cast<double>(g.instances);
    }
    if (gp.quantized) {
      four_bit += static_cast<double>(g.instances);
      dequant += mat * static_cast<double>(g.instances) * kDequantBytes;
    }
  }
  if (md.tie_word_embeddings && s.last) {
    // The tied head is the embedding matrix used as a Linear.
    const double f = 2.0 * w.tokens * static_cast<double>(md.text.hidden) * static_cast<double>(md.vocab);
    fwd += f;
    text_fwd += f;
    bwd += f * (t.method == Method::kFull ? 2.0 : 1.0);
  }
  // torchtitan's op-level selective AC saves every matmul's output except
  // every second one (parallelize_llama.py _custom_policy at 04133643: "all
  // compute ops, except every second mm"): half the text matmuls' forward
  // runs again in backward.
  const double recompute = w.full_recompute                                 ? fwd + lora
                           : t.checkpointing == Checkpointing::kSelectiveOp ? 0.5 * text_fwd
                                                                            : 0;
  w.mm_flops = fwd + bwd + 3.0 * lora + recompute;
  w.model_flops_per_token = (fwd + bwd + 3.0 * lora) / std::max(1.0, w.tokens);
  const double passes = 2.0 + (w.full_recompute ? 1.0 : 0.0);  // forward, backward (+ recomputed forward)
  w.mem_bytes += dequant * passes;
  w.host_ops += (kLoraKernels * lora_instances + kFourBitKernels * four_bit) * passes;
  w.mm_formula = fmt(fwd / 1e12) + " TFLOP forward + " + fmt(bwd / 1e12) + " backward" +
                 (lora > 0 ? " + " + fmt(3 * lora / 1e12) + " LoRA adapters" : std::string()) +
                 (recompute > 0 ? " + " + fmt(recompute / 1e12) + " recomputed" : std::string());
  if (dequant > 0) {
    w.assumptions.push_back("4-bit weights dequantised before each matmul they take part in (forward, backward" +
                            std::string(w.full_recompute ? ", recomputation" : "") +
                            "): 2.5 B a weight moved each time (bitsandbytes MatMul4Bit)");
  }
}

// The attention core: scores and their product with the values, per
// attention layer: 2 FLOPs x (q/k head dim + v head dim) x heads x the keys a
// query sees (half the sequence when a fused kernel skips the causal mask's
// blocks, all of it in eager mode or without a causal mask; a sliding window
// caps it).
void attention_work(const Request& r, const train::Stage& s, StageWork& w) {
  const LayerStack& t = r.model.text;
  if (t.heads <= 0 || s.attention_layers <= 0) return;
  const double seq = static_cast<double>(w.tokens > 0 ? r.train.seq_len * r.parallel.cp : 0);
  const double keys = (t.causal && w.flash) ? seq / 2 : seq;
  const double hd = static_cast<double>(t.head_dim + (t.v_head_dim > 0 ? t.v_head_dim : t.head_dim));
  const double sliding = t.sliding_window > 0 && t.layers > 0 ? static_cast<double>(t.sliding_layers) / t.layers : 0;
  const double window = t.sliding_window > 0 ? std::min(keys, static_cast<double>(t.sliding_window)) : keys;
  const double per_token_layer = 2.0 * static_cast<double>(t.heads) * hd * ((1 - sliding) * keys + sliding * window);
  const double fwd = per_token_layer * w.tokens * static_cast<double>(s.attention_layers);
  const double bwd = fwd * (w.flash ? 2.5 : 2.0);  // FlashAttention's backward recomputes the scores (5 GEMMs vs 2)
  const bool recompute = w.full_recompute || r.train.checkpointing == Checkpointing::kSelective;
  w.attn_flops = fwd + bwd + (recompute ? fwd : 0);
  // The model's FLOPs count causal attention at half the square whatever the kernel.
  w.model_flops_per_token +=
      3.0 * per_token_layer * static_cast<double>(s.attention_layers) * (t.causal && !w.flash ? 0.5 : 1.0);
  w.attn_formula = fmt(fwd / 1e12) + " TFLOP forward (" + fmt(keys) + " keys a query, " +
                   fmt(static_cast<double>(s.attention_layers)) + " layers) + " + fmt(bwd / 1e12) + " backward" +
                   (recompute ? " + " + fmt(fwd / 1e12) + " recomputed" : std::string());
}

// The memory-bound kernels of the layers and the loss.
void memory_work(const Request& r, const train::Stage& s, StageWork& w) {
  const LayerStack& t = r.model.text;
  const TrainOptions& o = r.train;
  const bool unsloth = o.kernels == Kernels::kUnsloth;
  const double h = static_cast<double>(t.hidden) / static_cast<double>(std::max<int64_t>(t.hidden_split, 1));
  const double norm = t.norm == NormKind::kRmsNorm && !(o.fused_norm || unsloth) ? kRmsEager : kNormFused;
  double per_layer = static_cast<double>(t.norms_per_layer) * norm * h + 2 * kResidual * h;
  if (t.position_encoding == "rope" || t.position_encoding.empty()) {
    per_layer += static_cast<double>((t.heads + t.kv_heads) * t.head_dim) * (unsloth ? kRopeFused : kRopeEager);
  }
  const double act = t.mlp == MlpKind::kGated ? kGatedAct : kPlainAct;
  const double moe_share = s.layers > 0 ? static_cast<double>(s.moe_layers) / static_cast<double>(s.layers) : 0;
  const double moe_width =
      static_cast<double>(t.experts_per_token * t.expert_intermediate + t.shared_expert_intermediate);
  per_layer += act * ((1 - moe_share) * static_cast<double>(t.intermediate) + moe_share * moe_width);
  if (t.dropout > 0) per_layer += 3 * kDropout * h;
  double scores = 0;
  if (!w.flash) {
    scores = kEagerScores * static_cast<double>(t.heads) * static_cast<double>(o.seq_len * r.parallel.cp) *
             static_cast<double>(s.attention_layers) / std::max(1.0, static_cast<double>(s.layers));
    if (t.dropout > 0) scores += kDropout * static_cast<double>(t.heads * o.seq_len);
  }
  // Op-level selective AC saves only the matmuls', SDPA's and
  // reduce-scatter's outputs (torchtitan parallelize_llama.py
  // no_recompute_list at 04133643): every memory-bound op of the layer runs
  // again in backward, as under full recomputation.
  const bool replays = w.full_recompute || o.checkpointing == Checkpointing::kSelectiveOp;
  const double passes = 1 + kBackwardReads + (replays ? 1.0 : 0.0);
  const double layers = w.tokens * static_cast<double>(s.layers) * w.act_bytes;
  double bytes = layers * (per_layer * passes + scores * (passes + (o.checkpointing == Checkpointing::kSelective)));
  double loss = 0;
  if (s.last) {
    loss = w.tokens * static_cast<double>(r.model.vocab) * (o.fused_loss || unsloth ? kFusedLossBytes : kLossBytes);
    bytes += loss;
  }
  w.mem_bytes += bytes;
  w.mem_formula =
      fmt(w.mem_bytes / 1e9) + " GB (layers " + fmt(layers * per_layer * passes / 1e9) + ", " +
      (scores > 0 ? "eager attention scores " + fmt(layers * scores * passes / 1e9) + ", " : std::string()) + "loss " +
      fmt(loss / 1e9) + ")";
}

// The kernels the host dispatches: each layer's forward, as many for its
// backward (the autograd engine replays the graph op by op), again for a
// recomputed forward.
void host_work(const Request& r, const train::Stage& s, StageWork& w) {
  const double per_layer = r.train.kernels == Kernels::kUnsloth ? kUnslothLayerKernels : kLayerKernels;
  const double passes = 2.0 + (w.full_recompute ? 1.0 : 0.0);
  w.host_ops += per_layer * static_cast<double>(s.layers) * passes;
  w.host_formula = fmt(w.host_ops) + " kernels (" + fmt(per_layer) + " a layer forward, as many backward" +
                   (w.full_recompute ? ", again recomputed" : "") + ") x " + fmt(kHostPerKernel.fast * 1e6) + "-" +
                   fmt(kHostPerKernel.slow * 1e6) + " us";
}

}  // namespace

Range bandwidth_time(double bytes, double gbs) { return timed(bytes, gbs * 1e9, kBandwidthShare); }

std::string bandwidth_share_text() {
  return fmt(kBandwidthShare.slow) + "-" + fmt(kBandwidthShare.fast) + " of it reached (gpt-fast on A100)";
}

Range host_time(double kernels) { return {kernels * kHostPerKernel.fast, kernels * kHostPerKernel.slow}; }

Range StageWork::matmul_time(const Machine& m) const {
  return timed(mm_flops, (fp32 ? m.fp32_tflops : m.matmul_tflops) * 1e12, kMatmulShare);
}

Range StageWork::attention_time(const Machine& m) const {
  const double rate = (fp32 ? m.fp32_tflops : m.matmul_tflops) * 1e12;
  return timed(attn_flops, rate, flash && !fp32 ? kFlashShare : kMatmulShare);
}

Range StageWork::memory_time(const Machine& m) const { return bandwidth_time(mem_bytes, m.memory_gbs); }

StageWork stage_work(const Request& req, const train::Stage& stage) {
  const Request r = train::rank_request(req, stage);
  const memory::TrainablePlan plan = memory::plan_trainable(r, stage.last);
  const memory::Dtypes dt = memory::dtypes_for(r);
  StageWork w;
  w.tokens = static_cast<double>(r.train.micro_batch * r.train.seq_len);
  w.layers = static_cast<double>(stage.layers);
  w.attention_layers = static_cast<double>(stage.attention_layers);
  w.moe_layers = static_cast<double>(stage.moe_layers);
  w.trainable_params = static_cast<double>(plan.base_trainable + plan.lora_params);
  w.weight_bytes = static_cast<double>(r.parallel.fsdp_param_bytes > 0 ? r.parallel.fsdp_param_bytes : dt.weight);
  w.grad_bytes = static_cast<double>(r.parallel.fsdp_reduce_bytes > 0 ? r.parallel.fsdp_reduce_bytes
                                     : plan.base_trainable > 0        ? dt.grad
                                                                      : dt.adapter);
  w.state_bytes = static_cast<double>(plan.base_trainable > 0 ? dt.state : dt.adapter);
  w.master_bytes = static_cast<double>(dt.master);
  w.act_bytes = static_cast<double>(dt.compute);
  w.fp32 = r.train.precision == Precision::kFp32 && r.train.method != Method::kQlora;
  w.flash = r.train.attention != AttentionImpl::kEager;
  w.full_recompute = r.train.checkpointing == Checkpointing::kFull;
  linear_work(r, stage, plan, w);
  attention_work(r, stage, w);
  memory_work(r, stage, w);
  host_work(r, stage, w);
  if (dt.autocast && dt.weight >= 4) {
    // torch.autocast casts every fp32 weight to 16 bits once per forward
    // (its weight cache lives for one forward).
    w.mem_bytes += w.linear_params * 6.0 * (w.full_recompute ? 2.0 : 1.0);
    w.assumptions.push_back("autocast casts the fp32 weights to 16 bits every forward: 6 B a weight moved");
  }
  // Backward's share of the compute: its FLOPs over all of them.
  const double all = w.mm_flops + w.attn_flops;
  if (all > 0) w.backward_share = std::min(0.9, std::max(0.3, 1.0 - (w.mm_flops / 3 + w.attn_flops / 4.5) / all));
  return w;
}

Range micro_step(const StageWork& w, const Machine& m) {
  const Range gpu = w.matmul_time(m) + w.attention_time(m) + w.memory_time(m);
  return max(gpu, host_time(w.host_ops));
}

std::vector<Term> micro_terms(const StageWork& w, const Machine& m, double steps) {
  const Range mm = w.matmul_time(m) * steps, att = w.attention_time(m) * steps, mem = w.memory_time(m) * steps;
  const Range gpu = mm + att + mem;
  const Range host = host_time(w.host_ops) * steps;
  const std::string per = fmt(steps) + " micro-steps of " + fmt(w.tokens) + " tokens: ";
  std::vector<Term> out = {
      {"matmul", "Matmuls (Linear layers)", mm,
       per + w.mm_formula + " at " + fmt(w.fp32 ? m.fp32_tflops : m.matmul_tflops) + " TFLOPS measured x " +
           fmt(kMatmulShare.slow) + "-" + fmt(kMatmulShare.fast)},
      {"attention", "Attention", att,
       per + w.attn_formula + " at " + fmt(w.fp32 ? m.fp32_tflops : m.matmul_tflops) + " TFLOPS x " +
           (w.flash && !w.fp32 ? fmt(kFlashShare.slow) + "-" + fmt(kFlashShare.fast) + " (FlashAttention-2's share)"
                               : fmt(kMatmulShare.slow) + "-" + fmt(kMatmulShare.fast) + " (eager matmuls)")},
      {"memory_bound", "Memory-bound kernels", mem,
       per + w.mem_formula + " at " + fmt(m.memory_gbs) + " GB/s x " + bandwidth_share_text()},
  };
  if (host.high > gpu.high || host.low > gpu.low) {
    // The host sets the pace at one end at least: what it adds on top of the
    // GPU's kernels.
    out.push_back({"host_dispatch",
                   "Host dispatch (eager PyTorch)",
                   {std::max(0.0, host.low - gpu.low), std::max(0.0, host.high - gpu.high)},
                   per + w.host_formula + ": the GPU waits for the host where this exceeds its kernels"});
  }
  return out;
}

}  // namespace vram::speed

// Saved activations of the layer stack (activation_stack.h).
#include "memory/activation_stack.h"

#include <algorithm>
#include <cmath>

#include "format.h"
#include "memory/bytes.h"
#include "memory/overheads.h"

namespace vram::memory {

int64_t to_bytes(double x, std::string_view what) { return bytes::ceil(x, what); }

int64_t ActivationStack::resident(int64_t stack_bytes) const {
  return offload ? std::min(stack_bytes, 2 * layer_max) : stack_bytes;
}

namespace {

// One layer's saved tensors as allocations of `tokens` tokens, largest first.
std::vector<Piece> layer_pieces(const LayerActivations& a, bool selective, int64_t tokens) {
  std::vector<Piece> out;
  for (const auto& i : a.items) {
    if (selective && i.score_path) continue;
    const int64_t bytes = to_bytes(i.bytes_per_token * static_cast<double>(tokens), "a saved activation");
    if (bytes > 0) out.push_back({bytes, 1});
  }
  std::sort(out.begin(), out.end(), [](const Piece& x, const Piece& y) { return x.bytes > y.bytes; });
  return out;
}

// Final norm and lm_head inputs, bytes per token (the loss region is never
// checkpointed).
double head_per_token(const Request& req, const TrainablePlan& plan, const Dtypes& dt, bool last) {
  const ModelSpec& m = req.model;
  const bool any_layer_grad = plan.first_grad_layer < m.text.layers;
  bool head_trains = m.tie_word_embeddings && req.train.method == Method::kFull;
  for (size_t i = 0; i < m.groups.size(); ++i) {
    if (m.groups[i].component == std::string(comp::kLmHead) && plan.groups[i].trainable) head_trains = true;
  }
  double tok = 0;
  if (last && (any_layer_grad || head_trains)) {
    // Final RMSNorm: HF's keeps its fp32 upcast input; the fused ones (Liger,
    // Unsloth's Fast_RMS_Layernorm) keep X as it is and the fp32 rstd.
    const bool fused = req.train.fused_norm || req.train.kernels == Kernels::kUnsloth;
    tok += (fused ? static_cast<double>(dt.residual) : 4.0) * m.text.hidden + 4.0;
  }
  if (last && head_trains) tok += (dt.autocast ? 2.0 : dt.compute) * m.text.hidden;
  if (const HeadLora& hl = plan.head_lora; last && hl.on) {
    // LoRA on the head (peft tuners/lora/layer.py Linear.forward): x =
    // _cast_input_dtype(x, lora_A.weight.dtype), then lora_B(lora_A(dropout(x))).
    // lora_A saves its input: the final norm's output, or its cast to the
    // adapter dtype (fp32 adapters under a bf16 model make a copy), or the
    // dropout output plus its 1-byte mask; under autocast the Linear saves its
    // own bf16 cast (autocast_mode.cpp). The frozen head saves nothing of it.
    // lora_B saves lora_A's output, r values per token.
    const double a = dt.autocast ? 2.0 : static_cast<double>(dt.adapter);
    tok += a * static_cast<double>(hl.in) + (req.train.lora.dropout > 0 ? 1.0 * static_cast<double>(hl.in) : 0.0);
    tok += a * static_cast<double>(req.train.lora.rank);
  }
  return tok;
}

// Vision tower tokens (VLMs): images_per_sample x encoder tokens.
int64_t vision_bytes(const Request& req, const TrainablePlan& plan, const Dtypes& dt, int64_t micro_batch) {
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  if (t.images_per_sample > 0 && !m.media_unsupported.empty()) {
    fail(errc::kUnsupported, "train.images_per_sample",
         "train.images_per_sample (" + std::to_string(t.images_per_sample) + ") with " + vram::quoted(m.model_type) +
             ": " + m.media_unsupported + "; estimate text-only samples (images_per_sample 0)");
  }
  const LayerStack* vs = m.stack("vision");
  if (vs == nullptr || t.images_per_sample <= 0 || !plan.vision_needs_grad) return 0;
  const int64_t nv = bytes::mul(micro_batch, t.images_per_sample,
                                std::max<int64_t>(m.vision.encoder_tokens_per_image, 1), "vision tower tokens");
  const LayerActivations va = layer_activations(req, *vs, plan, dt, m.vision.encoder_tokens_per_image, false, true);
  return bytes::mul(to_bytes(va.per_token() * static_cast<double>(nv), "vision tower activations"), vs->layers,
                    "vision tower activations");
}

// A fixed-length encoder (Whisper): every sample runs encoder_positions
// positions through the "encoder" stack; saved like the vision tower's when
// any of its weights (or adapters) takes a gradient.
int64_t encoder_bytes(const Request& req, const TrainablePlan& plan, const Dtypes& dt, int64_t micro_batch) {
  const ModelSpec& m = req.model;
  const LayerStack* es = m.stack("encoder");
  if (es == nullptr || m.encoder_positions <= 0 || !plan.vision_needs_grad) return 0;
  const int64_t n = bytes::mul(micro_batch, m.encoder_positions, "encoder positions");
  const LayerActivations ea = layer_activations(req, *es, plan, dt, m.encoder_positions, false, true);
  return bytes::mul(to_bytes(ea.per_token() * static_cast<double>(n), "encoder activations"), es->layers,
                    "encoder activations");
}

// Image cross-attention (Mllama, modeling_mllama.py
// MllamaTextCrossAttention): per cross-attention layer k = k_norm(k_proj(x)),
// v = v_proj(x) over the projected vision tokens x (cross_attention_states,
// text hidden each, one tensor shared by every such layer), for
// images_per_sample x cross_tokens_per_image tokens per sample. SDPA saves k
// and v for the query's gradient (kv heads x head_dim each); k_norm saves its
// input when k_proj's output needs a gradient (k_proj trains, or x needs
// one); x itself is saved (once) by k_proj / v_proj when either trains or
// carries a LoRA adapter, or when the tower or projector trains. Under full
// checkpointing a layer keeps only its inputs (x) and recomputes the rest.
int64_t image_cross_bytes(const Request& req, const TrainablePlan& plan, const Dtypes& dt, int64_t micro_batch) {
  const ModelSpec& m = req.model;
  const LayerStack& st = m.text;
  const TrainOptions& t = req.train;
  if (st.image_cross_layers <= 0 || t.images_per_sample <= 0 || plan.first_grad_layer >= st.layers) return 0;
  bool k_trains = false, x_saved = plan.vision_needs_grad;
  for (size_t i = 0; i < m.groups.size() && i < plan.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    if (g.stack != "text" || (g.module != "k_proj" && g.module != "v_proj")) continue;
    const GroupPlan& gp = plan.groups[i];
    if (gp.trainable || gp.lora) x_saved = true;
    if (g.module == "k_proj" && gp.trainable) k_trains = true;
  }
  const double tokens = static_cast<double>(micro_batch) * static_cast<double>(t.images_per_sample) *
                        static_cast<double>(m.vision.cross_tokens_per_image);
  const double elem = dt.autocast ? 2.0 : static_cast<double>(dt.compute);
  const double kv = static_cast<double>(st.kv_heads * st.head_dim);
  const bool full = t.checkpointing == Checkpointing::kFull;
  const double per_layer = full ? 0.0 : (2.0 + ((k_trains || plan.vision_needs_grad) ? 1.0 : 0.0)) * kv;
  const double shared = (x_saved || full) ? static_cast<double>(st.hidden) : 0.0;
  const double per_token = elem * (shared + per_layer * static_cast<double>(st.image_cross_layers));
  return to_bytes(per_token * tokens, "image cross-attention activations");
}

// Full checkpointing: HF gradient checkpointing saves each decoder layer's
// input (Korthikanti et al. 2022: 2sbh per layer) and re-runs one layer at a
// time in backward. Gemma 3n's layer input is altup_inputs stacked hidden
// states.
void checkpointed_stack(ActivationStack& a, const Request& req, const Dtypes& dt, int64_t N, int64_t grad_layers) {
  const LayerStack& st = req.model.text;
  const int64_t h = st.hidden;
  constexpr const char* kSaved = "saved activations";
  const double ckpt_factor = req.calibration.checkpointing.value_or(1.0);
  const double in_width = static_cast<double>(h) * static_cast<double>(std::max<int64_t>(st.altup_inputs, 1));
  const int64_t per =
      to_bytes(static_cast<double>(dt.residual) * in_width * static_cast<double>(N) * ckpt_factor, kSaved);
  a.layers = bytes::mul(per, grad_layers, kSaved);
  a.one_layer = std::max(a.layer_dense, a.saved_moe > 0 ? a.layer_moe : 0);
  a.formula = fmt_int(grad_layers) + " layers x " + fmt_int(N) + " tokens x " + std::to_string(dt.residual) +
              " B x h " + fmt_int(h) +
              (st.altup_inputs > 1 ? " x " + fmt_int(st.altup_inputs) + " AltUp copies" : std::string()) +
              " (checkpointed layer inputs)";
  a.layer_dense = per;
  a.layer_moe = per;
  a.dense_pieces = a.moe_pieces = {{per, 1}};
}

// Op-level selective checkpointing (recipe.h op_sac_layer): each layer
// keeps its input and the outputs its policy saves; its backward re-runs
// the rest of the layer (the recomputed tensors are one_layer less what
// was saved).
void op_sac_stack(ActivationStack& a, const Request& req, const Dtypes& dt, int64_t N, int64_t grad_layers) {
  const LayerStack& st = req.model.text;
  constexpr const char* kSaved = "saved activations";
  const double ckpt_factor = req.calibration.checkpointing.value_or(1.0);
  const std::vector<SavedItem> op = op_sac_layer(st, dt, req.train.attention, false);
  if (op.empty() || a.saved_moe > 0) {
    fail(errc::kUnsupported, "train.grad_checkpointing",
         "train.grad_checkpointing \"selective_op\" (torchtitan's op-level policy) is written for dense decoder "
         "layers with direct q/k/v projections; use \"full\" or \"selective\" for " +
             req.model.model_type);
  }
  LayerActivations opl;
  opl.items = op;
  const int64_t per = to_bytes(opl.per_token() * static_cast<double>(N) * ckpt_factor, kSaved);
  a.layers = bytes::mul(per, grad_layers, kSaved);
  a.one_layer = std::max<int64_t>(a.layer_dense - per, 0);
  a.formula = fmt_int(grad_layers) + " layers x " + fmt_int(N) + " tokens x " +
              fmt_int(to_bytes(opl.per_token(), kSaved)) +
              " B (op-level selective checkpointing: layer input, the 1st, 3rd, ... matmul outputs, attention output)";
  a.layer_dense = per;
  a.layer_moe = per;
  a.dense_pieces = a.moe_pieces = layer_pieces(opl, false, N);
}

// No checkpointing (or the attention scores' selective one): every saved
// tensor of every layer, and, when the layer is known tensor by tensor, its
// forward in source order (ActivationStack::layer_ops).
void saved_stack(ActivationStack& a, const LayerActivations& dense_act, const LayerActivations& moe_act,
                 double dense_tok, double moe_tok, bool selective, const StagePosition& pos, int64_t N) {
  constexpr const char* kSaved = "saved activations";
  a.layers = bytes::add(bytes::mul(a.layer_dense, a.saved_dense, kSaved), bytes::mul(a.layer_moe, a.saved_moe, kSaved),
                        kSaved);
  a.formula =
      fmt_int(N) + " tokens x (" + fmt_int(a.saved_dense) + " layers x " + fmt_int(to_bytes(dense_tok, kSaved)) + " B" +
      (a.saved_moe > 0 ? " + " + fmt_int(a.saved_moe) + " MoE layers x " + fmt_int(to_bytes(moe_tok, kSaved)) + " B"
                       : "") +
      ") per token";
  a.dense_pieces = layer_pieces(dense_act, selective, N);
  a.moe_pieces = layer_pieces(moe_act, selective, N);
  if (selective || a.offload || a.saved_moe != 0 || dense_act.ops.empty() || pos.in_flight_num != pos.in_flight_den) {
    return;
  }
  int64_t kept = 0;
  size_t last_keep = 0;
  for (const ForwardOp& o : dense_act.ops) {
    const int64_t b = bytes::add(to_bytes(o.bytes_per_token * static_cast<double>(N), kSaved), o.bytes_fixed, kSaved);
    if (o.kind == ForwardOp::Kind::kKeep) {
      kept += b;
      last_keep = a.layer_ops.size();
    }
    a.layer_ops.push_back({o.kind, b, o.slot});
  }
  // Per-tensor rounding: the last kept tensor takes the difference, so
  // the kept tensors add up to the layer's figure.
  a.layer_ops[last_keep].bytes += a.layer_dense - kept;
  if (a.layer_ops[last_keep].bytes <= 0) a.layer_ops.clear();
}

// train.returns_kv_cache under Unsloth without checkpointing. Unsloth
// 2024.1 models/llama.py: LlamaModel_fast_forward takes use_cache from the
// config (true for Llama) and only turns it off under gradient
// checkpointing; every layer's LlamaAttention_fast_forward returns (K, V)
// after the rotary, at kv-head width; the model returns them as
// past_key_values, and the Trainer's Accelerate wrapper converts every
// 16-bit output to fp32 (accelerate utils/operations.py convert_to_fp32
// recurses into the tuples).
void returned_kv_cache(ActivationStack& a, const Request& req, const Dtypes& dt, int64_t N) {
  const TrainOptions& t = req.train;
  const LayerStack& st = req.model.text;
  const int64_t L = st.layers;
  constexpr const char* kKv = "the returned key/value cache";
  const int64_t pa = dt.autocast ? 2 : dt.compute;
  const int64_t dv = st.v_head_dim > 0 ? st.v_head_dim : st.head_dim;
  const int64_t k1 = bytes::mul(bytes::mul(N, st.kv_heads * st.head_dim, kKv), pa, kKv);
  const int64_t v1 = bytes::mul(bytes::mul(N, st.kv_heads * dv, kKv), pa, kKv);
  const bool in_ops = std::any_of(a.layer_ops.begin(), a.layer_ops.end(),
                                  [](const ActivationStack::Op& o) { return o.kind == ForwardOp::Kind::kReturn; });
  const bool expanded = st.kv_heads < st.heads && t.attention != AttentionImpl::kFlash2 &&
                        !(t.attention == AttentionImpl::kSdpa && t.sdpa_gqa_native);
  if (expanded) {
    const int64_t kv = bytes::mul(bytes::add(k1, v1, kKv), L, kKv);
    if (!in_ops) a.returned_kv = kv;
    a.formula += " + " + fmt_int(L) + " layers x K and V at kv-head width (" + fmt_int(bytes::add(k1, v1, kKv)) +
                 " B) returned by model() until the loss (train.returns_kv_cache)";
  }
  if (pa == 2) {
    a.kv_fp32_pieces = {{2 * k1, L}, {2 * v1, L}};
    a.returned_kv_fp32 = bytes::mul(bytes::add(2 * k1, 2 * v1, kKv), L, kKv);
  }
}

// Gemma 3n around the layers (modeling_gemma3n.py Gemma3nTextModel.forward,
// get_per_layer_inputs, project_per_layer_inputs), alive from the
// embeddings to the end of backward: the per-layer embedding rows
// (layers x P), per_layer_model_projection's output (layers x P) and
// input (h), per_layer_projection_norm's fp32 copy (4 B) and its
// normalised value (4 B, counted as if its weight trains) with one
// statistic per layer slot, and per_layer_inputs (layers x P), whose
// slice every layer multiplies; AltUp's altup_projections and
// altup_unembed_projections (n - 1 each) keep their output for the
// magnitude rescaling (2 h each: the output and the rescaled value), the
// stacked output of the last layer (n x h) is read by the unembedding
// projections. An upper bound: frozen projections keep less.
int64_t per_layer_inputs(const LayerStack& st, const Dtypes& dt, int64_t N) {
  const int64_t L = st.layers;
  const double lp = static_cast<double>(L) * static_cast<double>(st.per_layer_input);
  const double pa = dt.autocast ? 2.0 : static_cast<double>(dt.compute);
  const double n = static_cast<double>(std::max<int64_t>(st.altup_inputs, 1));
  const double h = static_cast<double>(st.hidden);
  const double tok =
      pa * 3.0 * lp + 8.0 * lp + 4.0 * static_cast<double>(L) + pa * h + pa * (n - 1.0) * 4.0 * h + pa * n * h;
  return to_bytes(tok * static_cast<double>(N), "per-layer embedding activations");
}

// LitGPT fit() (litgpt/finetune/lora.py at 43c44323): `logits = model(
// input_ids, lm_head_chunk_size=128)` keeps last step's logits (model
// dtype) until this step's model() returns, and through their grad_fn
// the graph, whose MatMul4Bit nodes still hold their inputs in
// ctx.tensors (bitsandbytes < 0.43.2; backward releases only saved
// variables). The lm_head chunks' inputs are views of the final norm
// output, which they keep alive too.
void previous_logits(ActivationStack& a, const Request& req, const TrainablePlan& plan, const Dtypes& dt,
                     const StateSizes& sz, int64_t N) {
  const LayerStack& st = req.model.text;
  constexpr const char* kPrev = "the previous step's logits and 4-bit inputs";
  // train.outputs_fp32: the loop holds the wrapper's fp32 copies.
  const int64_t logit_bytes = req.train.outputs_fp32 ? 4 : static_cast<int64_t>(dt.compute);
  a.logits = bytes::mul(logit_bytes, N, req.model.vocab, kPrev);
  double kept = quant_kept_inputs(req, st, plan, dt) * static_cast<double>(a.saved_dense + a.saved_moe);
  if (req.train.quant.saves_input && sz.head_dequant > 0) kept += static_cast<double>(dt.compute) * st.hidden;
  a.prev_kept_inputs = to_bytes(kept * static_cast<double>(N), kPrev);
}

}  // namespace

ActivationStack activation_stack(const Request& req, const TrainablePlan& plan, const Dtypes& dt, const StateSizes& sz,
                                 const StagePosition& pos, int64_t micro_batch, int64_t s) {
  const TrainOptions& t = req.train;
  const LayerStack& st = req.model.text;
  const int64_t L = st.layers;
  const int64_t N = bytes::mul(micro_batch, s, "tokens per micro-batch");
  const int64_t h = st.hidden;
  ActivationStack a;
  a.first_grad_layer = plan.first_grad_layer;
  a.offload = t.activation_offload;
  const int64_t grad_layers = L - plan.first_grad_layer;
  // Which layers train their base weights (freeze by layer index trains
  // only some; every other method trains all or none).
  const bool selective = t.checkpointing == Checkpointing::kSelective;
  const LayerActivations dense_act = layer_activations(req, st, plan, dt, s, false, true);
  const LayerActivations moe_act =
      st.moe_layers > 0 ? layer_activations(req, st, plan, dt, s, true, true) : LayerActivations{};
  const double dense_tok = selective ? dense_act.per_token_without_scores() : dense_act.per_token();
  const double moe_tok = selective ? moe_act.per_token_without_scores() : moe_act.per_token();
  // Saved layers: those at or above first_grad_layer. MoE layers sit above
  // the dense ones (DeepSeek first_k_dense_replace).
  a.saved_moe = std::min(st.moe_layers, grad_layers);
  a.saved_dense = std::max<int64_t>(grad_layers - a.saved_moe, 0);
  constexpr const char* kSaved = "saved activations";
  a.layer_dense = to_bytes(dense_tok * static_cast<double>(N), kSaved);
  a.layer_moe = to_bytes(moe_tok * static_cast<double>(N), kSaved);
  if (t.checkpointing == Checkpointing::kFull) {
    checkpointed_stack(a, req, dt, N, grad_layers);
  } else if (t.checkpointing == Checkpointing::kSelectiveOp) {
    op_sac_stack(a, req, dt, N, grad_layers);
  } else {
    saved_stack(a, dense_act, moe_act, dense_tok, moe_tok, selective, pos, N);
  }
  if (t.returns_kv_cache && t.kernels == Kernels::kUnsloth && t.checkpointing == Checkpointing::kNone) {
    returned_kv_cache(a, req, dt, N);
  }
  a.head = to_bytes(head_per_token(req, plan, dt, pos.last) * static_cast<double>(N), "the head's saved inputs");
  a.vision = bytes::add(vision_bytes(req, plan, dt, micro_batch), encoder_bytes(req, plan, dt, micro_batch),
                        "encoder activations");
  a.image_kv = image_cross_bytes(req, plan, dt, micro_batch);
  if (st.per_layer_input > 0 && plan.first_grad_layer < L) a.per_layer_inputs = per_layer_inputs(st, dt, N);
  // Activation offloading (torch.autograd.graph.save_on_cpu, or the
  // "offload" gradient checkpointing of axolotl / Unsloth): saved tensors
  // of the layer stack live in pinned host memory; the GPU holds the layer
  // being computed and the one being prefetched.
  a.layer_max = std::max(a.layer_dense, a.saved_moe > 0 ? a.layer_moe : 0);
  // 1F1B: pipeline rank r holds up to pp - r micro-batches in flight;
  // interleaving holds a fraction more (layout.h pipeline_stages).
  auto in_flight = [&](int64_t x) {
    return ceil_div(bytes::mul(x, pos.in_flight_num, "activations of the micro-batches in flight"), pos.in_flight_den);
  };
  a.layers = in_flight(a.layers);
  a.layer_dense = in_flight(a.layer_dense);
  a.layer_moe = in_flight(a.layer_moe);
  // Backward of one layer: the hidden-state gradients and the attention
  // kernel's workspaces, one dequantised 4-bit weight (MatMul4Bit), and the
  // gradient flowing into the layer below.
  constexpr const char* kBackward = "one layer's backward temporaries";
  // As the allocations they are, in the order they are made: under
  // checkpointing the re-run layer (torch 2.2 utils/checkpoint.py
  // CheckpointFunction.backward re-runs the forward before its backward),
  // the dequantised weight (the top Linear's backward, down_proj's
  // MatMul4Bit.backward, runs before the MLP's other gradients exist), the
  // backward's tensors, then the gradient flowing down.
  if (a.one_layer > 0) a.backward_pieces.push_back({a.one_layer, 1});
  if (sz.qlora_dequant > 0) a.backward_pieces.push_back({sz.qlora_dequant, 1});
  a.backward_temp = bytes::add(
      to_bytes(layer_backward_transient(req, st, dt, s, N, &a.backward_pieces) * static_cast<double>(N), kBackward),
      sz.qlora_dequant, kBackward);
  a.dx = bytes::mul(bytes::mul(static_cast<int64_t>(dt.residual), N, h, "the hidden-state gradient"),
                    std::max<int64_t>(st.altup_inputs, 1), "the hidden-state gradient");
  a.backward_pieces.push_back({a.dx, 1});
  if (t.keeps_previous_logits && pos.last) previous_logits(a, req, plan, dt, sz, N);
  return a;
}

}  // namespace vram::memory

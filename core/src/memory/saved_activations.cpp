// Saved tensors per transformer layer: what autograd keeps for backward.
//
// Rules (research/memory-internals.md §4.2, derived from autograd formulas):
// - y = x W^T saves x only when W needs a gradient; a frozen Linear saves
//   nothing (grad_x = grad_y W needs only W). A 4-bit Linear saves no input
//   in bitsandbytes >= 0.43.2 (autograd/_functions.py MatMul4Bit.forward:
//   ctx.tensors = (None, B), PR #1270 "fix QLoRA mem bug: delete useless
//   buffered activation"); 0.41.x-0.43.1 kept it whenever it needs a gradient
//   (ctx.tensors = (A, B)), which train.quant.saves_input selects. What it
//   keeps is the input after Linear4bit.forward's x.to(compute_dtype)
//   (bitsandbytes nn/modules.py): the tensor itself when it already is in the
//   compute dtype, else each 4-bit Linear's own cast copy.
// - a * b saves b when a needs a gradient and a when b does.
// - HF RMSNorm (modeling_llama.py LlamaRMSNorm) upcasts to fp32 (saved by pow
//   and mul: 4 B/elem) and saves the normalised value for `weight *` only when
//   the weight trains. A fused RMSNorm (Liger) saves the input and rstd.
// - LayerNorm (aten native_layer_norm) saves its input, mean and rstd.
// - FlashAttention-2 / SDPA save q, k, v, out and the fp32 log-sum-exp
//   (flash_attn_interface.py FlashAttnFunc.forward: save_for_backward(q, k, v,
//   out_padded, softmax_lse, rng_state)).
// - Eager attention saves the fp32 softmax output and the probabilities cast
//   to the compute dtype (modeling_llama.py eager_attention_forward); PyTorch
//   <= 1.10 also kept softmax's input (train.softmax_saves_input).
// - SiLU / GELU (F.gelu) save their input; NewGELUActivation ("gelu_new",
//   activations.py) is composed of pow/tanh/mul and saves 4 tensors.
// - Under torch.autocast each Linear casts an fp32 input to bf16 itself, and
//   the cast copy is what it saves (autocast_mode.cpp: only leaf weights are
//   cached), so fp32 inputs feeding k linears cost k bf16 copies.
// - Unsloth's patched Llama-family layers (train.kernels unsloth; unslothai/
//   unsloth at 015bdef0, the same in release 2024.1 at 2f55935f):
//   kernels/fast_lora.py LoRA_MLP.forward saves X, e = gate(X) and g = up(X)
//   (ctx.save_for_backward(gateA, gateB, upA, upB, downA, downB, X, e, g)):
//   the SwiGLU product h = silu(e) * g, down_proj's input, is recomputed in
//   backward, and no LoRA intermediate is kept (X @ A is recomputed);
//   LoRA_QKV.forward saves X only; LoRA_W.forward (o_proj) saves X, which
//   is the attention output itself unless SDPA's transpose made a copy. The
//   adapters are cast to X's dtype (A.to(dtype)), so no fp32 copy of X.
//   FastLlamaModel.patch_peft_model applies them only when lora_dropout == 0
//   and bias == 'none', per block (q/k/v, o, gate/up/down) whose linears
//   all carry LoRA (not DoRA); other blocks keep PEFT's layers.
//   kernels/rms_layernorm.py Fast_RMS_Layernorm.forward saves X (its input,
//   the residual stream's dtype) and r (fp32 rstd per row), as Liger does.
//   kernels/rope_embedding.py Fast_RoPE_Embedding rotates Q and K in place
//   and saves only cos/sin (shared caches), so q and k after rotary are the
//   projections' outputs. Attention (utils/attention_dispatch.py
//   run_attention): flash_attn saves q, k, v (kv heads), out and lse;
//   xformers in training expands K and V to every head (K_mod.reshape(bsz,
//   kv_seq_len, n_heads, head_dim) when requires_grad) and keeps those;
//   SDPA uses enable_gqa when torch has it (sdpa_gqa_native) and returns
//   out.transpose(1, 2), which the o_proj reshape copies.
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "memory/bytes.h"
#include "memory/recipe.h"
#include "memory/timeline.h"

namespace vram::memory {

double LayerActivations::per_token() const {
  double s = 0;
  for (const auto& i : items) s += i.bytes_per_token;
  return s;
}

double LayerActivations::per_token_without_scores() const {
  double s = 0;
  for (const auto& i : items) {
    if (!i.score_path) s += i.bytes_per_token;
  }
  return s;
}

namespace {

struct LinearUse {
  bool trains = false;     // base weight trains
  bool lora = false;       // adapter attached
  bool quantized = false;  // 4-bit
  int64_t out = 0;         // output features (DoRA keeps tensors of this width)
};

// The per-layer Linear modules of one stack by role, found by component and
// shape so every family's leaf names work (BERT calls three of them "dense").
struct Roles {
  std::vector<LinearUse> attn_in;  // read the attention norm output (q/k/v, fused qkv, MLA down-projections)
  LinearUse attn_out;              // o_proj / dense / c_proj / out_proj
  std::vector<LinearUse> mlp_in;   // gate/up/fc1 of the dense (or shared-expert) MLP
  LinearUse mlp_out;               // down/fc2
  std::vector<LinearUse> exp_in;   // routed experts' gate/up
  LinearUse exp_out;               // routed experts' down
  std::vector<LinearUse> ssm_in;   // state-space in_proj (reads the mixer norm output)
  bool router_trains = false;      // the MoE router's weight (a Linear or a bare Parameter) trains
};

// Whether the base layer keeps its input for backward (a LoRA adapter's own
// copy is counted apart): a trainable 16-bit weight, or a 4-bit one under
// bitsandbytes < 0.43.2 (train.quant.saves_input).
bool base_saves_input(const Request& req, const LinearUse& u) {
  return u.quantized ? req.train.quant.saves_input : u.trains;
}

// Whether Unsloth's fused LoRA autograd function replaces PEFT's layers for
// a block whose linears are `block` (llama.py FastLlamaModel.patch_peft_model:
// lora_dropout == 0, bias 'none', every linear of the block has lora_A and no
// lora_magnitude_vector).
bool unsloth_patched(const Request& req, std::initializer_list<const std::vector<LinearUse>*> blocks,
                     const LinearUse* extra = nullptr) {
  const TrainOptions& t = req.train;
  if (t.kernels != Kernels::kUnsloth || t.lora.dropout > 0 || t.lora.use_dora) return false;
  bool any = false;
  for (const auto* b : blocks) {
    for (const auto& u : *b) {
      if (!u.lora || (u.trains && !u.quantized)) return false;
      any = true;
    }
  }
  if (extra != nullptr) {
    if (!extra->lora || (extra->trains && !extra->quantized)) return false;
    any = true;
  }
  return any;
}

bool is_output_name(const std::string& n) {
  static const char* kOut[] = {"o_proj", "c_proj", "dense", "out_proj", "o", "wo", "proj"};
  for (const char* o : kOut) {
    if (n == o) return true;
  }
  return false;
}

Roles find_roles(const Request& req, const TrainablePlan& plan, const LayerStack& st, bool layer_trains) {
  Roles r;
  const auto& groups = req.model.groups;
  for (size_t i = 0; i < groups.size(); ++i) {
    const ParamGroup& g = groups[i];
    if (g.stack == st.name && g.component == comp::kRouter && plan.groups[i].trainable && layer_trains) {
      r.router_trains = true;
    }
    if (g.stack != st.name || g.kind != ModuleKind::kLinear || g.instances < 2) continue;
    LinearUse u;
    u.trains = plan.groups[i].trainable && layer_trains;
    u.lora = plan.groups[i].lora;
    u.quantized = plan.groups[i].quantized;
    u.out = g.out_features;
    const std::string c = g.component;
    if (c == comp::kSsm) {
      if (g.in_features == st.hidden) r.ssm_in.push_back(u);  // Mamba in_proj reads the norm output
      continue;
    }
    if (c == comp::kAttention) {
      if (is_output_name(g.module)) {
        r.attn_out = u;
      } else if (g.in_features == st.hidden) {
        r.attn_in.push_back(u);
      }
    } else if (c == comp::kMlp || c == comp::kExperts) {
      auto& in = c == comp::kMlp ? r.mlp_in : r.exp_in;
      auto& out = c == comp::kMlp ? r.mlp_out : r.exp_out;
      if (g.in_features == st.hidden) {
        in.push_back(u);
      } else if (g.out_features == st.hidden) {
        out = u;
      }
    }
  }
  return r;
}

bool norm_trains(const Request& req, const TrainablePlan& plan, const std::string& stack, bool layer_trains) {
  const auto& groups = req.model.groups;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].stack == stack && groups[i].kind == ModuleKind::kNorm && groups[i].instances > 1) {
      return plan.groups[i].trainable && layer_trains;
    }
  }
  return false;
}

// Saved tensors that an activation function keeps per element of its input.
double activation_saves(const std::string& act) {
  // activations.py NewGELUActivation: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))
  // saves x (pow), tanh's output, 0.5*x and (1+tanh) -> 4 tensors.
  if (act == "gelu_new" || act == "gelu_fast" || act == "quick_gelu") return 4;
  return 1;  // F.silu, F.gelu (erf or tanh approximation), relu: one tensor
}

// Bytes per token saved by the inputs of the linears reading one site.
// `width` is the site's feature size, `in_dtype` its element size.
// `already_saved`: the site's tensor is kept by its producer already (a
// FlashAttention output, which o_proj reads as a view), so a reader keeping it
// as it is costs nothing more. `keeps_site`, when given, says whether one of
// these readers keeps the tensor itself (not a cast or dropout copy).
double linear_inputs(const Request& req, const Dtypes& dt, const std::vector<LinearUse>& readers, int64_t width,
                     int64_t in_dtype, std::vector<SavedItem>& items, const std::string& site,
                     bool already_saved = false, bool one_adapter_input = false, bool* keeps_site = nullptr) {
  const auto& lora = req.train.lora;
  double bytes = 0;
  bool shared_saved = already_saved;
  bool adapter_input_saved = false;  // one_adapter_input: the first adapter's dropout mask and input serve all
  for (const auto& u : readers) {
    if (base_saves_input(req, u)) {
      if (u.quantized && in_dtype != dt.compute) {
        bytes += static_cast<double>(dt.compute) * width;  // Linear4bit's own x.to(compute_dtype) copy
      } else if (dt.autocast && in_dtype == 4) {
        bytes += 2.0 * width;  // its own autocast bf16 copy
      } else if (!shared_saved) {
        bytes += static_cast<double>(in_dtype) * width;
        shared_saved = true;
      }
    }
    if (u.lora) {
      // peft lora/layer.py Linear.forward: x = dropout(x); x is cast to the
      // adapter dtype (fp32 adapters under a bf16 base make a copy) and saved
      // by lora_A; lora_A's output (r values) is saved by lora_B.
      // LitGPT's LoRAQKVLinear (one_adapter_input): one dropout and one lora_A
      // for q, k and v; only lora_A's r outputs per projection follow.
      const bool input_kept = one_adapter_input && adapter_input_saved;
      adapter_input_saved = true;
      const bool cast = lora.adapter_fp32 && in_dtype != 4;
      if (!input_kept) {
        if (lora.dropout > 0) bytes += 1.0 * width;  // dropout mask
        if (cast) {
          bytes += 4.0 * width;
        } else if (lora.dropout > 0) {
          bytes += static_cast<double>(in_dtype) * width;
        } else if (!shared_saved) {
          bytes += static_cast<double>(in_dtype) * width;
          shared_saved = true;
        }
      }
      bytes += (lora.adapter_fp32 ? 4.0 : 2.0) * static_cast<double>(lora.rank);
      if (lora.use_dora) {
        // DoRA (peft tuners/lora/dora.py DoraLinearLayer.forward):
        // result_dora = (mag_norm_scale - 1) * base_result
        //               + mag_norm_scale * lora_result * scaling,
        // where mag_norm_scale = magnitude / ||W + s BA|| (the norm
        // detached) depends on the trainable magnitude, so both products
        // keep their other factor for backward: the base layer's output
        // (compute dtype) and lora_B's output (the adapter dtype; bf16
        // under autocast), each `out` values per token.
        const double base_out = dt.autocast ? 2.0 : static_cast<double>(dt.compute);
        const double lora_out = dt.autocast ? 2.0 : (lora.adapter_fp32 ? 4.0 : static_cast<double>(dt.compute));
        bytes += (base_out + lora_out) * static_cast<double>(u.out);
      }
    }
  }
  if (bytes > 0) items.push_back({site, bytes, false});
  // Whether a reader keeps the site's tensor itself (not a copy of it).
  if (keeps_site != nullptr) *keeps_site = shared_saved && !already_saved;
  return bytes;
}

void norm_site(const Request& req, const LayerStack& st, const Dtypes& dt, bool trains, int64_t width,
               std::vector<SavedItem>& items, const std::string& name, bool needs_grad) {
  if (!needs_grad) return;
  double b = 0;
  const bool gemma_style = req.model.model_type.rfind("gemma", 0) == 0;
  if (st.norm == NormKind::kLayerNorm) {
    // native_layer_norm saves input, mean and rstd (fp32 under autocast).
    const double in = dt.autocast && !dt.low_precision_params ? 4.0 : static_cast<double>(dt.residual);
    b = in * width + 8.0;
  } else if (req.train.fused_norm || req.train.kernels == Kernels::kUnsloth) {
    // Liger rms_norm and Unsloth's Fast_RMS_Layernorm: X and the fp32 rstd.
    b = static_cast<double>(dt.residual) * width + 4.0;
  } else {
    // HF RMSNorm: fp32 input (4 B) + rsqrt (4 B per token); the normalised
    // value is saved for `weight *` only when the weight trains. Gemma keeps
    // it in fp32 (x.float() * (1 + weight.float())).
    b = 4.0 * width + 4.0;
    if (trains) b += (gemma_style ? 4.0 : static_cast<double>(dt.residual)) * width;
  }
  items.push_back({name, b, false});
}

// What every block of one layer reads.
struct LayerCtx {
  const Request& req;
  const LayerStack& st;
  const Dtypes& dt;
  Roles roles;
  bool norm_trains = false;
  int64_t pa = 2;             // element size of activations (bf16 under autocast)
  int64_t attn_in_dtype = 2;  // what the projections read (fp32 under autocast)
  double dropout = 0;
};

// 1-2: the attention norm and the q/k/v projections' inputs (MLA's latents).
void attention_inputs(const LayerCtx& c, std::vector<SavedItem>& items) {
  const Request& req = c.req;
  const LayerStack& st = c.st;
  const int64_t h = st.hidden;
  const int64_t p = c.dt.compute;
  // 1. Norm before attention.
  norm_site(req, st, c.dt, c.norm_trains, h, items, "attention norm (input, statistics)", true);
  // 2. Inputs of the q/k/v projections (fused or separate); Unsloth's
  // LoRA_QKV keeps only X, as it arrives.
  if (st.attention != AttnKind::kMla && unsloth_patched(req, {&c.roles.attn_in})) {
    items.push_back({"q/k/v projection inputs", static_cast<double>(c.attn_in_dtype) * h, false});
  } else {
    linear_inputs(req, c.dt, c.roles.attn_in, h, c.attn_in_dtype, items, "q/k/v projection inputs", false,
                  req.train.lora.fused_qkv);
  }
  if (st.attention == AttnKind::kMla) {
    // Latent paths: q_a_layernorm / kv_a_layernorm (RMSNorm, fp32 upcast) and
    // the q_b_proj / kv_b_proj inputs (deepseek modeling_deepseek_v2.py).
    const int64_t qr = st.q_lora_rank;
    const int64_t kvr = st.kv_lora_rank;
    double b = 0;
    if (qr > 0) b += 4.0 * qr + static_cast<double>(p) * qr * 2;
    b += 4.0 * kvr + static_cast<double>(p) * kvr * 2;
    items.push_back({"latent q/kv norms and up-projection inputs", b, false});
  }
}

// The s^2 term of eager attention, bytes per token and key: what softmax,
// dropout, the soft-cap and probs @ v keep of the scores.
double eager_scores(const LayerCtx& c, int64_t seq) {
  const TrainOptions& t = c.req.train;
  const int64_t pa = c.pa;
  const double a = static_cast<double>(c.st.heads);
  // softmax(dtype=float32) output saved (4 B), cast to the compute dtype and
  // saved by probs @ v; with dropout the mask (1 B) and dropout output.
  const double s = static_cast<double>(seq);
  double scores = 4.0 * a * s;
  if (c.dropout > 0) {
    scores += 1.0 * a * s + static_cast<double>(pa) * a * s;
  } else if (pa != 4) {
    scores += static_cast<double>(pa) * a * s;
  }
  // Soft-capped scores (Gemma 2: transformers modeling_gemma2.py
  // eager_attention_forward at 006e8693 and LitGPT's own attention path,
  // litgpt/model.py do_softcapping at 26857050: scores / cap, tanh, * cap):
  // tanh keeps its output for backward (derivatives.yaml tanh: result), one
  // more a x s^2 tensor in the compute dtype; the scalar division and product
  // keep nothing.
  if (c.st.attn_softcap) scores += static_cast<double>(pa) * a * s;
  if (t.softmax_saves_input) {
    // PyTorch <= 1.10 (train.softmax_saves_input): SoftmaxBackward also
    // keeps softmax's input, the masked scores (derivatives.yaml up to 1.10:
    // _softmax_backward_data(grad, result, dim, self); pytorch issue
    // #64000). They are fp32 in fp32 training; under autocast the fp16
    // scores plus the fp32 additive mask (modeling_utils.py
    // get_extended_attention_mask: .to(dtype=self.dtype), the fp32
    // parameters' dtype) promote to fp32; softmax(dtype=float32) of bf16
    // scores saves its fp32 copy (aten SoftMax.cpp softmax: toType). Pure
    // fp16 on CUDA takes _softmax(half_to_float=true) and keeps fp16 scores.
    const bool half_in = !c.dt.autocast && t.precision == Precision::kFp16;
    scores += (half_in ? 2.0 : 4.0) * a * s;
  }
  return scores;
}

// 1-3: the attention's inputs (above), the attention core by kernel, and the
// residual dropout masks.
void attention_block(const LayerCtx& c, int64_t seq, std::vector<SavedItem>& items) {
  const Request& req = c.req;
  const LayerStack& st = c.st;
  const TrainOptions& t = req.train;
  const int64_t h = st.hidden;
  const int64_t a = st.heads;
  const int64_t kvh = st.kv_heads;
  const int64_t d = st.head_dim;
  const int64_t dv = st.v_head_dim > 0 ? st.v_head_dim : st.head_dim;
  const int64_t pa = c.pa;
  attention_inputs(c, items);
  // 3. Attention core.
  // xformers' memory-efficient attention is trained on K and V expanded to
  // every head (unsloth utils/attention_dispatch.py run_attention, XFORMERS).
  const bool repeat_kv = kvh < a && (t.attention == AttentionImpl::kEager || t.attention == AttentionImpl::kXformers ||
                                     (t.attention == AttentionImpl::kSdpa && !t.sdpa_gqa_native));
  const int64_t kv_heads_saved = (repeat_kv || st.attention == AttnKind::kMla) ? a : kvh;
  const double q_bytes = static_cast<double>(pa) * a * d;
  const double k_bytes = static_cast<double>(pa) * kv_heads_saved * d;
  const double v_bytes = static_cast<double>(pa) * kv_heads_saved * dv;
  items.push_back({"q, k, v (after rotary)", q_bytes + k_bytes + v_bytes, false});
  // train.keeps_fused_qkv (LitGPT): CausalSelfAttention.forward (litgpt/model.py
  // at 43c44323) takes q, k and v from the fused projection output as views
  // (qkv.view(B, T, groups, q_per_kv + 2, hs).permute(0, 2, 3, 1, 4).split());
  // with multi-head attention the k/v expand is skipped and each reshape to
  // (B, heads, T, hs) is a view too. apply_rope's torch.cat gives q and k
  // storage of their own, but v reaches the kernel as the view, and SDPA
  // saves its inputs as passed (derivatives.yaml
  // _scaled_dot_product_flash_attention: query, key, value, output,
  // logsumexp), so the whole fused output stays until backward: the q and k
  // widths on top of v. With grouped or multi-query attention the expanded
  // k and v are reshaped into copies, and nothing holds the fused output.
  if (t.keeps_fused_qkv && kvh == a && st.attention != AttnKind::kMla &&
      (t.attention == AttentionImpl::kSdpa || t.attention == AttentionImpl::kFlash2)) {
    items.push_back(
        {"q, k widths of the fused qkv output (held by v's view)", static_cast<double>(pa) * (a * d + kvh * d), false});
  }
  const double out_bytes = static_cast<double>(pa) * a * dv;
  const LinearUse o = c.roles.attn_out;
  const bool o_saves = base_saves_input(req, o) || o.lora;
  const bool o_unsloth = unsloth_patched(req, {}, &o);
  // What o_proj's readers keep of its input, the attention output (`copy`:
  // a fresh tensor, not kept by the kernel): the base layer's input, the
  // adapter's dropout mask and dropout output, lora_A's output (linear_inputs;
  // they were counted as one tensor before, which missed the mask and, for a
  // 4-bit layer keeping its input, the second tensor). Unsloth's LoRA_W
  // keeps X only.
  auto o_inputs = [&](bool copy) -> double {
    if (o_unsloth) return copy && o_saves ? out_bytes : 0.0;
    std::vector<SavedItem> tmp;
    return linear_inputs(req, c.dt, {o}, a * dv, pa, tmp, "", !copy);
  };
  if (t.attention == AttentionImpl::kEager) {
    items.push_back({"attention scores (eager softmax, s^2 term)", eager_scores(c, seq), true});
    const double o_in = o_inputs(true);
    if (o_in > 0) items.push_back({"attention output (o_proj input)", o_in, false});
  } else {
    items.push_back({"attention output + log-sum-exp", out_bytes + 4.0 * a, false});
    // SDPA returns (b, a, s, d); transformers' sdpa_attention_forward makes it
    // contiguous after transpose, a second copy that o_proj saves.
    // FlashAttention's output is o_proj's input as a view: only what the
    // adapter keeps on top (dropout mask and output, lora_A's output) is new.
    const bool copy = t.attention == AttentionImpl::kSdpa;
    const double o_in = o_inputs(copy);
    if (o_in > 0) items.push_back({copy ? "o_proj input (contiguous copy)" : "o_proj adapter inputs", o_in, false});
  }
  if (st.attn_output_gate) {
    // modeling_qwen3_next.py Qwen3NextAttention.forward: attn_output =
    // attn_output * torch.sigmoid(gate) before o_proj. The product keeps
    // sigmoid(gate) (which sigmoid's backward reads too) and the attention
    // output (FlashAttention's saved output as a view; under SDPA the
    // contiguous copy and under eager the transposed copy, counted above only
    // when o_proj keeps it); o_proj then keeps the gated product instead of
    // the attention output.
    double g = out_bytes;
    if (o_saves) g += out_bytes;
    if ((t.attention == AttentionImpl::kSdpa || t.attention == AttentionImpl::kEager) && !o_saves) g += out_bytes;
    items.push_back({"attention output gate (sigmoid(gate), gated output)", g, false});
  }
  if (c.dropout > 0) items.push_back({"residual dropout masks", 2.0 * h, false});
}

// LitGPT's LoRAQKVLinear.zero_pad (lit_gpt/lora.py at 8641822, litgpt/lora.py
// at 43c44323 and 00af8b0d): with LoRA on some of q, k and v only (its
// lora_query / lora_value without lora_key), lora_B's output for the adapted
// widths is scattered into zeros of the fused q/k/v width by index_copy
// (out of place before fd71063c, index_copy_ after), and IndexCopyBackward
// keeps `source` for its gradient (tools/autograd/derivatives.yaml
// index_copy: `source: grad.index_select(dim, index).expand_as(source)`):
// the adapted widths in the adapter dtype, per token. With all three adapted
// zero_pad returns its input and keeps nothing.
void fused_qkv_zero_pad(const LayerCtx& c, std::vector<SavedItem>& items) {
  const auto& lora = c.req.train.lora;
  if (!lora.fused_qkv) return;
  double adapted = 0;
  bool partial = false;
  for (const auto& u : c.roles.attn_in) {
    if (u.lora) {
      adapted += static_cast<double>(u.out);
    } else {
      partial = true;
    }
  }
  if (!partial || adapted <= 0) return;
  const double elem = c.dt.autocast ? 2.0 : (lora.adapter_fp32 ? 4.0 : static_cast<double>(c.dt.compute));
  items.push_back({"LoRA zero_pad source (index_copy of the adapted q/k/v widths)", elem * adapted, false});
}

// 4-5: the MLP norm and the dense, gated or routed-expert MLP; then the
// decoder's cross-attention.
void mlp_block(const LayerCtx& c, bool moe_layer, std::vector<SavedItem>& items) {
  const Request& req = c.req;
  const LayerStack& st = c.st;
  const int64_t h = st.hidden;
  const int64_t pa = c.pa;
  // 4. Norm before the MLP (parallel blocks share the attention norm).
  if (!st.parallel_block) norm_site(req, st, c.dt, c.norm_trains, h, items, "MLP norm (input, statistics)", true);
  // A parallel block with one norm (Phi's input_layernorm, Cohere's, Falcon-7B's
  // input_layernorm, LitGPT's shared_attention_norm: modeling_phi.py
  // PhiDecoderLayer.forward feeds the same hidden_states to self_attn and mlp)
  // hands the MLP the tensor the q/k/v projections read: where one of those
  // keeps it (a trained Linear, a 4-bit Linear of bitsandbytes < 0.43.2),
  // an MLP reader keeping it too adds nothing (one tensor, saved twice).
  bool mlp_input_kept = false;
  if (st.parallel_block && st.norms_per_layer == 1) {
    std::vector<SavedItem> scratch;
    linear_inputs(req, c.dt, c.roles.attn_in, h, c.attn_in_dtype, scratch, "", false, req.train.lora.fused_qkv,
                  &mlp_input_kept);
  }
  // 5. MLP.
  const double act_saves = activation_saves(st.activation);
  auto gated_mlp = [&](int64_t inter, double tokens_factor, const char* label, bool experts) {
    // gate/up read the norm output; act(gate) * up; down reads the product.
    const auto& ins = experts ? c.roles.exp_in : c.roles.mlp_in;
    const LinearUse& outs = experts ? c.roles.exp_out : c.roles.mlp_out;
    if (!experts && unsloth_patched(req, {&ins}, &outs)) {
      // Unsloth LoRA_MLP: X, e and g; h = act(e) * g is recomputed.
      const double b = static_cast<double>(c.attn_in_dtype) * h + 2.0 * static_cast<double>(pa) * inter;
      items.push_back({std::string(label) + " (Unsloth LoRA_MLP: X, e, g)", b * tokens_factor, false});
      return;
    }
    std::vector<SavedItem> tmp;
    const double in = linear_inputs(req, c.dt, experts ? c.roles.exp_in : c.roles.mlp_in, h, c.attn_in_dtype, tmp, "",
                                    !experts && mlp_input_kept);
    const LinearUse down = experts ? c.roles.exp_out : c.roles.mlp_out;
    // act saves its input (gate out), mul saves act(gate) and up.
    double b = static_cast<double>(pa) * inter * (act_saves + 2.0);
    // down's input, the product: its readers' tensors (see o_inputs).
    b += linear_inputs(req, c.dt, {down}, inter, pa, tmp, "");
    items.push_back({label, (b + in) * tokens_factor, false});
  };
  if (moe_layer) {
    // Routed experts (modeling_mixtral.py MixtralSparseMoeBlock): router
    // logits (compute dtype) and their fp32 softmax; each token's hidden state
    // is gathered once per chosen expert (saved by the expert's linears) and
    // the expert output is saved by the routing-weight multiply.
    const double k = static_cast<double>(st.experts_per_token);
    if (st.router_fp32) {
      // DeepseekV3TopkRouter / Glm4MoeTopkRouter.forward:
      // F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32)),
      // then sigmoid; the top-k choice runs under no_grad. F.linear keeps its
      // input for the router weight's gradient (only when that weight trains:
      // a bare nn.Parameter, never a LoRA target): in bf16 training the fp32
      // copy (4 B), under autocast the bf16 cast autocast makes of it (2 B),
      // in fp32 training the norm output itself (counted with its other
      // readers). sigmoid keeps its output: fp32, or bf16 under autocast
      // (sigmoid is not on autocast's fp32 list). The k-sized index and
      // normalisation tensors are not counted (as for the softmax router),
      // nor the fp32 copy of the router weight F.linear keeps for the input's
      // gradient (experts x hidden x 4 B per MoE layer and step, not per token).
      double in = 0;
      if (c.roles.router_trains) {
        if (c.dt.autocast) {
          in = 2.0 * static_cast<double>(h);
        } else if (c.attn_in_dtype != 4) {
          in = 4.0 * static_cast<double>(h);
        }
      }
      const double scores = (c.dt.autocast ? 2.0 : 4.0) * static_cast<double>(st.experts);
      items.push_back({"router (fp32 input copy, sigmoid scores)", in + scores, false});
    } else {
      items.push_back({"router logits + softmax", static_cast<double>(pa + 4) * st.experts, false});
    }
    items.push_back({"expert inputs and weighted outputs", k * 2.0 * pa * h, false});
    gated_mlp(st.expert_intermediate, k, "expert MLP activations (x experts per token)", true);
    if (st.shared_expert_intermediate > 0) gated_mlp(st.shared_expert_intermediate, 1.0, "shared expert MLP", false);
  } else if (st.mlp == MlpKind::kGated) {
    gated_mlp(st.intermediate, 1.0, "MLP activations (gate, act, up, product)", false);
  } else {
    std::vector<SavedItem> tmp;
    const double in = linear_inputs(req, c.dt, c.roles.mlp_in, h, c.attn_in_dtype, tmp, "", mlp_input_kept);
    const LinearUse down = c.roles.mlp_out;
    double b = static_cast<double>(pa) * st.intermediate * act_saves;
    b += linear_inputs(req, c.dt, {down}, st.intermediate, pa, tmp, "");
    items.push_back({"MLP activations (fc1 output, activation)", b + in, false});
  }
  if (st.cross_attention) {
    // Decoder cross-attention: its norm, the query input, q and the encoder's
    // k/v projections for this layer, output and log-sum-exp.
    const int64_t a = st.heads;
    const int64_t dv = st.v_head_dim > 0 ? st.v_head_dim : st.head_dim;
    norm_site(req, st, c.dt, c.norm_trains, h, items, "cross-attention norm", true);
    items.push_back({"cross-attention q, k, v, output",
                     static_cast<double>(pa) * (3.0 * a * st.head_dim + a * dv) + 4.0 * a, false});
  }
}

// A state-space mixer: its norm, in_proj's input when in_proj trains or
// carries an adapter, and what the fused kernel saves for backward. A
// parallel hybrid (Falcon-H1) shares the norm with its attention (counted
// there); in_proj still keeps an input of its own, because
// FalconH1Mixer.cuda_kernels_forward scales the norm output by
// ssm_in_multiplier before in_proj (and the layer scales it by
// attention_in_multiplier before the attention), two new tensors.
//
// Mamba (modeling_mamba.py MambaBlock): what mamba_ssm's fused
// MambaInnerFn.forward saves (ops/selective_scan_interface.py, the
// checkpoint_lvl=1 default that transformers' cuda_kernels_forward uses in
// training): xz (in_proj's output, 2 x intermediate), x_dbl (x_proj's output,
// dt_rank + 2 x state), contiguous copies of B and C (state each) and the
// scan output (intermediate); the conv output and dt are recomputed in
// backward, and the hidden states of the scan are not stored (Gu & Dao 2023
// §3.3.2, kernel fusion and recomputation) apart from one fp32 (x, dx) pair
// of intermediate x state per 2048-token chunk (scan_intermediates).
//
// Mamba-2 (modeling_mamba2.py cuda_kernels_forward in training calls
// mamba_split_conv1d_scan_combined): MambaSplitConv1dScanCombinedFn.forward
// (mamba_ssm ops/triton/ssd_combined.py) saves zxbcdt (in_proj's output:
// intermediate + conv_dim + heads), out_x (the scan output before the gated
// norm, intermediate) and the norm's rstd (fp32, one per group); the conv
// output, the chunk states and the norm output that out_proj reads are
// recomputed in backward.
// Gemma 3n's layer around its attention and MLP (modeling_gemma3n.py
// Gemma3nTextDecoderLayer.forward, Gemma3nTextAltUp, Gemma3nTextLaurelBlock,
// Gemma3nTextMLP). Every Gemma3nRMSNorm upcasts (norm_site, Gemma style).
// Counted whether or not the small projections train: a frozen Linear keeps
// no input, so for them this is an upper bound (never below the truth).
// - altup.predict: router_norm(x[0]) and its statistics; modality_router
//   reads the scaled norm output (h); tanh(routed.float()) keeps its fp32
//   output (n); prediction_coefs reads it; matmul(hidden_states.permute,
//   all_coefs) keeps the n stacked hidden states (n x h, the layer's input)
//   and the coefficients (n^2).
// - laurel: linear_left reads the input norm output (h), linear_right its
//   rank-wide output; post_laurel_norm.
// - post_attention_layernorm and post_feedforward_layernorm.
// - altup.correct: router_norm and modality_router again on the layer output
//   (h), tanh (n); torch.mul(innovation.repeat(n), all_coefs) keeps the
//   repeated innovation (n x h) and the coefficients (n).
// - the per-layer input: scale_corrected_output keeps the clone (h);
//   per_layer_input_gate reads the scaled output (h); the activation keeps
//   its input (P); the product with per_layer_input keeps both factors (P
//   each; per_layer_input is a slice of the model-level tensor, counted in
//   activation_stack.cpp, so one P here); per_layer_projection reads the
//   product (P); post_per_layer_input_norm.
// - activation sparsity (_gaussian_topk on sparse_mlp_layers of the layers):
//   torch.std keeps the gate output beside relu's output (which the
//   activation's saved input already counts), averaged over the stack.
void gemma3n_block(const LayerCtx& c, std::vector<SavedItem>& items) {
  const LayerStack& st = c.st;
  const double h = static_cast<double>(st.hidden);
  const double n = static_cast<double>(std::max<int64_t>(st.altup_inputs, 1));
  const double P = static_cast<double>(st.per_layer_input);
  const double pa = static_cast<double>(c.pa);
  const int64_t w = st.hidden;
  if (st.altup_inputs > 1) {
    norm_site(c.req, st, c.dt, c.norm_trains, w, items, "AltUp predict: router norm (input, statistics)", true);
    items.push_back({"AltUp predict: router input, fp32 tanh, coefficients, the n stacked hidden states",
                     pa * h + 4.0 * n + pa * n * n + pa * n * h, false});
  }
  if (st.laurel_rank > 0) {
    items.push_back(
        {"LAuReL: linear_left / linear_right inputs", pa * (h + static_cast<double>(st.laurel_rank)), false});
    norm_site(c.req, st, c.dt, c.norm_trains, w, items, "LAuReL post norm (input, statistics)", true);
  }
  norm_site(c.req, st, c.dt, c.norm_trains, w, items, "post-attention norm (input, statistics)", true);
  norm_site(c.req, st, c.dt, c.norm_trains, w, items, "post-feedforward norm (input, statistics)", true);
  if (st.altup_inputs > 1) {
    norm_site(c.req, st, c.dt, c.norm_trains, w, items, "AltUp correct: router norm (input, statistics)", true);
    items.push_back({"AltUp correct: router input, fp32 tanh, the repeated innovation (n x h), coefficients",
                     pa * h + 4.0 * n + pa * n * h + pa * n, false});
  }
  if (st.per_layer_input > 0) {
    items.push_back({"per-layer input: corrected output, gate input, activation input, product factors",
                     pa * (2.0 * h + P * (activation_saves(st.activation) + 2.0)), false});
    norm_site(c.req, st, c.dt, c.norm_trains, w, items, "post per-layer input norm (input, statistics)", true);
  }
  if (st.sparse_mlp_layers > 0 && st.layers > 0) {
    const double share =
        static_cast<double>(std::min(st.sparse_mlp_layers, st.layers)) / static_cast<double>(st.layers);
    items.push_back({"activation sparsity: gate output kept by std (averaged over the layers)",
                     pa * static_cast<double>(st.intermediate) * share, false});
  }
}

void ssm_block(const LayerCtx& c, int64_t seq, std::vector<SavedItem>& items) {
  const Request& req = c.req;
  const LayerStack& st = c.st;
  const int64_t h = st.hidden;
  const double I = static_cast<double>(st.ssm_inner);
  const double N = static_cast<double>(st.ssm_state);
  const double pa = static_cast<double>(c.pa);
  if (!st.ssm_with_attention) norm_site(req, st, c.dt, c.norm_trains, h, items, "mixer norm (input, statistics)", true);
  linear_inputs(req, c.dt, c.roles.ssm_in, h, c.attn_in_dtype, items, "in_proj input");
  switch (st.ssm_kind) {
    case SsmKind::kMamba: {
      const double R = static_cast<double>(st.ssm_dt_rank);
      items.push_back({"SSM mixer: xz, x_dbl, B, C, scan output", pa * (2.0 * I + (R + 2.0 * N) + 2.0 * N + I), false});
      const double chunks = std::ceil(static_cast<double>(std::max<int64_t>(seq, 1)) / 2048.0);
      items.push_back({"SSM scan chunk states (fp32)",
                       4.0 * I * 2.0 * N * chunks / static_cast<double>(std::max<int64_t>(seq, 1)), false});
      break;
    }
    case SsmKind::kJambaMamba: {
      // modeling_jamba.py JambaMambaMixer.cuda_kernels_forward runs the
      // kernels one by one (the dt / B / C RMSNorms sit between them):
      // causal_conv1d_fn keeps its input (a view of in_proj's xz, so all 2 x
      // intermediate stay alive), x_proj keeps the conv output, the three
      // JambaRMSNorms keep x_proj's output upcast to fp32 with their rstd and
      // normalised outputs (dt_proj's input), selective_scan_fn
      // (SelectiveScanFn: u, delta, A, B, C, D, z, delta_bias, x, out) keeps
      // delta (dt_proj's output), the scan output and the fp32 chunk states,
      // and out_proj keeps the gated output it reads.
      const double R = static_cast<double>(st.ssm_dt_rank);
      items.push_back({"Jamba Mamba mixer: xz, conv output, delta, scan output, gated output", pa * 6.0 * I, false});
      items.push_back(
          {"Jamba dt / B / C norms (fp32 inputs, rstd, outputs)", (4.0 + pa) * (R + 2.0 * N) + 12.0, false});
      const double chunks = std::ceil(static_cast<double>(std::max<int64_t>(seq, 1)) / 2048.0);
      items.push_back({"SSM scan chunk states (fp32)",
                       4.0 * I * 2.0 * N * chunks / static_cast<double>(std::max<int64_t>(seq, 1)), false});
      break;
    }
    case SsmKind::kMamba2: {
      const double conv = static_cast<double>(st.conv_dim());
      const double heads = static_cast<double>(st.ssm_heads);
      items.push_back({"Mamba-2 mixer: zxbcdt, scan output, norm rstd",
                       pa * ((I + conv + heads) + I) + 4.0 * static_cast<double>(st.ssm_groups), false});
      break;
    }
    case SsmKind::kShortConv:
      // modeling_lfm2.py Lfm2ShortConv.cuda_kernels_forward: B * x keeps B
      // and x, views of in_proj's BCx (3 x hidden, alive whole);
      // causal_conv1d_fn keeps its input B * x; C * conv_out keeps conv_out
      // (C is BCx again); out_proj keeps the contiguous copy of the product.
      items.push_back({"short conv: BCx, B*x, conv output, gated output", pa * (3.0 * I + I + I + I), false});
      break;
    case SsmKind::kGatedDeltaNet: {
      // modeling_qwen3_next.py Qwen3NextGatedDeltaNet.forward on the fast
      // path (causal-conv1d and flash-linear-attention installed): the
      // concatenated q/k/v (conv_dim) is what causal_conv1d_fn keeps; beta =
      // b.sigmoid() and g = -exp(A_log) * softplus(a.float() + dt_bias) (fp32:
      // softplus keeps its input and the product its output); q and k are
      // repeated to the value heads; fla's ChunkGatedDeltaRuleFunction.forward
      // (ops/gated_delta_rule/chunk.py) keeps the l2-normalised q and k with
      // their fp32 rstd, a contiguous copy of v (input_guard), the fp32
      // chunk-local cumsum of g, beta and A, the solved 64 x 64 intra-chunk
      // matrix (64 values per head and token in k's dtype); FusedRMSNormGated
      // keeps its input (the kernel output), the gate z (a copy: z.reshape of
      // in_proj_qkvz's slice) and an fp32 rstd per head; out_proj keeps the
      // normalised output. The recurrent states of the chunks are recomputed
      // in backward.
      const double conv = static_cast<double>(st.conv_dim());
      const double H = static_cast<double>(st.ssm_heads);
      const double qk = 2.0 * H * N;  // ssm_state is the key head width
      items.push_back(
          {"gated DeltaNet: conv input, l2-normed q and k, v, beta, A, gated norm input and gate, "
           "out_proj input",
           pa * (conv + qk + I + H + 64.0 * H + 3.0 * I), false});
      items.push_back(
          {"gated DeltaNet fp32 statistics (q/k rstd, g cumsum, softplus, norm rstd)", 4.0 * 6.0 * H, false});
      break;
    }
  }
  if (c.dropout > 0 && !st.ssm_with_attention && st.attention_layers() == 0) {
    items.push_back({"residual dropout masks", 1.0 * h, false});
  }
}

// Unsloth's patched Llama layer, tensor by tensor in the order its forward
// allocates and frees them (unslothai/unsloth release 2024.1 at 3a9b2dee:
// models/llama.py LlamaDecoderLayer_fast_forward and
// LlamaAttention_fast_forward, kernels/fast_lora.py LoRA_QKV / LoRA_W /
// LoRA_MLP.forward and matmul_lora, kernels/utils.py fast_dequantize,
// kernels/swiglu.py swiglu_fg_kernel). What it keeps is what attention_block
// and mlp_block count; the temporaries are what the caching allocator also
// sees: per projection matmul_lora dequantises the 4-bit weight into a new
// [out, in] tensor (freed after X @ W) and forms the LoRA term
// (X @ A) @ (s * B) as a new [tokens, out] tensor before adding it; k and v
// leave LoRA_QKV at their kv-head width and are freed once the xformers path
// has reshaped them to every head; o_proj's output is freed after the
// residual add; LoRA_MLP's h = swiglu(e, g) ([tokens, intermediate]) lives
// until down_proj has run, and the MLP output until the next layer's
// residual add. Sub-MiB tensors (rstd, X @ A, the cast adapters) go to the
// small pool and are left out but for the kept rstd and log-sum-exp.
void unsloth_forward_ops(const LayerCtx& c, LayerActivations& out) {
  const Request& req = c.req;
  const LayerStack& st = c.st;
  const TrainOptions& t = req.train;
  if (t.attention != AttentionImpl::kXformers || st.mlp != MlpKind::kGated || st.attention == AttnKind::kMla ||
      st.parallel_block || st.cross_attention || st.ssm_layers > 0 || c.dropout > 0 || st.hidden_split > 1 ||
      c.roles.attn_in.size() != 3)
    return;
  if (!unsloth_patched(req, {&c.roles.attn_in}) || !unsloth_patched(req, {}, &c.roles.attn_out) ||
      !unsloth_patched(req, {&c.roles.mlp_in}, &c.roles.mlp_out))
    return;
  using K = ForwardOp::Kind;
  const double h = static_cast<double>(st.hidden);
  const double a = static_cast<double>(st.heads);
  const double kvh = static_cast<double>(st.kv_heads);
  const double d = static_cast<double>(st.head_dim);
  const double dv = static_cast<double>(st.v_head_dim > 0 ? st.v_head_dim : st.head_dim);
  const double inter = static_cast<double>(st.intermediate);
  const double pa = static_cast<double>(c.pa);
  const double res = static_cast<double>(c.dt.residual);
  const double ain = static_cast<double>(c.attn_in_dtype);
  const bool repeat_kv = st.kv_heads < st.heads;
  enum Slot { kW = 0, kLora = 1, kK = 2, kV = 3, kO = 4, kH = 5, kMlpOut = 6 };
  std::vector<ForwardOp>& ops = out.ops;
  auto keep = [&](double per_token) { ops.push_back({K::kKeep, per_token, 0, -1}); };
  auto temp = [&](int slot, double per_token, int64_t fixed = 0) { ops.push_back({K::kTemp, per_token, fixed, slot}); };
  auto release = [&](int slot) { ops.push_back({K::kRelease, 0, 0, slot}); };
  // train.returns_kv_cache (2024.1: use_cache from the config in training):
  // `past_key_value = (K, V) if use_cache else None` after the rotary, so
  // LoRA_QKV's k and v outputs are held by the returned cache, not freed
  // after the reshape.
  const bool returned = t.returns_kv_cache && t.checkpointing == Checkpointing::kNone;
  // matmul_lora(X, W, W_quant, A, B, s): W = fast_dequantize(W.t()) (4-bit
  // only), out = X @ W, del W, out += (X @ A) @ (s * B). `out_kept`: the
  // output is kept for backward, else placed in `out_slot` (-2: returned).
  auto matmul_lora = [&](const LinearUse& u, double in, double width, bool out_kept, int out_slot) {
    const int64_t w = u.quantized ? static_cast<int64_t>(std::ceil(static_cast<double>(c.dt.compute) * width * in)) : 0;
    if (w > 0) temp(kW, 0, w);
    if (out_kept) {
      keep(pa * width);
    } else if (out_slot == -2) {
      ops.push_back({K::kReturn, pa * width, 0, -1});
    } else {
      temp(out_slot, pa * width);
    }
    if (w > 0) release(kW);
    temp(kLora, pa * width);
    release(kLora);
  };
  // Attention half: norm (X in, rstd), LoRA_QKV (X; Q kept, K and V until
  // the reshape), xformers (K, V at every head, output, log-sum-exp), LoRA_W.
  keep(res * h);     // the layer input, Fast_RMS_Layernorm's X
  release(kMlpOut);  // the layer below's MLP output, after its residual add made this input
  keep(4.0);         // rstd
  keep(ain * h);     // normed X, LoRA_QKV's X
  matmul_lora(c.roles.attn_in[0], h, a * d, true, -1);
  matmul_lora(c.roles.attn_in[1], h, kvh * d, !repeat_kv, returned ? -2 : kK);
  matmul_lora(c.roles.attn_in[2], h, kvh * dv, !repeat_kv, returned ? -2 : kV);
  if (repeat_kv) {
    keep(pa * a * d);   // K.reshape(bsz, q_len, n_heads, head_dim)
    release(kK);        // (nothing when the cache holds it)
    keep(pa * a * dv);  // V
    release(kV);
  }
  keep(pa * a * dv);  // xformers output, also LoRA_W's X
  keep(4.0 * a);      // log-sum-exp
  matmul_lora(c.roles.attn_out, a * dv, h, false, kO);
  // MLP half: residual add, norm, LoRA_MLP (X, e, g kept; h; the output).
  keep(res * h);  // residual + attention: Fast_RMS_Layernorm's X
  release(kO);
  keep(4.0);
  keep(ain * h);  // LoRA_MLP's X
  matmul_lora(c.roles.mlp_in[0], h, inter, true, -1);
  matmul_lora(c.roles.mlp_in.size() > 1 ? c.roles.mlp_in[1] : c.roles.mlp_in[0], h, inter, true, -1);
  temp(kH, pa * inter);  // swiglu_fg_kernel's h
  matmul_lora(c.roles.mlp_out, inter, h, false, kMlpOut);
  release(kH);
  // The same tensors as the items, or no program at all.
  double kept = 0;
  for (const ForwardOp& o : ops) {
    if (o.kind == K::kKeep) kept += o.bytes_per_token;
  }
  if (std::abs(kept - out.per_token()) > 1e-6 * std::max(1.0, kept)) ops.clear();
}

// Sequence parallel and the seed's calibration factors, applied to the items.
void adjust(const Request& req, const LayerStack& st, std::vector<SavedItem>& items) {
  // Sequence parallel (Korthikanti et al. 2022 §4.2.2): the parts tensor
  // parallel leaves whole (norms, their outputs feeding the projections,
  // residual dropouts) are split along the sequence too.
  if (st.hidden_split > 1) {
    for (auto& i : items) {
      const bool whole = i.name.find("norm") != std::string::npos ||
                         i.name.find("projection inputs") != std::string::npos ||
                         i.name.find("residual") != std::string::npos;
      if (whole) i.bytes_per_token /= static_cast<double>(st.hidden_split);
    }
  }
  // Calibration overrides (seed 000 factors), off by default.
  const Calibration& cal = req.calibration;
  for (auto& i : items) {
    const bool attn = i.name.find("attention") != std::string::npos || i.name.find("q, k, v") != std::string::npos;
    const bool mlp = i.name.find("MLP") != std::string::npos || i.name.find("expert") != std::string::npos;
    if (attn && cal.attention) i.bytes_per_token *= *cal.attention;
    if (mlp && cal.mlp) i.bytes_per_token *= *cal.mlp;
  }
}

}  // namespace

// torchtitan op-level SAC (torchtitan/models/llama3/parallelize_llama.py
// @9dec370 _apply_ac_to_transformer_block, selective_ac_option "op"): each
// TransformerBlock runs under torch.utils.checkpoint with a
// create_selective_checkpoint_contexts policy that saves the outputs of the
// ops in _save_list (aten.mm, the flash / memory-efficient SDPA kernels,
// reduce_scatter) and recomputes everything else, except that of the mm
// calls it saves only every second one: a per-block counter is bumped on
// each mm and the output is saved when the count is odd (the 1st, 3rd, ...).
// The checkpoint also keeps the block's input. The block's mm calls in order
// (torchtitan/models/llama3/model.py Attention.forward: wq, wk, wv, then wo;
// FeedForward.forward: w2(silu(w1(x)) * w3(x)), so w1, w3, w2): saved are
// wq, wv, w1 and w2. The SDPA kernel saves its output and fp32 log-sum-exp.
std::vector<SavedItem> op_sac_layer(const LayerStack& st, const Dtypes& dt, AttentionImpl attention, bool moe_layer) {
  if (moe_layer || st.attention == AttnKind::kMla || st.ssm_layers > 0 || st.cross_attention) return {};
  const double e = static_cast<double>(dt.compute);
  const double h = static_cast<double>(st.hidden);
  const double a = static_cast<double>(st.heads);
  const double d = static_cast<double>(st.head_dim);
  const double dv = static_cast<double>(st.v_head_dim > 0 ? st.v_head_dim : st.head_dim);
  const double kv = static_cast<double>(st.kv_heads > 0 ? st.kv_heads : st.heads);
  const double i = static_cast<double>(st.intermediate);
  // Output widths of the block's mm calls, in the order they run.
  std::vector<std::pair<const char*, double>> mms = {
      {"wq output", a * d}, {"wk output", kv * d}, {"wv output", kv * dv}, {"wo output", h}};
  if (st.mlp == MlpKind::kGated) {
    mms.insert(mms.end(), {{"w1 output", i}, {"w3 output", i}, {"w2 output", h}});
  } else {
    mms.insert(mms.end(), {{"fc1 output", i}, {"fc2 output", h}});
  }
  std::vector<SavedItem> items;
  items.push_back({"checkpointed block input", static_cast<double>(dt.residual) * h, false});
  for (size_t k = 0; k < mms.size(); k += 2) items.push_back({mms[k].first, e * mms[k].second, false});
  // Eager attention runs no SDPA kernel: its softmax output is recomputed.
  if (attention != AttentionImpl::kEager) {
    items.push_back({"SDPA output + fp32 log-sum-exp", e * a * dv + 4.0 * a, false});
  }
  return items;
}

LayerActivations layer_activations(const Request& req, const LayerStack& st, const TrainablePlan& plan,
                                   const Dtypes& dt, int64_t seq, bool moe_layer, bool layer_trains) {
  const TrainOptions& t = req.train;
  LayerCtx c{req, st, dt, find_roles(req, plan, st, layer_trains)};
  c.norm_trains = norm_trains(req, plan, st.name, layer_trains);
  c.pa = dt.autocast ? 2 : dt.compute;
  c.attn_in_dtype = dt.autocast && !dt.low_precision_params ? 4 : dt.residual;
  c.dropout = t.dropout >= 0 ? t.dropout : st.dropout;
  LayerActivations out;
  const int64_t attn_layers = st.attention_layers();
  if (st.ssm_layers > 0 && attn_layers == 0 && st.intermediate == 0 && st.moe_layers == 0) {
    // A pure state-space stack (Mamba, Mamba-2): the mixer is the whole layer.
    ssm_block(c, seq, out.items);
    adjust(req, st, out.items);
    return out;
  }
  if (st.ssm_layers > 0 && st.layers > 0) {
    // A hybrid: the mixers of one layer, as the average over the stack's
    // layers (attention on attention_layers() of them, the state-space mixer
    // on ssm_layers), so that layers x per-layer is the stack's total.
    std::vector<SavedItem> attn, ssm;
    if (attn_layers > 0) attention_block(c, seq, attn);
    ssm_block(c, seq, ssm);
    const double L = static_cast<double>(st.layers);
    for (auto& i : attn) i.bytes_per_token *= static_cast<double>(attn_layers) / L;
    for (auto& i : ssm) i.bytes_per_token *= static_cast<double>(std::min(st.ssm_layers, st.layers)) / L;
    out.items.insert(out.items.end(), attn.begin(), attn.end());
    out.items.insert(out.items.end(), ssm.begin(), ssm.end());
  } else {
    attention_block(c, seq, out.items);
    fused_qkv_zero_pad(c, out.items);
  }
  mlp_block(c, moe_layer, out.items);
  if (st.per_layer_input > 0 || st.laurel_rank > 0 || st.altup_inputs > 1) gemma3n_block(c, out.items);
  adjust(req, st, out.items);
  if (!moe_layer && t.kernels == Kernels::kUnsloth) unsloth_forward_ops(c, out);
  return out;
}

double quant_kept_inputs(const Request& req, const LayerStack& st, const TrainablePlan& plan, const Dtypes& dt) {
  if (!req.train.quant.saves_input) return 0;
  const Roles r = find_roles(req, plan, st, true);
  const double p = static_cast<double>(dt.compute);  // Linear4bit.forward: x.to(compute_dtype)
  const auto quantized = [](const std::vector<LinearUse>& readers) {
    return std::any_of(readers.begin(), readers.end(), [](const LinearUse& u) { return u.quantized; });
  };
  const int64_t dv = st.v_head_dim > 0 ? st.v_head_dim : st.head_dim;
  double b = 0;
  // q/k/v and gate/up read the norm outputs (one tensor each, shared by the
  // readers; a parallel block's MLP reads the attention norm's output).
  if (quantized(r.attn_in)) b += p * static_cast<double>(st.hidden);
  if (r.attn_out.quantized) b += p * static_cast<double>(st.heads * dv);
  if (quantized(r.mlp_in) && !(st.parallel_block && quantized(r.attn_in))) b += p * static_cast<double>(st.hidden);
  if (r.mlp_out.quantized) b += p * static_cast<double>(st.intermediate);
  return b;
}

double layer_backward_transient(const Request& req, const LayerStack& st, const Dtypes& dt, int64_t seq_len,
                                int64_t tokens, std::vector<Piece>* tensors) {
  // Every term is `n` tensors of `w` bytes per token (all integers, so the
  // sum is exact in any order), listed in the order backward makes them.
  double b = 0;
  auto add = [&](int64_t n, double w) {
    if (tensors != nullptr && w > 0) {
      tensors->push_back({bytes::ceil(w * static_cast<double>(tokens), "one layer's backward temporaries"), n});
    }
    b += static_cast<double>(n) * w;
  };
  // Gradient of the hidden state flowing down (residual grad + the branch
  // grad being formed): 2 tensors of h in the residual dtype.
  // Gemma 3n carries altup_inputs stacked hidden states (Gemma3nTextAltUp).
  add(2, static_cast<double>(dt.residual) * st.hidden * static_cast<double>(std::max<int64_t>(st.altup_inputs, 1)));
  // Top of the layer first (autograd runs the layer backwards).
  // The widest MLP gradient: d(act) and d(up) of the intermediate width.
  const int64_t inter = std::max(st.intermediate, st.expert_intermediate * std::max<int64_t>(st.experts_per_token, 1));
  add(2, static_cast<double>(dt.compute) * static_cast<double>(inter));
  const int64_t a = st.heads;
  const int64_t d = st.head_dim;
  if (req.train.attention == AttentionImpl::kEager) {
    // grad of the probabilities and of the scores (fp32 softmax backward).
    add(2, 4.0 * a * static_cast<double>(seq_len));
  } else {
    // FA2 mha_bwd: dq_accum fp32 (b, s, a, d) and dq, dk, dv in the compute
    // dtype; GQA expands dk/dv to all heads before summing
    // (csrc/flash_attn/flash_api.cpp).
    add(1, 4.0 * a * d);
    add(3, 2.0 * a * d);
  }
  // Mamba: MambaInnerFn.backward recomputes the conv output and dt and forms
  // dxz, dconv_out, ddelta and the scan's dout (intermediate width each).
  // Mamba-2: MambaSplitConv1dScanCombinedFn.backward allocates dzxbcdt
  // (in_proj's width), recomputes the conv output (conv_dim) and the norm
  // output out_proj's weight gradient reads (intermediate).
  if (st.ssm_layers > 0) {
    const double I = static_cast<double>(st.ssm_inner);
    const double c = static_cast<double>(dt.compute);
    const double conv = static_cast<double>(st.conv_dim());
    switch (st.ssm_kind) {
      case SsmKind::kMamba:
      case SsmKind::kJambaMamba:
        add(5, c * I);
        break;
      case SsmKind::kMamba2:
        add(1, c * (I + conv + static_cast<double>(st.ssm_heads)));
        add(1, c * conv);
        add(1, c * I);
        break;
      case SsmKind::kShortConv:
        // dBCx (3 x hidden) and the gradient of the conv output (hidden).
        add(1, 3.0 * c * I);
        add(1, c * I);
        break;
      case SsmKind::kGatedDeltaNet:
        // The gradient of in_proj_qkvz's output (conv_dim + value width),
        // of the conv input and of the kernel output (chunk_gated_delta_rule_bwd's dq, dk, dv).
        add(1, c * (conv + I));
        add(1, c * conv);
        add(1, c * I);
        break;
    }
  }
  return b;
}

}  // namespace vram::memory

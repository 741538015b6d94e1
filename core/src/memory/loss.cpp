// Logits and cross-entropy buffers (loss.h).
#include "memory/loss.h"

#include <algorithm>

#include "format.h"
#include "memory/activation_stack.h"
#include "memory/bytes.h"
#include "memory/overheads.h"

namespace vram::memory {

namespace {

constexpr const char* kLoss = "the logits and loss buffers";

// LoRA on the output layer, N tokens (peft tuners/lora/layer.py
// Linear.forward):
//   result = base_layer(x)                                 N x V logits
//   result = result + lora_B(lora_A(dropout(x))) * scaling
//   result = result.to(torch_result_dtype)
// Forward: lora_B's output (adapter dtype; bf16 under autocast), its product
// with the scalar `scaling` (mul by a Python float saves nothing; lora_B's
// output is freed once the product exists) and the sum with the base logits
// (dtype promotion: fp32 when the adapters are fp32 and the logits bf16),
// cast back to the logits' dtype. At the largest moment the base logits, the
// scaled output and the sum are alive together (or the base logits, lora_B's
// output and the scaled one, which is no larger): logits + adapter + sum
// bytes per logit. Backward, once the loss backward has produced the logits'
// gradient (torch autograd, engine.cpp validate_outputs casts a gradient to
// its input's dtype): ToCopyBackward turns it into the sum's dtype (no node
// when the dtypes agree), AddBackward hands that tensor to the scaled branch
// and a copy cast to the logits' dtype to the base layer, MulBackward makes
// the gradient of lora_B's output (adapter dtype), which feeds lora_B's weight
// gradient (V x r) and lora_A. The h-wide input gradients that follow are
// left to the layer sweep's.
void head_lora_buffers(LossBuffers& out, const Dtypes& dt, const HeadLora& head, int64_t N, double logit_factor) {
  const int64_t le = out.logits_elem;
  const int64_t ab = dt.autocast ? 2 : dt.adapter;  // lora_B's output
  const int64_t sum = std::max(le, ab);             // base + scaled, type-promoted
  const double nv = static_cast<double>(N) * static_cast<double>(head.out) * logit_factor;
  out.head_lora_forward_pieces = {{to_bytes(nv * static_cast<double>(sum), kLoss), 1},
                                  {to_bytes(nv * static_cast<double>(ab), kLoss), 1},
                                  {to_bytes(nv * static_cast<double>(le), kLoss), 1}};
  out.head_lora_backward_pieces = {{to_bytes(nv * static_cast<double>(sum), kLoss), 1},
                                   {to_bytes(nv * static_cast<double>(ab), kLoss), 1}};
  if (sum != le) out.head_lora_backward_pieces.push_back({to_bytes(nv * static_cast<double>(le), kLoss), 1});
  for (const Piece& p : out.head_lora_forward_pieces)
    out.head_lora_forward = bytes::add(out.head_lora_forward, p.bytes, kLoss);
  for (const Piece& p : out.head_lora_backward_pieces)
    out.head_lora_backward = bytes::add(out.head_lora_backward, p.bytes, kLoss);
  const int64_t bwd = sum + ab + (sum != le ? le : 0);
  out.formula += "; LoRA on " + head.module + ": N x V x (" + std::to_string(le) + " base logits + " +
                 std::to_string(ab) + " scaled B(A x) + " + std::to_string(sum) + " their sum) in its forward, x " +
                 std::to_string(bwd) + " B of logits-sized gradients in its backward";
}

// The chunks of a `seq_len`-token sequence the logits are made in (train.loss
// chunked).
int64_t loss_chunk_count(const TrainOptions& t, int64_t seq_len) {
  return std::max<int64_t>(
      1, std::min(t.loss_chunk_size > 0 ? ceil_div(seq_len, t.loss_chunk_size) : t.loss_chunks, seq_len));
}

// The output projection and the cross-entropy in C chunks of the sequence
// (train.loss chunked). torchtune v0.6.1: TransformerDecoder.forward returns
// [self.output(chunk) for chunk in h.chunk(num_output_chunks, dim=1)]
// (modules/transformer.py, with set_num_output_chunks(8)), and
// CEWithChunkedOutputLoss (modules/loss/ce_chunked_output_loss.py) runs
// F.cross_entropy(logits.float(), ...) chunk by chunk; the recipe deletes the
// logits before backward (recipes/lora_finetune_single_device.py "del
// logits"). LitGPT: model(..., lm_head_chunk_size=128) and
// chunked_cross_entropy over those 128-token chunks, without an upcast under
// bf16-true (litgpt/utils.py). Each chunk's log_softmax output, in the loss
// dtype, is saved for backward (LogSoftmaxBackward0 keeps its result), so
// all C stay alive until backward while only one chunk's fp32 copy is alive
// at a time. Forward: the logits (C chunks, model dtype), the saved
// log-probabilities and one chunk's copy. Backward, from the last chunk: the
// saved outputs still alive, the nll and log_softmax gradients of one chunk
// and its cast back to the logits' dtype (those chunk gradients wait for the
// output layers' backward, which autograd runs after every loss node: at most
// the logits' size, below the start of the sweep for C >= 2).
// train.outputs_fp32 (Lightning Fabric's convert_output, LitGPT): the chunks
// reach the loss as fp32 copies (the model-dtype chunks are freed once the
// copies exist: ToCopyBackward keeps no input), so the held logits and the
// saved log-probabilities are 4 B each; autograd (engine.cpp, highest
// sequence number first) runs every chunk's nll and log_softmax backward
// before the copies' ToCopyBackward, so the fp32 chunk gradients replace the
// saved log-probabilities one for one, and each cast back to the model dtype
// adds one chunk.
// `seq_len`: the step's own (a padded step's or a search probe's), which sets
// the number of fixed-size chunks.
void chunked_loss(LossBuffers& out, const TrainOptions& t, bool autocast, int64_t seq_len, int64_t N, int64_t V,
                  double logit_factor) {
  const int64_t chunks = loss_chunk_count(t, seq_len);
  const int64_t le = out.logits_elem;
  const int64_t li = t.outputs_fp32 ? 4 : le;  // the logits the loss reads (and the loop holds)
  // The cross-entropy's dtype: fp32 with an explicit upcast, and under
  // autocast (cross_entropy is on its fp32 list) whatever the code does.
  const int64_t ce = t.loss_upcast || autocast ? 4 : li;
  const double chunk_nv = static_cast<double>(N) * static_cast<double>(V) * logit_factor / static_cast<double>(chunks);
  const int64_t logits_chunk = to_bytes(chunk_nv * static_cast<double>(li), kLoss);
  const int64_t loss_chunk = to_bytes(chunk_nv * static_cast<double>(ce), kLoss);
  out.forward_pieces = {{logits_chunk, chunks}, {loss_chunk, chunks}};
  if (ce != li) out.forward_pieces.push_back({loss_chunk, 1});
  out.backward_pieces = {{loss_chunk, chunks}, {loss_chunk, 2}};
  if (ce != li) out.backward_pieces.push_back({logits_chunk, 1});
  if (li != le) out.backward_pieces.push_back({to_bytes(chunk_nv * static_cast<double>(le), kLoss), 1});
  if (t.keeps_logits) out.backward_pieces.push_back({logits_chunk, chunks});  // held by the loop (LitGPT)
  for (const Piece& p : out.forward_pieces)
    out.forward = bytes::add(out.forward, bytes::mul(p.bytes, p.count, kLoss), kLoss);
  for (const Piece& p : out.backward_pieces)
    out.backward = bytes::add(out.backward, bytes::mul(p.bytes, p.count, kLoss), kLoss);
  out.formula = "chunked loss, " + fmt_int(chunks) + " chunks of N " + fmt_int(N) + " x V " + fmt_int(V) + ": " +
                std::to_string(li) + " B logits" + (li != le ? " (the wrapper's fp32 copies)" : "") + " + " +
                std::to_string(ce) + " B saved log-probabilities per logit" +
                (ce != li ? " + one chunk's fp32 copy" : "") +
                " in forward; the saved log-probabilities + one chunk's " +
                (ce != li ? "two fp32 gradients and its cast back" : "two gradients") +
                (li != le ? " and its cast back to the model dtype" : "") + " in backward" +
                (t.keeps_logits ? ", with the logits the loop still holds" : "");
}

// Liger fused_linear_cross_entropy: chunk_size = next_pow2(ceil(N / ceil(V/h)));
// one chunk of logits (input dtype, upcast inside the kernel) plus
// grad_input (N x h) allocated in forward. Its grad_weight (V x h) is the
// lm_head gradient itself, so it is counted as gradients from the loss phase
// on rather than as a loss buffer.
void fused_loss(LossBuffers& out, const TrainOptions& t, int64_t grads_head, int64_t N, int64_t V, int64_t h,
                double logit_factor) {
  const int64_t le = out.logits_elem;
  const int64_t inc = ceil_div(V, h);
  int64_t chunk = 1;
  const int64_t chunks = ceil_div(N, inc);
  while (chunk < chunks) chunk *= 2;
  out.early_head_grads = t.gradients_persist() ? 0 : grads_head;
  out.forward =
      to_bytes((static_cast<double>(chunk) * V * (le + 4) + static_cast<double>(N) * h * le) * logit_factor, kLoss);
  out.backward = out.forward;
  out.forward_pieces = {{to_bytes(static_cast<double>(chunk) * V * (le + 4) * logit_factor, kLoss), 1},
                        {to_bytes(static_cast<double>(N) * h * le * logit_factor, kLoss), 1}};
  out.backward_pieces = out.forward_pieces;
  out.formula =
      "fused linear cross-entropy: chunk " + fmt_int(chunk) + " x V " + fmt_int(V) + " logits + grad_input N x h";
}

// Unsloth kernels/cross_entropy_loss.py Fast_CrossEntropyLoss (015bdef0):
// forward reads the logits as they are (vocabularies above MAX_FUSED_SIZE
// 65,536 go through _chunked_cross_entropy_forward, no fp32 copy) and keeps
// them with an fp32 loss and logsumexp per row
// (ctx.save_for_backward(logits, logsumexp, labels)); backward writes the
// gradient into the saved logits and returns them (no N x V gradient of its
// own). Release 2024.1 (2f55935f) cast vocabularies above 65,536 to fp32
// first (fast_cross_entropy_loss: logits.float()); not modelled. The model
// returns those 16-bit logits (CausalLM_fast_forward), and the HF Trainer's
// Accelerate wrapper under fp16 / bf16, which Unsloth's notebooks always set,
// converts every 16-bit output to fp32 (accelerate accelerator.py
// prepare_model: model.forward = convert_outputs_to_fp32(autocast_context(...))):
// an N x V fp32 copy alive from the end of forward until compute_loss drops
// the outputs, before backward.
void unsloth_loss(LossBuffers& out, int64_t N, int64_t V, double logit_factor) {
  const int64_t le = out.logits_elem;
  const double nv = static_cast<double>(N) * static_cast<double>(V) * logit_factor;
  const int64_t logits_b = to_bytes(nv * static_cast<double>(le), kLoss);
  const int64_t copy_b = le == 4 ? 0 : to_bytes(nv * 4.0, kLoss);
  const int64_t rows = to_bytes(8.0 * static_cast<double>(N), kLoss);
  out.forward_pieces = {{logits_b, 1}, {rows, 1}};
  if (copy_b > 0) out.forward_pieces.push_back({copy_b, 1});
  out.backward_pieces = {{logits_b, 1}, {rows, 1}};
  out.forward = bytes::add(bytes::add(logits_b, rows, kLoss), copy_b, kLoss);
  out.backward = bytes::add(logits_b, rows, kLoss);
  out.formula = "Unsloth Fast_CrossEntropyLoss: N " + fmt_int(N) + " x V " + fmt_int(V) + " x (" + std::to_string(le) +
                " logits + " + std::to_string(copy_b > 0 ? 4 : 0) +
                " Accelerate's fp32 copy of the returned logits) in forward; backward writes the gradient into "
                "the saved logits; + fp32 loss and logsumexp per token";
}

// transformers loss_utils.py ForCausalLMLoss (>= 4.49, at 0114da07): the
// logits (compute dtype, the model's output), logits.float() (4 B, freed after
// log_softmax), the log_softmax output (4 B, saved). Backward: nll grad (4 B) +
// log_softmax grad (4 B) while the saved output is alive = 12 N V (research
// §3.1). Before 4.49 (train.loss_shift_copy) the loss also copied the upcast
// logits shifted by one (logits[..., :-1, :].contiguous(), 4 B) and fed that to
// log_softmax; before 4.46 (train.logits_upcast_in_model) the model itself
// returned fp32 logits and its compute-dtype ones were gone by the loss. Their
// backward is the same: log_softmax's then SliceBackward's fp32 gradients,
// never more than three at once.
void standard_loss(LossBuffers& out, const TrainOptions& t, int64_t N, int64_t V, double logit_factor) {
  const int64_t le = out.logits_elem;
  const bool model_upcasts = t.logits_upcast_in_model && le != 4;
  const int64_t held = model_upcasts ? 4 : le;      // the logits alive at the loss
  const int64_t upcast = held == 4 ? 0 : 4;         // the loss's own fp32 copy
  const int64_t shift = t.loss_shift_copy ? 4 : 0;  // the shifted contiguous copy
  out.forward = to_bytes(static_cast<double>(N) * V * (held + upcast + shift + 4) * logit_factor, kLoss);
  // PyTorch <= 1.10 (train.softmax_saves_input): log_softmax also keeps its
  // fp32 input until its backward (derivatives.yaml up to 1.10:
  // _log_softmax_backward_data(grad, result, dim, self); issue #64000).
  const int64_t kept_in = t.softmax_saves_input ? 1 : 0;
  out.backward = to_bytes(static_cast<double>(N) * V * (12.0 + 4.0 * kept_in) * logit_factor, kLoss);
  // Forward: the logits, their fp32 copy, the shifted copy, the saved
  // log_softmax output; backward: three fp32 N x V tensors (the saved output
  // and two grads).
  const int64_t nv4 = to_bytes(static_cast<double>(N) * V * 4.0 * logit_factor, kLoss);
  out.forward_pieces = {{nv4, 1}, {to_bytes(static_cast<double>(N) * V * held * logit_factor, kLoss), 1}};
  if (upcast > 0) out.forward_pieces.push_back({nv4, 1});
  if (shift > 0) out.forward_pieces.push_back({nv4, 1});
  out.backward_pieces = {{nv4, 3 + kept_in}};
  if (t.keeps_logits) {  // the loop still holds the model's output through backward (LitGPT, fsdp_qlora)
    const int64_t kept = to_bytes(static_cast<double>(N) * V * held * logit_factor, kLoss);
    out.backward_pieces.push_back({kept, 1});
    out.backward = bytes::add(out.backward, kept, kLoss);
  }
  out.formula = "N " + fmt_int(N) + " x V " + fmt_int(V) + " x (" + std::to_string(held) +
                (model_upcasts ? " fp32 logits from the model" : " logits") + " + " + std::to_string(upcast) +
                " fp32 copy + " + (shift > 0 ? "4 shifted copy + " : "") + "4 log_softmax) in forward; x " +
                std::to_string(12 + 4 * kept_in) + " B in backward" +
                (kept_in > 0 ? " (log_softmax keeps its input)" : "");
}

// Final logit soft-capping (Gemma 2): transformers' Gemma2ForCausalLM.forward
// (modeling_gemma2.py at 006e8693: logits / cap, torch.tanh, * cap) and
// LitGPT's GPT.forward (litgpt/model.py at 26857050: do_softcapping per
// lm_head chunk) keep tanh's output for its backward (derivatives.yaml
// tanh: result), one logits-sized tensor in the logits' dtype, alive from the
// forward until the logits' gradient has gone through it. The division and the
// product by the scalar cap keep nothing. `chunks` as the logits are made.
void softcapped_logits(LossBuffers& out, const TrainOptions& t, int64_t seq_len, int64_t N, int64_t V,
                       double logit_factor) {
  const int64_t chunks = t.loss == LossKind::kChunked ? loss_chunk_count(t, seq_len) : 1;
  const double nv = static_cast<double>(N) * static_cast<double>(V) * logit_factor / static_cast<double>(chunks);
  const int64_t piece = to_bytes(nv * static_cast<double>(out.logits_elem), kLoss);
  const int64_t all = bytes::mul(piece, chunks, kLoss);
  out.forward_pieces.push_back({piece, chunks});
  out.backward_pieces.push_back({piece, chunks});
  out.forward = bytes::add(out.forward, all, kLoss);
  out.backward = bytes::add(out.backward, all, kLoss);
  out.formula += "; + the final logit soft-cap's saved tanh output (" + std::to_string(out.logits_elem) +
                 " B per logit, forward and loss backward)";
}

}  // namespace

LossBuffers loss_buffers(const Request& req, const Dtypes& dt, int64_t grads_head, bool last, int64_t micro_batch,
                         int64_t seq_len, const HeadLora& head) {
  const TrainOptions& t = req.train;
  const LayerStack& st = req.model.text;
  const int64_t N = bytes::mul(micro_batch, seq_len, "tokens per micro-batch");
  const int64_t V = req.model.vocab;
  const bool lm_loss = st.causal && last;
  const double logit_factor = req.calibration.logits.value_or(1.0);
  LossBuffers out;
  out.logits_elem = dt.autocast ? 2 : dt.compute;
  if (!lm_loss) {
    // Encoder-only models carry a small task head (classification), not a
    // vocabulary-sized loss.
    out.formula = last ? "classification head: negligible"
                       : "none on this pipeline stage: the last stage computes the logits and the loss";
    return out;
  }
  if (t.fused_loss) {
    fused_loss(out, t, grads_head, N, V, st.hidden, logit_factor);
  } else if (t.loss == LossKind::kChunked) {
    chunked_loss(out, t, dt.autocast, seq_len, N, V, logit_factor);
  } else if (t.kernels == Kernels::kUnsloth) {
    unsloth_loss(out, N, V, logit_factor);
  } else {
    standard_loss(out, t, N, V, logit_factor);
  }
  // Liger's fused linear cross-entropy (liger_kernel/transformers/model/gemma2.py
  // lce_forward: softcap=) and Unsloth's cross-entropy (unsloth/kernels/
  // cross_entropy_loss.py at 015bdef0: DO_SOFTCAPPING) cap inside the kernel.
  if (st.final_softcap && !t.fused_loss && t.kernels != Kernels::kUnsloth) {
    softcapped_logits(out, t, seq_len, N, V, logit_factor);
  }
  if (head.on) head_lora_buffers(out, dt, head, N, logit_factor);
  return out;
}

}  // namespace vram::memory

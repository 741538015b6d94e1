// One training step of one rank as a timeline of tensors (step.h).
#include "train/step.h"

#include <algorithm>
#include <span>
#include <utility>

#include "memory/allocator_replay.h"
#include "memory/bytes.h"
#include "memory/overheads.h"
#include "reach.h"

namespace vram::train {

using memory::Piece;
using memory::Timeline;

namespace {

// The load part of every step of a rank: model state, workspaces,
// persistent buffers, and the gradients carried across steps (none
// otherwise).
Timeline load_timeline(const RankBasis& b) {
  const Request& req = *b.req;
  const TrainOptions& o = req.train;
  Timeline tl;
  const memory::StateSizes& sz = b.state.sz;
  const int64_t placed = reach::fsdp1_construct(
      tl, b.buffers.fsdp1, req.model, b.plan,
      bytes::add(bytes::add(sz.weights, sz.weights_quantized, "the weights"), sz.lora_weights, "the weights"));
  memory::load_state(tl, *b.opt, b.state, b.pieces, req.train.quant, placed);
  tl.alloc("cublas_workspace", "cuBLAS/cuBLASLt workspaces", b.cublas);
  if (b.buffers.comm > 0) tl.alloc("comm_buffers", "communication buckets", b.buffers.comm);
  tl.alloc("misc", "user cushion", req.overheads.misc_bytes);
  // Gradients that outlive the step: accumulated over micro-steps, or zeroed
  // in place by zero_grad(set_to_none=False) (TrainOptions::gradients_persist).
  const bool kept = o.gradients_persist();
  std::vector<Piece> all_grads;
  if (kept) {
    all_grads = b.pieces.grads_head;
    for (Piece p : b.pieces.grads_layer) all_grads.push_back({p.bytes, p.count * req.model.text.layers});
    all_grads.insert(all_grads.end(), b.pieces.grads_rest.begin(), b.pieces.grads_rest.end());
  }
  tl.alloc("gradients", o.grad_accum > 1 ? "accumulated gradients" : "gradients kept between steps (zeroed)",
           kept ? b.state.sz.grads : 0, all_grads);
  tl.begin_step();
  return tl;
}

}  // namespace

RankBasis rank_basis(const Request& req, const Request& global, const Stage& stage) {
  RankBasis b;
  b.req = &req;
  b.global = &global;
  b.stage = stage;
  b.opt = find_optimizer(req.train.optimizer);
  b.dt = memory::dtypes_for(req);
  b.plan = memory::plan_trainable(req, stage.last);
  b.sh = memory::sharding_for(global.parallel);
  b.state = memory::rank_state(req, global.parallel, b.plan, b.dt, *b.opt, b.sh);
  b.pieces = memory::state_pieces(req, b.plan, b.dt, *b.opt, b.sh, b.state);
  b.buffers = memory::parallel_buffers(req, global.parallel, b.plan, b.dt, b.sh, b.state.sz);
  reach::fsdp1_adapter_pieces(b.pieces, b.state, req, b.plan, b.dt, *b.opt, b.sh, b.buffers.fsdp1);
  b.nccl = nccl_memory(global, stage);
  b.cublas = memory::cublas_bytes(req, 2);
  b.context = memory::context_bytes(req);
  b.allocator = memory::allocator_config(req.allocator);
  b.load = load_timeline(b);
  return b;
}

const memory::LoadedAllocator& RankBasis::loaded(int64_t capacity) const {
  for (const auto& l : loaded_) {
    if (l->limits().capacity == capacity) return *l;
  }
  memory::DeviceLimits limits;
  limits.capacity = capacity;
  // Without a bound: a copy of a bounded load the bound never acted on.
  for (size_t i = 0; i < loaded_.size() && capacity == 0; ++i) {
    if (auto copy = loaded_[i]->without_bound()) return *loaded_.emplace_back(std::move(copy));
  }
  return *loaded_.emplace_back(std::make_unique<memory::LoadedAllocator>(load, allocator, limits));
}

StepTerms step_terms(const RankBasis& b, int64_t micro_batch, int64_t seq_len) {
  const Request& req = *b.req;
  StepTerms t;
  t.micro_batch = micro_batch;
  t.seq_len = seq_len > 0 ? seq_len : req.train.seq_len;
  t.tokens = memory::token_buffers(req, b.global->parallel, b.dt, micro_batch, t.seq_len);
  t.act =
      memory::activation_stack(req, b.plan, b.dt, b.state.sz,
                               {b.stage.last, b.stage.in_flight_num, b.stage.in_flight_den}, micro_batch, t.seq_len);
  t.loss =
      memory::loss_buffers(req, b.dt, b.state.sz.grads_head, b.stage.last, micro_batch, t.seq_len, b.plan.head_lora);
  return t;
}

namespace {

// Each saved layer's tensors, bottom layer first, in one array (a step
// builds one per probe and per padded length: no array per layer).
struct SavedLayers {
  std::vector<Timeline::Id> ids;
  std::vector<size_t> end;  // layer k's tensors are ids[end[k - 1], end[k]) (from 0 for k 0)
  void close_layer() { end.push_back(ids.size()); }
  std::span<const Timeline::Id> layer(size_t k) const {
    const size_t begin = k == 0 ? 0 : end[k - 1];
    return {ids.data() + begin, end[k] - begin};
  }
};

// The forward temporaries alive, by slot: a layer program's slots are a
// handful of small numbers (saved_activations.cpp Slot), -1 where none is.
using Slots = std::vector<Timeline::Id>;
Timeline::Id& slot_of(Slots& slots, int slot) {
  if (static_cast<size_t>(slot) >= slots.size()) slots.resize(static_cast<size_t>(slot) + 1, -1);
  return slots[static_cast<size_t>(slot)];
}

// One dense layer of a per-tensor layer program (ActivationStack::layer_ops)
// at layer `layer` of `bytes` saved bytes: each kept tensor its own, the
// temporaries allocated and freed where the layer does.
void program_layer(Timeline& tl, const memory::ActivationStack& a, int32_t layer, int64_t bytes, size_t last_keep,
                   SavedLayers& saved, Slots& slots, std::vector<Timeline::Id>& returned) {
  for (size_t k = 0; k < a.layer_ops.size(); ++k) {
    const memory::ActivationStack::Op& op = a.layer_ops[k];
    if (op.kind == memory::ForwardOp::Kind::kKeep) {
      // The last kept tensor absorbs the bottom layer's difference.
      const int64_t b = k == last_keep ? op.bytes + (bytes - a.layer_dense) : op.bytes;
      saved.ids.push_back(tl.alloc("activations", "saved activations", b, {}, memory::Residence::kAllocated, layer));
    } else if (op.kind == memory::ForwardOp::Kind::kReturn) {
      returned.push_back(tl.alloc("activations", "key/value cache returned by model() (use_cache)", op.bytes, {},
                                  memory::Residence::kAllocated, layer));
    } else if (Timeline::Id& id = slot_of(slots, op.slot); op.kind == memory::ForwardOp::Kind::kTemp) {
      if (id >= 0) tl.free(id);
      id = tl.alloc("activations", "forward temporaries (freed within the layer)", op.bytes, {},
                    memory::Residence::kAllocated, layer);
    } else if (id >= 0) {
      tl.free(id);
      id = -1;
    }
  }
}

// Forward: the layer stack's saved tensors, bottom layer first. Returns the
// tensors of each saved layer (index i - first_grad_layer), or the one
// resident window when activations are offloaded. With a per-tensor layer
// program (ActivationStack::layer_ops) each kept tensor is its own tensor
// and the temporaries are allocated and freed where the layer does; the
// temporaries still held when the stack ends (the top layer's MLP output,
// freed by the final residual add) are left in `pending`, and what model()
// returns (train.returns_kv_cache) in `returned`.
SavedLayers forward_layers(Timeline& tl, const memory::ActivationStack& a, int64_t L, int64_t moe_layers,
                           std::vector<Timeline::Id>& pending, std::vector<Timeline::Id>& returned) {
  SavedLayers out;
  if (a.offload) {
    out.ids.push_back(
        tl.alloc("activations", "saved activations resident on the GPU (offloaded)", a.resident(a.layers)));
    out.close_layer();
    return out;
  }
  auto saved = [&](int64_t i) { return i >= L - moe_layers ? a.layer_moe : a.layer_dense; };
  // The bottom layer takes what the per-layer figures leave of the stack's
  // total, so the sum is the stack's exact (in-flight rounded) size.
  int64_t above = 0;
  for (int64_t i = a.first_grad_layer + 1; i < L; ++i) above += saved(i);
  size_t last_keep = 0;
  for (size_t k = 0; k < a.layer_ops.size(); ++k) {
    if (a.layer_ops[k].kind == memory::ForwardOp::Kind::kKeep) last_keep = k;
  }
  out.end.reserve(static_cast<size_t>(std::max<int64_t>(L - a.first_grad_layer, 0)));
  Slots slots;
  for (int64_t i = a.first_grad_layer; i < L; ++i) {
    const bool moe = i >= L - moe_layers;
    const int64_t bytes = i == a.first_grad_layer ? a.layers - above : saved(i);
    const auto layer = static_cast<int32_t>(i);
    if (moe || a.layer_ops.empty()) {
      out.ids.push_back(tl.alloc("activations", "saved activations", bytes, moe ? a.moe_pieces : a.dense_pieces,
                                 memory::Residence::kAllocated, layer));
    } else {
      program_layer(tl, a, layer, bytes, last_keep, out, slots, returned);
    }
    out.close_layer();
  }
  for (Timeline::Id id : slots) {
    if (id >= 0) pending.push_back(id);
  }
  return out;
}

// training_step, section by section: the tensors a later section frees are
// members.
class StepBuilder {
 public:
  StepBuilder(const RankBasis& b, const StepTerms& t, bool with_load)
      : b_(b),
        t_(t),
        o_(b.req->train),
        sz_(b.state.sz),
        a_(t.act),
        f2_(b.buffers.fsdp2),
        L_(b.req->model.text.layers),
        moe_layers_(b.req->model.text.moe_layers),
        kept_(o_.gradients_persist()) {
    // Room for the step before the load is copied in, so that appending
    // the step does not copy the load again as the arrays grow: a layer
    // makes a few tensors and events, or its program's (layer_ops).
    const size_t layers = static_cast<size_t>(std::max<int64_t>(L_, 0)) + 16;
    const size_t per_layer = 6 + 2 * a_.layer_ops.size();
    const Timeline& load = b.load;
    const size_t n = with_load ? 1 : 0;
    tl_.reserve(n * load.events().size() + layers * per_layer, n * load.tensors().size() + layers * per_layer / 2,
                n * load.piece_count() + layers * 4);
    if (with_load) tl_ = load;
  }

  Timeline build() && {
    forward();
    loss();
    backward();
    optimizer_step();
    return std::move(tl_);
  }

 private:
  // FSDP2 (memory::Fsdp2Unshard): the copy-in stream's buffers apart from
  // the unsharded parameters: the param_dtype cast of the local shards,
  // freed once the flat output is allocated.
  Timeline::Id all_gather(int64_t cast, int64_t flat) {
    const Timeline::Id c = tl_.alloc_on(memory::kAllGatherCopyInStream, "gathered_params",
                                        "all-gather input (param_dtype copy of the local shards)", cast);
    const Timeline::Id out =
        tl_.alloc_on(memory::kAllGatherCopyInStream, "gathered_params", "flat all-gather output", flat);
    tl_.free(c);
    return out;
  }

  // Parameters gathered for compute, alive through forward and backward.
  // FSDP2: the root unit's all-gather comes first; each layer's flat output
  // is allocated while the previous one is still held (AllGatherState,
  // freed at the next copy-out), so the copy-in stream's pool keeps the
  // root's output and one layer's beside it. The root's post-forward frees
  // the last one.
  void gathered() {
    const memory::ParallelBuffers& pb = b_.buffers;
    if (f2_.on) {
      const Timeline::Id root_flat = all_gather(f2_.root_cast, f2_.root_flat);
      fwd_.push_back(
          tl_.alloc("gathered_params", "unsharded root unit (embeddings, norm, lm_head)", f2_.root_bytes, f2_.root));
      for (int k = 0; k < 2; ++k) {  // layers 0 and 1; later layers repeat layer 1
        const Timeline::Id next = all_gather(f2_.layer_cast, f2_.layer_flat);
        tl_.free(k == 0 ? root_flat : flat_);
        flat_ = next;
      }
      fwd_.push_back(
          tl_.alloc("gathered_params", "unsharded layer parameters (one layer)", f2_.layer_bytes, f2_.layer));
    } else if (pb.fsdp1.on && pb.gathered > 0) {
      // FSDP1 (memory::Fsdp1Units): under CPU offload each unit's shard is
      // first copied in on the pre-unshard stream; the unsharded flat
      // parameters (the root unit, the current and the prefetched layer) are
      // allocated on the unshard stream.
      const memory::Fsdp1Units& f1 = pb.fsdp1;
      if (f1.offload) {
        for (int64_t unit : {f1.root_bytes, f1.layer_bytes}) {
          tl_.free(tl_.alloc_on(memory::kFsdp1PreUnshardStream, "gathered_params", "CPU shard copied to the GPU",
                                memory::ceil_div(unit, f1.shards)));
        }
      }
      fwd_.push_back(tl_.alloc_on(memory::kFsdp1UnshardStream, "gathered_params", "unsharded flat parameters",
                                  pb.gathered, f1.gathered));
    } else if (pb.gathered > 0) {
      fwd_.push_back(tl_.alloc("gathered_params", "gathered parameters", pb.gathered));
    }
  }

  void forward() {
    if (sz_.autocast_cache > 0)
      fwd_.push_back(tl_.alloc("autocast_weight_cache", "autocast weight copies", sz_.autocast_cache));
    gathered();
    const memory::TokenBuffers& tb = t_.tokens;
    if (tb.dispatch > 0) fwd_.push_back(tl_.alloc("moe_dispatch", "expert-parallel dispatch", tb.dispatch));
    if (tb.cp_kv > 0) fwd_.push_back(tl_.alloc("cp_kv_exchange", "K/V receive buffers", 2 * tb.cp_kv));
    // train.keeps_previous_logits (LitGPT): last step's logits and the 4-bit
    // inputs their graph holds stay until model() returns this step's logits,
    // while the last lm_head chunk may still hold its dequantised weight
    // (activation_stack.cpp).
    const Timeline::Id prev =
        a_.logits > 0 ? tl_.alloc("activations", "previous step's logits and 4-bit Linear inputs (kept by the loop)",
                                  bytes::add(a_.logits, a_.prev_kept_inputs, "the previous step's logits"))
                      : Timeline::Id{-1};
    vision_ = tl_.alloc("activations", "vision tower / audio encoder activations", a_.vision);
    image_kv_ = tl_.alloc("activations", "image cross-attention inputs, keys and values", a_.image_kv);
    ple_ = tl_.alloc("activations", "per-layer embeddings and AltUp stacking (Gemma 3n)", a_.per_layer_inputs);
    std::vector<Timeline::Id> pending;
    layers_ = forward_layers(tl_, a_, L_, moe_layers_, pending, returned_);
    if (a_.returned_kv > 0)
      returned_.push_back(tl_.alloc("activations", "key/value cache returned by model() (use_cache)", a_.returned_kv));
    head_ = tl_.alloc("activations", "final norm and lm_head inputs", a_.head);
    for (Timeline::Id id : pending) tl_.free(id);
    if (flat_ >= 0) tl_.free(flat_);  // the root's post-forward frees the last flat output
    tl_.mark("forward", "end of forward");
    if (prev >= 0) {
      const Timeline::Id nl = tl_.alloc("loss_buffers", "logits returned by model()", a_.logits);
      const Timeline::Id d = tl_.alloc("dequant", "4-bit lm_head dequantised", sz_.head_dequant);
      tl_.mark("forward", "end of forward (model() returns; the previous step's logits are still held)");
      tl_.free(d);
      tl_.free(nl);
      tl_.free(prev);
    }
  }

  // A gradient that appears during the step. FSDP2's sharded gradients are
  // views into each unit's reduce-scatter output, allocated on the
  // reduce-scatter stream (_fsdp_collectives.py foreach_reduce:
  // reduce_output = reduce_scatter_input.new_empty(...) under `with
  // torch.cuda.stream(reduce_scatter_stream)`; "The RS output is allocated in
  // the RS stream and used in the default stream (for optimizer)").
  // zero_grad() frees them into that stream's pool, where the next forward,
  // on the default stream, cannot reuse them. The root unit has no input that
  // requires grad, so its post-backward (and its reduce-scatter: lm_head,
  // norm and embeddings at once) runs in the final callback (_fsdp_state.py
  // _root_post_backward_final_callback). FSDP1 likewise reduce-scatters into
  // new sharded gradients on its post-backward stream (timeline.h Stream).
  Timeline::Id grad_alloc(const char* name, int64_t bytes, std::span<const Piece> pieces, int32_t layer) {
    if (rs_grads_)
      return tl_.alloc_on(
          b_.global->parallel.fsdp_version == 1 ? memory::kFsdp1PostBackwardStream : memory::kReduceScatterStream,
          "gradients", name, bytes, pieces, layer);
    return tl_.alloc("gradients", name, bytes, pieces, memory::Residence::kAllocated, layer);
  }

  // A 4-bit lm_head (Lightning's quantiser) is dequantised by MatMul4Bit
  // while it computes the logits, and again in backward while their
  // gradient is alive (grad_A = grad_output @ dequantize_4bit(B)).
  void head_dequant(const char* key, const char* label) {
    if (sz_.head_dequant == 0) return;
    const Timeline::Id d = tl_.alloc("dequant", "4-bit lm_head dequantised", sz_.head_dequant);
    tl_.mark(key, label);
    tl_.free(d);
  }

  void loss() {
    const memory::LossBuffers& lb = t_.loss;
    // LoRA on the head: its logits-sized forward tensors, gone (but for the
    // logits) before the cross-entropy starts (memory/loss.cpp).
    if (lb.head_lora_forward > 0) {
      const Timeline::Id hf = tl_.alloc("loss_buffers", "lm_head LoRA forward (logits + B(A x))", lb.head_lora_forward,
                                        lb.head_lora_forward_pieces);
      tl_.mark("loss", "loss (lm_head forward: the LoRA output added to the logits)");
      tl_.free(hf);
    }
    rs_grads_ = b_.sh.fsdp && b_.sh.grads && !kept_ && !o_.optimizer_in_backward;
    if (lb.early_head_grads > 0) {
      step_grads_.push_back(grad_alloc("lm_head gradient (fused loss)", lb.early_head_grads, b_.pieces.grads_head, -1));
    }
    loss_ = tl_.alloc("loss_buffers", "logits and loss", lb.forward, lb.forward_pieces);
    // train.returns_kv_cache: Accelerate's fp32 copy of the returned keys and
    // values, made with the logits' copy as model() returns.
    const Timeline::Id kv32 = tl_.alloc("loss_buffers", "Accelerate's fp32 copy of the returned key/value cache",
                                        a_.returned_kv_fp32, a_.kv_fp32_pieces);
    head_dequant("loss", "loss (lm_head forward: its 4-bit weight dequantised)");
    tl_.mark("loss", "loss (cross-entropy forward)");
    // compute_loss returns: the outputs (and the cache in them) are dropped.
    tl_.free(kv32);
    for (Timeline::Id id : returned_) tl_.free(id);
    loss_ = tl_.resize(loss_, lb.backward, lb.backward_pieces);
    tl_.mark("backward_start", "start of backward (loss backward)");
    head_dequant("backward_start", "start of backward (lm_head backward: its 4-bit weight dequantised)");
    if (lb.head_lora_backward > 0) {
      // Then the head's backward: the LoRA branch's logits-sized gradients.
      loss_ = tl_.resize(loss_, lb.head_lora_backward, lb.head_lora_backward_pieces);
      tl_.mark("backward_start", "start of backward (lm_head backward: the LoRA branch's logits gradients)");
    }
  }

  // Optimizer in backward (torchtune training/memory.py
  // register_optim_in_bwd_hooks: each parameter's post-accumulate-grad hook
  // runs its own optimizer's step() and zero_grad(); LOMO likewise): a
  // gradient lives only until its parameter has stepped, so the sweep holds
  // one parameter's gradient and step temporaries at a time, never all of
  // them. This places that moment next to whatever is alive.
  void step_in_backward(Timeline::Id grad_id) {
    const Timeline::Id st = tl_.alloc("optimizer_temporaries", "optimizer step temporaries (one parameter)",
                                      sz_.opt_temp, b_.pieces.opt_temp);
    tl_.mark("backward", "during backward (peak of the layer sweep)");
    tl_.free(st);
    tl_.free(grad_id);
  }

  // Layer i's backward: its temporaries next to what is alive, then its
  // saved tensors are freed and its gradients appear.
  void layer_backward(int64_t i) {
    const bool moe = i >= L_ - moe_layers_;
    const int64_t recompute =
        o_.checkpointing == Checkpointing::kFull || o_.checkpointing == Checkpointing::kSelectiveOp ? a_.one_layer : 0;
    // The tensors as they are made (ActivationStack::backward_pieces, built
    // once per micro-batch, not per layer).
    const Timeline::Id work =
        tl_.alloc("layer_backward", "one layer's backward temporaries", a_.backward_temp + recompute + a_.dx,
                  a_.backward_pieces, memory::Residence::kAllocated, static_cast<int32_t>(i));
    Timeline::Id dkv = -1;
    if (t_.tokens.cp_kv > 0) dkv = tl_.alloc("cp_kv_exchange", "dK/dV receive buffers", 2 * t_.tokens.cp_kv);
    tl_.mark("backward", "during backward (peak of the layer sweep)");
    if (in_bwd_ && sz_.grads_layer > 0) {
      // The layer's largest parameter's gradient, stepped while the layer's
      // backward temporaries are still alive.
      const int64_t one_grad = std::min(b_.state.grad_elem * sz_.largest_trainable_tensor, sz_.grads);
      step_in_backward(tl_.alloc("gradients", "one parameter's gradient (stepped in backward)",
                                 std::min(one_grad, sz_.grads_layer), {}, memory::Residence::kAllocated,
                                 static_cast<int32_t>(i)));
    }
    tl_.free(work);
    if (dkv >= 0) tl_.free(dkv);
    a_rem_ -= moe ? a_.layer_moe : a_.layer_dense;
    if (a_.offload) {
      layers_.ids[0] = tl_.resize(layers_.ids[0], a_.resident(a_rem_));
    } else {
      for (Timeline::Id id : layers_.layer(static_cast<size_t>(i - a_.first_grad_layer))) tl_.free(id);
    }
    if (!kept_ && !in_bwd_) {
      // FSDP1's adapter units: a tensor each (fsdp1_adapter_pieces).
      step_grads_.push_back(
          grad_alloc("layer gradients", sz_.grads_layer,
                     rs_grads_ ? std::span<const Piece>(b_.pieces.grads_layer) : std::span<const Piece>{},
                     static_cast<int32_t>(i)));
    }
    if (!kept_) g_now_ += sz_.grads_layer;
  }

  // The backward sweep, top layer first.
  void backward() {
    const int64_t early = t_.loss.early_head_grads;
    tl_.free(loss_);
    tl_.free(head_);
    // FSDP2 prefetches the next layer's all-gather in backward (one flat
    // output on the copy-in stream at a time, freed at its copy-out).
    const Timeline::Id bwd_flat = f2_.on ? all_gather(f2_.layer_cast, f2_.layer_flat) : Timeline::Id{-1};
    g_now_ = kept_ ? sz_.grads : rs_grads_ ? early : sz_.grads_head;
    if (!kept_ && !rs_grads_ && sz_.grads_head - early != 0) {
      step_grads_.push_back(tl_.alloc("gradients", "lm_head and final norm gradients", sz_.grads_head - early,
                                      early > 0 ? std::span<const Piece>{} : b_.pieces.grads_head));
    }
    in_bwd_ = o_.optimizer_in_backward && !kept_;
    if (in_bwd_) {
      for (Timeline::Id id : step_grads_) step_in_backward(id);  // lm_head and final norm
      step_grads_.clear();
    }
    a_rem_ = a_.layers;  // saved layer bytes still alive
    for (int64_t i = L_ - 1; i >= a_.first_grad_layer; --i) layer_backward(i);
    // Embedding gradient at the end (dense V x h grad; tied weights add it
    // into lm_head's grad through a temporary of the same size).
    if (sz_.grads - g_now_ != 0) {
      step_grads_.push_back(
          rs_grads_ ? grad_alloc("root unit gradients (embeddings, norm, lm_head)", sz_.grads - g_now_, {}, -1)
                    : tl_.alloc("gradients", "embedding and other gradients", sz_.grads - g_now_,
                                kept_ ? std::span<const Piece>{} : b_.pieces.grads_rest));
    }
    if (bwd_flat >= 0) tl_.free(bwd_flat);
    const int64_t tied_tmp = b_.req->model.tie_word_embeddings && sz_.grads_embed > 0 ? sz_.grads_embed : 0;
    tied_ = tl_.alloc("layer_backward", "tied embedding gradient temporary", tied_tmp);
    if (a_.offload) tl_.free(layers_.ids[0]);
    tl_.mark("backward", "during backward (peak of the layer sweep)");
    if (in_bwd_) {
      for (Timeline::Id id : step_grads_) step_in_backward(id);  // embeddings and the rest
      step_grads_.clear();
    }
  }

  // The optimizer step; at its end the temporaries go and
  // zero_grad(set_to_none=True) frees the step's gradients (transformers
  // Trainer, torch.optim.Optimizer.zero_grad); kept ones stay for the next
  // step.
  void optimizer_step() {
    tl_.free(tied_);
    tl_.free(vision_);
    tl_.free(image_kv_);
    tl_.free(ple_);
    for (Timeline::Id id : fwd_) tl_.free(id);
    // Stepped in backward: nothing is left to step here.
    const Timeline::Id temp =
        tl_.alloc("optimizer_temporaries", "optimizer step temporaries", in_bwd_ ? 0 : sz_.opt_temp,
                  in_bwd_ ? std::span<const Piece>{} : b_.pieces.opt_temp);
    tl_.mark("optimizer_step", "optimizer step");
    tl_.free(temp);
    for (Timeline::Id id : step_grads_) tl_.free(id);
  }

  const RankBasis& b_;
  const StepTerms& t_;
  const TrainOptions& o_;
  const memory::StateSizes& sz_;
  const memory::ActivationStack& a_;
  const memory::Fsdp2Unshard& f2_;
  const int64_t L_;
  const int64_t moe_layers_;
  // Gradients that outlive the step: accumulated over micro-steps, or zeroed
  // in place by zero_grad(set_to_none=False) (TrainOptions::gradients_persist).
  const bool kept_;
  Timeline tl_;
  // Forward's tensors freed later.
  std::vector<Timeline::Id> fwd_;  // freed at the optimizer step
  Timeline::Id flat_ = -1;         // FSDP2's last flat all-gather output
  Timeline::Id vision_ = -1, image_kv_ = -1, ple_ = -1, head_ = -1;
  std::vector<Timeline::Id> returned_;  // what model() returns, freed after the loss
  SavedLayers layers_;                  // each saved layer's tensors
  // Loss and backward.
  Timeline::Id loss_ = -1, tied_ = -1;
  bool rs_grads_ = false;                 // gradients on FSDP's reduce-scatter (post-backward) stream
  bool in_bwd_ = false;                   // optimizer in backward
  std::vector<Timeline::Id> step_grads_;  // gradients that appear during this step
  int64_t g_now_ = 0;                     // gradient bytes so far
  int64_t a_rem_ = 0;                     // saved layer bytes still alive
};

}  // namespace

Timeline training_step(const RankBasis& b, const StepTerms& t, bool with_load) {
  return StepBuilder(b, t, with_load).build();
}

}  // namespace vram::train

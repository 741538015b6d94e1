// One training step of one rank as a timeline of tensors (step.h).
#include "train/step.h"

#include <algorithm>
#include <map>

#include "memory/allocator_replay.h"
#include "memory/bytes.h"
#include "memory/overheads.h"

namespace vram::train {

using memory::Piece;
using memory::Timeline;

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
  b.nccl = nccl_memory(global, stage);
  b.cublas = memory::cublas_bytes(req, 2);
  b.context = memory::context_bytes(req);
  b.allocator = memory::allocator_config(req.allocator);
  return b;
}

StepTerms step_terms(const RankBasis& b, int64_t micro_batch) {
  const Request& req = *b.req;
  StepTerms t;
  t.micro_batch = micro_batch;
  t.buffers = memory::parallel_buffers(req, b.global->parallel, b.plan, b.dt, b.sh, b.state.sz, micro_batch);
  t.act = memory::activation_stack(req, b.plan, b.dt, b.state.sz,
                                   {b.stage.last, b.stage.in_flight_num, b.stage.in_flight_den}, micro_batch);
  t.loss = memory::loss_buffers(req, b.dt, b.state.sz.grads_head, b.stage.last, micro_batch, b.plan.head_lora);
  return t;
}

namespace {

// Forward: the layer stack's saved tensors, bottom layer first. Returns the
// tensors of each saved layer (index i - first_grad_layer), or the one
// resident window when activations are offloaded. With a per-tensor layer
// program (ActivationStack::layer_ops) each kept tensor is its own tensor
// and the temporaries are allocated and freed where the layer does; the
// temporaries still held when the stack ends (the top layer's MLP output,
// freed by the final residual add) are left in `pending`, and what model()
// returns (train.returns_kv_cache) in `returned`.
std::vector<std::vector<Timeline::Id>> forward_layers(Timeline& tl, const memory::ActivationStack& a, int64_t L,
                                                      int64_t moe_layers, std::vector<Timeline::Id>& pending,
                                                      std::vector<Timeline::Id>& returned) {
  std::vector<std::vector<Timeline::Id>> ids;
  if (a.offload) {
    ids.push_back({tl.alloc("activations", "saved activations resident on the GPU (offloaded)", a.resident(a.layers))});
    return ids;
  }
  auto saved = [&](int64_t i) { return i >= L - moe_layers ? a.layer_moe : a.layer_dense; };
  // The bottom layer takes what the per-layer figures leave of the stack's
  // total, so the sum is the stack's exact (in-flight rounded) size.
  int64_t above = 0;
  for (int64_t i = a.first_grad_layer + 1; i < L; ++i) above += saved(i);
  std::map<int, Timeline::Id> slots;  // the temporaries alive, by slot
  for (int64_t i = a.first_grad_layer; i < L; ++i) {
    const bool moe = i >= L - moe_layers;
    const int64_t bytes = i == a.first_grad_layer ? a.layers - above : saved(i);
    const auto layer = static_cast<int32_t>(i);
    if (moe || a.layer_ops.empty()) {
      ids.push_back({tl.alloc("activations", "saved activations", bytes, moe ? a.moe_pieces : a.dense_pieces,
                              memory::Residence::kAllocated, layer)});
      continue;
    }
    std::vector<Timeline::Id> kept;
    size_t last_keep = 0;
    for (size_t k = 0; k < a.layer_ops.size(); ++k) {
      if (a.layer_ops[k].kind == memory::ForwardOp::Kind::kKeep) last_keep = k;
    }
    for (size_t k = 0; k < a.layer_ops.size(); ++k) {
      const memory::ActivationStack::Op& op = a.layer_ops[k];
      if (op.kind == memory::ForwardOp::Kind::kKeep) {
        // The last kept tensor absorbs the bottom layer's difference.
        const int64_t b = k == last_keep ? op.bytes + (bytes - a.layer_dense) : op.bytes;
        kept.push_back(tl.alloc("activations", "saved activations", b, {}, memory::Residence::kAllocated, layer));
      } else if (op.kind == memory::ForwardOp::Kind::kReturn) {
        returned.push_back(tl.alloc("activations", "key/value cache returned by model() (use_cache)", op.bytes, {},
                                    memory::Residence::kAllocated, layer));
      } else if (op.kind == memory::ForwardOp::Kind::kTemp) {
        if (auto it = slots.find(op.slot); it != slots.end()) tl.free(it->second);
        slots[op.slot] = tl.alloc("activations", "forward temporaries (freed within the layer)", op.bytes, {},
                                  memory::Residence::kAllocated, layer);
      } else if (auto it = slots.find(op.slot); it != slots.end()) {
        tl.free(it->second);
        slots.erase(it);
      }
    }
    ids.push_back(std::move(kept));
  }
  for (const auto& [slot, id] : slots) pending.push_back(id);
  return ids;
}

}  // namespace

Timeline training_step(const RankBasis& b, const StepTerms& t) {
  const Request& req = *b.req;
  const TrainOptions& o = req.train;
  const memory::StateSizes& sz = b.state.sz;
  const memory::ParallelBuffers& pb = t.buffers;
  const memory::ActivationStack& a = t.act;
  const int64_t L = req.model.text.layers;
  const int64_t moe_layers = req.model.text.moe_layers;
  // Gradients that outlive the step: accumulated over micro-steps, or zeroed
  // in place by zero_grad(set_to_none=False) (TrainOptions::gradients_persist).
  const bool kept = o.gradients_persist();
  Timeline tl;

  // ---- load: model state, workspaces, persistent buffers ----------------
  const int64_t placed = memory::fsdp1_construct(
      tl, pb.fsdp1,
      bytes::add(bytes::add(sz.weights, sz.weights_quantized, "the weights"), sz.lora_weights, "the weights"));
  memory::load_state(tl, *b.opt, b.state, b.pieces, req.train.quant, placed);
  tl.alloc("cublas_workspace", "cuBLAS/cuBLASLt workspaces", b.cublas);
  if (pb.comm > 0) tl.alloc("comm_buffers", "communication buckets", pb.comm);
  tl.alloc("misc", "user cushion", req.overheads.misc_bytes);
  // Gradients carried across steps (none otherwise).
  std::vector<Piece> all_grads;
  if (kept) {
    all_grads = b.pieces.grads_head;
    for (Piece p : b.pieces.grads_layer) all_grads.push_back({p.bytes, p.count * L});
    all_grads.insert(all_grads.end(), b.pieces.grads_rest.begin(), b.pieces.grads_rest.end());
  }
  Timeline::Id grads =
      tl.alloc("gradients", o.grad_accum > 1 ? "accumulated gradients" : "gradients kept between steps (zeroed)",
               kept ? sz.grads : 0, std::move(all_grads));
  tl.begin_step();

  // ---- forward -----------------------------------------------------------
  std::vector<Timeline::Id> fwd;
  if (sz.autocast_cache > 0)
    fwd.push_back(tl.alloc("autocast_weight_cache", "autocast weight copies", sz.autocast_cache));
  // FSDP2 (memory::Fsdp2Unshard): the copy-in stream's buffers apart from
  // the unsharded parameters. The root unit's all-gather comes first; each
  // layer's flat output is allocated while the previous one is still held
  // (AllGatherState, freed at the next copy-out), so the copy-in stream's
  // pool keeps the root's output and one layer's beside it. The root's
  // post-forward frees the last one.
  const memory::Fsdp2Unshard& f2 = pb.fsdp2;
  const auto all_gather = [&](int64_t cast, int64_t flat) {
    const Timeline::Id c = tl.alloc_on(memory::kAllGatherCopyInStream, "gathered_params",
                                       "all-gather input (param_dtype copy of the local shards)", cast);
    const Timeline::Id out =
        tl.alloc_on(memory::kAllGatherCopyInStream, "gathered_params", "flat all-gather output", flat);
    tl.free(c);
    return out;
  };
  Timeline::Id flat = -1;
  if (f2.on) {
    const Timeline::Id root_flat = all_gather(f2.root_cast, f2.root_flat);
    fwd.push_back(
        tl.alloc("gathered_params", "unsharded root unit (embeddings, norm, lm_head)", f2.root_bytes, f2.root));
    for (int k = 0; k < 2; ++k) {  // layers 0 and 1; later layers repeat layer 1
      const Timeline::Id next = all_gather(f2.layer_cast, f2.layer_flat);
      tl.free(k == 0 ? root_flat : flat);
      flat = next;
    }
    fwd.push_back(tl.alloc("gathered_params", "unsharded layer parameters (one layer)", f2.layer_bytes, f2.layer));
  } else if (pb.fsdp1.on && pb.gathered > 0) {
    // FSDP1 (memory::Fsdp1Units): under CPU offload each unit's shard is
    // first copied in on the pre-unshard stream; the unsharded flat
    // parameters (the root unit, the current and the prefetched layer) are
    // allocated on the unshard stream.
    const memory::Fsdp1Units& f1 = pb.fsdp1;
    if (f1.offload) {
      for (int64_t unit : {f1.root_bytes, f1.layer_bytes}) {
        tl.free(tl.alloc_on(memory::kFsdp1PreUnshardStream, "gathered_params", "CPU shard copied to the GPU",
                            memory::ceil_div(unit, f1.shards)));
      }
    }
    fwd.push_back(tl.alloc_on(memory::kFsdp1UnshardStream, "gathered_params", "unsharded flat parameters", pb.gathered,
                              f1.gathered));
  } else if (pb.gathered > 0) {
    fwd.push_back(tl.alloc("gathered_params", "gathered parameters", pb.gathered));
  }
  if (pb.dispatch > 0) fwd.push_back(tl.alloc("moe_dispatch", "expert-parallel dispatch", pb.dispatch));
  if (pb.cp_kv > 0) fwd.push_back(tl.alloc("cp_kv_exchange", "K/V receive buffers", 2 * pb.cp_kv));
  // train.keeps_previous_logits (LitGPT): last step's logits and the 4-bit
  // inputs their graph holds stay until model() returns this step's logits,
  // while the last lm_head chunk may still hold its dequantised weight
  // (activation_stack.cpp).
  const Timeline::Id prev =
      a.logits > 0 ? tl.alloc("activations", "previous step's logits and 4-bit Linear inputs (kept by the loop)",
                              bytes::add(a.logits, a.prev_kept_inputs, "the previous step's logits"))
                   : Timeline::Id{-1};
  const Timeline::Id vision = tl.alloc("activations", "vision tower / audio encoder activations", a.vision);
  const Timeline::Id image_kv = tl.alloc("activations", "image cross-attention inputs, keys and values", a.image_kv);
  const Timeline::Id ple =
      tl.alloc("activations", "per-layer embeddings and AltUp stacking (Gemma 3n)", a.per_layer_inputs);
  std::vector<Timeline::Id> pending, returned;
  std::vector<std::vector<Timeline::Id>> layers = forward_layers(tl, a, L, moe_layers, pending, returned);
  if (a.returned_kv > 0)
    returned.push_back(tl.alloc("activations", "key/value cache returned by model() (use_cache)", a.returned_kv));
  const Timeline::Id head = tl.alloc("activations", "final norm and lm_head inputs", a.head);
  for (Timeline::Id id : pending) tl.free(id);
  if (flat >= 0) tl.free(flat);  // the root's post-forward frees the last flat output
  tl.mark("forward", "end of forward");
  if (prev >= 0) {
    const Timeline::Id nl = tl.alloc("loss_buffers", "logits returned by model()", a.logits);
    const Timeline::Id d = tl.alloc("dequant", "4-bit lm_head dequantised", sz.head_dequant);
    tl.mark("forward", "end of forward (model() returns; the previous step's logits are still held)");
    tl.free(d);
    tl.free(nl);
    tl.free(prev);
  }

  // ---- loss ----------------------------------------------------------------
  // LoRA on the head: its logits-sized forward tensors, gone (but for the
  // logits) before the cross-entropy starts (memory/loss.cpp).
  if (t.loss.head_lora_forward > 0) {
    const Timeline::Id hf = tl.alloc("loss_buffers", "lm_head LoRA forward (logits + B(A x))", t.loss.head_lora_forward,
                                     t.loss.head_lora_forward_pieces);
    tl.mark("loss", "loss (lm_head forward: the LoRA output added to the logits)");
    tl.free(hf);
  }
  std::vector<Timeline::Id> step_grads;  // gradients that appear during this step
  // FSDP2's sharded gradients are views into each unit's reduce-scatter
  // output, allocated on the reduce-scatter stream (_fsdp_collectives.py
  // foreach_reduce: reduce_output = reduce_scatter_input.new_empty(...)
  // under `with torch.cuda.stream(reduce_scatter_stream)`; "The RS output is
  // allocated in the RS stream and used in the default stream (for
  // optimizer)"). zero_grad() frees them into that stream's pool, where the
  // next forward, on the default stream, cannot reuse them. The root unit
  // has no input that requires grad, so its post-backward (and its
  // reduce-scatter: lm_head, norm and embeddings at once) runs in the final
  // callback (_fsdp_state.py _root_post_backward_final_callback).
  const bool rs_grads =
      b.sh.fsdp && b.sh.grads && b.global->parallel.fsdp_version == 2 && !kept && !o.optimizer_in_backward;
  const auto grad_alloc = [&](const char* name, int64_t bytes, std::vector<Piece> pieces, int32_t layer) {
    if (rs_grads) return tl.alloc_on(memory::kReduceScatterStream, "gradients", name, bytes, std::move(pieces), layer);
    return tl.alloc("gradients", name, bytes, std::move(pieces), memory::Residence::kAllocated, layer);
  };
  if (t.loss.early_head_grads > 0) {
    step_grads.push_back(grad_alloc("lm_head gradient (fused loss)", t.loss.early_head_grads, b.pieces.grads_head, -1));
  }
  Timeline::Id loss = tl.alloc("loss_buffers", "logits and loss", t.loss.forward, t.loss.forward_pieces);
  // train.returns_kv_cache: Accelerate's fp32 copy of the returned keys and
  // values, made with the logits' copy as model() returns.
  const Timeline::Id kv32 = tl.alloc("loss_buffers", "Accelerate's fp32 copy of the returned key/value cache",
                                     a.returned_kv_fp32, a.kv_fp32_pieces);
  // A 4-bit lm_head (Lightning's quantiser) is dequantised by MatMul4Bit
  // while it computes the logits, and again in backward while their
  // gradient is alive (grad_A = grad_output @ dequantize_4bit(B)).
  auto head_dequant = [&](const char* key, const char* label) {
    if (sz.head_dequant == 0) return;
    const Timeline::Id d = tl.alloc("dequant", "4-bit lm_head dequantised", sz.head_dequant);
    tl.mark(key, label);
    tl.free(d);
  };
  head_dequant("loss", "loss (lm_head forward: its 4-bit weight dequantised)");
  tl.mark("loss", "loss (cross-entropy forward)");
  // compute_loss returns: the outputs (and the cache in them) are dropped.
  tl.free(kv32);
  for (Timeline::Id id : returned) tl.free(id);
  loss = tl.resize(loss, t.loss.backward, t.loss.backward_pieces);
  tl.mark("backward_start", "start of backward (loss backward)");
  head_dequant("backward_start", "start of backward (lm_head backward: its 4-bit weight dequantised)");
  if (t.loss.head_lora_backward > 0) {
    // Then the head's backward: the LoRA branch's logits-sized gradients.
    loss = tl.resize(loss, t.loss.head_lora_backward, t.loss.head_lora_backward_pieces);
    tl.mark("backward_start", "start of backward (lm_head backward: the LoRA branch's logits gradients)");
  }

  // ---- backward sweep, top layer first --------------------------------------
  tl.free(loss);
  tl.free(head);
  // FSDP2 prefetches the next layer's all-gather in backward (one flat
  // output on the copy-in stream at a time, freed at its copy-out).
  const Timeline::Id bwd_flat = f2.on ? all_gather(f2.layer_cast, f2.layer_flat) : Timeline::Id{-1};
  int64_t g_now = kept ? sz.grads : rs_grads ? t.loss.early_head_grads : sz.grads_head;
  if (!kept && !rs_grads && sz.grads_head - t.loss.early_head_grads != 0) {
    step_grads.push_back(tl.alloc("gradients", "lm_head and final norm gradients",
                                  sz.grads_head - t.loss.early_head_grads,
                                  t.loss.early_head_grads > 0 ? std::vector<Piece>{} : b.pieces.grads_head));
  }
  // Optimizer in backward (torchtune training/memory.py
  // register_optim_in_bwd_hooks: each parameter's post-accumulate-grad hook
  // runs its own optimizer's step() and zero_grad(); LOMO likewise): a
  // gradient lives only until its parameter has stepped, so the sweep holds
  // one parameter's gradient and step temporaries at a time, never all of
  // them. `step_in_backward` places that moment next to whatever is alive.
  const bool in_bwd = o.optimizer_in_backward && !kept;
  const int64_t one_grad = std::min(b.state.grad_elem * sz.largest_trainable_tensor, sz.grads);
  const auto step_in_backward = [&](Timeline::Id grad_id) {
    const Timeline::Id st =
        tl.alloc("optimizer_temporaries", "optimizer step temporaries (one parameter)", sz.opt_temp, b.pieces.opt_temp);
    tl.mark("backward", "during backward (peak of the layer sweep)");
    tl.free(st);
    tl.free(grad_id);
  };
  if (in_bwd) {
    for (Timeline::Id id : step_grads) step_in_backward(id);  // lm_head and final norm
    step_grads.clear();
  }
  int64_t a_rem = a.layers;  // saved layer bytes still alive
  for (int64_t i = L - 1; i >= a.first_grad_layer; --i) {
    const bool moe = i >= L - moe_layers;
    const int64_t recompute =
        o.checkpointing == Checkpointing::kFull || o.checkpointing == Checkpointing::kSelectiveOp ? a.one_layer : 0;
    // The dequantised weight is allocated apart from the length-dependent
    // temporaries (its size is the weight's): with batches of varying length
    // its cached block fits the next step's exactly.
    std::vector<Piece> temp = {{a.backward_temp - a.backward_dequant, 1}, {a.dx, 1}};
    if (a.backward_dequant > 0) temp.push_back({a.backward_dequant, 1});
    if (recompute > 0) temp.push_back({recompute, 1});
    const Timeline::Id work =
        tl.alloc("layer_backward", "one layer's backward temporaries", a.backward_temp + recompute + a.dx,
                 std::move(temp), memory::Residence::kAllocated, static_cast<int32_t>(i));
    Timeline::Id dkv = -1;
    if (pb.cp_kv > 0) dkv = tl.alloc("cp_kv_exchange", "dK/dV receive buffers", 2 * pb.cp_kv);
    tl.mark("backward", "during backward (peak of the layer sweep)");
    if (in_bwd && sz.grads_layer > 0) {
      // The layer's largest parameter's gradient, stepped while the layer's
      // backward temporaries are still alive.
      step_in_backward(tl.alloc("gradients", "one parameter's gradient (stepped in backward)",
                                std::min(one_grad, sz.grads_layer), {}, memory::Residence::kAllocated,
                                static_cast<int32_t>(i)));
    }
    tl.free(work);
    if (dkv >= 0) tl.free(dkv);
    // Layer i's saved tensors are freed; its gradients appear.
    a_rem -= moe ? a.layer_moe : a.layer_dense;
    if (a.offload) {
      layers[0][0] = tl.resize(layers[0][0], a.resident(a_rem));
    } else {
      for (Timeline::Id id : layers[static_cast<size_t>(i - a.first_grad_layer)]) tl.free(id);
    }
    if (!kept && !in_bwd) {
      step_grads.push_back(grad_alloc("layer gradients", sz.grads_layer, {}, static_cast<int32_t>(i)));
    }
    if (!kept) g_now += sz.grads_layer;
  }
  // Embedding gradient at the end (dense V x h grad; tied weights add it
  // into lm_head's grad through a temporary of the same size).
  if (sz.grads - g_now != 0) {
    step_grads.push_back(rs_grads
                             ? grad_alloc("root unit gradients (embeddings, norm, lm_head)", sz.grads - g_now, {}, -1)
                             : tl.alloc("gradients", "embedding and other gradients", sz.grads - g_now,
                                        kept ? std::vector<Piece>{} : b.pieces.grads_rest));
  }
  if (bwd_flat >= 0) tl.free(bwd_flat);
  const int64_t tied_tmp = req.model.tie_word_embeddings && sz.grads_embed > 0 ? sz.grads_embed : 0;
  const Timeline::Id tied = tl.alloc("layer_backward", "tied embedding gradient temporary", tied_tmp);
  if (a.offload) tl.free(layers[0][0]);
  tl.mark("backward", "during backward (peak of the layer sweep)");
  if (in_bwd) {
    for (Timeline::Id id : step_grads) step_in_backward(id);  // embeddings and the rest
    step_grads.clear();
  }

  // ---- optimizer step -------------------------------------------------------
  tl.free(tied);
  tl.free(vision);
  tl.free(image_kv);
  tl.free(ple);
  for (Timeline::Id id : fwd) tl.free(id);
  // Stepped in backward: nothing is left to step here.
  const Timeline::Id temp = tl.alloc("optimizer_temporaries", "optimizer step temporaries", in_bwd ? 0 : sz.opt_temp,
                                     in_bwd ? std::vector<Piece>{} : b.pieces.opt_temp);
  tl.mark("optimizer_step", "optimizer step");

  // ---- end of step: temporaries go, zero_grad(set_to_none=True) frees the
  // step's gradients (transformers Trainer, torch.optim.Optimizer.zero_grad);
  // kept ones stay for the next step.
  tl.free(temp);
  for (Timeline::Id id : step_grads) tl.free(id);
  return tl;
}

}  // namespace vram::train

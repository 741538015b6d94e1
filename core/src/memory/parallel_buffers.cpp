// Buffers of a multi-GPU layout on one rank (parallel_buffers.h).
#include "memory/parallel_buffers.h"

#include <algorithm>

#include "format.h"
#include "memory/bytes.h"
#include "memory/overheads.h"

namespace vram::memory {

namespace {

// One decoder layer's parameters on this rank (FSDP unit, ZeRO-3 gather):
// every-layer groups plus the larger of a sparse and a dense layer's own.
// A 4-bit base is sharded as packed codes in float storage
// (bnb_4bit_quant_storage, model_state.cpp rank_state) and gathered as
// those bytes, which FSDP's param_dtype cast leaves alone (the storage
// dtype is the model's; PEFT docs accelerate/fsdp.md, QLoRA with FSDP).
// Parameters outside the layers: FSDP's root unit (embeddings, final
// norm, lm_head) is not resharded after forward (FSDP1 _runtime_utils
// _post_forward_reshard skips the root; FSDP2 reshard_after_forward is
// False for the root), so it stays gathered from forward to backward.
struct UnitParams {
  int64_t layer = 0;        // one layer's 16-bit parameters
  int64_t layer_quant = 0;  // one layer's packed 4-bit bytes
  int64_t root = 0;
};

UnitParams unit_params(const ModelSpec& m, const ParallelOptions& par, const TrainablePlan& plan, const Sharding& sh) {
  UnitParams u;
  int64_t every = 0, sparse = 0, dense = 0;
  int64_t q_every = 0, q_sparse = 0, q_dense = 0;
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    const int64_t span = m.layer_span(g);
    if (span == 0) continue;
    const bool quantized = plan.groups[i].quantized;
    if (!quantized && sh.deepspeed && g.numel < par.stage3_param_persistence_threshold) continue;  // never gathered
    int64_t& bucket = g.layers == LayerSet::kMoe     ? (quantized ? q_sparse : sparse)
                      : g.layers == LayerSet::kDense ? (quantized ? q_dense : dense)
                                                     : (quantized ? q_every : every);
    bucket += (quantized ? ceil_div(g.in_features * g.out_features, 2) : g.numel) * (g.instances / span);
  }
  u.layer = every + std::max(sparse, dense);
  u.layer_quant = q_every + std::max(q_sparse, q_dense);
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    if (g.stack == "text" && m.layer_span(g) == 0 && !plan.groups[i].quantized) u.root += g.total();
  }
  return u;
}

// FSDP2 (Fsdp2Unshard): one layer unsharded at a time on the default
// stream (a layer reshards after its forward and after its backward,
// FSDPParamGroup.post_forward / post_backward), the root unit
// throughout, and one layer's flat all-gather output on the copy-in
// stream (the next layer's, prefetched). With a param_dtype cast the
// copy-in first copies the local shards into one param_dtype buffer
// (_get_param_all_gather_inputs: flat_foreach_copy_input).
Fsdp2Unshard fsdp2_unshard(const ModelSpec& m, const ParallelOptions& par, const TrainablePlan& plan, const Dtypes& dt,
                           const Sharding& sh, const UnitParams& u, int64_t elem) {
  Fsdp2Unshard f;
  f.on = true;
  const int64_t n = std::max<int64_t>(sh.group, 1);
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    if (g.stack != "text" || plan.groups[i].quantized) continue;
    const int64_t span = m.layer_span(g);
    const int64_t copies = span == 0 ? g.instances : g.instances / span;
    std::vector<Piece>& into = span == 0 ? f.root : f.layer;
    // A Linear's or norm's bias is its own parameter.
    const bool split = g.bias && (g.kind == ModuleKind::kLinear || g.kind == ModuleKind::kNorm);
    const int64_t bias = !split ? 0 : g.kind == ModuleKind::kLinear ? g.out_features : g.numel / 2;
    if (copies <= 0) continue;
    into.push_back({(g.numel - bias) * elem, copies});
    if (bias > 0) into.push_back({bias * elem, copies});
  }
  for (auto* v : {&f.root, &f.layer}) {
    std::sort(v->begin(), v->end(), [](const Piece& a, const Piece& b) { return a.bytes > b.bytes; });
  }
  f.root_bytes = u.root * elem;
  f.layer_bytes = u.layer * elem;
  // Layers of two kinds (dense and MoE): one block of the larger.
  auto sum = [](const std::vector<Piece>& v) {
    int64_t t = 0;
    for (const Piece& p : v) t += p.bytes * p.count;
    return t;
  };
  if (sum(f.root) != f.root_bytes) f.root = {{f.root_bytes, 1}};
  if (sum(f.layer) != f.layer_bytes) f.layer = {{f.layer_bytes, 1}};
  f.root_flat = f.root_bytes;
  f.layer_flat = f.layer_bytes;
  if (par.fsdp_param_bytes > 0 && par.fsdp_param_bytes != dt.weight) {
    f.root_cast = ceil_div(u.root, n) * elem;
    f.layer_cast = ceil_div(u.layer, n) * elem;
  }
  return f;
}

// Parameters gathered for compute: ZeRO-3 / FULL_SHARD hold the current
// and the prefetched layer (FSDP forward/backward prefetch; DeepSpeed
// stage3_prefetch_bucket_size, capped by stage3_max_live_parameters);
// FSDP2 also holds the prefetched unit's flat all-gather output until it
// is copied out into per-parameter tensors (_fsdp_collectives.py).
// SHARD_GRAD_OP keeps every layer unsharded from forward to backward.
void gathered_params(ParallelBuffers& out, const ModelSpec& m, const ParallelOptions& par, const TrainablePlan& plan,
                     const Dtypes& dt, const Sharding& sh, const UnitParams& u) {
  if (!sh.weights && !par.offload_params) return;
  int64_t elems = 2 * u.layer;
  std::string formula = "current + prefetched layer, " + fmt_int(u.layer) + " params each";
  if (sh.deepspeed) {
    elems = std::min(elems + par.stage3_prefetch_bucket_size, std::max(par.stage3_max_live_parameters, 2 * u.layer));
    formula += " + stage3_prefetch_bucket_size " + fmt_int(par.stage3_prefetch_bucket_size) +
               ", at most stage3_max_live_parameters " + fmt_int(par.stage3_max_live_parameters);
  } else if (sh.fsdp) {
    if (par.fsdp_version == 2) {
      elems += u.layer;
      formula += " + the prefetched unit's flat all-gather output (FSDP2 copy-out)";
    }
    elems += u.root;
    formula += " + root unit " + fmt_int(u.root) + " params (embeddings, norm, lm_head)";
  }
  // FSDP MixedPrecision param_dtype: the unsharded copy is cast (a
  // model kept in fp32 is gathered in bf16).
  const int64_t elem = sh.fsdp && par.fsdp_param_bytes > 0 ? par.fsdp_param_bytes : dt.weight;
  if (sh.fsdp && par.fsdp_version == 2 && !par.offload_params && u.layer_quant == 0) {
    out.fsdp2 = fsdp2_unshard(m, par, plan, dt, sh, u, elem);
    elems = u.root + 2 * u.layer;
    formula = "root unit " + fmt_int(u.root) + " params (embeddings, norm, lm_head) + the current layer, " +
              fmt_int(u.layer) + " params + the next layer's flat all-gather output (FSDP2 copy-in stream)";
  }
  out.gathered = elems * elem;
  out.gathered_formula = fmt_int(elems) + " params x " + std::to_string(elem) + " B: " + formula;
  if (u.layer_quant > 0) {
    // The same layers' packed 4-bit codes: current + prefetched (+ FSDP2's
    // all-gather output).
    const int64_t copies = sh.fsdp && par.fsdp_version == 2 ? 3 : 2;
    out.gathered += copies * u.layer_quant;
    out.gathered_formula += "; 4-bit codes " + std::to_string(copies) + " x " + fmt_int(u.layer_quant) + " B";
  }
}

// FSDP1's units (Fsdp1Units): built in the model's dtype (a frozen base in
// its storage dtype), gathered in param_dtype.
Fsdp1Units fsdp1_units(const ModelSpec& m, const ParallelOptions& par, const TrainablePlan& plan, const Dtypes& dt,
                       const Sharding& sh, const UnitParams& u, int64_t gathered) {
  Fsdp1Units f;
  f.on = true;
  f.layers = m.text.layers;
  const int64_t built = plan.base_trainable > 0 ? dt.weight : dt.frozen;
  f.layer_bytes = u.layer * built + u.layer_quant;
  f.root_bytes = u.root * built;
  f.built = built;
  f.sync = par.fsdp_sync_module_states;
  f.shards = sh.weights ? std::max<int64_t>(sh.group, 1) : 1;
  f.offload = par.offload_params;
  if (gathered > 0 && !sh.deepspeed) {
    const int64_t elem = par.fsdp_param_bytes > 0 ? par.fsdp_param_bytes : dt.weight;
    f.gathered = {{u.layer * elem + u.layer_quant, 2}, {u.root * elem, 1}};
    std::sort(f.gathered.begin(), f.gathered.end(), [](const Piece& a, const Piece& b) { return a.bytes > b.bytes; });
  }
  return f;
}

// Communication buffers: DDP's bucket copy of the gradients; DeepSpeed's
// contiguous reduce bucket (doubled by overlap_comm, on by default for
// stage 3); FSDP's reduce-scatter input of one unit; Megatron reduces in
// place in its contiguous grad buffer.
void comm_buckets(ParallelBuffers& out, const ParallelOptions& par, const Dtypes& dt, const Sharding& sh,
                  const StateSizes& sz, const UnitParams& u) {
  if (sh.ddp_buckets) {
    out.comm = sz.grads;
    out.comm_formula = "DDP buckets: a second copy of the gradients (gradient_as_bucket_view=False)";
  } else if (sh.deepspeed) {
    const bool overlap = par.overlap_comm_given ? par.overlap_comm : par.zero == 3;
    out.comm = (par.contiguous_gradients || par.zero == 3 ? par.reduce_bucket_size * dt.grad : 0) * (overlap ? 2 : 1);
    out.comm_formula = "reduce_bucket_size " + fmt_int(par.reduce_bucket_size) + " x " + std::to_string(dt.grad) +
                       " B" + (overlap ? " x 2 (overlap_comm)" : "");
  } else if (sh.fsdp) {
    // One unit's unsharded gradients (they come out of backward in
    // param_dtype) plus, when the reduce dtype differs or under FSDP2's
    // foreach_reduce, the reduce-scatter input copy in the reduce dtype
    // (MixedPrecision reduce_dtype).
    const int64_t unsharded = par.fsdp_param_bytes > 0 ? par.fsdp_param_bytes : dt.grad;
    const int64_t reduce = par.fsdp_reduce_bytes > 0 ? par.fsdp_reduce_bytes : unsharded;
    const bool copy = par.fsdp_version == 2 || reduce != unsharded;
    out.comm = u.layer * unsharded + (copy ? u.layer * reduce : 0);
    out.comm_formula = "one unit's unsharded gradients " + fmt_int(u.layer) + " x " + std::to_string(unsharded) + " B" +
                       (copy ? " + reduce-scatter input x " + std::to_string(reduce) + " B" : "");
  }
}

}  // namespace

ParallelBuffers parallel_buffers(const Request& req, const ParallelOptions& par, const TrainablePlan& plan,
                                 const Dtypes& dt, const Sharding& sh, const StateSizes& sz) {
  ParallelBuffers out;
  const UnitParams u = unit_params(req.model, par, plan, sh);
  out.layer_params = u.layer;
  out.root_params = u.root;
  gathered_params(out, req.model, par, plan, dt, sh, u);
  if (sh.fsdp && par.fsdp_version == 1) out.fsdp1 = fsdp1_units(req.model, par, plan, dt, sh, u, out.gathered);
  comm_buckets(out, par, dt, sh, sz, u);
  return out;
}

void fsdp1_adapter_pieces(StatePieces& p, const Request& req, const TrainablePlan& plan, const Dtypes& dt,
                          const OptimizerInfo& opt, const StateSizes& sz, const Fsdp1Units& u) {
  if (!u.on || u.shards <= 1 || plan.lora_params == 0 || !req.parallel.fsdp_adapter_units) return;
  const ModelSpec& m = req.model;
  const int64_t elem = dt.adapter;
  const int64_t n = opt.states > 0 && !opt.factored ? opt.states : 1;
  std::vector<Piece> states, temp, grads;
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    const int64_t span = m.layer_span(g);
    if (!plan.groups[i].lora || span == 0 || g.stack != "text") continue;
    // lora_A [r, in] and lora_B [out, r], each a 1-D flat shard.
    for (int64_t numel : {req.train.lora.rank * g.in_features, req.train.lora.rank * g.out_features}) {
      const int64_t shard = ceil_div(numel, u.shards);
      grads.push_back({shard * elem, g.instances / span});
      const int64_t st = state_bytes(opt, elem, shard, shard, 1);
      if (st > 0) states.push_back({st / n, g.instances * n});
      if (opt.kernel == StepKernel::kForeach) temp.push_back({shard * elem, g.instances});
    }
  }
  // What the adapters leave of each tensor: one piece (0 when they are all).
  const auto fill = [](std::vector<Piece>& into, std::vector<Piece>& pieces, int64_t bytes) {
    int64_t sum = 0;
    for (const Piece& q : pieces) sum += q.bytes * q.count;
    if (bytes <= 0 || pieces.empty() || sum > bytes) return;
    if (bytes > sum) pieces.push_back({bytes - sum, 1});
    into = std::move(pieces);
  };
  fill(p.grads_layer, grads, sz.grads_layer);  // one layer's
  fill(p.states, states, sz.states);
  fill(p.opt_temp, temp, sz.opt_temp);
}

void fsdp1_mixed_unit_grads(RankState& rs, const Request& req, const TrainablePlan& plan, const Sharding& sh,
                            const Fsdp1Units& u) {
  if (!u.on || plan.lora_params == 0 || req.parallel.fsdp_adapter_units) return;
  const ModelSpec& m = req.model;
  int64_t layers = 0, root = 0;  // the units' frozen bytes as built
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    if (g.stack != "text") continue;
    const GroupPlan& gp = plan.groups[i];
    const int64_t frozen = g.instances - (gp.trainable ? gp.trainable_instances : 0);
    const int64_t each = gp.quantized ? ceil_div(g.in_features * g.out_features, 2) : g.numel * u.built;
    (m.layer_span(g) > 0 ? layers : root) += each * frozen;
  }
  StateSizes& sz = rs.sz;
  const int64_t n = sh.grads ? std::max<int64_t>(sh.group, 1) : 1;
  const int64_t per_layer = ceil_div(layers / std::max<int64_t>(m.text.layers, 1), n);
  const int64_t training_layers = std::max<int64_t>(m.text.layers - plan.first_grad_layer, 0);
  const int64_t root_grad = sz.grads_head + sz.grads_embed > 0 ? ceil_div(root, n) : 0;
  sz.grads_layer += per_layer;
  rs.mixed_unit_grads = per_layer * training_layers + root_grad;
  sz.grads += rs.mixed_unit_grads;
}

TokenBuffers token_buffers(const Request& req, const ParallelOptions& par, const Dtypes& dt, int64_t micro_batch,
                           int64_t seq_len) {
  const LayerStack& st = req.model.text;
  const int64_t N = bytes::mul(micro_batch, seq_len, "tokens per micro-batch");
  TokenBuffers out;
  // Context parallel ring attention (TransformerEngine
  // AttnFuncWithCPAndKVP2P): K and V of the local chunk circulate in two
  // send/receive buffers in forward; backward adds two dK/dV buffers.
  if (par.cp > 1) {
    const int64_t v_dim = st.v_head_dim > 0 ? st.v_head_dim : st.head_dim;
    constexpr const char* kCp = "the context-parallel K/V buffers";
    out.cp_kv =
        bytes::mul(bytes::mul(N, st.kv_heads, kCp), bytes::mul(st.head_dim + v_dim, dt.autocast ? 2 : dt.compute),
                   kCp);  // one K + V buffer
  }
  // Expert parallel token dispatch (Megatron-core MoEAlltoAllTokenDispatcher):
  // the permuted tokens sent and the tokens received, N x k x h each in the
  // compute dtype, live around each MoE layer's all-to-all (balanced routing).
  if (par.ep > 1 && st.moe_layers > 0) {
    constexpr const char* kDispatch = "the expert-parallel token dispatch buffers";
    out.dispatch = bytes::mul(bytes::mul(2, N, st.experts_per_token, kDispatch), st.hidden,
                              dt.autocast ? 2 : dt.compute, kDispatch) /
                   std::max<int64_t>(st.hidden_split, 1);
  }
  return out;
}

std::vector<int64_t> broadcast_buckets(const std::vector<int64_t>& tensors) {
  constexpr int64_t kParamBroadcastBucketSize = int64_t{250} << 20;
  std::vector<int64_t> out;
  int64_t bytes = 0, count = 0;
  const auto close = [&] {
    if (count > 0) out.push_back(count > 1 ? bytes : 0);
    bytes = count = 0;
  };
  for (int64_t t : tensors) {
    bytes += t;
    ++count;
    if (bytes >= kParamBroadcastBucketSize) close();
  }
  close();
  return out;
}

namespace {

// One unit's (fsdp1_tensors): a decoder layer's or the root's.
std::vector<int64_t> unit_tensors(const ModelSpec& m, const TrainablePlan& plan, int64_t built, bool layer) {
  std::vector<int64_t> every, sparse, dense;
  int64_t sparse_bytes = 0, dense_bytes = 0;
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    const int64_t span = m.layer_span(g);
    const bool quantized = plan.groups[i].quantized;
    if (layer ? span == 0 : (g.stack != "text" || span != 0 || quantized)) continue;
    std::vector<int64_t>& out = !layer || g.layers == LayerSet::kEvery ? every
                                : g.layers == LayerSet::kMoe           ? sparse
                                                                       : dense;
    const int64_t bytes = quantized ? ceil_div(g.in_features * g.out_features, 2) : g.numel * built;
    const int64_t n = layer ? g.instances / span : g.instances;
    for (int64_t k = 0; k < n; ++k) out.push_back(bytes);
    if (&out != &every) (&out == &sparse ? sparse_bytes : dense_bytes) += n * bytes;
  }
  for (int64_t b : sparse_bytes >= dense_bytes ? sparse : dense) every.push_back(b);
  return every;
}

// A unit's parameters as one tensor of pieces, each its own malloc, in
// module order (runs of equal sizes as one piece with a count).
std::vector<Piece> moved_pieces(const std::vector<int64_t>& tensors) {
  std::vector<Piece> out;
  for (int64_t t : tensors) {
    if (!out.empty() && out.back().bytes == t) {
      ++out.back().count;
    } else {
      out.push_back({t, 1});
    }
  }
  return out;
}

// sync_module_states' flat copies (broadcast_buckets), allocated in order;
// returned so that the unit frees them once it is built. ProcessGroupNCCL
// records each broadcast's input on its NCCL stream (torch 2.2
// torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp collective(): unless
// TORCH_NCCL_AVOID_RECORD_STREAMS, `recordStream(input.storage().data_ptr(),
// ncclStream)`), so a freed copy's block goes back to the pool only when the
// broadcast has completed on that stream (CUDACachingAllocator.cpp free():
// a block with stream_uses gets insert_events, not free_block; malloc's
// process_events returns it once the event has completed). The host does not
// wait for it: BroadcastWork::finish -> WorkNCCL::wait only makes the current
// stream wait. So neither the unit's FlatParameter nor its shard can take a
// copy's block; the next unit's move (a blocking host-to-device copy,
// memcpy_and_sync) waits for the broadcasts, and finds the blocks free.
std::vector<Timeline::Id> broadcast_unit(Timeline& tl, const std::vector<int64_t>& tensors) {
  std::vector<Timeline::Id> out;
  for (int64_t flat : broadcast_buckets(tensors)) {
    if (flat > 0) out.push_back(tl.alloc("weights_load", "FSDP1 sync_module_states: a broadcast bucket", flat));
  }
  return out;
}

}  // namespace

Fsdp1Tensors fsdp1_tensors(const ModelSpec& m, const TrainablePlan& plan, int64_t built) {
  return {unit_tensors(m, plan, built, /*layer=*/true), unit_tensors(m, plan, built, /*layer=*/false)};
}

int64_t fsdp1_construct(Timeline& tl, const Fsdp1Units& u, const Fsdp1Tensors& tensors, int64_t budget) {
  if (!u.on) return 0;
  int64_t kept = 0;
  // What a unit leaves on the GPU, within the rank's weights (`budget`).
  const auto keep = [&](int64_t bytes) {
    const int64_t b = std::min(bytes, budget - kept);
    kept += b;
    return b;
  };
  const auto construct = [&](int64_t bytes, const std::vector<int64_t>& tensors) {
    if (bytes <= 0) return;
    // _init_utils.py _init_param_handle_from_module: _move_module_to_device,
    // then (sync_module_states) _sync_module_params_and_buffers, then
    // _init_param_handle_from_params.
    const Timeline::Id moved =
        tl.alloc("weights_load", "FSDP1 construction: the unit moved to the GPU", bytes, moved_pieces(tensors));
    const std::vector<Timeline::Id> buckets = u.sync ? broadcast_unit(tl, tensors) : std::vector<Timeline::Id>{};
    // The unit built: its broadcasts have completed (broadcast_unit), then
    // _init_param_handle_from_module returns and frees the moved parameters.
    const auto built = [&] {
      for (Timeline::Id id : buckets) tl.free(id);
      tl.free(moved);
    };
    if (u.shards <= 1) {  // NO_SHARD: the flat parameter is the unit's parameter
      tl.alloc("weights", "FSDP1 flat parameter (NO_SHARD)", keep(bytes));
      built();
      return;
    }
    // torch 2.2 torch/distributed/fsdp/_init_utils.py
    // _init_param_handle_from_module: `managed_params = list(_get_orig_params(
    // ...))` holds the moved parameters through _init_param_handle_from_params
    // (FlatParamHandle(...), then handle.shard(), then flat_param_to(cpu) under
    // CPU offload), so the moved tensors are freed last, after shard()
    // (_flat_param.py: _get_shard's chunk.clone(), flat_param.set_(shard), the
    // unsharded storage resized to 0) has allocated the shard beside them.
    const Timeline::Id flat = tl.alloc("weights_load", "FSDP1 construction: the unit's FlatParameter", bytes);
    const int64_t shard = ceil_div(bytes, u.shards);
    if (u.offload) {
      const Timeline::Id gpu_shard =
          tl.alloc("weights_load", "FSDP1 construction: the shard, before it moves to the CPU", shard);
      tl.free(flat);
      tl.free(gpu_shard);
    } else {
      tl.alloc("weights", "FSDP1 shard", keep(shard));
      tl.free(flat);
    }
    built();
  };
  // Auto-wrapping builds the inner units first: the layers, then the root.
  for (int64_t i = 0; i < u.layers; ++i) construct(u.layer_bytes, tensors.layer);
  construct(u.root_bytes, tensors.root);
  return kept;
}

}  // namespace vram::memory

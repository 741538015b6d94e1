// The model state of one rank (model_state.h).
#include "memory/model_state.h"

#include <algorithm>
#include <tuple>

#include "format.h"
#include "memory/overheads.h"

namespace vram::memory {

// Bytes of one 4-bit tensor of `numel` values (bitsandbytes functional.py
// quantize_4bit): packed codes numel/2, plus one fp32 absmax per block; with
// double quantisation the absmax are 8-bit with one fp32 scale per 256 blocks
// (QLoRA paper §3: 4.127 bits per parameter at blocksize 64).
int64_t nf4_bytes(int64_t numel, const QuantOptions& q) {
  const int64_t blocks = ceil_div(numel, q.blocksize);
  const int64_t packed = ceil_div(numel, 2);
  if (!q.double_quant) return packed + 4 * blocks;
  return packed + blocks + 4 * ceil_div(blocks, 256);
}

// State bytes for `numel` values of one tensor (rows x cols when 2-D).
int64_t state_bytes(const OptimizerInfo& o, int64_t state_elem, int64_t numel, int64_t rows, int64_t cols) {
  if (o.factored) {
    // transformers Adafactor: 2-D tensors keep exp_avg_sq_row (rows) and
    // exp_avg_sq_col (cols) in fp32; 1-D tensors a full exp_avg_sq.
    return rows > 1 && cols > 1 ? 4 * (rows + cols) : 4 * numel;
  }
  if (o.states == 0) return 0;
  if (o.state_dtype == StateDtype::kBlock8) {
    // bitsandbytes optimizer.py: tensors under min_8bit_size = 4096 values keep
    // fp32 states; others uint8 + fp32 absmax per 256-value block.
    if (numel < 4096) return int64_t{4} * o.states * numel;
    return o.states * (numel + 4 * ceil_div(numel, 256));
  }
  const int64_t elem = o.state_dtype == StateDtype::kFp32 ? 4 : state_elem;
  return elem * o.states * numel;
}

namespace {

bool in_part(const ParamGroup& g, Part part) {
  const bool expert = g.component == std::string(comp::kExperts);
  return part == Part::kAll || (part == Part::kExperts) == expert;
}

// a + b, where the per-tensor maxima stay maxima.
StateSizes combine(const StateSizes& a, const StateSizes& b, const OptimizerInfo& opt, bool in_backward) {
  StateSizes s;
  for (auto [x, y, z] : {std::tuple{&s.weights, a.weights, b.weights},
                         {&s.weights_quantized, a.weights_quantized, b.weights_quantized},
                         {&s.quantized_packed, a.quantized_packed, b.quantized_packed},
                         {&s.lora_weights, a.lora_weights, b.lora_weights},
                         {&s.autocast_cache, a.autocast_cache, b.autocast_cache},
                         {&s.master, a.master, b.master},
                         {&s.grads, a.grads, b.grads},
                         {&s.states, a.states, b.states},
                         {&s.grads_head, a.grads_head, b.grads_head},
                         {&s.grads_layer, a.grads_layer, b.grads_layer},
                         {&s.grads_embed, a.grads_embed, b.grads_embed},
                         {&s.grads_other, a.grads_other, b.grads_other},
                         {&s.weights_persistent, a.weights_persistent, b.weights_persistent},
                         {&s.lora_persistent, a.lora_persistent, b.lora_persistent},
                         {&s.trainable, a.trainable, b.trainable}}) {
    *x = y + z;
  }
  s.largest_trainable_tensor = std::max(a.largest_trainable_tensor, b.largest_trainable_tensor);
  s.qlora_dequant = std::max(a.qlora_dequant, b.qlora_dequant);
  s.head_dequant = std::max(a.head_dequant, b.head_dequant);
  // foreach temporaries scale with the parameters; per-tensor loops and
  // optimizer-in-backward hold one tensor's worth.
  const bool per_tensor = opt.kernel == StepKernel::kForLoop || in_backward;
  s.opt_temp = per_tensor ? std::max(a.opt_temp, b.opt_temp) : a.opt_temp + b.opt_temp;
  return s;
}

}  // namespace

namespace {

// What the optimizer step's temporaries depend on, summed over the groups.
struct StepTally {
  int64_t decay_group = 0;     // weights with decay: HF Trainer's first param group
  int64_t largest_matrix = 0;  // Muon's largest tensor
  int64_t adamw_rest = 0;      // parameters Muon leaves to AdamW
};

// A 4-bit group's stored weights (NF4 codes and constants, a 16-bit bias)
// and the largest dequantised copy it makes.
void add_4bit_weights(const ParamGroup& g, const TrainOptions& t, int64_t frozen_hp_elem, StateSizes& s) {
  s.weights_quantized += nf4_bytes(g.in_features * g.out_features, t.quant) * g.instances;
  s.quantized_packed += ceil_div(g.in_features * g.out_features, 2) * g.instances;
  if (g.bias) s.weights += frozen_hp_elem * g.out_features * g.instances;
  // MatMul4Bit backward: grad_A = grad_out @ dequantize_4bit(B).to(dtype)
  // (2 B per value). torchao's NF4Tensor.get_original_weight (torchtune's
  // linear_nf4) unpacks through int64 codes instead, all locals alive
  // until it returns: (q >> 4).to(long) and (q & 0b1111).to(long) (n/2
  // values x 8 B each = 8 B per weight value), the two bf16 lookups
  // nf4[codes], their scaled products and the stacked result (2 B per
  // value each): 8 + 2 + 2 + 2 = 14 B per value. Lightning's
  // _Linear4bit.quantize casts the weight to fp16 before quantize_4bit
  // (weight.contiguous().to(device=device, dtype=torch.half)), so
  // quant_state.dtype is fp16: dequantize_4bit returns fp16 and
  // .to(bf16) copies it while it is alive, 2 + 2 B per value.
  const int64_t per_value = t.quant.torchao ? 14 : t.quant.lightning ? 4 : 2;
  // A quantised lm_head dequantises while the logits (forward) or their
  // gradient (backward) are alive, not inside a layer's backward.
  int64_t& slot = g.component == std::string(comp::kLmHead) ? s.head_dequant : s.qlora_dequant;
  slot = std::max(slot, per_value * g.in_features * g.out_features);
}

// One LoRA adapter on `instances` Linears of in x out: lora_A [r, in] and
// lora_B [out, r], both 2-D, with their gradients and optimizer states.
void add_adapter(const Request& req, const Dtypes& dt, const OptimizerInfo& opt, int64_t in, int64_t out,
                 int64_t instances, int64_t params, StateSizes& s, StepTally& tally) {
  const TrainOptions& t = req.train;
  const int64_t persist = req.parallel.stage3_param_persistence_threshold;
  const int64_t lora_elem = dt.adapter;
  s.lora_weights += lora_elem * params;
  s.grads += lora_elem * params;
  s.trainable += params;
  const int64_t per = params / instances;
  for (int64_t numel : {t.lora.rank * in, t.lora.rank * out}) {
    if (numel < persist) s.lora_persistent += lora_elem * numel * instances;
  }
  s.states += state_bytes(opt, lora_elem, t.lora.rank * in, t.lora.rank, in) * instances +
              state_bytes(opt, lora_elem, t.lora.rank * out, out, t.lora.rank) * instances;
  s.largest_trainable_tensor = std::max(s.largest_trainable_tensor, per);
  tally.largest_matrix = std::max(tally.largest_matrix, per);
  tally.decay_group += params;
}

// A trained group's gradients (in the bucket backward frees them from),
// fp32 master and optimizer states; `stepper` is the optimizer that steps it
// (Muon or, for what Muon leaves, AdamW).
void add_trained(const ModelSpec& m, const ParamGroup& g, const GroupPlan& gp, const Dtypes& dt,
                 const OptimizerInfo& stepper, bool muon, StateSizes& s, StepTally& tally) {
  const int64_t L = std::max<int64_t>(m.text.layers, 1);
  const int64_t tn = g.numel * gp.trainable_instances;
  const int64_t rows = g.kind == ModuleKind::kLinear ? g.out_features : g.in_features;
  const int64_t cols = g.kind == ModuleKind::kLinear ? g.in_features : g.out_features;
  s.grads += dt.grad * tn;
  s.trainable += tn;
  s.master += dt.master * tn;
  s.states += state_bytes(stepper, dt.state, g.numel, rows, cols) * gp.trainable_instances;
  s.largest_trainable_tensor = std::max(s.largest_trainable_tensor, g.numel);
  if (g.kind != ModuleKind::kNorm) tally.decay_group += tn;
  if (muon) {
    tally.largest_matrix = std::max(tally.largest_matrix, g.numel);
  } else {
    tally.adamw_rest += tn;
  }
  if (g.stack != "text") {
    s.grads_other += dt.grad * tn;
  } else if (g.kind == ModuleKind::kEmbedding) {
    s.grads_embed += dt.grad * tn;
  } else if (m.layer_span(g) > 0) {
    s.grads_layer += dt.grad * tn / L;
  } else {
    s.grads_head += dt.grad * tn;
  }
}

// The optimizer step's temporaries.
int64_t step_temporaries(const OptimizerInfo& opt, bool in_backward, int64_t state_elem, const StepTally& tally,
                         int64_t largest_trainable_tensor) {
  int64_t temp = 0;
  if (opt.kernel == StepKernel::kForeach) {
    temp = int64_t{opt.foreach_temporaries} * state_elem * tally.decay_group;
  } else if (opt.kernel == StepKernel::kForLoop) {
    // Adafactor (transformers optimization.py) makes an fp32 copy of the grad,
    // grad**2 + eps and the approximated update: 3 fp32 tensors of the largest
    // parameter. Muon (_muon.py _single_tensor_muon) holds grad.lerp(buf) in
    // the state dtype, its bf16 copy, and in each Newton-Schulz step the k x k
    // gram matrix, its update and the next bf16 iterate: bounded here by 3 bf16
    // tensors of the matrix besides the first two (k^2 <= rows x cols). Other
    // for-loop optimizers hold one state-sized tensor.
    if (opt.matrices_only) {
      // Muon's temporaries, then AdamW's foreach step over the rest (one
      // state-sized temporary, adam.py _multi_tensor_adam): the larger.
      temp = std::max((state_elem + 2 + 3 * 2) * tally.largest_matrix, state_elem * tally.adamw_rest);
    } else {
      temp = (opt.factored ? 3 * 4 : state_elem) * largest_trainable_tensor;
    }
  }
  // Optimizer in backward steps one parameter at a time from its grad hook:
  // temporaries never exceed one tensor's state.
  if (in_backward && temp > 0) temp = state_elem * largest_trainable_tensor;
  return temp;
}

}  // namespace

StateSizes model_state(const Request& req, const TrainablePlan& plan, const Dtypes& dt, const OptimizerInfo& opt,
                       Part part) {
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  StateSizes s;
  StepTally tally;
  const int64_t L = std::max<int64_t>(m.text.layers, 1);
  const int64_t persist = req.parallel.stage3_param_persistence_threshold;
  const int64_t lora_elem = dt.adapter;
  const int64_t frozen_hp_elem = dt.frozen;
  // Muon steps the hidden layers' 2-D weights; the rest goes to AdamW.
  const OptimizerInfo& adamw = opt.matrices_only ? *find_optimizer("adamw_torch") : opt;
  auto muon_for = [&](const ParamGroup& g) {
    return !opt.matrices_only || (g.kind == ModuleKind::kLinear && m.layer_span(g) > 0);
  };
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    const GroupPlan& gp = plan.groups[i];
    if (!in_part(g, part)) continue;
    if (gp.quantized) {
      add_4bit_weights(g, t, frozen_hp_elem, s);
    } else {
      s.weights += (gp.trainable ? dt.weight : frozen_hp_elem) * g.total();
      // deepspeed stage3 param persistence: tensors under
      // stage3_param_persistence_threshold elements are never partitioned.
      if (g.numel < persist) s.weights_persistent += (gp.trainable ? dt.weight : frozen_hp_elem) * g.total();
    }
    // autocast caches a bf16 copy of every fp32 Linear weight it multiplies.
    if (dt.autocast && g.kind == ModuleKind::kLinear && !gp.quantized)
      s.autocast_cache += dt.autocast_cache * g.total();
    if (gp.trainable && g.numel * gp.trainable_instances > 0) {
      add_trained(m, g, gp, dt, muon_for(g) ? opt : adamw, muon_for(g), s, tally);
    }
    if (gp.lora) {
      add_adapter(req, dt, opt, g.in_features, g.out_features, g.instances, gp.lora_params, s, tally);
      if (m.layer_span(g) > 0) {
        s.grads_layer += lora_elem * gp.lora_params / L;
      } else {
        s.grads_other += lora_elem * gp.lora_params;
      }
    }
  }
  // LoRA on the output layer: its gradients are the first of backward.
  if (const HeadLora& hl = plan.head_lora; hl.on && part != Part::kExperts) {
    add_adapter(req, dt, opt, hl.in, hl.out, 1, hl.params, s, tally);
    s.grads_head += lora_elem * hl.params;
  }
  // Step temporaries.
  const int64_t state_elem =
      plan.lora_params > 0 && plan.base_trainable == 0 ? lora_elem : std::max(dt.state, dt.master);
  s.opt_temp = step_temporaries(opt, t.optimizer_in_backward, state_elem, tally, s.largest_trainable_tensor);
  return s;
}

RankState rank_state(const Request& req, const ParallelOptions& par, const TrainablePlan& plan, const Dtypes& dt,
                     const OptimizerInfo& opt, const Sharding& sh) {
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  RankState rs;
  const int64_t n = sh.group;
  // DeepSpeed keeps fp32 gradient partitions next to the fp32 master
  // (estimate_zero2_model_states_mem_needs: "4_grads_32bit"; stage3.py
  // grad_partitions_flat_buffer); Megatron's distributed optimizer does the
  // same when the main grads are bf16 (dist_optimizer.md: 4 + 16/d).
  const bool fp32_grad_shards = (sh.deepspeed || (sh.megatron && !par.main_grads_fp32)) && dt.master > 0;
  // Each part of the state is divided over its own group: routed experts
  // over dp x cp / ep, the rest over dp x cp.
  auto sharded = [&](Part part, int64_t ranks) {
    StateSizes x = model_state(req, plan, dt, opt, part);
    if (fp32_grad_shards) rs.grad_partitions += ceil_div(4 * x.trainable, std::max<int64_t>(ranks, 1));
    if (ranks <= 1) return x;
    if (sh.states) {
      x.states = ceil_div(x.states, ranks);
      x.master = ceil_div(x.master, ranks);
      x.opt_temp = ceil_div(x.opt_temp, ranks);
    }
    if (sh.grads) {
      for (int64_t* v : {&x.grads, &x.grads_head, &x.grads_layer, &x.grads_embed, &x.grads_other}) {
        *v = ceil_div(*v, ranks);
      }
    }
    if (sh.weights) {
      // DeepSpeed's persistent small tensors stay whole.
      const int64_t keep = sh.deepspeed ? x.weights_persistent : 0;
      const int64_t keep_lora = sh.deepspeed ? x.lora_persistent : 0;
      x.weights = ceil_div(x.weights - keep, ranks) + keep;
      x.lora_weights = ceil_div(x.lora_weights - keep_lora, ranks) + keep_lora;
      // A 4-bit base is sharded like any parameter: FSDP and ZeRO-3 QLoRA
      // need bnb_4bit_quant_storage set to a float dtype (bitsandbytes
      // docs/source/fsdp_qlora.md: "FSDP only supports sharding float data
      // types"; PEFT docs accelerate/fsdp.md and accelerate/deepspeed.md,
      // "Use PEFT QLoRA and FSDP / DeepSpeed with ZeRO3"; Answer.AI
      // fsdp_qlora), which packs the codes into bf16 storage so the
      // Params4bit data shards with the rest. The absmax constants are not
      // parameters: each rank keeps its module's quant_state whole
      // (bitsandbytes nn/modules.py fix_4bit_weight_quant_state_from_module).
      const int64_t packed = ceil_div(x.quantized_packed, ranks);
      x.weights_quantized = x.weights_quantized - x.quantized_packed + packed;
      x.quantized_packed = packed;
    }
    return x;
  };
  rs.has_experts = std::any_of(m.groups.begin(), m.groups.end(),
                               [](const ParamGroup& g) { return g.component == std::string(comp::kExperts); });
  const bool split_experts = rs.has_experts && sh.expert_group != n;
  rs.sz = !(sh.states || fp32_grad_shards) ? model_state(req, plan, dt, opt)
          : split_experts ? combine(sharded(Part::kDense, n), sharded(Part::kExperts, sh.expert_group), opt,
                                    t.optimizer_in_backward)
                          : sharded(Part::kAll, n);
  StateSizes& sz = rs.sz;
  // Megatron keeps full-size main grads in fp32 for bf16 runs
  // (accumulate_allreduce_grads_in_fp32): 6 + 12/d bytes per parameter.
  rs.grad_elem = sh.megatron && par.main_grads_fp32 && dt.grad < 4 ? 4 : dt.grad;
  if (rs.grad_elem != dt.grad) {
    for (int64_t* v : {&sz.grads, &sz.grads_head, &sz.grads_layer, &sz.grads_embed, &sz.grads_other}) {
      *v = *v / dt.grad * 4;
    }
  }
  rs.trainable_local = sz.trainable;
  rs.offloaded = par.offload_optimizer && (sh.states || sh.deepspeed || sh.fsdp);
  if (rs.offloaded) {
    sz.states = sz.master = sz.opt_temp = rs.grad_partitions = 0;  // the step runs on the CPU
  }
  if (par.offload_params) {
    // Offloaded parameters include the packed 4-bit codes; the absmax stay.
    sz.weights = 0;
    sz.weights_quantized -= sz.quantized_packed;
    sz.quantized_packed = 0;
  }
  rs.shard_note = " / " + std::to_string(n) +
                  (split_experts ? ", routed experts / " + std::to_string(sh.expert_group) : "") + " (" + sh.label +
                  ")";
  return rs;
}

namespace {

// The separate tensors of one instance of a group: a Linear's weight and
// bias, a LayerNorm's weight and bias are allocated apart (numel counts both).
std::vector<int64_t> tensors_of(const ParamGroup& g) {
  if (g.kind == ModuleKind::kLinear && g.bias) return {g.in_features * g.out_features, g.out_features};
  if (g.kind == ModuleKind::kNorm && g.bias) return {g.out_features, g.out_features};
  return {g.numel};
}

// One group's weight tensors as the device holds them whole (no weight
// sharding, no offload): 4-bit groups go to `quantized` (loaded in
// quant_load_order), the rest and the LoRA tensors to `weights`.
void weight_pieces(const ParamGroup& g, const GroupPlan& gp, const TrainOptions& t, const Dtypes& dt,
                   std::vector<Piece>& weights, std::vector<StatePieces::QuantLoad>& quantized) {
  const int64_t lora_elem = dt.adapter;
  const int64_t frozen_hp_elem = dt.frozen;
  if (gp.quantized) {
    quantized.push_back(
        {g.in_features * g.out_features, nf4_bytes(g.in_features * g.out_features, t.quant), g.instances});
    if (g.bias) weights.push_back({frozen_hp_elem * g.out_features, g.instances});
  } else {
    for (int64_t numel : tensors_of(g)) {
      weights.push_back({(gp.trainable ? dt.weight : frozen_hp_elem) * numel, g.instances});
    }
  }
  if (gp.lora) {
    weights.push_back({lora_elem * t.lora.rank * g.in_features, g.instances});
    weights.push_back({lora_elem * t.lora.rank * g.out_features, g.instances});
  }
}

// Load order of the 4-bit weights: layer by layer, each layer's groups in
// module order (a round takes one instance of every group that has one
// left). Past kMaxQuantLoads entries an entry stands for several instances
// of a group, quantised through one set of temporaries with their packed
// tensors allocated together, so a 70B model (560 weights) or an MoE
// checkpoint with thousands of expert matrices stays cheap to replay
// (tests/bench BM_EstimateTorchtuneQlora70b).
std::vector<StatePieces::QuantLoad> quant_load_order(const std::vector<StatePieces::QuantLoad>& quantized) {
  constexpr int64_t kMaxQuantLoads = 128;
  int64_t rounds = 0;
  for (const auto& q : quantized) rounds = std::max(rounds, q.count);
  const int64_t groups = std::max<int64_t>(1, static_cast<int64_t>(quantized.size()));
  const int64_t step = std::max<int64_t>(1, ceil_div(rounds * groups, kMaxQuantLoads));
  std::vector<StatePieces::QuantLoad> order;
  for (int64_t r = 0; r < rounds; r += step) {
    for (const auto& q : quantized) {
      const int64_t k = std::min(step, q.count - r);
      if (k > 0) order.push_back({q.numel, q.packed, k});
    }
  }
  return order;
}

}  // namespace

StatePieces state_pieces(const Request& req, const TrainablePlan& plan, const Dtypes& dt, const OptimizerInfo& opt,
                         const Sharding& sh, const RankState& rs) {
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  StatePieces out;
  std::vector<StatePieces::QuantLoad> quantized;  // per 4-bit group: {numel, packed bytes, instances}
  const int64_t lora_elem = dt.adapter;
  const int64_t state_elem =
      plan.lora_params > 0 && plan.base_trainable == 0 ? lora_elem : std::max(dt.state, dt.master);
  const bool whole_weights = !sh.weights && !req.parallel.offload_params;
  // One trainable tensor of `numel` (rows x cols) values: `count` copies in
  // the model, `grad_count` of them in one gradient tensor (a layer's).
  const OptimizerInfo& adamw = opt.matrices_only ? *find_optimizer("adamw_torch") : opt;
  auto trainable = [&](const OptimizerInfo& o, int64_t numel, int64_t rows, int64_t cols, int64_t elem, int64_t count,
                       int64_t grad_count, bool decays, std::vector<Piece>* grads) {
    if (!sh.grads) grads->push_back({rs.grad_elem == dt.grad ? elem * numel : 4 * numel, grad_count});
    if (!sh.states && !rs.offloaded) {
      if (dt.master > 0) out.master.push_back({dt.master * numel, count});
      const int64_t st = state_bytes(o, elem, numel, rows, cols);
      const int64_t n = o.states > 0 && !o.factored ? o.states : 1;
      if (st > 0) out.states.push_back({st / n, count * n});
      if (o.kernel == StepKernel::kForeach && decays) out.opt_temp.push_back({state_elem * numel, count});
    }
  };
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    const GroupPlan& gp = plan.groups[i];
    if (whole_weights) weight_pieces(g, gp, t, dt, out.weights, quantized);
    const int64_t span = m.layer_span(g);
    // Per layer (one decoder layer's copies), the head, or the rest.
    std::vector<Piece>* grads = g.stack != "text" || g.kind == ModuleKind::kEmbedding ? &out.grads_rest
                                : span > 0                                            ? &out.grads_layer
                                                                                      : &out.grads_head;
    const int64_t per_grad = span > 0 && g.stack == "text" ? std::max<int64_t>(g.instances / span, 1) : g.instances;
    if (gp.trainable && gp.trainable_instances > 0) {
      const int64_t rows = g.kind == ModuleKind::kLinear ? g.out_features : g.in_features;
      const int64_t cols = g.kind == ModuleKind::kLinear ? g.in_features : g.out_features;
      const bool muon = g.kind == ModuleKind::kLinear && span > 0;
      const std::vector<int64_t> tensors = tensors_of(g);
      for (size_t k = 0; k < tensors.size(); ++k) {
        // The weight is rows x cols; a bias is one row.
        trainable(muon ? opt : adamw, tensors[k], k == 0 ? rows : tensors[k], k == 0 ? cols : 1, dt.grad,
                  gp.trainable_instances, std::min(per_grad, gp.trainable_instances), g.kind != ModuleKind::kNorm,
                  grads);
      }
    }
    if (gp.lora) {
      trainable(opt, t.lora.rank * g.in_features, t.lora.rank, g.in_features, lora_elem, g.instances, per_grad, true,
                grads);
      trainable(opt, t.lora.rank * g.out_features, g.out_features, t.lora.rank, lora_elem, g.instances, per_grad, true,
                grads);
    }
  }
  // LoRA on the output layer: lora_A [r, in], lora_B [out, r]; gradients
  // with the head's (the first of backward).
  if (const HeadLora& hl = plan.head_lora; hl.on) {
    if (whole_weights) {
      out.weights.push_back({lora_elem * t.lora.rank * hl.in, 1});
      out.weights.push_back({lora_elem * t.lora.rank * hl.out, 1});
    }
    trainable(opt, t.lora.rank * hl.in, t.lora.rank, hl.in, lora_elem, 1, 1, true, &out.grads_head);
    trainable(opt, t.lora.rank * hl.out, hl.out, t.lora.rank, lora_elem, 1, 1, true, &out.grads_head);
  }
  out.quant_groups = quantized.size();
  out.quant_load = quant_load_order(quantized);
  // Per-tensor loops hold one tensor's temporaries; fused kernels none.
  if (opt.kernel != StepKernel::kForeach) out.opt_temp.clear();
  for (auto* v :
       {&out.weights, &out.master, &out.states, &out.opt_temp, &out.grads_head, &out.grads_layer, &out.grads_rest}) {
    std::sort(v->begin(), v->end(), [](const Piece& a, const Piece& b) { return a.bytes > b.bytes; });
  }
  return out;
}

namespace {

// One 4-bit weight of n values quantised from its 16-bit tensor on the
// device, as the load does it (for `count` weights: one set of temporaries,
// their packed tensors together); the packed results stay when `keep`, every
// temporary goes.
Timeline::Id quantise_on_load(Timeline& tl, const StatePieces::QuantLoad& q, const QuantOptions& quant, bool keep) {
  const int64_t n = q.numel;
  // The 16-bit weight on the device: bitsandbytes nn/modules.py
  // Params4bit._quantize (w = self.data.contiguous().to(device)); torchtune's
  // LoRALinear builds nn.Linear under the device context, then to_nf4.
  const Timeline::Id w = tl.alloc("weights_load", "16-bit weight being quantised to 4 bits", 2 * n);
  Timeline::Id packed = -1;
  if (quant.torchao) {
    // torchao dtypes/nf4tensor.py NF4Tensor.convert_to_norm_float_weight:
    // scaled_blocks = blocks / scales (2 B per value); quantize_tensor_nearest
    // makes (value.unsqueeze(-1) - nf4), a bf16 (values x 16) tensor, and its
    // .abs(), a second one (32 B per value each), then diff.min(dim=-1)
    // returns values (2 B) and int64 indices (8 B).
    const Timeline::Id scaled = tl.alloc("weights_load", "NF4 scaled blocks", 2 * n);
    // Since pytorch/ao PR #196 (torchao 0.2) that runs over chunks of 1024^2
    // values into a uint8 buffer of n codes; before it, over the whole weight.
    constexpr int64_t kChunk = int64_t{1} << 20;
    const int64_t c = quant.torchao_unchunked ? n : std::min(n, kChunk);
    const Timeline::Id codes = quant.torchao_unchunked ? -1 : tl.alloc("weights_load", "NF4 codes (uint8)", n);
    const Timeline::Id diff_sub = tl.alloc("weights_load", "NF4 value - codebook (x 16)", 32 * c);
    const Timeline::Id diff = tl.alloc("weights_load", "NF4 |value - codebook| (x 16)", 32 * c);
    tl.free(diff_sub);
    const Timeline::Id vals = tl.alloc("weights_load", "NF4 nearest values", 2 * c);
    const Timeline::Id idx = tl.alloc("weights_load", "NF4 nearest indices (int64)", 8 * c);
    tl.free(diff);
    tl.free(vals);
    if (codes >= 0) tl.free(idx);
    // quantized_blocks[::2] << 4 | quantized_blocks[1::2]: two half-size
    // temporaries in the codes' dtype (int64 unchunked, uint8 chunked).
    const int64_t elem = quant.torchao_unchunked ? 8 : 1;
    const Timeline::Id hi = tl.alloc("weights_load", "NF4 high nibbles", elem * n / 2);
    const Timeline::Id both = tl.alloc("weights_load", "NF4 packed codes", elem * n / 2);
    tl.free(hi);
    if (codes >= 0) {
      tl.free(codes);
    } else {
      tl.free(idx);
    }
    packed = tl.alloc("weights", "4-bit weights", q.packed * q.count, {{q.packed, q.count}});
    tl.free(both);
    tl.free(scaled);
  } else {
    // bitsandbytes functional.py quantize_4bit: one CUDA kernel writes the
    // packed codes and the absmax, no temporaries of the weight's size.
    packed = tl.alloc("weights", "4-bit weights", q.packed * q.count, {{q.packed, q.count}});
  }
  if (!keep) tl.free(packed);
  tl.free(w);
  return packed;
}

}  // namespace

StateTensors load_state(Timeline& tl, const OptimizerInfo& opt, const RankState& rs, const StatePieces& pieces,
                        const QuantOptions& quant, int64_t placed) {
  const StateSizes& sz = rs.sz;
  StateTensors out;
  int64_t packed = 0;
  for (const auto& q : pieces.quant_load) packed += q.packed * q.count;
  // `placed`: the weights FSDP1's construction already left on the GPU
  // (parallel_buffers.h fsdp1_construct).
  const int64_t other_weights = sz.weights + sz.weights_quantized + sz.lora_weights - packed - placed;
  // The 4-bit weights are quantised on the device one at a time; the caching
  // allocator keeps the segments their temporaries took (the reserved memory a
  // QLoRA run shows from the load on). torchao quantises twice: when
  // torchtune builds the model (to_nf4 of the initialised weight) and when the
  // checkpoint is copied in (NF4Tensor copy_ quantises the incoming tensor
  // into a new NF4Tensor, copied into the parameter and freed).
  if (!quant.torchao) {
    out.weights = tl.alloc("weights", "weights", other_weights, pieces.weights);
    for (const auto& q : pieces.quant_load) quantise_on_load(tl, q, quant, /*keep=*/true);
  } else if (!quant.torchao_unchunked) {
    // torchtune builds the decoder layers first and the token embedding and
    // output projection after them (torchtune/models/llama3/
    // _component_builders.py lora_llama3: the layers loop, then
    // nn.Embedding, then output_proj): the 16-bit weights come after the
    // 4-bit weights' quantisation, carved from the cached temporaries'
    // segments.
    for (const auto& q : pieces.quant_load) quantise_on_load(tl, q, quant, /*keep=*/true);
    out.weights = tl.alloc("weights", "weights", other_weights, pieces.weights);
  } else {
    // April 2024 (torchtune 0914d5c, models/llama2/_component_builders.py
    // lora_llama2): one decoder layer is built and quantised, then
    // nn.Embedding and output_proj, then TransformerDecoder deep-copies the
    // layer num_layers times (modules/transformer.py _get_clones), and each
    // NF4 weight's copy runs torchtune's clone override
    // (utils/_register_nf4_dispatch_ops.py clone: to_nf4(get_original_weight())),
    // a second quantisation; the template layer goes when the builder
    // returns. The dequantisation's own locals (int64 nibbles) fit in the
    // cache the quantisation leaves and are not replayed. Against torchtune's
    // logged 9.13 GB (8.50 GiB) reserved after init (qlora_finetune.rst) the
    // load replays to 8.43 GiB; built with the 16-bit weights first it was
    // 7.58 GiB.
    std::vector<Timeline::Id> layer_template;
    const size_t groups = std::min(pieces.quant_groups, pieces.quant_load.size());
    for (size_t i = 0; i < groups; ++i) {
      const StatePieces::QuantLoad& q = pieces.quant_load[i];
      layer_template.push_back(quantise_on_load(tl, {q.numel, q.packed, 1}, quant, /*keep=*/true));
    }
    out.weights = tl.alloc("weights", "weights", other_weights, pieces.weights);
    for (const auto& q : pieces.quant_load) quantise_on_load(tl, q, quant, /*keep=*/true);
    for (Timeline::Id id : layer_template) tl.free(id);
  }
  if (quant.torchao) {
    // The copy-in pass allocates and frees everything it touches, so once a
    // weight shape has gone through, the caching allocator holds the blocks
    // it needs (best fit from the cached free blocks) and the next weight of
    // that shape leaves the pool as it found it: one pass per shape replays
    // the same reserved memory with a fraction of the events.
    std::vector<std::pair<int64_t, int64_t>> seen;
    for (const auto& q : pieces.quant_load) {
      const std::pair<int64_t, int64_t> shape{q.numel, q.packed};
      if (std::find(seen.begin(), seen.end(), shape) != seen.end()) continue;
      seen.push_back(shape);
      quantise_on_load(tl, {q.numel, q.packed, 1}, quant, /*keep=*/false);
    }
  }
  // Master weights are allocated; a paged optimizer's states live in CUDA
  // managed memory (bitsandbytes paged optimizers: cudaMallocManaged).
  tl.alloc("optimizer_states", "fp32 master weights", sz.master, pieces.master);
  out.states = tl.alloc("optimizer_states", "optimizer states", sz.states, pieces.states,
                        opt.paged ? Residence::kManaged : Residence::kAllocated);
  if (rs.grad_partitions > 0) tl.alloc("grad_partitions", "fp32 gradient partitions", rs.grad_partitions);
  return out;
}

void state_components(std::vector<Component>& out, const Request& req, const ParallelOptions& par,
                      const TrainablePlan& plan, const Dtypes& dt, const OptimizerInfo& opt, const Sharding& sh,
                      const RankState& rs) {
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  const StateSizes& sz = rs.sz;
  const int64_t W = sz.weights + sz.weights_quantized + sz.lora_weights;
  const int64_t P = m.params_total();
  std::string w_formula = fmt_int(P) + " params";
  if (sz.weights_quantized > 0) {
    w_formula += ": 4-bit linears " + fmt_int(sz.weights_quantized) + " B (NF4" +
                 (t.quant.double_quant ? " + double-quantised absmax" : " + fp32 absmax") +
                 (sh.weights && !par.offload_params ? "; the packed codes sharded (bnb_4bit_quant_storage), the "
                                                      "absmax whole on every rank"
                                                    : "") +
                 "), the rest " + fmt_int(sz.weights) + " B";
  } else {
    w_formula += " x " + std::to_string(dt.weight) + " B";
  }
  if (sz.lora_weights > 0)
    w_formula += "; LoRA adapters " + fmt_int(plan.lora_params) + " params, " + fmt_int(sz.lora_weights) + " B here";
  if (par.offload_params) {
    w_formula += "; offloaded to CPU (offload_params): only gathered layers on the GPU";
  } else if (sh.weights) {
    w_formula += rs.shard_note + (sh.deepspeed && sz.weights_persistent > 0
                                      ? ", tensors under " + fmt_int(par.stage3_param_persistence_threshold) +
                                            " elements kept whole (stage3_param_persistence_threshold)"
                                      : "");
  }
  out.push_back({"weights", "Weights", W, w_formula, Pool::kAllocated});
  if (sz.autocast_cache > 0) {
    out.push_back({"autocast_weight_cache", "Autocast bf16 weight copies", sz.autocast_cache,
                   "linear weights x 2 B, cached during forward/backward (autocast_mode.cpp cached_cast)",
                   Pool::kAllocated});
  }
  if (sz.master > 0) {
    out.push_back({"master_weights", "fp32 master weights", sz.master,
                   fmt_int(plan.base_trainable) + " trainable x 4 B" + (sh.states ? rs.shard_note : ""),
                   Pool::kAllocated});
  }
  const int64_t trainable = plan.base_trainable + plan.lora_params;
  out.push_back({"gradients", "Gradients", sz.grads,
                 fmt_int(trainable) + " trainable params" +
                     (plan.base_trainable > 0 ? " x " + std::to_string(rs.grad_elem) + " B" : " x adapter dtype") +
                     (rs.grad_elem != dt.grad ? " (Megatron fp32 main grads)" : "") + (sh.grads ? rs.shard_note : "") +
                     (rs.mixed_unit_grads > 0 ? " + frozen weights' share of each FSDP1 unit (use_orig_params)" : ""),
                 Pool::kAllocated});
  out.push_back({"optimizer_states", std::string("Optimizer states (") + opt.label + ")", sz.states,
                 (opt.matrices_only ? std::string("1 state per hidden-layer 2-D weight (Muon), 2 for the rest (AdamW)")
                                    : std::to_string(opt.states) + " state(s) per trainable param") +
                     (rs.offloaded ? ", offloaded to CPU (offload_optimizer)"
                      : sh.states  ? rs.shard_note
                                   : "") +
                     "; " + opt.source,
                 opt.paged ? Pool::kOutside : Pool::kAllocated});
  out.push_back({"optimizer_temporaries", "Optimizer step temporaries", sz.opt_temp,
                 opt.matrices_only ? "Muon's Newton-Schulz temporaries of the largest matrix, or AdamW's foreach "
                                     "temporary over the rest, the larger"
                 : opt.kernel == StepKernel::kForeach ? "foreach: one state-sized temporary per param group"
                 : opt.kernel == StepKernel::kFused   ? "fused kernel: none"
                                                      : "per-tensor loop: the largest tensor",
                 Pool::kAllocated});
}

}  // namespace vram::memory

// One training step on one GPU, phase by phase (DESIGN.md §3 "Phases, not a sum";
// research/memory-internals.md §3.2 and §9.1).
#include "train/estimate_train.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "format.h"
#include "overheads.h"
#include "train/layout.h"
#include "train/memory_plan.h"
#include "vram/optimizers.h"

namespace vram::train {

namespace {

using overheads::ceil_div;
int64_t to_bytes(double x) { return static_cast<int64_t>(std::ceil(x)); }

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

struct Sizes {
  // Model state
  int64_t weights = 0;
  int64_t weights_quantized = 0;
  int64_t lora_weights = 0;
  int64_t autocast_cache = 0;
  int64_t master = 0;
  int64_t grads = 0;
  int64_t states = 0;
  int64_t opt_temp = 0;
  int64_t largest_trainable_tensor = 0;
  // Gradients by position in backward
  int64_t grads_head = 0;          // lm_head + final norm (first to appear)
  int64_t grads_layer = 0;         // one text layer (average over layers)
  int64_t grads_embed = 0;         // input embeddings (last)
  int64_t grads_other = 0;         // vision tower, projector
  int64_t qlora_dequant = 0;       // one dequantised 4-bit weight during backward
  int64_t weights_persistent = 0;  // weights of tensors under ZeRO-3's persistence threshold
  int64_t lora_persistent = 0;     // adapter tensors under the same threshold
  int64_t trainable = 0;           // trainable parameters (base + adapters)
};

// Which groups a model_state() call covers: routed experts are sharded over
// the expert-data-parallel group, everything else over data parallel.
enum class Part { kAll, kDense, kExperts };

bool in_part(const ParamGroup& g, Part part) {
  const bool expert = g.component == std::string(comp::kExperts);
  return part == Part::kAll || (part == Part::kExperts) == expert;
}

// a + b, where the per-tensor maxima stay maxima.
Sizes combine(const Sizes& a, const Sizes& b, const OptimizerInfo& opt, bool in_backward) {
  Sizes s;
  for (auto [x, y, z] : {std::tuple{&s.weights, a.weights, b.weights},
                         {&s.weights_quantized, a.weights_quantized, b.weights_quantized},
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
  // foreach temporaries scale with the parameters; per-tensor loops and
  // optimizer-in-backward hold one tensor's worth.
  const bool per_tensor = opt.kernel == StepKernel::kForLoop || in_backward;
  s.opt_temp = per_tensor ? std::max(a.opt_temp, b.opt_temp) : a.opt_temp + b.opt_temp;
  return s;
}

Sizes model_state(const Request& req, const TrainablePlan& plan, const Dtypes& dt, const OptimizerInfo& opt,
                  Part part = Part::kAll) {
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  Sizes s;
  const int64_t L = std::max<int64_t>(m.text.layers, 1);
  const int64_t persist = req.parallel.stage3_param_persistence_threshold;
  const int64_t lora_elem = (t.lora.adapter_fp32 || dt.weight == 4) ? 4 : dt.weight;
  const int64_t frozen_hp_elem = (t.method == Method::kQlora && t.quant.prepare_kbit) ? 4 : dt.weight;
  int64_t decay_group = 0;  // weights with decay: HF Trainer's first param group
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    const GroupPlan& gp = plan.groups[i];
    if (!in_part(g, part)) continue;
    if (gp.quantized) {
      s.weights_quantized += nf4_bytes(g.in_features * g.out_features, t.quant) * g.instances;
      if (g.bias) s.weights += frozen_hp_elem * g.out_features * g.instances;
      // MatMul4Bit backward: grad_A = grad_out @ dequantize_4bit(B).to(dtype)
      s.qlora_dequant = std::max(s.qlora_dequant, 2 * g.in_features * g.out_features);
    } else {
      s.weights += (gp.trainable ? dt.weight : frozen_hp_elem) * g.total();
      // deepspeed stage3 param persistence: tensors under
      // stage3_param_persistence_threshold elements are never partitioned.
      if (g.numel < persist) s.weights_persistent += (gp.trainable ? dt.weight : frozen_hp_elem) * g.total();
    }
    // autocast caches a bf16 copy of every fp32 Linear weight it multiplies.
    if (dt.autocast && g.kind == ModuleKind::kLinear && !gp.quantized)
      s.autocast_cache += dt.autocast_cache * g.total();
    const int64_t tn = g.numel * gp.trainable_instances;
    if (gp.trainable && tn > 0) {
      const int64_t rows = g.kind == ModuleKind::kLinear ? g.out_features : g.in_features;
      const int64_t cols = g.kind == ModuleKind::kLinear ? g.in_features : g.out_features;
      s.grads += dt.grad * tn;
      s.trainable += tn;
      s.master += dt.master * tn;
      s.states += state_bytes(opt, dt.state, g.numel, rows, cols) * gp.trainable_instances;
      s.largest_trainable_tensor = std::max(s.largest_trainable_tensor, g.numel);
      if (g.kind != ModuleKind::kNorm) decay_group += tn;
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
    if (gp.lora) {
      s.lora_weights += lora_elem * gp.lora_params;
      s.grads += lora_elem * gp.lora_params;
      s.trainable += gp.lora_params;
      const int64_t per = gp.lora_params / g.instances;
      for (int64_t numel : {t.lora.rank * g.in_features, t.lora.rank * g.out_features}) {
        if (numel < persist) s.lora_persistent += lora_elem * numel * g.instances;
      }
      // lora_A [r, in], lora_B [out, r]: both 2-D
      s.states += state_bytes(opt, lora_elem, t.lora.rank * g.in_features, t.lora.rank, g.in_features) * g.instances +
                  state_bytes(opt, lora_elem, t.lora.rank * g.out_features, g.out_features, t.lora.rank) * g.instances;
      s.largest_trainable_tensor = std::max(s.largest_trainable_tensor, per);
      decay_group += gp.lora_params;
      if (m.layer_span(g) > 0) {
        s.grads_layer += lora_elem * gp.lora_params / L;
      } else {
        s.grads_other += lora_elem * gp.lora_params;
      }
    }
  }
  // Step temporaries.
  const int64_t state_elem =
      plan.lora_params > 0 && plan.base_trainable == 0 ? lora_elem : std::max(dt.state, dt.master);
  if (opt.kernel == StepKernel::kForeach) {
    s.opt_temp = int64_t{opt.foreach_temporaries} * state_elem * decay_group;
  } else if (opt.kernel == StepKernel::kForLoop) {
    // Adafactor (transformers optimization.py) makes an fp32 copy of the grad,
    // grad**2 + eps and the approximated update: 3 fp32 tensors of the largest
    // parameter; other for-loop optimizers one state-sized tensor.
    s.opt_temp = (opt.factored ? 3 * 4 : state_elem) * s.largest_trainable_tensor;
  }
  // Optimizer in backward steps one parameter at a time from its grad hook:
  // temporaries never exceed one tensor's state.
  if (t.optimizer_in_backward && s.opt_temp > 0) s.opt_temp = state_elem * s.largest_trainable_tensor;
  return s;
}

}  // namespace

// One rank: `req` is the rank's view of the model (layout.h rank_request),
// `global` the request as the user gave it.
Result<Estimate> estimate_rank(const Request& req, const Request& global, const Stage& stage) {
  try {
    const ModelSpec& m = req.model;
    const TrainOptions& t = req.train;
    const OptimizerInfo& opt = *find_optimizer(t.optimizer);
    const Dtypes dt = dtypes_for(req);
    const TrainablePlan plan = plan_trainable(req);
    Estimate e;
    const int64_t b = t.micro_batch;
    const int64_t s = t.seq_len;
    const int64_t N = b * s;
    e.tokens_per_micro_batch = N;
    e.params_trainable = plan.base_trainable + plan.lora_params;
    const LayerStack& st = m.text;
    const int64_t L = st.layers;
    const int64_t V = m.vocab;
    const int64_t h = st.hidden;

    // ---- model state -------------------------------------------------------
    // ---- data-parallel sharding (ZeRO paper §5; DeepSpeed stage_1_and_2.py,
    // stage3.py; FSDP ShardingStrategy; Megatron distributed optimizer) ------
    const ParallelOptions& par = global.parallel;
    const Sharding sh = sharding_for(par);
    const int64_t n = sh.group;
    // DeepSpeed keeps fp32 gradient partitions next to the fp32 master
    // (estimate_zero2_model_states_mem_needs: "4_grads_32bit"; stage3.py
    // grad_partitions_flat_buffer); Megatron's distributed optimizer does the
    // same when the main grads are bf16 (dist_optimizer.md: 4 + 16/d).
    const bool fp32_grad_shards = (sh.deepspeed || (sh.megatron && !par.main_grads_fp32)) && dt.master > 0;
    int64_t grad_partitions = 0;
    // Each part of the state is divided over its own group: routed experts
    // over dp x cp / ep, the rest over dp x cp.
    auto sharded = [&](Part part, int64_t ranks) {
      Sizes x = model_state(req, plan, dt, opt, part);
      if (fp32_grad_shards) grad_partitions += ceil_div(4 * x.trainable, std::max<int64_t>(ranks, 1));
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
        // A 4-bit base stays replicated under ZeRO-3 (seed 000: "ZeRO-3
        // (QLoRA): base weights replicated, only LoRA params sharded"); so do
        // DeepSpeed's persistent small tensors.
        const int64_t keep = sh.deepspeed ? x.weights_persistent : 0;
        const int64_t keep_lora = sh.deepspeed ? x.lora_persistent : 0;
        x.weights = ceil_div(x.weights - keep, ranks) + keep;
        x.lora_weights = ceil_div(x.lora_weights - keep_lora, ranks) + keep_lora;
      }
      return x;
    };
    const bool has_experts = std::any_of(m.groups.begin(), m.groups.end(), [](const ParamGroup& g) {
      return g.component == std::string(comp::kExperts);
    });
    Sizes sz =
        !(sh.states || fp32_grad_shards) ? model_state(req, plan, dt, opt)
        : has_experts && sh.expert_group != n
            ? combine(sharded(Part::kDense, n), sharded(Part::kExperts, sh.expert_group), opt, t.optimizer_in_backward)
            : sharded(Part::kAll, n);
    // Megatron keeps full-size main grads in fp32 for bf16 runs
    // (accumulate_allreduce_grads_in_fp32): 6 + 12/d bytes per parameter.
    if (sh.megatron && par.main_grads_fp32 && dt.grad < 4) {
      for (int64_t* v : {&sz.grads, &sz.grads_head, &sz.grads_layer, &sz.grads_embed, &sz.grads_other}) {
        *v = *v / dt.grad * 4;
      }
    }
    const int64_t trainable_local = sz.trainable;
    const bool offloaded = par.offload_optimizer && (sh.states || sh.deepspeed || sh.fsdp);
    if (offloaded) {
      sz.states = sz.master = sz.opt_temp = grad_partitions = 0;  // the step runs on the CPU
    }
    if (par.offload_params) sz.weights = 0;
    // One decoder layer's parameters on this rank (FSDP unit, ZeRO-3 gather):
    // every-layer groups plus the larger of a sparse and a dense layer's own.
    // A 4-bit base is not partitioned, so it is never gathered either.
    int64_t layer_params = 0;
    {
      int64_t every = 0, sparse = 0, dense = 0;
      for (size_t i = 0; i < m.groups.size(); ++i) {
        const ParamGroup& g = m.groups[i];
        const int64_t span = m.layer_span(g);
        if (span == 0 || plan.groups[i].quantized) continue;
        if (sh.deepspeed && g.numel < par.stage3_param_persistence_threshold) continue;  // never gathered
        int64_t& bucket = g.layers == LayerSet::kMoe ? sparse : g.layers == LayerSet::kDense ? dense : every;
        bucket += g.numel * (g.instances / span);
      }
      layer_params = every + std::max(sparse, dense);
    }
    // Parameters outside the layers: FSDP's root unit (embeddings, final
    // norm, lm_head) is not resharded after forward (FSDP1 _runtime_utils
    // _post_forward_reshard skips the root; FSDP2 reshard_after_forward is
    // False for the root), so it stays gathered from forward to backward.
    int64_t root_params = 0;
    for (size_t i = 0; i < m.groups.size(); ++i) {
      const ParamGroup& g = m.groups[i];
      if (g.stack == "text" && m.layer_span(g) == 0 && !plan.groups[i].quantized) root_params += g.total();
    }
    // Parameters gathered for compute: ZeRO-3 / FULL_SHARD hold the current
    // and the prefetched layer (FSDP forward/backward prefetch; DeepSpeed
    // stage3_prefetch_bucket_size, capped by stage3_max_live_parameters);
    // FSDP2 also holds the prefetched unit's flat all-gather output until it
    // is copied out into per-parameter tensors (_fsdp_collectives.py).
    // SHARD_GRAD_OP keeps every layer unsharded from forward to backward.
    int64_t gathered = 0;
    std::string gathered_formula;
    if (sh.weights || par.offload_params) {
      int64_t elems = 2 * layer_params;
      gathered_formula = "current + prefetched layer, " + fmt_int(layer_params) + " params each";
      if (sh.deepspeed) {
        elems = std::min(elems + par.stage3_prefetch_bucket_size,
                         std::max(par.stage3_max_live_parameters, 2 * layer_params));
        gathered_formula += " + stage3_prefetch_bucket_size " + fmt_int(par.stage3_prefetch_bucket_size) +
                            ", at most stage3_max_live_parameters " + fmt_int(par.stage3_max_live_parameters);
      } else if (sh.fsdp) {
        if (par.fsdp_version == 2) {
          elems += layer_params;
          gathered_formula += " + the prefetched unit's flat all-gather output (FSDP2 copy-out)";
        }
        elems += root_params;
        gathered_formula += " + root unit " + fmt_int(root_params) + " params (embeddings, norm, lm_head)";
      }
      // FSDP MixedPrecision param_dtype: the unsharded copy is cast (a
      // model kept in fp32 is gathered in bf16).
      const int64_t elem = sh.fsdp && par.fsdp_param_bytes > 0 ? par.fsdp_param_bytes : dt.weight;
      gathered = elems * elem;
      gathered_formula = fmt_int(elems) + " params x " + std::to_string(elem) + " B: " + gathered_formula;
    }
    // Communication buffers: DDP's bucket copy of the gradients; DeepSpeed's
    // contiguous reduce bucket (doubled by overlap_comm, on by default for
    // stage 3); FSDP's reduce-scatter input of one unit; Megatron reduces in
    // place in its contiguous grad buffer.
    int64_t comm = 0;
    std::string comm_formula;
    if (sh.ddp_buckets) {
      comm = sz.grads;
      comm_formula = "DDP buckets: a second copy of the gradients (gradient_as_bucket_view=False)";
    } else if (sh.deepspeed) {
      const bool overlap = par.overlap_comm_given ? par.overlap_comm : par.zero == 3;
      comm = (par.contiguous_gradients || par.zero == 3 ? par.reduce_bucket_size * dt.grad : 0) * (overlap ? 2 : 1);
      comm_formula = "reduce_bucket_size " + fmt_int(par.reduce_bucket_size) + " x " + std::to_string(dt.grad) + " B" +
                     (overlap ? " x 2 (overlap_comm)" : "");
    } else if (sh.fsdp) {
      // One unit's unsharded gradients (they come out of backward in
      // param_dtype) plus, when the reduce dtype differs or under FSDP2's
      // foreach_reduce, the reduce-scatter input copy in the reduce dtype
      // (MixedPrecision reduce_dtype).
      const int64_t unsharded = par.fsdp_param_bytes > 0 ? par.fsdp_param_bytes : dt.grad;
      const int64_t reduce = par.fsdp_reduce_bytes > 0 ? par.fsdp_reduce_bytes : unsharded;
      const bool copy = par.fsdp_version == 2 || reduce != unsharded;
      comm = layer_params * unsharded + (copy ? layer_params * reduce : 0);
      comm_formula = "one unit's unsharded gradients " + fmt_int(layer_params) + " x " + std::to_string(unsharded) +
                     " B" + (copy ? " + reduce-scatter input x " + std::to_string(reduce) + " B" : "");
    }
    const NcclMemory nccl_mem = nccl_memory(global, stage);
    const int64_t nccl = nccl_mem.bytes;
    // Context parallel ring attention (TransformerEngine
    // AttnFuncWithCPAndKVP2P): K and V of the local chunk circulate in two
    // send/receive buffers in forward; backward adds two dK/dV buffers.
    int64_t cp_kv = 0;
    if (par.cp > 1) {
      const int64_t v_dim = st.v_head_dim > 0 ? st.v_head_dim : st.head_dim;
      cp_kv = N * st.kv_heads * (st.head_dim + v_dim) * (dt.autocast ? 2 : dt.compute);  // one K + V buffer
    }
    // Expert parallel token dispatch (Megatron-core MoEAlltoAllTokenDispatcher):
    // the permuted tokens sent and the tokens received, N x k x h each in the
    // compute dtype, live around each MoE layer's all-to-all (balanced routing).
    int64_t dispatch = 0;
    if (par.ep > 1 && st.moe_layers > 0) {
      dispatch =
          2 * b * s * st.experts_per_token * h * (dt.autocast ? 2 : dt.compute) / std::max<int64_t>(st.hidden_split, 1);
    }
    // ---- activations -------------------------------------------------------
    const bool any_layer_grad = plan.first_grad_layer < L;
    const int64_t grad_layers = L - plan.first_grad_layer;
    auto per_layer = [&](bool moe, bool trains) { return layer_activations(req, st, plan, dt, s, moe, trains); };
    // Which layers train their base weights (freeze by layer index trains
    // only some; every other method trains all or none).
    const LayerActivations dense_act = per_layer(false, true);
    const LayerActivations moe_act = st.moe_layers > 0 ? per_layer(true, true) : LayerActivations{};
    const double dense_tok =
        t.checkpointing == Checkpointing::kSelective ? dense_act.per_token_without_scores() : dense_act.per_token();
    const double moe_tok =
        t.checkpointing == Checkpointing::kSelective ? moe_act.per_token_without_scores() : moe_act.per_token();
    // Saved layers: those at or above first_grad_layer. MoE layers sit above
    // the dense ones (DeepSeek first_k_dense_replace).
    const int64_t saved_moe = std::min(st.moe_layers, grad_layers);
    const int64_t saved_dense = std::max<int64_t>(grad_layers - saved_moe, 0);
    const double ckpt_factor = req.calibration.checkpointing.value_or(1.0);
    int64_t act_layers = 0;     // saved by all layers
    int64_t act_one_layer = 0;  // the largest single layer (recomputed under checkpointing)
    int64_t act_layer_dense = to_bytes(dense_tok * N);
    int64_t act_layer_moe = to_bytes(moe_tok * N);
    std::string act_formula;
    if (t.checkpointing == Checkpointing::kFull) {
      // HF gradient checkpointing saves each decoder layer's input
      // (Korthikanti et al. 2022: 2sbh per layer) and re-runs one layer at a
      // time in backward.
      const int64_t per = to_bytes(static_cast<double>(dt.residual) * h * N * ckpt_factor);
      act_layers = per * grad_layers;
      act_one_layer = std::max(act_layer_dense, saved_moe > 0 ? act_layer_moe : 0);
      act_formula = fmt_int(grad_layers) + " layers x " + fmt_int(N) + " tokens x " + std::to_string(dt.residual) +
                    " B x h " + fmt_int(h) + " (checkpointed layer inputs)";
      act_layer_dense = per;
      act_layer_moe = per;
    } else {
      act_layers = act_layer_dense * saved_dense + act_layer_moe * saved_moe;
      act_formula =
          fmt_int(N) + " tokens x (" + fmt_int(saved_dense) + " layers x " + fmt_int(to_bytes(dense_tok)) + " B" +
          (saved_moe > 0 ? " + " + fmt_int(saved_moe) + " MoE layers x " + fmt_int(to_bytes(moe_tok)) + " B" : "") +
          ") per token";
    }
    // Final norm and lm_head input (the loss region is never checkpointed).
    double head_tok = 0;
    {
      const bool head_trains =
          std::any_of(m.groups.begin(), m.groups.end(),
                      [&](const ParamGroup& g) {
                        const size_t i = static_cast<size_t>(&g - m.groups.data());
                        return g.component == std::string(comp::kLmHead) && plan.groups[i].trainable;
                      }) ||
          (m.tie_word_embeddings && t.method == Method::kFull);
      if (stage.last && (any_layer_grad || head_trains)) head_tok += 4.0 * h + 4.0;  // final RMSNorm fp32 input
      if (stage.last && head_trains) head_tok += (dt.autocast ? 2.0 : dt.compute) * h;
    }
    const int64_t act_head = to_bytes(head_tok * N);
    // Vision tower tokens (VLMs): images_per_sample x encoder tokens.
    int64_t act_vision = 0;
    if (const LayerStack* vs = m.stack("vision"); vs != nullptr && t.images_per_sample > 0 && plan.vision_needs_grad) {
      const int64_t nv = b * t.images_per_sample * std::max<int64_t>(m.vision.encoder_tokens_per_image, 1);
      const LayerActivations va = layer_activations(req, *vs, plan, dt, m.vision.encoder_tokens_per_image, false, true);
      act_vision = to_bytes(va.per_token() * static_cast<double>(nv)) * vs->layers;
    }
    // Activation offloading (torch.autograd.graph.save_on_cpu, or the
    // "offload" gradient checkpointing of axolotl / Unsloth): saved tensors
    // of the layer stack live in pinned host memory; the GPU holds the layer
    // being computed and the one being prefetched.
    const int64_t layer_max = std::max(act_layer_dense, saved_moe > 0 ? act_layer_moe : 0);
    auto resident = [&](int64_t stack_bytes) {
      return t.activation_offload ? std::min(stack_bytes, 2 * layer_max) : stack_bytes;
    };
    // 1F1B: pipeline rank r holds up to pp - r micro-batches in flight;
    // interleaving holds a fraction more (layout.h pipeline_stages).
    auto in_flight = [&](int64_t x) { return ceil_div(x * stage.in_flight_num, stage.in_flight_den); };
    act_layers = in_flight(act_layers);
    act_layer_dense = in_flight(act_layer_dense);
    act_layer_moe = in_flight(act_layer_moe);
    const int64_t activations = resident(act_layers) + act_head + act_vision;

    // ---- loss --------------------------------------------------------------
    // transformers loss_utils.py ForCausalLMLoss: logits (compute dtype),
    // logits.float() (4 B, freed after log_softmax), log_softmax output (4 B,
    // saved). Backward: nll grad (4 B) + log_softmax grad (4 B) while the saved
    // output is alive = 12 N V (research §3.1).
    const bool lm_loss = st.causal && stage.last;
    const double logit_factor = req.calibration.logits.value_or(1.0);
    int64_t loss_fwd = 0;
    int64_t loss_bwd = 0;
    std::string loss_formula;
    const int64_t logits_elem = dt.autocast ? 2 : dt.compute;
    int64_t early_head_grads = 0;  // lm_head grad allocated in forward by a fused loss
    if (lm_loss && t.fused_loss) {
      // Liger fused_linear_cross_entropy: chunk_size = next_pow2(ceil(N / ceil(V/h)));
      // one chunk of logits (input dtype, upcast inside the kernel) plus
      // grad_input (N x h) allocated in forward. Its grad_weight (V x h) is
      // the lm_head gradient itself, so it is counted as gradients from the
      // loss phase on rather than as a loss buffer.
      const int64_t inc = ceil_div(V, h);
      int64_t chunk = 1;
      while (chunk < ceil_div(N, inc)) chunk *= 2;
      early_head_grads = t.grad_accum > 1 ? 0 : sz.grads_head;
      loss_fwd =
          to_bytes((static_cast<double>(chunk) * V * (logits_elem + 4) + static_cast<double>(N) * h * logits_elem) *
                   logit_factor);
      loss_bwd = loss_fwd;
      loss_formula =
          "fused linear cross-entropy: chunk " + fmt_int(chunk) + " x V " + fmt_int(V) + " logits + grad_input N x h";
    } else if (lm_loss) {
      const int64_t upcast = logits_elem == 4 ? 0 : 4;
      loss_fwd = to_bytes(static_cast<double>(N) * V * (logits_elem + upcast + 4) * logit_factor);
      loss_bwd = to_bytes(static_cast<double>(N) * V * 12.0 * logit_factor);
      loss_formula = "N " + fmt_int(N) + " x V " + fmt_int(V) + " x (" + std::to_string(logits_elem) + " logits + " +
                     std::to_string(upcast) + " fp32 copy + 4 log_softmax) in forward; x 12 B in backward";
    } else if (!stage.last) {
      loss_formula = "none on this pipeline stage: the last stage computes the logits and the loss";
    } else {
      // Encoder-only models carry a small task head (classification), not a
      // vocabulary-sized loss.
      loss_formula = "classification head: negligible";
    }

    // ---- outside the tensors ----------------------------------------------
    const int64_t cublas = overheads::cublas_bytes(req, 2);
    const int64_t context = overheads::context_bytes(req);
    const double frag = req.overheads.fragmentation.value_or(kDefaultFragmentation);

    // ---- phases ------------------------------------------------------------
    const bool accum = t.grad_accum > 1;
    const int64_t W = sz.weights + sz.weights_quantized + sz.lora_weights;
    const int64_t S = sz.states + sz.master;
    const bool paged = opt.paged;
    const int64_t S_out = paged ? sz.states : 0;
    const int64_t G_acc = accum ? sz.grads : 0;

    struct PhaseDraft {
      const char* key;
      const char* label;
      std::map<std::string, int64_t> parts;
    };
    std::vector<PhaseDraft> drafts;
    auto common = [&](std::map<std::string, int64_t> extra) {
      std::map<std::string, int64_t> p = {{"weights", W}, {"optimizer_states", S}, {"cublas_workspace", cublas}};
      if (sz.autocast_cache > 0) p["autocast_weight_cache"] = sz.autocast_cache;
      if (gathered > 0) p["gathered_params"] = gathered;
      if (grad_partitions > 0) p["grad_partitions"] = grad_partitions;
      if (comm > 0) p["comm_buffers"] = comm;
      if (dispatch > 0) p["moe_dispatch"] = dispatch;
      if (cp_kv > 0) p["cp_kv_exchange"] = 2 * cp_kv;
      for (auto& [k, v] : extra) p[k] += v;
      return p;
    };
    drafts.push_back({"forward", "end of forward", common({{"gradients", G_acc}, {"activations", activations}})});
    drafts.push_back(
        {"loss", "loss (cross-entropy forward)",
         common({{"gradients", G_acc + early_head_grads}, {"activations", activations}, {"loss_buffers", loss_fwd}})});
    drafts.push_back(
        {"backward_start", "start of backward (loss backward)",
         common({{"gradients", G_acc + early_head_grads}, {"activations", activations}, {"loss_buffers", loss_bwd}})});
    // Backward sweep from the top layer down: layer i's saved tensors are
    // freed and its gradients appear; one layer's backward temporaries (and,
    // with checkpointing, its recomputed activations) are live meanwhile.
    {
      const int64_t trans_layer = to_bytes(layer_backward_transient(req, st, dt) * N) + sz.qlora_dequant;
      int64_t best = -1;
      std::map<std::string, int64_t> best_parts;
      int64_t a_rem = act_layers + act_vision;
      int64_t g_now = accum ? sz.grads : sz.grads_head;
      const int64_t dx = static_cast<int64_t>(dt.residual) * N * h;
      for (int64_t i = L - 1; i >= plan.first_grad_layer; --i) {
        const bool moe = i >= L - st.moe_layers;  // MoE layers on top
        const int64_t layer_saved = moe ? act_layer_moe : act_layer_dense;
        const int64_t recompute = t.checkpointing == Checkpointing::kFull ? act_one_layer : 0;
        const int64_t live =
            resident(a_rem - act_vision) + act_vision + g_now + trans_layer + recompute + dx + 2 * cp_kv;
        if (live > best) {
          best = live;
          best_parts = common({{"gradients", g_now},
                               {"activations", resident(a_rem - act_vision) + act_vision},
                               {"layer_backward", trans_layer + recompute + dx}});
          if (cp_kv > 0) best_parts["cp_kv_exchange"] += 2 * cp_kv;  // dK, dV buffers
        }
        a_rem -= layer_saved;
        if (!accum) g_now += sz.grads_layer;
      }
      // Embedding gradient at the end (dense V x h grad; tied weights add it
      // into lm_head's grad through a temporary of the same size).
      const int64_t g_end = sz.grads;
      const int64_t tied_tmp = m.tie_word_embeddings && sz.grads_embed > 0 ? sz.grads_embed : 0;
      const int64_t end_live = act_vision + g_end + tied_tmp;
      if (end_live > best) {
        best = end_live;
        best_parts = common({{"gradients", g_end}, {"activations", act_vision}, {"layer_backward", tied_tmp}});
      }
      if (best >= 0) drafts.push_back({"backward", "during backward (peak of the layer sweep)", best_parts});
    }
    {
      std::map<std::string, int64_t> p = {{"weights", W},
                                          {"optimizer_states", S},
                                          {"gradients", t.optimizer_in_backward ? 0 : sz.grads},
                                          {"optimizer_temporaries", sz.opt_temp},
                                          {"cublas_workspace", cublas}};
      if (grad_partitions > 0) p["grad_partitions"] = grad_partitions;
      if (comm > 0) p["comm_buffers"] = comm;
      drafts.push_back({"optimizer_step", "optimizer step", p});
    }

    // ---- assemble ----------------------------------------------------------
    int64_t max_alloc = 0;
    for (const auto& d : drafts) {
      Phase ph;
      ph.key = d.key;
      ph.label = d.label;
      ph.parts = d.parts;
      ph.parts["misc"] = req.overheads.misc_bytes;
      int64_t alloc = 0;
      for (const auto& [k, v] : ph.parts) alloc += v;
      if (paged) alloc -= S_out;
      ph.allocated_bytes = alloc;
      ph.reserved_bytes = alloc + to_bytes(frag * static_cast<double>(alloc));
      ph.parts["allocator"] = ph.reserved_bytes - alloc;
      ph.parts["cuda_context"] = context;
      if (nccl > 0) ph.parts["nccl"] = nccl;
      ph.device_bytes = ph.reserved_bytes + context + S_out + nccl;
      if (ph.device_bytes > e.peak_bytes) {
        e.peak_bytes = ph.device_bytes;
        e.peak_phase = ph.key;
      }
      max_alloc = std::max(max_alloc, alloc);
      e.peak_reserved_bytes = std::max(e.peak_reserved_bytes, ph.reserved_bytes);
      e.phases.push_back(ph);
    }
    e.peak_allocated_bytes = max_alloc;

    // ---- components (largest size over the step) ---------------------------
    auto peak_of = [&](const std::string& key) {
      int64_t mx = 0;
      for (const auto& ph : e.phases) {
        auto it = ph.parts.find(key);
        if (it != ph.parts.end()) mx = std::max(mx, it->second);
      }
      return mx;
    };
    // " / 8 ranks" (" / 8, routed experts / 2"): how a sharded term was divided.
    const std::string shard_note =
        " / " + std::to_string(n) +
        (has_experts && sh.expert_group != n ? ", routed experts / " + std::to_string(sh.expert_group) : "") + " (" +
        sh.label + ")";
    const int64_t P = m.params_total();
    std::string w_formula = fmt_int(P) + " params";
    if (sz.weights_quantized > 0) {
      w_formula += ": 4-bit linears " + fmt_int(sz.weights_quantized) + " B (NF4" +
                   (t.quant.double_quant ? " + double-quantised absmax" : " + fp32 absmax") + "), the rest " +
                   fmt_int(sz.weights) + " B";
    } else {
      w_formula += " x " + std::to_string(dt.weight) + " B";
    }
    if (sz.lora_weights > 0)
      w_formula += "; LoRA adapters " + fmt_int(plan.lora_params) + " params, " + fmt_int(sz.lora_weights) + " B here";
    if (par.offload_params) {
      w_formula += "; offloaded to CPU (offload_params): only gathered layers on the GPU";
    } else if (sh.weights) {
      w_formula += shard_note + (sh.deepspeed && sz.weights_persistent > 0
                                     ? ", tensors under " + fmt_int(par.stage3_param_persistence_threshold) +
                                           " elements kept whole (stage3_param_persistence_threshold)"
                                     : "");
    }
    e.components.push_back({"weights", "Weights", W, w_formula, Pool::kAllocated});
    if (sz.autocast_cache > 0) {
      e.components.push_back({"autocast_weight_cache", "Autocast bf16 weight copies", sz.autocast_cache,
                              "linear weights x 2 B, cached during forward/backward (autocast_mode.cpp cached_cast)",
                              Pool::kAllocated});
    }
    if (sz.master > 0) {
      e.components.push_back({"master_weights", "fp32 master weights", sz.master,
                              fmt_int(plan.base_trainable) + " trainable x 4 B" + (sh.states ? shard_note : ""),
                              Pool::kAllocated});
    }
    const int64_t grad_elem = sh.megatron && par.main_grads_fp32 && dt.grad < 4 ? 4 : dt.grad;
    e.components.push_back(
        {"gradients", "Gradients", sz.grads,
         fmt_int(e.params_trainable) + " trainable params" +
             (plan.base_trainable > 0 ? " x " + std::to_string(grad_elem) + " B" : " x adapter dtype") +
             (grad_elem != dt.grad ? " (Megatron fp32 main grads)" : "") + (sh.grads ? shard_note : ""),
         Pool::kAllocated});
    e.components.push_back({"optimizer_states", std::string("Optimizer states (") + opt.label + ")", sz.states,
                            std::to_string(opt.states) + " state(s) per trainable param" +
                                (offloaded   ? ", offloaded to CPU (offload_optimizer)"
                                 : sh.states ? shard_note
                                             : "") +
                                "; " + opt.source,
                            paged ? Pool::kOutside : Pool::kAllocated});
    e.components.push_back({"optimizer_temporaries", "Optimizer step temporaries", sz.opt_temp,
                            opt.kernel == StepKernel::kForeach ? "foreach: one state-sized temporary per param group"
                            : opt.kernel == StepKernel::kFused ? "fused kernel: none"
                                                               : "per-tensor loop: the largest tensor",
                            Pool::kAllocated});
    e.components.push_back({"activations", "Saved activations", peak_of("activations"), act_formula, Pool::kAllocated});
    e.components.push_back({"layer_backward", "Backward temporaries (one layer)", peak_of("layer_backward"),
                            "hidden-state grads, attention backward workspace" +
                                std::string(t.checkpointing == Checkpointing::kFull ? ", one recomputed layer" : ""),
                            Pool::kAllocated});
    e.components.push_back(
        {"loss_buffers", "Logits and loss buffers", peak_of("loss_buffers"), loss_formula, Pool::kAllocated});
    e.components.push_back({"cublas_workspace", "cuBLAS/cuBLASLt workspaces", cublas,
                            "2 handles x (cuBLAS + 1 MiB cuBLASLt) (CublasHandlePool.cpp)", Pool::kAllocated});
    if (req.overheads.misc_bytes > 0) {
      e.components.push_back(
          {"misc", "User cushion", req.overheads.misc_bytes, "overheads.misc_bytes", Pool::kAllocated});
    }
    e.components.push_back({"allocator", "Allocator fragmentation", peak_of("allocator"),
                            "fragmentation " + std::to_string(frag).substr(0, 4) + " x allocated", Pool::kOutside});
    if (gathered > 0) {
      e.components.push_back({"gathered_params", "Gathered parameters (current + prefetched layer)", gathered,
                              gathered_formula + " (" + sh.label + ")", Pool::kAllocated});
    }
    if (grad_partitions > 0) {
      e.components.push_back(
          {"grad_partitions", "fp32 gradient partitions", grad_partitions,
           fmt_int(trainable_local) + " trainable x 4 B / " + std::to_string(n) +
               (sh.expert_group != n && has_experts ? " (routed experts / " + std::to_string(sh.expert_group) + ")"
                                                    : "") +
               (sh.megatron ? " (Megatron fp32 main-grad shard)" : " (DeepSpeed)"),
           Pool::kAllocated});
    }
    if (cp_kv > 0) {
      e.components.push_back({"cp_kv_exchange", "Context-parallel KV exchange", peak_of("cp_kv_exchange"),
                              "2 K/V receive buffers of the local chunk (" + fmt_int(N) +
                                  " tokens) in forward; + 2 dK/dV buffers in backward (ring attention)",
                              Pool::kAllocated});
    }
    if (dispatch > 0) {
      e.components.push_back({"moe_dispatch", "Expert-parallel token dispatch", dispatch,
                              "2 x N " + fmt_int(N) + " x top-k " + std::to_string(st.experts_per_token) + " x h " +
                                  fmt_int(h) + " (all-to-all send + receive, balanced routing)",
                              Pool::kAllocated});
    }
    if (comm > 0) {
      e.components.push_back({"comm_buffers", "Communication buckets", comm, comm_formula, Pool::kAllocated});
    }
    if (nccl > 0) {
      e.components.push_back({"nccl", "NCCL buffers", nccl, nccl_mem.formula, Pool::kOutside});
    }
    e.components.push_back({"cuda_context", "CUDA context", context,
                            req.overheads.cuda_context_bytes ? "overheads.cuda_context_bytes"
                                                             : "512 MiB lazy-loading prior (research §2.1)",
                            Pool::kOutside});

    // ---- assumptions and warnings -----------------------------------------
    e.assumptions.push_back(
        std::string("precision ") + to_string(req.train.method == Method::kQlora ? Precision::kBf16 : t.precision) +
        (t.precision_given ? "" : " (default: transformers v5 loads the checkpoint dtype, dtype=\"auto\")"));
    e.assumptions.push_back(std::string("optimizer ") + opt.name +
                            (t.optimizer_given ? "" : " (default: HF Trainer optim in current transformers)"));
    e.assumptions.push_back(std::string("attention ") + to_string(t.attention) +
                            (t.attention_given ? "" : " (default: transformers attn_implementation)"));
    e.assumptions.push_back("steady-state step (step >= 2): optimizer states exist during forward and backward");
    if (!plan.lora_targets.empty()) {
      std::string tg;
      for (const auto& x : plan.lora_targets) tg += (tg.empty() ? "" : ", ") + x;
      e.assumptions.push_back("LoRA targets: " + tg + " (rank " + std::to_string(t.lora.rank) + ")");
    }
    if (m.stack("vision") != nullptr) {
      e.assumptions.push_back("train.seq_len counts the image tokens the language model sees");
    }
    if (t.activation_offload) {
      e.assumptions.push_back("saved activations offloaded to host memory; two layers resident on the GPU");
    }
    if (!st.causal) e.assumptions.push_back("encoder model: classification head, no vocabulary-sized loss");
    if (paged) {
      e.warnings.push_back(
          "paged optimizer: states live in CUDA managed memory and are evicted to host RAM under "
          "pressure; counted as GPU-resident here");
    }
    if (t.attention == AttentionImpl::kEager && s >= 4096) {
      e.warnings.push_back("eager attention keeps a s^2 score matrix per layer; sdpa or flash_attention_2 avoids it");
    }
    if (!m.exact) {
      for (const auto& r : m.inexact) e.warnings.push_back("approximate model: " + r);
    }
    if (t.method == Method::kQlora && t.optimizer_given == false) {
      e.assumptions.push_back("QLoRA base weights NF4, compute dtype bf16");
    }
    return e;
  } catch (const Failure& f) {
    return f.error();
  }
}

Result<Estimate> estimate_train(const Request& req) {
  const ParallelOptions& p = req.parallel;
  if (p.tp == 1 && p.pp == 1 && p.cp == 1 && p.dp == 1 && p.ep == 1) {
    return estimate_rank(req, req, whole_model(req));
  }
  // Every pipeline rank is estimated; the busiest decides the per-GPU answer.
  Result<Estimate> best = Error{errc::kInternal, "no pipeline stage", "parallel.pp"};
  std::vector<StageSummary> summaries;
  int64_t params_per_gpu = 0;
  for (const Stage& stage : pipeline_stages(req)) {
    const Request rank = rank_request(req, stage);
    auto r = estimate_rank(rank, req, stage);
    if (!r.ok()) return r;
    summaries.push_back({stage.index, stage.layers, stage.moe_layers, rank.model.params_total(), stage.in_flight(),
                         stage.first, stage.last, r.value().peak_bytes});
    if (!best.ok() || r.value().peak_bytes > best.value().peak_bytes) {
      best = r;
      params_per_gpu = rank.model.params_total();
    }
  }
  Estimate& e = best.value();
  // Trainable parameters of the whole model, not of one rank.
  const TrainablePlan plan = plan_trainable(req);
  e.params_trainable = plan.base_trainable + plan.lora_params;
  const Sharding sh = sharding_for(p);
  for (const auto& [k, v] : std::initializer_list<std::pair<const char*, int64_t>>{{"gpus", p.gpus},
                                                                                   {"dp", p.dp},
                                                                                   {"tp", p.tp},
                                                                                   {"pp", p.pp},
                                                                                   {"cp", p.cp},
                                                                                   {"ep", p.ep},
                                                                                   {"vp", p.vp},
                                                                                   {"nodes", p.nodes},
                                                                                   {"gpus_per_node", p.gpus_per_node},
                                                                                   {"shard_group", sh.group}}) {
    e.facts.emplace_back(k, v);
  }
  const LayerStack& t = req.model.text;
  e.facts.emplace_back("params_per_gpu", params_per_gpu);  // on the busiest rank, after tp / pp / ep
  if (t.experts > 0) e.facts.emplace_back("experts_per_rank", t.experts / p.ep);
  for (const auto& c : e.components) {
    if (c.key == "nccl") e.facts.emplace_back("nccl_bytes", c.bytes);
  }
  if (p.pp > 1) {
    const auto busiest = std::max_element(summaries.begin(), summaries.end(),
                                          [](const auto& a, const auto& b) { return a.peak_bytes < b.peak_bytes; });
    e.facts.emplace_back("busiest_stage", busiest->stage);
    e.facts.emplace_back("first_stage_peak_bytes", summaries.front().peak_bytes);
    e.facts.emplace_back("last_stage_peak_bytes", summaries.back().peak_bytes);
    e.stages = std::move(summaries);
  }
  e.engine = sh.label.empty() ? "model parallel" : sh.label;
  e.assumptions.push_back(
      "layout: " + e.engine + ", dp " + std::to_string(p.dp) + " x tp " + std::to_string(p.tp) + " x pp " +
      std::to_string(p.pp) + " x cp " + std::to_string(p.cp) + (p.ep > 1 ? ", ep " + std::to_string(p.ep) : "") +
      (p.vp > 1 ? ", " + std::to_string(p.vp) + " virtual stages per rank (interleaved 1F1B)" : "") +
      (p.pp > 1 ? "; every pipeline rank is estimated and the busiest is reported" : ""));
  if (p.pp > 1 && t.layers % p.pp != 0) {
    e.assumptions.push_back("layers split " + std::to_string(t.layers / p.pp + 1) + "/" +
                            std::to_string(t.layers / p.pp) +
                            " over the stages, the extra layers on the first ones (Megatron needs an even split "
                            "or --decoder-first/last-pipeline-num-layers)");
  }
  if (p.ep > 1) e.assumptions.push_back("expert parallel: balanced routing (each rank processes N x top-k tokens)");
  if (sh.deepspeed && p.zero < 3) {
    // stage_1_and_2.py step(): all_gather_dp_groups gathers the updated bf16
    // partitions into the flat bf16 groups in allgather_bucket_size chunks.
    e.assumptions.push_back("ZeRO-" + std::to_string(p.zero) +
                            " all-gathers the updated weights in place into the flat bf16 buffer: "
                            "allgather_bucket_size adds no buffer");
  }
  // NCCL_RUNTIME_CONNECT=1 (nccl init.cc): buffers appear at a communicator's
  // first collective, not at init.
  e.assumptions.push_back(
      "NCCL buffers counted in every phase (steady state); they appear at each communicator's first collective: "
      "forward for tensor/context parallel and ZeRO-3/FSDP gathers, the first gradient reduction for data parallel");
  return best;
}

}  // namespace vram::train

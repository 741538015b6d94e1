// The training step's time (speed.h train_time): per micro-step, the busiest
// pipeline rank's matmuls, attention and memory-bound kernels, or the host's
// dispatch time when that is longer; then per optimizer step the gradient
// synchronisation, the optimizer, CPU offload and the pipeline bubble.
#include <algorithm>
#include <cmath>

#include "memory/recipe.h"
#include "memory/sharding.h"
#include "speed/links.h"
#include "speed/speed.h"
#include "speed/work.h"
#include "train/layout.h"
#include "vram/duration_text.h"
#include "vram/optimizers.h"

namespace vram::speed {

namespace {

using memory::Sharding;

// The data-parallel synchronisation of one optimizer step: gradients reduced
// (and parameters gathered back when the optimizer is sharded), or under
// ZeRO-3 / FSDP full_shard the parameters gathered for every forward and
// backward and the gradients reduce-scattered every micro-step (ZeRO paper
// §7: 1.5x DDP's volume). Overlapped with compute as the frameworks do (DDP
// buckets and ZeRO's overlap_comm during backward, FSDP's prefetch during
// both passes): the slow end assumes none of it hides, the fast end all of
// what compute can cover (a framework's overlap is not something the model
// can know).
Term data_parallel_sync(const Request& req, const Machine& m, const StageWork& w, const Range& compute_step,
                        const Range& backward_step) {
  const ParallelOptions& p = req.parallel;
  const Sharding sh = memory::sharding_for(p);
  const int64_t ranks = p.dp * p.cp;
  Term t{"data_parallel", "Data-parallel gradient synchronisation", {}, ""};
  if (ranks <= 1 || w.trainable_params <= 0) return t;
  const int64_t per_node = std::min(p.gpus_per_node, ranks);
  const double grads = w.trainable_params * w.grad_bytes;
  const double m_steps = static_cast<double>(req.train.grad_accum);
  Range comm;
  std::string formula;
  if (sh.weights) {
    // Gather the 16-bit parameters for forward and again for backward,
    // reduce-scatter the gradients, every micro-step.
    const int64_t group = sh.group;
    const int64_t local = std::min(per_node, group);
    const double params = w.linear_params * w.weight_bytes;
    comm = (collective_seconds(m, Collective::kAllGather, params, group, local) * 2 +
            collective_seconds(m, Collective::kReduceScatter, grads, group, local)) *
           m_steps;
    if (group < ranks) comm += collective_seconds(m, Collective::kAllReduce, grads / group, ranks / group, 1);
    formula = fmt(m_steps) + " micro-steps x (2 x " +
              collective_formula(m, Collective::kAllGather, params, group, local) + " + " +
              collective_formula(m, Collective::kReduceScatter, grads, group, local) + ")";
    t.seconds = {std::max(0.0, comm.low - compute_step.low), comm.high};
  } else {
    // Reduce once per optimizer step (DDP's no_sync and DeepSpeed's
    // accumulation boundary); ZeRO-2 reduce-scatters every micro-step.
    const double times = (sh.grads && sh.deepspeed) ? m_steps : 1.0;
    comm = collective_seconds(m, Collective::kAllReduce, grads, ranks, per_node) * times;
    formula = (times > 1 ? fmt(times) + " x " : std::string()) +
              collective_formula(m, Collective::kAllReduce, grads, ranks, per_node) +
              (sh.states ? " (reduce-scatter of the gradients + all-gather of the parameters: the same volume)" : "");
    t.seconds = {std::max(0.0, comm.low - backward_step.low), comm.high};
  }
  t.formula = formula + "; hidden behind compute at the fast end, exposed at the slow end";
  return t;
}

// A collective of `calls` calls and `bytes` in all over `ranks` GPUs, run in
// every micro-step of the optimizer step and not overlapped with compute.
void per_micro_step(Term& t, const Request& req, const Machine& m, Collective c, double bytes, int64_t ranks,
                    int64_t calls) {
  const int64_t per_node = std::min(req.parallel.gpus_per_node, ranks);
  const double steps = static_cast<double>(req.train.grad_accum);
  t.seconds = collective_seconds(m, c, bytes, ranks, per_node, calls) * steps;
  t.formula = fmt(steps) + " micro-steps x " + collective_formula(m, c, bytes, ranks, per_node, calls);
}

// Tensor parallel: two all-reduces of the layer's activations in forward and
// two in backward (Megatron-LM §3; sequence parallel swaps each for a
// reduce-scatter + all-gather of the same volume, Korthikanti et al. 2022
// §4.2.2), plus the forward again under full recomputation; not overlapped.
Term tensor_parallel(const Request& req, const Machine& m, const StageWork& w) {
  Term t{"tensor_parallel", "Tensor-parallel activations", {}, ""};
  const int64_t tp = req.parallel.tp;
  if (tp <= 1) return t;
  const double per_call = w.tokens * static_cast<double>(req.model.text.hidden) * w.act_bytes;
  const int64_t calls = static_cast<int64_t>(w.layers * (4 + (w.full_recompute ? 2 : 0)));
  per_micro_step(t, req, m, Collective::kAllReduce, per_call * calls, tp, calls);
  return t;
}

// Expert parallel: each MoE layer sends every token's hidden state to its k
// experts and back, in forward and in backward (Megatron-core all-to-all
// token dispatcher): 4 all-to-alls per MoE layer; not overlapped.
Term expert_parallel(const Request& req, const Machine& m, const StageWork& w) {
  Term t{"expert_parallel", "Expert-parallel token exchange", {}, ""};
  const int64_t ep = req.parallel.ep;
  if (ep <= 1 || w.moe_layers <= 0) return t;
  const double per_call = w.tokens * static_cast<double>(req.model.text.experts_per_token) *
                          static_cast<double>(req.model.text.hidden) * w.act_bytes;
  const int64_t calls = static_cast<int64_t>(w.moe_layers * 4);
  per_micro_step(t, req, m, Collective::kAllToAll, per_call * calls, ep, calls);
  return t;
}

// Context parallel: a ring passes every other rank's keys and values by,
// once in forward and twice in backward (keys/values and their gradients;
// Megatron-core context parallel, Liu et al. 2023 "Ring Attention"),
// overlapped with the attention it feeds: hidden at the fast end.
Term context_parallel(const Request& req, const Machine& m, const StageWork& w, const Range& attention) {
  Term t{"context_parallel", "Context-parallel key/value ring", {}, ""};
  const int64_t cp = req.parallel.cp;
  if (cp <= 1) return t;
  const double kv = w.tokens * static_cast<double>(2 * req.model.text.kv_heads * req.model.text.head_dim) *
                    w.act_bytes * static_cast<double>(w.attention_layers);
  const double bytes = kv * static_cast<double>(cp - 1) * 3;
  const int64_t per_node = std::min(req.parallel.gpus_per_node, cp);
  const Range comm =
      collective_seconds(m, Collective::kSendRecv, bytes, 2, per_node) * static_cast<double>(req.train.grad_accum);
  t.seconds = {std::max(0.0, comm.low - attention.low), comm.high};
  t.formula = fmt(static_cast<double>(req.train.grad_accum)) + " micro-steps x " +
              collective_formula(m, Collective::kSendRecv, bytes, 2, per_node) + ", overlapped with attention";
  return t;
}

// The optimizer step over this rank's share of the trainable parameters:
// every state, master weight and gradient read and the updated ones written
// (a memory-bound pass), plus, for a per-tensor loop, its kernels' dispatch.
Term optimizer_step(const Request& req, const Machine& m, const StageWork& w) {
  Term t{"optimizer", "Optimizer step", {}, ""};
  const OptimizerInfo* opt = find_optimizer(req.train.optimizer);
  if (opt == nullptr || w.trainable_params <= 0 || req.train.optimizer_in_backward) return t;
  const Sharding sh = memory::sharding_for(req.parallel);
  const double share = sh.states ? 1.0 / static_cast<double>(std::max<int64_t>(sh.group, 1)) : 1.0;
  const double params = w.trainable_params * share;
  const double state = opt->state_dtype == StateDtype::kFp32     ? 4.0
                       : opt->state_dtype == StateDtype::kBlock8 ? 1.0
                                                                 : w.state_bytes;
  // Read and write each state and the master (or the parameter itself), read
  // the gradient, write the 16-bit copy when there is a master.
  const double per_param = 2.0 * state * opt->states +
                           (w.master_bytes > 0 ? 2.0 * w.master_bytes + w.weight_bytes : 2.0 * w.weight_bytes) +
                           w.grad_bytes;
  Range secs = bandwidth_time(params * per_param, m.memory_gbs);
  std::string formula = fmt(params / 1e6) + " M parameters x " + fmt(per_param) + " B (states, master, gradient) / " +
                        fmt(m.memory_gbs) + " GB/s x " + bandwidth_share_text();
  if (opt->kernel == StepKernel::kForLoop) {
    // torch.optim's single-tensor path: about 12 kernels per parameter
    // tensor (torch/optim/adamw.py _single_tensor_adamw: lerp_, mul_,
    // addcmul_, sqrt, div, add_, addcdiv_ and the step-count ops).
    const double kernels = w.trainable_tensors * share * 12;
    secs += host_time(kernels);
    formula += " + " + fmt(kernels) + " kernels dispatched one parameter at a time";
  }
  t.seconds = secs;
  t.formula = formula;
  return t;
}

// CPU offload (ZeRO-Offload, FSDP CPUOffload): the gradients go to the host
// and the updated 16-bit parameters come back over PCIe each optimizer step,
// the optimizer runs on the CPU over its fp32 states at the host's memory
// bandwidth (shared by the node's GPUs); offloaded parameters also cross
// PCIe for every forward and backward. The slow end adds them up; the fast
// end hides what DeepSpeed overlaps (the transfers behind the CPU step).
Term offload(const Request& req, const Machine& m, const StageWork& w, const Range& compute_step) {
  Term t{"offload", "CPU offload", {}, ""};
  const ParallelOptions& p = req.parallel;
  if (!p.offload_optimizer && !p.offload_params) return t;
  const Sharding sh = memory::sharding_for(p);
  const double share = 1.0 / static_cast<double>(std::max<int64_t>(sh.group, 1));
  const Range host_gbs = pcie_host_gbs(m);
  const double local = static_cast<double>(std::min(p.gpus_per_node, p.gpus));
  if (p.offload_optimizer) {
    const double params = w.trainable_params * share;
    const double transfer = params * (w.grad_bytes + w.weight_bytes);
    const Range pcie{transfer / (host_gbs.high * 1e9), transfer / (host_gbs.low * 1e9)};
    // Adam on the CPU: fp32 master, two states and the gradient read, three
    // written (DeepSpeed cpu_adam), at 1 / local of the host's bandwidth.
    const Range cpu = bandwidth_time(params * 28.0 * local, m.host_memory_gbs);
    t.seconds = {std::max(pcie.low, cpu.low), pcie.high + cpu.high};
    t.formula = fmt(params / 1e6) + " M parameters: gradients down and parameters up over PCIe (" + fmt(host_gbs.low) +
                "-" + fmt(host_gbs.high) + " GB/s) + the optimizer on the CPU (28 B a parameter at " +
                fmt(m.host_memory_gbs) + " GB/s shared by " + fmt(local) + " GPUs)";
  }
  if (p.offload_params) {
    const double bytes = w.linear_params * w.weight_bytes * 2 * static_cast<double>(req.train.grad_accum);
    const Range pcie{bytes / (host_gbs.high * 1e9), bytes / (host_gbs.low * 1e9)};
    t.seconds += {std::max(0.0, pcie.low - compute_step.low), pcie.high};
    t.formula += std::string(t.formula.empty() ? "" : "; ") + "parameters over PCIe for every forward and backward (" +
                 fmt(bytes / 1e9) + " GB a step), prefetched behind compute at the fast end";
  }
  return t;
}

// The busiest pipeline rank on this card, and its micro-step.
const StageWork& busiest(const TrainWork& tw, const Machine& m, Range* micro) {
  const StageWork* best = &tw.stages.front();
  Range best_t;
  for (const StageWork& w : tw.stages) {
    const Range t = micro_step(w, m);
    if (t.mid() > best_t.mid()) {
      best = &w;
      best_t = t;
    }
  }
  *micro = best_t;
  return *best;
}

}  // namespace

TrainWork train_work(const Request& req) {
  TrainWork tw;
  const std::vector<train::Stage> stages =
      req.parallel.pp > 1 ? train::pipeline_stages(req) : std::vector<train::Stage>{train::whole_model(req)};
  for (const train::Stage& s : stages) tw.stages.push_back(stage_work(req, s));
  // The model's FLOPs per token: the whole model on one rank.
  Request whole = req;
  whole.parallel.tp = whole.parallel.pp = whole.parallel.cp = whole.parallel.ep = whole.parallel.vp = 1;
  whole.parallel.sequence_parallel = false;
  tw.model_flops_per_token = stage_work(whole, train::whole_model(whole)).model_flops_per_token;
  return tw;
}

TrainTime train_time(const Request& req, const Machine& m) { return train_time(req, train_work(req), m); }

TrainTime train_time(const Request& req, const TrainWork& tw, const Machine& m) {
  TrainTime out;
  const ParallelOptions& p = req.parallel;
  out.gpus = p.gpus;
  Range micro;
  const StageWork& w = busiest(tw, m, &micro);
  const double steps = static_cast<double>(req.train.grad_accum);
  std::vector<Term> terms = micro_terms(w, m, steps);
  const Range compute = micro * steps;
  const Range backward = micro * (w.backward_share * steps);
  // 1F1B: the first micro-batch's forward reaches the last stage after pp - 1
  // stages, the last backward returns as late: (pp - 1) / vp micro-steps of
  // idle time (Narayanan et al. 2021 §2.2).
  if (p.pp > 1) {
    const double bubble = static_cast<double>(p.pp - 1) / static_cast<double>(p.vp);
    terms.push_back({"pipeline_bubble", "Pipeline bubble", micro * bubble,
                     "(pp - 1) / vp = " + fmt(bubble) + " micro-steps of " + format_seconds(micro.low, micro.high) +
                         " (1F1B; Narayanan et al. 2021 §2.2)"});
    const double act = w.tokens * static_cast<double>(req.model.text.hidden) * w.act_bytes;
    const Range sends = collective_seconds(m, Collective::kSendRecv, act * 2 * steps, 2,
                                           std::min<int64_t>(p.gpus_per_node, 2), static_cast<int64_t>(2 * steps));
    terms.push_back(
        {"pipeline_p2p",
         "Pipeline send/recv",
         {0, sends.high},
         collective_formula(m, Collective::kSendRecv, act * 2 * steps, 2, 2, static_cast<int64_t>(2 * steps)) +
             ": overlapped with the next micro-batch at the fast end"});
  }
  terms.push_back(tensor_parallel(req, m, w));
  terms.push_back(expert_parallel(req, m, w));
  terms.push_back(context_parallel(req, m, w, w.attention_time(m) * steps));
  terms.push_back(data_parallel_sync(req, m, w, compute, backward));
  terms.push_back(optimizer_step(req, m, w));
  terms.push_back(offload(req, m, w, compute));
  for (Term& t : terms) {
    if (t.seconds.high > 0) {
      out.step_seconds += t.seconds;
      out.terms.push_back(std::move(t));
    }
  }
  out.tokens_per_step = req.train.micro_batch * req.train.seq_len * req.train.grad_accum * p.dp;
  const double per_gpu = static_cast<double>(out.tokens_per_step) / static_cast<double>(p.gpus);
  out.tokens_per_second_per_gpu = {per_gpu / out.step_seconds.high, per_gpu / out.step_seconds.low};
  out.model_flops_per_token = tw.model_flops_per_token;
  // MFU: the model's FLOPs (forward and backward, no recomputation) per GPU
  // over the datasheet peak (Chowdhery et al. 2022, PaLM, appendix B).
  const double rate = m.peak_tflops * 1e12;
  out.mfu = {tw.model_flops_per_token * out.tokens_per_second_per_gpu.low / rate,
             tw.model_flops_per_token * out.tokens_per_second_per_gpu.high / rate};
  out.assumptions = w.assumptions;
  return out;
}

StepCost step_cost(const Request& req, const Machine& m) {
  const TrainTime t = train_time(req, m);
  StepCost c{t.step_seconds, t.tokens_per_second_per_gpu, {}};
  if (m.usd_per_hour > 0 && t.tokens_per_second_per_gpu.low > 0) {
    // GPU-hours per million tokens x the price: 1e6 / (tokens/s per GPU x 3600).
    c.usd_per_million_tokens = {1e6 * m.usd_per_hour / (3600 * t.tokens_per_second_per_gpu.high),
                                1e6 * m.usd_per_hour / (3600 * t.tokens_per_second_per_gpu.low)};
  }
  return c;
}

}  // namespace vram::speed

// The layout planner (vram/plan.h): enumerate, estimate, rank.
#include "vram/plan.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "fit.h"
#include "format.h"
#include "speed/speed.h"
#include "train/estimate_train.h"
#include "vram/optimizers.h"
#include "vram/releases.h"

namespace vram {

namespace {

struct Sharding {
  int64_t zero = 0;
  std::string fsdp;
  bool distributed_optimizer = false;
  int level = 0;  // 0 replicated, 1 states, 2 + grads, 3 + params
};

std::vector<Sharding> shardings(const std::string& framework) {
  if (framework == "fsdp") {
    return {{0, "no_shard", false, 0},
            {0, "shard_grad_op", false, 2},
            {0, "hybrid_shard", false, 3},
            {0, "full_shard", false, 3}};
  }
  if (framework == "megatron") return {{0, "", false, 0}, {0, "", true, 1}};
  return {{0, "", false, 0}, {1, "", false, 1}, {2, "", false, 2}, {3, "", false, 3}};
}

std::string label_of(const ParallelOptions& p, Checkpointing ck) {
  std::string dims;
  auto add = [&](const char* name, int64_t v) {
    if (v > 1) dims += (dims.empty() ? "" : " x ") + std::string(name) + " " + std::to_string(v);
  };
  add("tp", p.tp);
  add("pp", p.pp);
  add("cp", p.cp);
  add("ep", p.ep);
  if (p.dp > 1 || dims.empty()) dims += (dims.empty() ? "" : " x ") + std::string("dp ") + std::to_string(p.dp);
  std::string s = dims + ", ";
  if (!p.fsdp.empty()) {
    s += (p.fsdp_version == 2 ? "FSDP2 " : "FSDP ") + p.fsdp;
  } else if (p.zero > 0) {
    s += "ZeRO-" + std::to_string(p.zero);
  } else if (p.distributed_optimizer) {
    s += "Megatron distributed optimizer";
  } else {
    s += p.dp > 1 ? "DDP" : "no data parallel";
  }
  if (p.sequence_parallel) s += ", sequence parallel";
  if (p.offload_optimizer) s += p.offload_params ? ", CPU offload (optimizer + params)" : ", CPU offload (optimizer)";
  if (ck == Checkpointing::kFull) s += ", activation checkpointing";
  return s;
}

std::vector<int64_t> powers_of_two_up_to(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t x = 1; x <= n; x *= 2) out.push_back(x);
  return out;
}

// Gradient accumulation that fills the global batch on `dp` data-parallel
// ranks: the global batch is held fixed across layouts (issue 18: "tp 8, no
// data parallel" trained 8x fewer samples per step than dp 8 and ranked
// first), so a layout with less data parallel accumulates more (Megatron-LM
// computes num_micro_batches = global_batch_size / (micro_batch_size x
// data_parallel_size) the same way, megatron/core/num_microbatches_calculator.py).
int64_t accumulation_for(int64_t global_batch, int64_t micro_batch, int64_t dp) {
  const int64_t per_step = micro_batch * dp;
  return std::max<int64_t>(1, (global_batch + per_step - 1) / per_step);
}

// A layout as the request of that layout gets it (parse_request:
// with_framework_defaults): the layout-dependent release rules, in their
// order, each where the request itself left the field out: the FSDP version
// (the Trainer's FSDP2 default), then FSDP1's sync_module_states and LoRA
// wrap policy.
ParallelOptions layout_with_rules(const Request& base, ParallelOptions p) {
  if (!base.parallel.fsdp_version_given) {
    const json layout = {{"parallel", {{"fsdp", p.fsdp}}}};
    const std::optional<json> version = rule_value(base.framework_job, layout, "parallel.fsdp_version");
    p.fsdp_version = version.has_value() ? version->get<int64_t>() : defaults::kFsdpVersion;
  }
  if (!base.parallel.fsdp_sync_module_states_given) {
    const json layout = {{"parallel", {{"fsdp", p.fsdp}, {"fsdp_version", p.fsdp_version}}}};
    const std::optional<json> sync = rule_value(base.framework_job, layout, "parallel.fsdp_sync_module_states");
    p.fsdp_sync_module_states = sync.has_value() && *sync == true;
  }
  if (!base.parallel.fsdp_adapter_units_given) {  // FSDP1's LoRA wrap policy
    const json layout = {{"train", {{"method", to_string(base.train.method)}}},
                         {"parallel", {{"fsdp", p.fsdp}, {"fsdp_version", p.fsdp_version}}}};
    const std::optional<json> units = rule_value(base.framework_job, layout, "parallel.fsdp_adapter_units");
    p.fsdp_adapter_units = units.has_value() ? *units == true : defaults::kFsdpAdapterUnits;
  }
  return p;
}

// The request a candidate layout stands for.
Request candidate_request(const Request& base, const ParallelOptions& p, Checkpointing ck, int64_t global_batch) {
  Request r = base;
  r.parallel = layout_with_rules(base, p);
  r.train.checkpointing = ck;
  r.train.grad_accum = accumulation_for(global_batch, r.train.micro_batch, p.dp);
  return r;
}

// Host RAM per node for what a layout offloads: DeepSpeed's
// estimate_zero3_model_states_mem_needs (deepspeed/runtime/zero/stage3.py):
// 16 bytes per parameter with the optimizer offloaded (fp32 master 4, Adam's
// two fp32 states 8, fp32 gradients 4), 18 with the parameters too (+2 for
// the bf16 copy), divided over the nodes, x additional_buffer_factor 1.5 for
// the pinned buffers. Here the states are the optimizer's own count and the
// optimizer's bytes cover the trainable parameters only (LoRA).
int64_t host_bytes_for(const Request& r, int64_t trainable) {
  const ParallelOptions& p = r.parallel;
  if (!p.offload_optimizer) return 0;
  const OptimizerInfo* opt = find_optimizer(r.train.optimizer);
  const int64_t states = opt != nullptr ? opt->states : 2;
  double bytes = static_cast<double>(trainable) * static_cast<double>(4 + 4 * states + 4);
  if (p.offload_params) bytes += 2.0 * static_cast<double>(r.model.params_total());
  return static_cast<int64_t>(bytes * 1.5 / static_cast<double>(std::max<int64_t>(1, p.nodes)));
}

void set_fit(PlanCandidate& c, const fit::Card& card) {
  const Fit f = fit::fit_for(c.peak_bytes, card.total, card.capacity, card.name);
  // Offload that does not fit in host RAM does not run (issue 18: never
  // recommend it).
  c.fits = f.fits && c.host_fits;
  c.headroom_ok = f.headroom_ok && c.host_fits;
  c.utilization = f.utilization;
  c.fit_ratio = std::max(c.utilization, c.host_ratio);
}

// The costs a candidate carries besides memory, and why.
void explain_costs(PlanCandidate& c, const ParallelOptions& p, Checkpointing ck, int64_t grad_accum) {
  // Full recomputation runs the forward again: training costs 6N FLOPs
  // per token, 2N of them forward (Kaplan et al. 2020 §2.1), so x 8/6.
  if (ck == Checkpointing::kFull) {
    c.step_time_factor *= 4.0 / 3.0;
    c.why.push_back(
        "full recomputation re-runs the forward: about x4/3 compute (6N training FLOPs per token, 2N "
        "forward)");
  }
  // 1F1B bubble: (pp - 1) / (m vp) of the ideal step (Narayanan et al.
  // 2021 §2.2).
  if (p.pp > 1) {
    const double bubble = static_cast<double>(p.pp - 1) / static_cast<double>(grad_accum * p.vp);
    c.step_time_factor *= 1.0 + bubble;
    c.why.push_back("pipeline bubble (pp - 1) / micro-batches = " + std::to_string(bubble).substr(0, 4) +
                    " of the step; raise grad_accum to shrink it");
  }
  const bool sharded_params = p.zero == 3 || p.fsdp == "full_shard" || p.fsdp == "hybrid_shard";
  if (sharded_params && p.dp * p.cp > 1) {
    // ZeRO paper §7.2: P_os+g moves what DDP moves, P_os+g+p 1.5x.
    c.comm_factor = 1.5;
    c.why.push_back("parameter sharding moves 1.5x DDP's data-parallel traffic (ZeRO paper §7.2)");
  }
  if (p.tp > 1) {
    c.why.push_back(
        "tensor parallel all-reduces activations twice per layer in forward and twice in backward "
        "(Megatron-LM §3): keep it inside a node");
  }
  if (p.offload_optimizer) {
    c.why.push_back("CPU offload runs the optimizer step on the CPU and moves state over PCIe every step");
  }
}

// The candidate's step on the plan's card (the time model, speed.h), and
// the cost of a million tokens at the card's price.
void time_candidate(PlanCandidate& c, const Request& r, const std::optional<speed::Machine>& m) {
  if (!m) return;
  const speed::StepCost t = speed::step_cost(r, *m);
  c.step_seconds_low = t.step_seconds.low;
  c.step_seconds_high = t.step_seconds.high;
  c.tokens_per_second_per_gpu_low = t.tokens_per_second_per_gpu.low;
  c.tokens_per_second_per_gpu_high = t.tokens_per_second_per_gpu.high;
  c.usd_per_million_tokens_low = t.usd_per_million_tokens.low;
  c.usd_per_million_tokens_high = t.usd_per_million_tokens.high;
}

// One layout, estimated. Ranked on the live tensors (a lower bound of the
// reserved view); a layout that fits on that bound is estimated with the
// allocator replay, and so is every layout shown (finish()).
// `memos` gets the smaller jobs its replay ran (finish() hands them to the
// layout's micro-batch search).
std::optional<PlanCandidate> evaluate(const Request& base, const ParallelOptions& p, Checkpointing ck,
                                      const fit::Card& card, int64_t global_batch, int64_t host_ram,
                                      const std::optional<speed::Machine>& machine, train::RankMemos& memos) {
  const Request r = candidate_request(base, p, ck, global_batch);
  const train::RankBases bases(r);  // built once for both estimates
  auto est = train::estimate_train(r, train::ReservedView::kLiveTensors, nullptr, &bases);
  if (!est.ok()) return std::nullopt;
  const bool replay = est.value().peak_bytes <= card.capacity;
  if (replay) est = train::estimate_train(r, train::ReservedView::kReplay, &memos, &bases);
  if (!est.ok()) return std::nullopt;
  PlanCandidate c;
  c.replayed = replay;
  c.layout = r.parallel;  // the layout as its rules leave it (FSDP2 under the Trainer's default)
  c.checkpointing = ck;
  c.label = label_of(c.layout, ck);
  c.peak_bytes = est.value().peak_bytes;
  c.grad_accum = r.train.grad_accum;
  c.global_batch = r.train.micro_batch * p.dp * r.train.grad_accum;
  c.host_bytes = host_bytes_for(r, est.value().params_trainable);
  c.host_fits = c.host_bytes <= host_ram;
  c.host_ratio = host_ram > 0 ? static_cast<double>(c.host_bytes) / static_cast<double>(host_ram) : 0;
  set_fit(c, card);
  explain_costs(c, p, ck, r.train.grad_accum);
  time_candidate(c, r, machine);
  if (c.host_bytes > 0) {
    c.why.push_back("offload needs " + fmt_gib(c.host_bytes) + " of host RAM per node (" + fmt_gib(host_ram) +
                    " available): 16 bytes per trainable parameter for the optimizer" +
                    (p.offload_params ? ", 2 per parameter for the weights" : "") +
                    ", x1.5 pinned buffers (DeepSpeed estimate_zero3_model_states_mem_needs)" +
                    (c.host_fits ? "" : "; it does not fit in host RAM"));
  }
  return c;
}

// What the search varies besides tp and pp.
struct SearchSpace {
  std::vector<Checkpointing> checkpointing;
  std::vector<int64_t> cps;
  std::vector<int64_t> eps;
};

SearchSpace search_space(const Request& req, const PlanOptions& o) {
  SearchSpace s;
  s.checkpointing = {req.train.checkpointing};
  if (o.allow_checkpointing && req.train.checkpointing != Checkpointing::kFull) {
    s.checkpointing.push_back(Checkpointing::kFull);
  }
  // Context parallel is for long sequences (Megatron-core context_parallel
  // docs: sequence lengths of 32K and beyond).
  s.cps = {1};
  if (req.train.seq_len >= 32768) {
    for (int64_t c : {2, 4, 8}) s.cps.push_back(c);
  }
  s.eps = {1};
  if (req.model.text.experts > 1) {
    for (int64_t e : powers_of_two_up_to(req.model.text.experts)) {
      if (e > 1) s.eps.push_back(e);
    }
  }
  return s;
}

// Every layout of the GPU budget the framework runs (with CPU offload when
// `offload`), each with each checkpointing choice.
void for_each_layout(const Request& req, const PlanOptions& o, const SearchSpace& space, bool offload,
                     const std::function<void(const ParallelOptions&, Checkpointing)>& visit) {
  const int64_t n = req.parallel.gpus;
  for (int64_t tp : powers_of_two_up_to(std::min(n, req.parallel.gpus_per_node))) {
    for (int64_t pp : powers_of_two_up_to(std::min<int64_t>(n / tp, req.model.text.layers))) {
      for (int64_t cp : space.cps) {
        if (n % (tp * pp * cp) != 0) continue;
        const int64_t dp = n / (tp * pp * cp);
        for (int64_t ep : space.eps) {
          for (const Sharding& sh : shardings(o.framework)) {
            if (sh.fsdp == "hybrid_shard" && req.parallel.nodes <= 1) continue;  // = full_shard on one node
            if (sh.level > 0 && dp * cp == 1) continue;                          // nothing to shard over
            if (offload && sh.level < 3) continue;  // offload pairs with ZeRO-3 / FULL_SHARD here
            ParallelOptions p = req.parallel;       // keeps buckets, NCCL, nodes
            p.dp = dp;
            p.tp = tp;
            p.pp = pp;
            p.cp = cp;
            p.ep = ep;
            p.vp = 1;
            p.zero = sh.zero;
            p.fsdp = sh.fsdp;
            p.distributed_optimizer = sh.distributed_optimizer;
            p.sequence_parallel = o.framework == "megatron" && tp > 1;
            p.offload_optimizer = offload;
            for (bool params : offload ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
              p.offload_params = params;
              for (Checkpointing ck : space.checkpointing) visit(p, ck);
            }
          }
        }
      }
    }
  }
}

// Two keys, in this order. First whether it fits, and how close: fits with
// the 80% headroom, then fits (host RAM included), then the layouts that do
// not fit, the closest first (fit_ratio: peak / capacity, or host RAM
// needed / available), so a layout at 105% of the card never ranks below one
// at 18x (issue 33). Then, among equals, the preference: the shortest step of
// the time model (the middle of its range; it counts recomputation, the
// bubble, every collective at its link and offload; issue 31), then, and
// alone for a card without speed figures: no offload; least recompute and
// bubble; least tensor parallel (it all-reduces activations every layer,
// Megatron-LM §3; HF "Parallelism methods": DDP or ZeRO when the model fits,
// then ZeRO, PP or TP); least data-parallel traffic; lowest peak. Every
// layout trains the same global batch.
std::tuple<int, double> fit_key(const PlanCandidate& c) {
  if (c.headroom_ok) return {0, 0.0};
  if (c.fits) return {1, 0.0};
  return {2, std::round(c.fit_ratio * 1e6)};
}

std::tuple<double, bool, double, int64_t, double, int64_t> preference_key(const PlanCandidate& c) {
  const double step = std::sqrt(c.step_seconds_low * c.step_seconds_high);
  return {std::round(step * 1e6),
          c.layout.offload_optimizer,
          std::round(c.step_time_factor * 1e6),
          c.layout.tp,
          c.comm_factor,
          c.peak_bytes};
}

void rank(std::vector<PlanCandidate>& all) {
  std::stable_sort(all.begin(), all.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    return std::make_pair(fit_key(a), preference_key(a)) < std::make_pair(fit_key(b), preference_key(b));
  });
}

// The shown candidates: the top ones, each with the allocator replay's peak
// (those that did not fit on the lower bound still do not: their peak only
// grows) and, when it fits, its largest micro-batch.
// `memos`: each candidate's smaller jobs replayed so far, by label (which
// names every field for_each_layout varies): its micro-batch search replays
// the same jobs of the same ranks on the same card (train::RankMemos).
void finish(std::vector<PlanCandidate>& all, const Request& base, const PlanOptions& o, const fit::Card& card,
            int64_t global_batch, std::map<std::string, train::RankMemos>& memos) {
  rank(all);
  if (static_cast<int64_t>(all.size()) > o.top) all.resize(static_cast<size_t>(o.top));
  // Each shown candidate's ranks, built once for its estimate and its search.
  std::map<std::string, std::pair<std::unique_ptr<Request>, std::unique_ptr<train::RankBases>>> built;
  const auto ranks_of = [&](const PlanCandidate& c) -> std::pair<const Request*, const train::RankBases*> {
    auto& [req, bases] = built[c.label];
    if (req == nullptr) {
      req = std::make_unique<Request>(candidate_request(base, c.layout, c.checkpointing, global_batch));
      bases = std::make_unique<train::RankBases>(*req);
    }
    return {req.get(), bases.get()};
  };
  for (PlanCandidate& c : all) {
    if (c.replayed) continue;
    const auto [req, bases] = ranks_of(c);
    if (auto est = train::estimate_train(*req, train::ReservedView::kReplay, &memos[c.label], bases); est.ok()) {
      c.peak_bytes = est.value().peak_bytes;
      set_fit(c, card);
    }
    c.replayed = true;
  }
  rank(all);
  for (PlanCandidate& c : all) {
    if (!c.fits) continue;
    const auto [req, bases] = ranks_of(c);
    c.max_micro_batch = train::max_micro_batch(*req, card.capacity, /*allow_paging=*/false, &memos[c.label], bases);
  }
}

// When nothing fits, what is closest and by how much (issue 33: the
// planner says what is closest): the first candidate, ranked by fit_ratio.
std::string closest_note(const Plan& plan) {
  const PlanCandidate& c = plan.candidates.front();
  const auto percent = [](double r) { return std::to_string(static_cast<int64_t>(std::llround(r * 100))) + "%"; };
  if (c.host_ratio > c.utilization) {
    return "nothing fits; the closest is " + c.label + ": it fits the GPU but needs " + fmt_gib(c.host_bytes) +
           " of host RAM per node, " + percent(c.host_ratio) + " of the " + fmt_gib(plan.host_ram_bytes) + " available";
  }
  return "nothing fits; the closest is " + c.label + " at " + percent(c.utilization) + " of the " + plan.gpu + "'s " +
         fmt_gib(plan.capacity_bytes) + " (peak " + fmt_gib(c.peak_bytes) + ", " +
         fmt_gib(c.peak_bytes - plan.capacity_bytes) + " over)";
}

}  // namespace

Result<Plan> plan_request(const Request& req, const PlanOptions& o) {
  return attempt<Plan>([&]() -> Result<Plan> {
    if (req.task != Task::kTrain) {
      return Error{errc::kUnsupported, "the planner searches training layouts; use task \"train\"", "task"};
    }
    const auto card = fit::chosen_gpu(req);
    if (!card) {
      return Error{errc::kMissingField, "the planner needs the GPU: gpu.name (catalog) or gpu.memory_gib", "gpu"};
    }
    if (auto no = fit::gpu_refusal(req)) return Error{errc::kInconsistent, no->message, no->path};
    Plan plan;
    plan.gpus = req.parallel.gpus;
    plan.gpu = card->name;
    plan.capacity_bytes = card->capacity;

    // DeepSpeed's bf16 mode and Megatron's mixed precision keep fp32 master
    // weights next to bf16 ones whatever the layout (DeepSpeed
    // bf16_optimizer.py, Megatron Float16OptimizerWithFloat16Params), so a
    // pure bf16 request is planned as mixed_bf16 there; FSDP keeps the
    // request's precision (it can run pure bf16).
    Request base = req;
    if (o.framework != "fsdp" && base.train.method != Method::kQlora &&
        (base.train.precision == Precision::kBf16 || base.train.precision == Precision::kFp16)) {
      base.train.precision = Precision::kMixedBf16;
      plan.precision_changed = true;
      plan.precision = to_string(Precision::kMixedBf16);
      // A card without bf16 (T4, V100) keeps the request's precision: the
      // plan must stay something the card runs.
      if (fit::gpu_refusal(base)) {
        base.train.precision = req.train.precision;
        plan.precision_changed = false;
        plan.precision.clear();
      } else {
        plan.notes.push_back("precision mixed_bf16: " + o.framework + " keeps fp32 master weights with bf16 training");
      }
    }
    // The global batch every layout trains: the request's samples per step
    // with all its GPUs in data parallel (gpus x micro_batch x grad_accum).
    const int64_t global_batch =
        o.global_batch.value_or(req.parallel.gpus * req.train.micro_batch * req.train.grad_accum);
    plan.global_batch = global_batch;
    const int64_t per_node_gpus = std::min(req.parallel.gpus, req.parallel.gpus_per_node);
    plan.host_ram_default = !o.host_ram_gib.has_value();
    plan.host_ram_bytes =
        o.host_ram_gib
            ? static_cast<int64_t>(*o.host_ram_gib * 1073741824.0)
            : static_cast<int64_t>(kDefaultHostRamPerGpuMemory * static_cast<double>(card->total * per_node_gpus));
    const SearchSpace space = search_space(req, o);
    const std::optional<speed::Machine> machine = speed::machine_for(base, nullptr);
    if (machine) {
      plan.notes.push_back("ranked by the time model's step on " + machine->gpu +
                           " (the middle of its range; estimate's time.assumptions list its figures)");
    } else {
      plan.notes.push_back(
          "no speed figures for the card (hardware.matmul_tflops, hardware.memory_gbs): ranked by "
          "recompute, bubble and traffic factors");
    }
    std::vector<PlanCandidate> all;
    std::map<std::string, train::RankMemos> memos;  // by label (finish)
    auto visit = [&](const ParallelOptions& p, Checkpointing ck) {
      if (layout_error(candidate_request(base, p, ck, global_batch))) return;
      ++plan.considered;
      train::RankMemos m;
      if (auto c = evaluate(base, p, ck, *card, global_batch, plan.host_ram_bytes, machine, m)) {
        memos[c->label] = std::move(m);
        all.push_back(std::move(*c));
      }
    };
    auto count_fitting = [&] {
      return std::count_if(all.begin(), all.end(), [](const PlanCandidate& c) { return c.fits; });
    };
    for_each_layout(req, o, space, false, visit);
    if (count_fitting() == 0 && o.allow_offload && o.framework != "megatron") {
      for_each_layout(req, o, space, true, visit);
      plan.notes.push_back("nothing fits without offload: CPU offload layouts searched too");
    }
    plan.fitting = count_fitting();
    finish(all, base, o, *card, global_batch, memos);
    plan.candidates = std::move(all);
    if (plan.fitting == 0 && !plan.candidates.empty()) plan.notes.push_back(closest_note(plan));
    plan.notes.push_back(
        "global batch " + fmt_int(global_batch) + " samples per step held fixed (" + std::to_string(req.parallel.gpus) +
        " GPUs x micro_batch " + std::to_string(req.train.micro_batch) + " x grad_accum " +
        std::to_string(req.train.grad_accum) + "): a layout with less data parallel accumulates more; seq_len " +
        fmt_int(req.train.seq_len) + " kept");
    plan.notes.push_back(
        std::string("host RAM ") + fmt_gib(plan.host_ram_bytes) + " per node" +
        (plan.host_ram_default
             ? " (default: 2x the node's GPU memory, the low end of GPU servers; set plan.host_ram_gib)"
             : " (plan.host_ram_gib)") +
        "; offload layouts that need more are marked as not fitting");
    return plan;
  });
}

}  // namespace vram

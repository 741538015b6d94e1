// What would make it fit (issue 18): when a training job does not fit the
// chosen card, or fits above the headroom rule, the changes that would bring
// it there, each a patch of request fields, each re-estimated by the real
// estimator on the patched request (never a guess), with its cost in speed,
// quality or hardware and where that cost comes from.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "decimal.h"
#include "fit.h"
#include "format.h"
#include "guarded.h"
#include "speed/speed.h"
#include "train/estimate_train.h"
#include "vram/api.h"
#include "vram/gpus.h"
#include "vram/request.h"

#ifndef VRAM_VERSION
#define VRAM_VERSION "0.0.0"
#endif

namespace vram {

namespace {

// What a suggestion must reach: a fit when the job does not fit, the headroom
// rule when it fits above it.
enum class Goal { kNone, kFit, kHeadroom };

const char* goal_name(Goal g) { return g == Goal::kFit ? "fit" : g == Goal::kHeadroom ? "headroom" : "none"; }

// Ranked by what a change costs (issue 18): nothing (exact same math), then
// step time, then optimizer precision, then what is trained, then the data,
// then hardware. Within a tier the order of the list.
enum Tier { kFree = 0, kSpeed = 1, kOptimizerPrecision = 2, kWhatIsTrained = 3, kData = 4, kHardware = 5 };

const char* tier_name(int t) {
  switch (t) {
    case kFree:
      return "none";
    case kSpeed:
      return "speed";
    case kOptimizerPrecision:
      return "optimizer precision";
    case kWhatIsTrained:
      return "quality";
    case kData:
      return "data";
    default:
      return "hardware";
  }
}

struct Cost {
  int tier = kFree;
  std::optional<double> step_time_factor;  // relative to the job as asked; none when no source gives one
  std::string text;
  std::string source;
};

struct Outcome {
  int64_t peak = 0;
  Fit fit;
  // The time model's step on the outcome's card (issue 31); none when the
  // card has no speed figures.
  std::optional<speed::StepCost> time;
};

std::optional<speed::StepCost> step_cost_of(const Request& r) {
  const auto m = speed::machine_for(r, nullptr);
  if (!m) return std::nullopt;
  return speed::step_cost(r, *m);
}

struct Suggestion {
  std::string key;
  std::string title;
  json patch;
  Outcome outcome;
  Cost cost;
  int order = 0;
};

class Suggester {
 public:
  Suggester(const json& request, int64_t peak) : request_(request), base_peak_(peak) {}

  // The patched request's estimate on its own card (a patch may change the
  // card), or nothing when the patched request is not valid or its estimate
  // fails.
  std::optional<Outcome> evaluate(const json& patch) const {
    json r = request_;
    r.merge_patch(patch);
    auto parsed = parse_request(r);
    if (!parsed.ok()) return std::nullopt;
    const auto card = fit::chosen_gpu(parsed.value());
    if (!card) return std::nullopt;
    if (fit::gpu_refusal(parsed.value())) return std::nullopt;
    auto est = train::estimate_train(parsed.value());
    if (!est.ok()) return std::nullopt;
    Outcome o;
    o.peak = est.value().peak_bytes;
    o.fit = fit::fit_for(o.peak, card->total, card->capacity, card->name, est.value().managed_bytes);
    o.time = step_cost_of(parsed.value());
    return o;
  }

  bool meets(const Outcome& o, Goal g) const { return g == Goal::kFit ? o.fit.fits : o.fit.fits && o.fit.headroom_ok; }

  // A patch that reaches the goal and changes the peak (a pasted DeepSpeed
  // config can set a field over the patch, which then changes nothing).
  std::optional<Outcome> reaching(const json& patch, Goal g) const {
    auto o = evaluate(patch);
    if (!o || o->peak == base_peak_ || !meets(*o, g)) return std::nullopt;
    return o;
  }

 private:
  const json& request_;
  int64_t base_peak_;
};

std::string fmt_factor(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "x%.2f", x);
  return buf;
}

// Cost texts and their sources: one place, read by every suggestion.
Cost cost_fused_loss() {
  return {kFree, 1.0,
          "none: the same loss, computed in chunks without materialising the logits (Liger reports higher, not "
          "lower, throughput)",
          "Liger-Kernel README (linkedin/Liger-Kernel): FusedLinearCrossEntropy is exact; +20 % multi-GPU "
          "throughput, -60 % memory on LLaMA 3-8B"};
}

Cost cost_selective() {
  // The abstract's "over 90 %" less recomputation overhead than full
  // recomputation, whose overhead is kFullRecomputeStepFactor - 1.
  const double f = 1.0 + (fit::kFullRecomputeStepFactor - 1.0) * 0.1;
  return {kSpeed, f,
          "recomputes only the attention scores in backward: at most a tenth of full recomputation's extra "
          "forward, about " +
              fmt_factor(f) + " step time",
          "Korthikanti et al. 2022, \"Reducing Activation Recomputation in Large Transformer Models\" "
          "(arXiv:2205.05198), abstract: selective recomputation cuts the recomputation overhead by over 90 %"};
}

Cost cost_full_ckpt() {
  return {kSpeed, fit::kFullRecomputeStepFactor,
          "re-runs each layer's forward during backward: about +33 % compute, " +
              fmt_factor(fit::kFullRecomputeStepFactor) + " step time",
          "Kaplan et al. 2020 §2.1: training costs 6N FLOPs per token, 2N of them the forward"};
}

Cost cost_micro_batch(int64_t m, int64_t ga, int64_t m2, int64_t ga2, int64_t seq) {
  return {kSpeed, std::nullopt,
          "same global batch (" + std::to_string(m) + " x " + std::to_string(ga) + " = " + std::to_string(m2) + " x " +
              std::to_string(ga2) + " samples per GPU and step) and the same updates; each micro-step runs " +
              std::to_string(m2 * seq) +
              " tokens, and throughput drops when that is too few to fill the GPU; no source gives one factor",
          "HF Transformers docs, \"Gradient accumulation\": the same update as batch_size x steps; it does not "
          "improve throughput over a true large batch"};
}

Cost cost_8bit(bool paged) {
  if (paged) {
    return {kOptimizerPrecision, std::nullopt,
            "8-bit block-wise states in CUDA managed memory: states that do not fit page to host RAM at each step, "
            "at a throughput cost that depends on how much pages",
            "Dettmers et al. 2021 (arXiv:2110.02861): 8-bit Adam matches 32-bit Adam; QLoRA paper §3 \"Paged "
            "Optimizers\""};
  }
  return {kOptimizerPrecision, 1.0,
          "optimizer states in 8 bits (block-wise quantised): the paper matches 32-bit Adam's results",
          "Dettmers et al. 2021, \"8-bit Optimizers via Block-wise Quantization\" (arXiv:2110.02861)"};
}

Cost cost_lora() {
  return {kWhatIsTrained, std::nullopt,
          "trains low-rank adapters instead of every weight: on par with full fine-tuning on the paper's tasks, "
          "not a replacement for continued pre-training",
          "Hu et al. 2021, \"LoRA\" (arXiv:2106.09685) §5"};
}

Cost cost_qlora() {
  return {kWhatIsTrained, std::nullopt,
          "LoRA over a 4-bit NF4 base: the paper matches 16-bit fine-tuning; each step dequantises the base "
          "weights, so steps are slower than LoRA's",
          "Dettmers et al. 2023, \"QLoRA\" (arXiv:2305.14314) §4-5"};
}

Cost cost_seq(int64_t from, int64_t to) {
  return {kData, std::nullopt,
          "samples longer than " + std::to_string(to) + " tokens (of " + std::to_string(from) +
              ") are truncated or must be split; packing fills the shorter sequence",
          "the estimate's own tokens per micro-batch (micro_batch x seq_len)"};
}

Cost cost_more_gpus(int64_t from, int64_t to, const std::string& sharding, bool batch_kept) {
  return {kHardware, std::nullopt,
          std::to_string(to) + " GPUs instead of " + std::to_string(from) + ", " + sharding +
              (sharding.find("ZeRO-3") != std::string::npos || sharding.find("full_shard") != std::string::npos
                   ? ": parameter sharding moves 1.5x DDP's data-parallel traffic"
                   : "") +
              (batch_kept ? "; grad_accum lowered so the global batch stays the same"
                          : "; the global batch grows with data parallel"),
          "ZeRO paper (Rajbhandari et al. 2020) §7.2"};
}

Cost cost_card(const std::string& from, const std::string& to) {
  return {kHardware, std::nullopt, "a " + to + " instead of the " + from,
          "the GPU catalog (vram-probe version; README \"GPU catalog\")"};
}

// The suggestion's step and cost, and its step time relative to the job as
// asked (the middles of the two ranges); null without speed figures.
json time_of(const Outcome& o, const std::optional<speed::StepCost>& base) {
  if (!o.time) return nullptr;
  json j = speed::step_cost_json(*o.time);
  j["vs_base"] = base ? json(sig4(o.time->step_seconds.mid() / base->step_seconds.mid())) : json(nullptr);
  return j;
}

json suggestion_json(const Suggestion& s, const std::optional<speed::StepCost>& base) {
  const fit::Verdict v = fit::verdict_of(s.outcome.fit);
  json cost = {{"kind", tier_name(s.cost.tier)}, {"text", s.cost.text}, {"source", s.cost.source}};
  cost["step_time_factor"] =
      s.cost.step_time_factor ? json(std::round(*s.cost.step_time_factor * 10000.0) / 10000.0) : json(nullptr);
  return {{"key", s.key},
          {"title", s.title},
          {"patch", s.patch},
          {"peak_bytes", s.outcome.peak},
          {"utilization", std::round(s.outcome.fit.utilization * 10000.0) / 10000.0},
          {"fits", s.outcome.fit.fits},
          {"headroom_ok", s.outcome.fit.headroom_ok},
          {"status", v.status},
          {"words", v.words},
          {"gpu", s.outcome.fit.gpu},
          {"time", time_of(s.outcome, base)},
          {"cost", cost}};
}

bool is_8bit(const std::string& optimizer) { return optimizer.find("8bit") != std::string::npos; }

// The suggestions found so far, in the order they were found.
class Found {
 public:
  Found(const Suggester& s, Goal goal) : s_(s), goal_(goal) {}

  const Suggester& suggester() const { return s_; }
  Goal goal() const { return goal_; }
  const std::vector<Suggestion>& list() const { return list_; }

  void add(std::string key, std::string title, json patch, const Outcome& o, Cost cost) {
    list_.push_back({std::move(key), std::move(title), std::move(patch), o, std::move(cost), order_++});
  }
  // Adds the patch when it reaches the goal.
  void try_add(std::string key, std::string title, json patch, Cost cost) {
    if (auto o = s_.reaching(patch, goal_))
      add(std::move(key), std::move(title), std::move(patch), *o, std::move(cost));
  }
  // Adds the patch and returns true when it reaches the goal.
  bool add_if_reaching(std::string key, std::string title, const json& patch, Cost cost) {
    auto o = s_.reaching(patch, goal_);
    if (!o) return false;
    add(std::move(key), std::move(title), patch, *o, std::move(cost));
    return true;
  }

 private:
  const Suggester& s_;
  Goal goal_;
  std::vector<Suggestion> list_;
  int order_ = 0;
};

// Same math: no time cost (a fused loss), then step time (checkpointing).
void same_math(const TrainOptions& t, Found& found) {
  if (!t.fused_loss)
    found.try_add("fused_loss", "Fused (chunked) loss", {{"train", {{"fused_loss", true}}}}, cost_fused_loss());
  if (t.checkpointing == Checkpointing::kNone) {
    found.try_add("checkpointing_selective", "Selective activation checkpointing",
                  {{"train", {{"grad_checkpointing", "selective"}}}}, cost_selective());
  }
  if (t.checkpointing != Checkpointing::kFull) {
    found.try_add("checkpointing_full", "Full activation checkpointing", {{"train", {{"grad_checkpointing", "full"}}}},
                  cost_full_ckpt());
  }
}

// Smaller micro-batch, more accumulation, the same samples per step: the
// largest divisor of micro_batch that reaches the goal.
void smaller_micro_batch(const TrainOptions& t, Found& found) {
  for (int64_t m2 = t.micro_batch - 1; m2 >= 1; --m2) {
    if (t.micro_batch % m2 != 0) continue;
    const int64_t ga2 = t.grad_accum * (t.micro_batch / m2);
    json patch = {{"train", {{"micro_batch", m2}, {"grad_accum", ga2}}}};
    if (found.add_if_reaching("micro_batch",
                              "Micro-batch " + std::to_string(m2) + " with grad_accum " + std::to_string(ga2), patch,
                              cost_micro_batch(t.micro_batch, t.grad_accum, m2, ga2, t.seq_len)))
      break;
  }
}

// Optimizer precision (states exist only for what trains; QLoRA and LoRA
// keep few), then what is trained.
void lighter_states(const TrainOptions& t, Found& found) {
  if (!is_8bit(t.optimizer) && t.optimizer.find("sgd") == std::string::npos) {
    found.try_add("optimizer_8bit", "8-bit AdamW (bitsandbytes)", {{"train", {{"optimizer", "adamw_bnb_8bit"}}}},
                  cost_8bit(false));
    found.try_add("optimizer_paged_8bit", "Paged 8-bit AdamW (bitsandbytes)",
                  {{"train", {{"optimizer", "paged_adamw_8bit"}}}}, cost_8bit(true));
  }
  if (t.method == Method::kFull || t.method == Method::kFreeze) {
    found.try_add("lora", "LoRA instead of " + std::string(to_string(t.method)) + " training",
                  {{"train", {{"method", "lora"}}}}, cost_lora());
  }
  if (t.method != Method::kQlora) {
    found.try_add("qlora", "QLoRA (4-bit base) instead of " + std::string(to_string(t.method)) + " training",
                  {{"train", {{"method", "qlora"}}}}, cost_qlora());
  }
}

// Shorter sequences: the longest multiple of 128 tokens that reaches the goal.
void shorter_sequences(const TrainOptions& t, Found& found) {
  if (t.seq_len <= 128) return;
  const Suggester& s = found.suggester();
  const int64_t limit = (t.seq_len - 1) / 128;
  const int64_t units = fit::largest_fitting(
      [&](int64_t v) {
        auto o = s.evaluate({{"train", {{"seq_len", v * 128}}}});
        return o && s.meets(*o, found.goal());
      },
      limit);
  if (units > 0) {
    const int64_t seq = units * 128;
    found.try_add("seq_len", "Sequences of " + std::to_string(seq) + " tokens", {{"train", {{"seq_len", seq}}}},
                  cost_seq(t.seq_len, seq));
  }
}

// More GPUs with the state sharded over them: ZeRO-3 (ZeRO-1 with a
// pipeline, which DeepSpeed pairs with stage 0 or 1 only), FSDP
// full_shard, or Megatron's distributed optimizer, whichever family the
// request uses; data parallel grows, grad_accum shrinks to keep the
// global batch when it divides.
void more_gpus(const TrainOptions& t, const ParallelOptions& p, Found& found) {
  const int64_t model_par = p.tp * p.pp * p.cp;
  json shard = json::object();
  std::string sharding;
  if (!p.fsdp.empty()) {
    shard["fsdp"] = "full_shard";
    sharding = "FSDP full_shard";
  } else if (p.distributed_optimizer) {
    sharding = "Megatron distributed optimizer";
  } else {
    shard["zero"] = p.pp > 1 ? 1 : 3;
    sharding = p.pp > 1 ? "ZeRO-1 (pipelines allow stage 0 or 1)" : "ZeRO-3";
  }
  const int64_t global = p.dp * t.grad_accum;  // per micro-batch sample
  for (int64_t n = p.gpus * 2; n <= limits::kMaxGpus && n <= int64_t{4096}; n *= 2) {
    if (n % model_par != 0) continue;
    const int64_t dp = n / model_par;
    json par = shard;
    par["gpus"] = n;
    par["dp"] = dp;
    par["nodes"] = nullptr;
    par["gpus_per_node"] = nullptr;
    json patch = {{"parallel", par}};
    const bool keep_batch = global % dp == 0;
    if (keep_batch) patch["train"] = {{"grad_accum", global / dp}};
    if (found.add_if_reaching("more_gpus", std::to_string(n) + " GPUs, " + sharding, patch,
                              cost_more_gpus(p.gpus, n, sharding, keep_batch)))
      break;
  }
}

// The smallest card that reaches the goal (cards the job's precision or
// kernels run on; larger than the chosen one).
void larger_card(const fit::Card& card, Found& found) {
  std::vector<const GpuInfo*> cards;
  for (const auto& g : gpu_catalog()) {
    if (g.usable_bytes() > card.capacity) cards.push_back(&g);
  }
  std::stable_sort(cards.begin(), cards.end(),
                   [](const GpuInfo* a, const GpuInfo* b) { return a->total_mib < b->total_mib; });
  for (const GpuInfo* g : cards) {
    json patch = {{"gpu", {{"name", g->name}, {"memory_gib", nullptr}}}};
    if (found.add_if_reaching("gpu", std::string("A larger card: ") + g->name, patch, cost_card(card.name, g->name)))
      break;
  }
}

// When no single change of the job itself reaches the goal: the cheap
// ones together, in rank order, as one suggestion.
// (Cheap: the job keeps its data and its hardware.)
void cheap_together(const TrainOptions& t, Found& found, json& notes) {
  const auto& list = found.list();
  const bool single = std::any_of(list.begin(), list.end(), [](const Suggestion& x) { return x.cost.tier < kData; });
  if (single) return;
  json combined = json::object();
  std::vector<std::string> parts;
  Cost cost{kSpeed, std::nullopt, "", "each change's own source (the single suggestions above)"};
  auto step = [&](const json& patch, const std::string& part, int tier) -> bool {
    combined.merge_patch(patch);
    parts.push_back(part);
    cost.tier = std::max(cost.tier, tier);
    auto o = found.suggester().reaching(combined, found.goal());
    if (!o) return false;
    cost.text = "together: " + parts[0];
    for (size_t i = 1; i < parts.size(); ++i) cost.text += ", " + parts[i];
    found.add("combined", "Together: " + cost.text.substr(10), combined, *o, cost);
    return true;
  };
  bool done = false;
  if (!t.fused_loss) done = step({{"train", {{"fused_loss", true}}}}, "fused loss", kFree);
  if (!done && t.checkpointing != Checkpointing::kFull)
    done = step({{"train", {{"grad_checkpointing", "full"}}}}, "full checkpointing", kSpeed);
  if (!done && t.micro_batch > 1) {
    done = step({{"train", {{"micro_batch", 1}, {"grad_accum", t.grad_accum * t.micro_batch}}}},
                "micro-batch 1 with grad_accum " + std::to_string(t.grad_accum * t.micro_batch), kSpeed);
  }
  if (!done && !is_8bit(t.optimizer))
    done = step({{"train", {{"optimizer", "paged_adamw_8bit"}}}}, "paged 8-bit AdamW", kOptimizerPrecision);
  if (!done && t.method != Method::kLora && t.method != Method::kQlora)
    done = step({{"train", {{"method", "lora"}}}}, "LoRA", kWhatIsTrained);
  if (!done && t.method != Method::kQlora) done = step({{"train", {{"method", "qlora"}}}}, "QLoRA", kWhatIsTrained);
  if (!done) notes.push_back("no combination of checkpointing, micro-batch, 8-bit optimizer and LoRA/QLoRA fits");
}

// Every suggestion for a job that misses `goal`, ranked by what it costs.
json ranked_suggestions(const json& request, const Request& req, const fit::Card& card, int64_t peak, Goal goal,
                        const std::optional<speed::StepCost>& base_time, json& notes) {
  const Suggester s(request, peak);
  Found found(s, goal);
  const TrainOptions& t = req.train;
  same_math(t, found);
  smaller_micro_batch(t, found);
  lighter_states(t, found);
  shorter_sequences(t, found);
  more_gpus(t, req.parallel, found);
  larger_card(card, found);
  cheap_together(t, found, notes);
  std::vector<Suggestion> list = found.list();
  std::stable_sort(list.begin(), list.end(), [](const Suggestion& a, const Suggestion& b) {
    return std::make_pair(a.cost.tier, a.order) < std::make_pair(b.cost.tier, b.order);
  });
  json arr = json::array();
  for (const auto& x : list) arr.push_back(suggestion_json(x, base_time));
  return arr;
}

}  // namespace

json suggest(const json& request) {
  return guarded([&]() -> json {
    auto parsed = parse_request(request);
    if (!parsed.ok()) return error_json(parsed.error());
    const Request& req = parsed.value();
    json out = {{"schema", kSchema}, {"version", VRAM_VERSION}};
    json notes = json::array();
    if (req.task != Task::kTrain) {
      out["goal"] = "none";
      out["suggestions"] = json::array();
      notes.push_back(
          "suggestions cover training jobs; for serving, the GPU table and the serving answers say what fits");
      out["notes"] = notes;
      return out;
    }
    const auto card = fit::chosen_gpu(req);
    if (!card) {
      return error_json({errc::kMissingField, "suggestions need the GPU: gpu.name (catalog) or gpu.memory_gib", "gpu"});
    }
    auto base = train::estimate_train(req);
    if (!base.ok()) return error_json(base.error());
    const int64_t peak = base.value().peak_bytes;
    const Fit f = fit::fit_for(peak, card->total, card->capacity, card->name, base.value().managed_bytes);
    const Goal goal = !f.fits ? Goal::kFit : !f.headroom_ok ? Goal::kHeadroom : Goal::kNone;
    out["goal"] = goal_name(goal);
    const auto base_time = step_cost_of(req);
    out["base"] = {{"peak_bytes", peak},
                   {"status", fit::verdict_of(f).status},
                   {"gpu", card->name},
                   {"capacity_bytes", card->capacity},
                   {"time", base_time ? speed::step_cost_json(*base_time) : json(nullptr)}};
    if (goal == Goal::kNone) {
      out["suggestions"] = json::array();
      out["notes"] = notes;
      return out;
    }
    out["suggestions"] = ranked_suggestions(request, req, *card, peak, goal, base_time, notes);
    notes.push_back(std::string("each suggestion is one change (its patch: request fields to merge) estimated again; "
                                "ranked by cost: none, speed, optimizer precision, what is trained, data, hardware; "
                                "goal: ") +
                    (goal == Goal::kFit ? "fit the card" : "fit within the headroom rule"));
    out["notes"] = notes;
    return out;
  });
}

std::string suggest_json(const std::string& request_text) {
  return guarded([&] { return suggest(parse_json_text(request_text, "")).dump(2); });
}

}  // namespace vram

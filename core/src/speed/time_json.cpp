// The result's `time` object (docs/schema.md "Time"): the request's card, the
// run's hours and cost, and every catalog card's figures for the GPU table.
#include "speed/time_json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "decimal.h"
#include "fit.h"
#include "format.h"
#include "speed/work.h"

namespace vram::speed {

namespace {

// Objects here are filled key by key: nlohmann's initializer list builds each
// pair as a two-element array, then the object from copies (~4,000
// instructions a range; a timed estimate prints four for each of 45 cards,
// callgrind, issue 32). The object's map sorts the keys: the same text.
json range_json(const Range& r) {
  json j;
  j["low"] = sig4(r.low);
  j["high"] = sig4(r.high);
  return j;
}

json terms_json(const std::vector<Term>& terms) {
  json out = json::array();
  for (const Term& t : terms) {
    out.push_back({{"key", t.key}, {"label", t.label}, {"seconds", range_json(t.seconds)}, {"formula", t.formula}});
  }
  return out;
}

// The run's tokens: time.tokens, or the samples' tokens over the epochs
// (padded to seq_len with train.padding max_length, each sample its mean
// length when packed or padded to the batch's longest).
struct Run {
  double tokens = 0;
  std::string basis;
};

std::optional<Run> run_of(const Request& req) {
  const TimeOptions& o = req.time;
  if (o.tokens) return Run{static_cast<double>(*o.tokens), "time.tokens"};
  if (!o.samples) return std::nullopt;
  const bool padded = req.train.padding == Padding::kMaxLength;
  const int64_t len = padded ? req.train.seq_len : o.mean_len.value_or(req.train.seq_len);
  return Run{static_cast<double>(*o.samples) * static_cast<double>(len) * o.epochs,
             "time.samples " + fmt(static_cast<double>(*o.samples)) + " x " + fmt(static_cast<double>(len)) +
                 (padded ? " tokens (padded to train.seq_len)" : " tokens (time.mean_len)") + " x " + fmt(o.epochs) +
                 " epochs"};
}

json price_json(const Machine& m) {
  if (m.usd_per_hour <= 0) return nullptr;
  json j;
  j["usd_per_gpu_hour"] = sig4(m.usd_per_hour);
  j["source"] = m.price_source;
  return j;
}

json train_card_json(const Request& req, const TrainTime& t, const Machine& m, const std::optional<Run>& run) {
  json j;
  j["step_seconds"] = range_json(t.step_seconds);
  j["tokens_per_second_per_gpu"] = range_json(t.tokens_per_second_per_gpu);
  j["mfu"] = range_json(t.mfu);
  const double gpus = static_cast<double>(t.gpus);
  const Range hours_per_token = {1.0 / (t.tokens_per_second_per_gpu.high * gpus * 3600),
                                 1.0 / (t.tokens_per_second_per_gpu.low * gpus * 3600)};
  j["run_hours"] = run ? range_json(hours_per_token * run->tokens) : json(nullptr);
  if (m.usd_per_hour > 0) {
    j["usd_per_million_tokens"] = range_json(hours_per_token * (1e6 * gpus * m.usd_per_hour));
    j["usd"] = run ? range_json(hours_per_token * (run->tokens * gpus * m.usd_per_hour)) : json(nullptr);
  } else {
    j["usd_per_million_tokens"] = nullptr;
    j["usd"] = nullptr;
  }
  (void)req;
  return j;
}

json infer_card_json(const InferTime& t, const Machine& m, double gpus) {
  json j;
  j["ttft_seconds"] = range_json(t.ttft_seconds);
  j["decode_tokens_per_second_per_sequence"] = range_json(t.decode_tokens_per_second_per_sequence);
  j["decode_tokens_per_second"] = range_json(t.decode_tokens_per_second);
  if (m.usd_per_hour > 0) {
    // GPU-hours per million generated tokens at the batch's aggregate rate.
    const Range hours = {1e6 / (t.decode_tokens_per_second.high * 3600), 1e6 / (t.decode_tokens_per_second.low * 3600)};
    j["usd_per_million_output_tokens"] = range_json(hours * (gpus * m.usd_per_hour));
  } else {
    j["usd_per_million_output_tokens"] = nullptr;
  }
  return j;
}

// Every catalog card the job can run on (not refused) and the model has
// figures for: the GPU table's time and cost columns.
template <typename Row>
json catalog_rows(const Request& req, Row row) {
  json rows = json::array();
  for (const GpuInfo& g : gpu_catalog()) {
    if (fit::refusal_on(req, g)) continue;
    const GpuInfo* card = &g;
    const auto m = machine_for(req, card);
    if (!m) continue;
    json r = row(*m);
    r["name"] = g.name;
    r["price"] = price_json(*m);
    rows.push_back(std::move(r));
  }
  return rows;
}

json train_json(const Request& req, const std::optional<Machine>& m) {
  const TrainWork work = train_work(req);
  const auto run = run_of(req);
  json j = {{"task", "train"}};
  std::vector<std::string> assumptions;
  if (m) {
    const TrainTime t = train_time(req, work, *m);
    j.update({{"gpu", m->gpu},
              {"gpus", t.gpus},
              {"tokens_per_step", t.tokens_per_step},
              {"model_flops_per_token", sig4(t.model_flops_per_token)},
              {"peak_tflops", sig4(m->peak_tflops)},
              {"matmul_tflops", sig4(m->matmul_tflops)},
              {"memory_gbs", sig4(m->memory_gbs)},
              {"link", to_string(m->link)}});
    j.update(train_card_json(req, t, *m, run));
    j["tokens_per_second"] = range_json(t.tokens_per_second_per_gpu * static_cast<double>(t.gpus));
    j["run"] = run ? json{{"tokens", sig4(run->tokens)},
                          {"steps", sig4(run->tokens / static_cast<double>(t.tokens_per_step))},
                          {"basis", run->basis}}
                   : json(nullptr);
    j["price"] = price_json(*m);
    j["terms"] = terms_json(t.terms);
    assumptions = m->notes;
    assumptions.insert(assumptions.end(), t.assumptions.begin(), t.assumptions.end());
  }
  if (!run) assumptions.push_back("no run size: give time.tokens, or time.samples (and time.mean_len, time.epochs)");
  if (req.train.compile) assumptions.push_back("torch.compile is not modelled: eager mode's kernels and dispatch");
  j["assumptions"] = assumptions;
  j["cards"] =
      catalog_rows(req, [&](const Machine& cm) { return train_card_json(req, train_time(req, work, cm), cm, run); });
  return j;
}

json infer_json(const Request& req, const Estimate& e, const std::optional<Machine>& m) {
  const double gpus = static_cast<double>(std::max<int64_t>(req.parallel.tp, 1));
  json j = {{"task", "infer"}};
  if (m) {
    const InferTime t = infer_time(req, e, *m);
    j.update({{"gpu", m->gpu},
              {"gpus", static_cast<int64_t>(gpus)},
              {"engine", req.infer.engine},
              {"batch", t.batch},
              {"prompt_len", t.prompt_len},
              {"output_tokens", t.output_tokens},
              {"mean_context", sig4(t.mean_context)},
              {"matmul_tflops", sig4(m->matmul_tflops)},
              {"memory_gbs", sig4(m->memory_gbs)}});
    j.update(infer_card_json(t, *m, gpus));
    j["prefill_tokens_per_second"] = range_json(t.prefill_tokens_per_second);
    j["decode_step_seconds"] = range_json(t.decode_step_seconds);
    j["request_seconds"] = range_json(t.request_seconds);
    j["price"] = price_json(*m);
    j["terms"] = terms_json(t.terms);
    j["prefill_terms"] = terms_json(t.prefill_terms);
    std::vector<std::string> assumptions = m->notes;
    assumptions.insert(assumptions.end(), t.assumptions.begin(), t.assumptions.end());
    j["assumptions"] = assumptions;
  }
  j["cards"] = catalog_rows(req, [&](const Machine& cm) { return infer_card_json(infer_time(req, e, cm), cm, gpus); });
  return j;
}

}  // namespace

json step_cost_json(const StepCost& c) {
  return {{"step_seconds", range_json(c.step_seconds)},
          {"tokens_per_second_per_gpu", range_json(c.tokens_per_second_per_gpu)},
          {"usd_per_million_tokens",
           c.usd_per_million_tokens.high > 0 ? range_json(c.usd_per_million_tokens) : json(nullptr)}};
}

json time_json(const Request& req, const Estimate& e) {
  std::string missing;
  const auto m = machine_for(req, nullptr, &missing);
  json j = req.task == Task::kTrain ? train_json(req, m) : infer_json(req, e, m);
  if (!m) {
    j["gpu"] = nullptr;
    j["unavailable"] = req.gpu.name.empty() && !req.gpu.memory_gib
                           ? std::string("no GPU: give gpu.name for the time of a step (the cards are timed below)")
                           : missing;
  }
  return j;
}

}  // namespace vram::speed

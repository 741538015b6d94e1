#include "measure/step_log.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace vram::probe {
namespace {

using nlohmann::json;

// The number at the start of `text` (strtod: "6.885", "2e-05"), if any. Every
// figure these formats print (times, rates, counts) is >= 0: a negative or
// non-finite one is no figure.
std::optional<double> NumberAt(std::string_view text) {
  const std::string s(text.substr(0, std::min<std::size_t>(text.size(), 64)));
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

// The number after `key` in `line` ("tokens_per_second_per_gpu:" -> 655.9),
// skipping one quote: newer Trainer releases print the values quoted.
std::optional<double> After(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\'')) rest.remove_prefix(1);
  return NumberAt(rest);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Every step but the first, which is the warm-up, unless it is the only one.
std::vector<double> AfterWarmup(const std::vector<double>& steps, std::size_t* skipped) {
  if (steps.size() < 2) {
    *skipped = 0;
    return steps;
  }
  *skipped = 1;
  return {steps.begin() + 1, steps.end()};
}

json Spread(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return json{{"median", median}, {"min", sorted.front()}, {"max", sorted.back()}, {"count", n}};
}

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

// `vram-probe-step {"step": 3, "seconds": 0.41, "tokens": 4096}`
// (probe-agent/src/run/train_script.py).
bool StepLog::ProbeRunLine(std::string_view line) {
  constexpr std::string_view kPrefix = "vram-probe-step ";
  if (!StartsWith(line, kPrefix)) return false;
  const json j = json::parse(line.substr(kPrefix.size()), nullptr, false);
  if (!j.is_object() || !j.contains("seconds") || !j["seconds"].is_number()) return false;
  const double seconds = j["seconds"].get<double>();
  if (!(seconds > 0)) return false;
  run_seconds_.push_back(seconds);
  if (j.contains("tokens") && j["tokens"].is_number() && j["tokens"].get<double>() > 0)
    run_tokens_per_second_.push_back(j["tokens"].get<double>() / seconds);
  return true;
}

bool StepLog::HfTrainerLine(std::string_view line) {
  if (line.find("'train_runtime':") == std::string_view::npos) return false;
  hf_.train_runtime = After(line, "'train_runtime':");
  hf_.train_samples_per_second = After(line, "'train_samples_per_second':");
  hf_.train_steps_per_second = After(line, "'train_steps_per_second':");
  hf_.train_tokens_per_second = After(line, "'train_tokens_per_second':");
  return true;
}

bool StepLog::TorchtuneLine(std::string_view line) {
  if (!StartsWith(line, "Step ") || line.find(" | ") == std::string_view::npos) return false;
  const std::optional<double> tps = After(line, "tokens_per_second_per_gpu:");
  if (!tps || !(*tps > 0)) return false;
  torchtune_tokens_per_second_.push_back(*tps);
  return true;
}

bool StepLog::LitgptLine(std::string_view line) {
  if (!StartsWith(line, "Epoch ")) return false;
  const std::optional<double> iter = After(line, "| iter ");
  const std::optional<double> ms = After(line, "iter time: ");
  if (!iter || !ms || line.find(" ms", line.find("iter time: ")) == std::string_view::npos) return false;
  const long n = static_cast<long>(*iter);
  // A step's time is known when every iteration of it was logged: iteration
  // 1 starts the first step, and a step starts after each "(step)" line.
  litgpt_contiguous_ = (litgpt_last_iter_ < 0 ? n == 1 : n == litgpt_last_iter_ + 1) && (litgpt_contiguous_ || n == 1);
  litgpt_last_iter_ = n;
  litgpt_iterations_.push_back(*ms / 1000);
  litgpt_open_ += *ms / 1000;
  // " (step)" ends the line, or precedes pretrain.py's " remaining time: ...".
  const bool closes = line.find(" ms (step)") != std::string_view::npos;
  if (closes) {
    if (litgpt_contiguous_) litgpt_step_seconds_.push_back(litgpt_open_);
    litgpt_open_ = 0;
    litgpt_contiguous_ = true;  // the next iteration starts a step
  }
  return true;
}

void StepLog::Line(std::string_view raw) {
  const std::string_view line = Trim(raw);
  if (line.empty()) return;
  if (ProbeRunLine(line) || TorchtuneLine(line) || LitgptLine(line)) return;
  HfTrainerLine(line);
}

StepTiming StepLog::Timing() const {
  StepTiming t = hf_;
  if (!run_seconds_.empty()) {
    t.format = "vram_probe_run";
    t.steps_logged = run_seconds_.size();
    t.step_seconds = AfterWarmup(run_seconds_, &t.warmup_skipped);
    std::size_t skipped = 0;
    t.tokens_per_second_per_gpu = AfterWarmup(run_tokens_per_second_, &skipped);
  } else if (!litgpt_iterations_.empty()) {
    t.format = "litgpt";
    t.steps_logged = litgpt_step_seconds_.size();
    t.step_seconds = AfterWarmup(litgpt_step_seconds_, &t.warmup_skipped);
    t.iteration_seconds = litgpt_iterations_;
  } else if (!torchtune_tokens_per_second_.empty()) {
    t.format = "torchtune";
    t.steps_logged = torchtune_tokens_per_second_.size();
    t.tokens_per_second_per_gpu = AfterWarmup(torchtune_tokens_per_second_, &t.warmup_skipped);
  } else if (hf_.train_runtime) {
    t.format = "hf_trainer";
  }
  return t;
}

json StepTimingJson(const StepTiming& t) {
  if (t.format.empty()) return nullptr;
  json j{{"format", t.format},
         {"steps_logged", t.steps_logged},
         {"warmup_skipped", t.warmup_skipped},
         {"step_seconds", Spread(t.step_seconds)},
         {"tokens_per_second_per_gpu", Spread(t.tokens_per_second_per_gpu)}};
  if (!t.iteration_seconds.empty()) j["iteration_seconds"] = Spread(t.iteration_seconds);
  if (t.train_runtime) {
    // The Trainer's whole run: warm-up, evaluation and saving included, so a
    // mean step of 1 / train_steps_per_second is at most the steps' own.
    j["trainer"] = json{{"train_runtime", Optional(t.train_runtime)},
                        {"train_samples_per_second", Optional(t.train_samples_per_second)},
                        {"train_steps_per_second", Optional(t.train_steps_per_second)},
                        {"train_tokens_per_second", Optional(t.train_tokens_per_second)},
                        {"mean_step_seconds", t.train_steps_per_second && *t.train_steps_per_second > 0
                                                  ? json(1 / *t.train_steps_per_second)
                                                  : json(nullptr)}};
  }
  return j;
}

}  // namespace vram::probe

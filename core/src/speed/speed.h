// Private: the time model (issue 31). How long a training step or a decode
// step takes on the request's layout and card, as a range with every
// assumption listed: FLOPs over the card's measured matmul rate, bytes over
// its measured share of memory bandwidth, each collective over its link,
// the pipeline bubble, CPU offload over PCIe, and the host's dispatch time
// where PyTorch's eager mode cannot keep the GPU busy.
//
// Only the full module calls it (core/src/reach.h): the first-visit WASM
// module answers `time` requests with not_in_module.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vram/gpus.h"
#include "vram/request.h"
#include "vram/result.h"

namespace vram::speed {

// A time (or a rate) as a range: `low` is the fast end (shortest time),
// `high` the slow end. Every figure the model cannot pin down (a kernel's
// efficiency, a framework's overlap, the host's speed) is a range too, and
// the result's range is the sum of their ends.
struct Range {
  double low = 0;
  double high = 0;
  Range operator+(const Range& o) const { return {low + o.low, high + o.high}; }
  Range& operator+=(const Range& o) {
    low += o.low;
    high += o.high;
    return *this;
  }
  Range operator*(double k) const { return {low * k, high * k}; }
  // The value reported as one figure (validation, ranking): the geometric
  // mean of the ends, which treats "twice as slow" and "twice as fast" alike.
  double mid() const;
};

Range max(const Range& a, const Range& b);

// A figure in formulas: three significant digits ("1.23e+03" never: 1230).
std::string fmt(double v);

// One term of a step: what it is, how long it takes, and the figures that
// went in (the same "formula with the values plugged in" as the memory terms).
struct Term {
  std::string key;
  std::string label;
  Range seconds;
  std::string formula;
};

// The card and the machine around it, resolved from the catalog (vram/gpus.h
// GpuSpeed) and the request's hardware.* fields.
struct Machine {
  std::string gpu;
  double peak_tflops = 0;    // datasheet, 16-bit dense: MFU's denominator
  double matmul_tflops = 0;  // measured 16-bit matmul rate
  double fp32_tflops = 0;    // measured fp32 matmul rate
  double memory_gbs = 0;     // datasheet memory bandwidth
  Link link = Link::kPcie4;
  double network_gbps = 0;  // per node
  double host_memory_gbs = 0;
  bool nvls = false;               // NVLink SHARP on (NCCL picks NVLS on NVSwitch boards)
  double usd_per_hour = 0;         // 0: no price
  std::string price_source;        // where usd_per_hour comes from
  std::vector<std::string> notes;  // which figures are defaults, which the request's
};

// The machine for `req` on `card` (the request's own card when nullptr).
// nullopt when the card has no speed figures and the request gives none
// (a gpu.memory_gib card without hardware.matmul_tflops / memory_gbs);
// `missing` then says which fields would give them.
std::optional<Machine> machine_for(const Request& req, const GpuInfo* card, std::string* missing = nullptr);

struct TrainTime {
  Range step_seconds;           // one optimizer step
  int64_t tokens_per_step = 0;  // every data-parallel replica together
  int64_t gpus = 1;
  Range tokens_per_second_per_gpu;   // low = the slow end's rate
  Range mfu;                         // model FLOPs / (peak x time), low = slow end
  double model_flops_per_token = 0;  // per token, forward + backward, no recomputation
  std::vector<Term> terms;           // per optimizer step, the busiest pipeline rank
  std::vector<std::string> assumptions;
};

// Throws Failure like the estimate (an invalid layout is the parser's error
// first). `params_trainable` is the estimate's count (result model).
TrainTime train_time(const Request& req, const Machine& m);

// A training step's time and what a million tokens cost at the machine's
// price (usd_per_million_tokens all 0 without a price): what the planner
// ranks by and each suggestion reports.
struct StepCost {
  Range step_seconds;
  Range tokens_per_second_per_gpu;
  Range usd_per_million_tokens;
};
StepCost step_cost(const Request& req, const Machine& m);
// {step_seconds, tokens_per_second_per_gpu, usd_per_million_tokens | null}
// (time_json.cpp), four significant digits like the result's `time`.
json step_cost_json(const StepCost& c);

struct InferTime {
  Range ttft_seconds;               // prefill of one batch of prompts, chunked as the engine chunks
  Range prefill_tokens_per_second;  // prompt tokens per second, all sequences
  Range decode_step_seconds;        // one token for every sequence of the batch
  Range decode_tokens_per_second_per_sequence;
  Range decode_tokens_per_second;  // the whole batch
  Range request_seconds;           // prefill + the generated tokens of one request
  int64_t batch = 1;
  int64_t prompt_len = 0;
  int64_t output_tokens = 0;
  double mean_context = 0;          // the context a decode step reads on average
  std::vector<Term> terms;          // one decode step
  std::vector<Term> prefill_terms;  // the prefill
  std::vector<std::string> assumptions;
};

// `e` is the inference estimate of `req` (its per-device weight and KV bytes).
InferTime infer_time(const Request& req, const Estimate& e, const Machine& m);

}  // namespace vram::speed

// Private: what fits on a GPU, shared by the estimate's fit answers and the
// layout planner.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "vram/gpus.h"
#include "vram/request.h"
#include "vram/result.h"

namespace vram::fit {

// The request's GPU (catalog name or gpu.memory_gib): nvidia-smi total, what
// a process can use, and the name shown.
struct Card {
  int64_t total = 0;
  int64_t capacity = 0;
  std::string name;
};
std::optional<Card> chosen_gpu(const Request& req);

// Why `g` cannot run `req` (bf16 precision, FP8), naming the
// request field, or nullopt (vram/gpus.h GpuInfo says what each card runs).
std::optional<GpuRefusal> refusal_on(const Request& req, const GpuInfo& g);
// The same for the request's own card; custom cards (gpu.memory_gib) have no
// compute capability and are never refused.
std::optional<GpuRefusal> gpu_refusal(const Request& req);

// A job the card runs with a caveat (FlashAttention-2 below Ampere), as a
// warning naming the field.
std::optional<std::string> gpu_warning(const Request& req);

// `peak` is the device view; `managed` the part of it in CUDA managed memory
// (paged optimizer states), which can page out to host RAM.
Fit fit_for(int64_t peak, int64_t total, int64_t capacity, const std::string& name, int64_t managed = 0);

// Whether a job of this device peak runs on `capacity`: all but its managed
// memory must fit (the managed part pages when it does not).
bool runs_on(int64_t peak, int64_t managed, int64_t capacity);

// The verdict in one word and in words, the one place the page (lib/verdict.js
// colours by the status), the CLI and the planner take them from (issue 18: the
// sticky bar, the peak card and the planner said different things at 95 %):
// "fits" (within the headroom rule), "tight" (fits above it), "fits_with_paging"
// (only managed optimizer states overflow) or "does_not_fit". `headroom_applies`
// is false where the rule does not apply (vLLM takes gpu_memory_utilization of
// the card by design).
struct Verdict {
  const char* status;
  std::string words;
};
Verdict verdict_of(bool fits, const std::string& verdict, bool headroom_ok, bool headroom_applies = true);
Verdict verdict_of(const Fit& f, bool headroom_applies = true);

// Step time of full activation recomputation relative to none: the backward
// re-runs the forward; training costs 6N FLOPs per token, 2N of them forward
// (Kaplan et al. 2020, "Scaling Laws for Neural Language Models" §2.1), so
// (6N + 2N) / 6N = 4/3.
inline constexpr double kFullRecomputeStepFactor = 4.0 / 3.0;

// Largest v in [1, limit] with fits(v), 0 if none; `fits` must be monotone
// (true up to some value, false after): doubling up (or halving down) from
// `start`, then bisection. A start near the answer (the request's own value)
// saves probes.
int64_t largest_fitting(const std::function<bool(int64_t)>& fits, int64_t limit, int64_t start = 1);

}  // namespace vram::fit

// What fits on a GPU (fit.h).
#include "fit.h"

#include <algorithm>

#include "reach.h"
#include "vram/gpus.h"

namespace vram::fit {

std::optional<Card> chosen_gpu(const Request& req) {
  if (req.gpu.memory_gib) {
    Card c;
    c.total = static_cast<int64_t>(*req.gpu.memory_gib * 1073741824.0);
    c.capacity = static_cast<int64_t>(static_cast<double>(c.total) * (1.0 - kDriverReserveFraction));
    c.name = "custom " + std::to_string(*req.gpu.memory_gib).substr(0, 6) + " GiB";
    return c;
  }
  if (const GpuInfo* g = req.gpu.name.empty() ? nullptr : find_gpu(req.gpu.name)) {
    return Card{g->total_mib * 1048576, g->usable_bytes(), g->name};
  }
  return std::nullopt;
}

std::optional<GpuRefusal> refusal_on(const Request& req, const GpuInfo& g) {
  const std::string card = std::string(g.name) + " (" + (g.arch[0] != '\0' ? g.arch : g.vendor) + ")";
  if (!reach::infers(req)) {
    const Precision p = req.train.precision;
    // QLoRA's bf16 is its compute dtype, which runs in fp16 on older cards
    // (bnb_4bit_compute_dtype); the estimate's bytes are the same.
    const bool bf16 = req.train.method != Method::kQlora &&
                      (p == Precision::kBf16 || p == Precision::kAmpBf16 || p == Precision::kMixedBf16);
    if (bf16 && !g.bf16) {
      return GpuRefusal{"train.precision", "train.precision " + std::string(to_string(p)) + " needs bf16, which the " +
                                               card +
                                               " does not have (bf16 from compute capability 8.0, Ampere): use fp16, "
                                               "amp_fp16 or fp32, or a newer card"};
    }
    return std::nullopt;
  }
  const std::string& w = req.infer.weights_dtype;
  if (w == "bf16" && !g.bf16) {
    return GpuRefusal{"infer.weights_dtype", "infer.weights_dtype bf16 needs bf16, which the " + card +
                                                 " does not have (compute capability 8.0+): use fp16"};
  }
  // FP8 weights: W8A8 from sm89; weight-only through Marlin on sm80-86 (vLLM
  // FP8 docs); nothing older.
  if (w.rfind("fp8", 0) == 0 && !g.fp8 && !(g.vendor == std::string("nvidia") && g.sm >= 80)) {
    return GpuRefusal{"infer.weights_dtype", "infer.weights_dtype " + w + " does not run on the " + card +
                                                 " (FP8 from compute capability 8.9; weight-only FP8 on 8.0-8.6)"};
  }
  return std::nullopt;
}

std::optional<std::string> gpu_warning(const Request& req) {
  if (req.gpu.memory_gib || req.gpu.name.empty()) return std::nullopt;
  const GpuInfo* g = find_gpu(req.gpu.name);
  if (g == nullptr || req.task != Task::kTrain) return std::nullopt;
  // A warning, not an error: memory-efficient kernels that do run there
  // (xformers, flash-attention-turing) keep the same memory as FlashAttention-2.
  if (req.train.attention == AttentionImpl::kFlash2 && !g->flash_attn2) {
    return "train.attention flash_attention_2 does not run on the " + std::string(g->name) + " (" + g->arch +
           "; FlashAttention-2 needs Ampere or newer, flash-attention README): the estimate keeps its memory, which "
           "xformers' memory-efficient attention shares; transformers would refuse flash_attention_2 here";
  }
  return std::nullopt;
}

std::optional<GpuRefusal> gpu_refusal(const Request& req) {
  if (req.gpu.memory_gib || req.gpu.name.empty()) return std::nullopt;
  const GpuInfo* g = find_gpu(req.gpu.name);
  return g != nullptr ? refusal_on(req, *g) : std::nullopt;
}

bool runs_on(int64_t peak, int64_t managed, int64_t capacity) { return peak - managed <= capacity; }

Fit fit_for(int64_t peak, int64_t total, int64_t capacity, const std::string& name, int64_t managed) {
  Fit f;
  f.gpu = name;
  f.total_bytes = total;
  f.capacity_bytes = capacity;
  // Managed memory (bitsandbytes paged optimizers: cudaMallocManaged) is
  // evicted to host RAM by the driver when device memory runs out and paged
  // back when the optimizer touches it (QLoRA paper §3, "Paged Optimizers");
  // allocations through the caching allocator, the CUDA context and NCCL
  // cannot be.
  if (peak <= capacity) {
    f.verdict = kFits;
  } else if (runs_on(peak, managed, capacity)) {
    f.verdict = kFitsWithPaging;
    f.paged_bytes = peak - capacity;
  } else {
    f.verdict = kDoesNotFit;
  }
  f.fits = f.verdict != kDoesNotFit;
  f.utilization = capacity > 0 ? static_cast<double>(peak) / static_cast<double>(capacity) : 0;
  f.headroom_ok = static_cast<double>(peak) <= kHeadroomFraction * static_cast<double>(total);
  return f;
}

Verdict verdict_of(bool fits, const std::string& verdict, bool headroom_ok, bool headroom_applies) {
  if (!fits) return {"does_not_fit", "Does not fit"};
  if (verdict == kFitsWithPaging) return {"fits_with_paging", "Runs with paging"};
  if (!headroom_applies) return {"fits", "Fits within the engine's memory budget"};
  if (!headroom_ok) return {"tight", "Fits, with little headroom"};
  return {"fits", "Fits"};
}

Verdict verdict_of(const Fit& f, bool headroom_applies) {
  return verdict_of(f.fits, f.verdict, f.headroom_ok, headroom_applies);
}

// Largest v in [1, limit] with fits(v), 0 if none; `fits` must be monotone
// (true up to some value, false after): doubling, then bisection.
int64_t largest_fitting(const std::function<bool(int64_t)>& fits, int64_t limit, int64_t start) {
  start = std::clamp<int64_t>(start, 1, limit);
  int64_t lo = 0, hi = 0;  // fits(lo) (0: nothing does), !fits(hi) (0: not known yet)
  if (fits(start)) {
    lo = start;
  } else {
    // Halve down from a start that does not fit to one that does.
    hi = start;
    for (int64_t v = start / 2; v >= 1 && lo == 0; v /= 2) (fits(v) ? lo : hi) = v;
    if (lo == 0) return 0;
  }
  while (hi == 0) {
    // Double up from one that fits to one that does not (or the limit).
    if (lo == limit) return limit;
    const int64_t next = lo > limit / 2 ? limit : lo * 2;
    (fits(next) ? lo : hi) = next;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace vram::fit

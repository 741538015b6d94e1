// What fits on a GPU (fit.h).
#include "fit.h"

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

// Largest v in [1, limit] with fits(v), 0 if none; `fits` must be monotone
// (true up to some value, false after): doubling, then bisection.
int64_t largest_fitting(const std::function<bool(int64_t)>& fits, int64_t limit) {
  if (!fits(1)) return 0;
  int64_t lo = 1, hi = 2;
  while (hi <= limit && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > limit) {
    if (fits(limit)) return limit;
    hi = limit;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace vram::fit

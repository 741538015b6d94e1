// Private: what fits on a GPU, shared by the estimate's fit answers and the
// layout planner.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

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

// `peak` is the device view; `managed` the part of it in CUDA managed memory
// (paged optimizer states), which can page out to host RAM.
Fit fit_for(int64_t peak, int64_t total, int64_t capacity, const std::string& name, int64_t managed = 0);

// Whether a job of this device peak runs on `capacity`: all but its managed
// memory must fit (the managed part pages when it does not).
bool runs_on(int64_t peak, int64_t managed, int64_t capacity);

// Largest v in [1, limit] with fits(v), 0 if none; `fits` must be monotone
// (true up to some value, false after): doubling, then bisection.
int64_t largest_fitting(const std::function<bool(int64_t)>& fits, int64_t limit);

}  // namespace vram::fit

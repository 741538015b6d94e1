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

Fit fit_for(int64_t peak, int64_t total, int64_t capacity, const std::string& name);

// Largest v in [1, limit] with fits(v), 0 if none; `fits` must be monotone
// (true up to some value, false after): doubling, then bisection.
int64_t largest_fitting(const std::function<bool(int64_t)>& fits, int64_t limit);

}  // namespace vram::fit

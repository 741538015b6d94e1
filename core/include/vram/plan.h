// The layout planner (DESIGN.md §2 "Planner"; issue 6: "will this fit across
// my N GPUs, and with which layout?"): every layout of a GPU budget the
// framework can run, estimated and ranked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vram/request.h"
#include "vram/status.h"

namespace vram {

struct PlanOptions {
  // Layout family: "deepspeed" (ZeRO 0-3, pipelines with ZeRO-0/1),
  // "fsdp" (no_shard, shard_grad_op, full_shard, hybrid_shard) or
  // "megatron" (DDP or the distributed optimizer, sequence parallel with tp).
  std::string framework = "deepspeed";
  int64_t top = 10;                 // candidates returned
  bool allow_checkpointing = true;  // also try full activation checkpointing
  bool allow_offload = true;        // CPU offload, tried only when nothing else fits
};

struct PlanCandidate {
  ParallelOptions layout;
  Checkpointing checkpointing = Checkpointing::kNone;
  std::string label;  // "ZeRO-2, dp 8", "tp 2 x pp 2 x dp 2, ZeRO-1", ...
  int64_t peak_bytes = 0;
  // peak_bytes is the allocator replay's (true for every returned candidate;
  // the search ranks the rest on their live tensors, a lower bound).
  bool replayed = false;
  double utilization = 0;
  bool fits = false;
  bool headroom_ok = false;
  int64_t max_micro_batch = 0;
  // Step time relative to the same work without recomputation or pipeline
  // bubble: (4/3 with full recompute) x (1 + (pp - 1) / (m vp)).
  double step_time_factor = 1;
  double comm_factor = 1;  // data-parallel traffic relative to DDP (ZeRO-3 / FULL_SHARD 1.5)
  std::vector<std::string> why;
};

struct Plan {
  int64_t gpus = 0;
  std::string gpu;
  int64_t capacity_bytes = 0;
  int64_t considered = 0;
  int64_t fitting = 0;
  std::vector<PlanCandidate> candidates;  // best first
  std::vector<std::string> notes;
};

// `req` is a parsed training request whose parallel.gpus is the GPU budget
// and whose gpu names the card. Never throws.
Result<Plan> plan_request(const Request& req, const PlanOptions& options);

}  // namespace vram

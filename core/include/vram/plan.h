// The layout planner (DESIGN.md §2 "Planner"; issue 6: "will this fit across
// my N GPUs, and with which layout?"): every layout of a GPU budget the
// framework can run, estimated and ranked.
#pragma once

#include <cstdint>
#include <optional>
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
  // Host RAM per node (plan.host_ram_gib); unset = kDefaultHostRamPerGpuMemory
  // x the node's GPU memory, stated in the plan's notes.
  std::optional<double> host_ram_gib;
  // Samples per optimizer step every layout keeps (plan.global_batch);
  // unset = parallel.gpus x micro_batch x grad_accum.
  std::optional<int64_t> global_batch;
};

// Host RAM assumed per node when plan.host_ram_gib is not given: twice the
// node's GPU memory, the low end of what GPU servers ship with (NVIDIA DGX
// A100 640GB: 2 TB of system memory, 3.2x; DGX H100: 2 TB for 640 GB, 3.2x;
// AWS p4d.24xlarge: 1,152 GiB for 8 x 40 GB, 3.6x; g5.12xlarge: 192 GiB for
// 4 x 24 GB, 2x).
inline constexpr double kDefaultHostRamPerGpuMemory = 2.0;

struct PlanCandidate {
  ParallelOptions layout;
  Checkpointing checkpointing = Checkpointing::kNone;
  std::string label;  // "ZeRO-2, dp 8", "tp 2 x pp 2 x dp 2, ZeRO-1", ...
  int64_t peak_bytes = 0;
  // peak_bytes is the allocator replay's (true for every returned candidate;
  // the search ranks the rest on their live tensors, a lower bound).
  bool replayed = false;
  double utilization = 0;
  // How far from fitting: the larger of peak / capacity (utilization) and
  // host_bytes / host RAM; at most 1 when it fits. Layouts that do not fit
  // rank by it, the closest first.
  double fit_ratio = 0;
  bool fits = false;
  bool headroom_ok = false;
  int64_t max_micro_batch = 0;
  // The global batch held fixed (issue 18): data parallel and accumulation
  // fill it, so every layout trains the same samples per optimizer step.
  int64_t grad_accum = 1;
  int64_t global_batch = 0;
  // Host RAM the layout needs per node for what it offloads (optimizer
  // states, fp32 master weights and gradients, parameters, with DeepSpeed's
  // pinned-buffer factor), 0 without offload; host_fits compares it with the
  // plan's host RAM.
  int64_t host_bytes = 0;
  bool host_fits = true;
  double host_ratio = 0;  // host_bytes / the plan's host RAM
  // Step time relative to the same work without recomputation or pipeline
  // bubble: (4/3 with full recompute) x (1 + (pp - 1) / (m vp)).
  double step_time_factor = 1;
  double comm_factor = 1;  // data-parallel traffic relative to DDP (ZeRO-3 / FULL_SHARD 1.5)
  // The time model's step (core/src/speed, issue 31) on the plan's card,
  // {fast, slow} seconds; both 0 when the card has no speed figures. Every
  // layout trains the same global batch, so the step times compare the same
  // work; the price (0: none) gives the cost of a million tokens.
  double step_seconds_low = 0;
  double step_seconds_high = 0;
  double tokens_per_second_per_gpu_low = 0;
  double tokens_per_second_per_gpu_high = 0;
  double usd_per_million_tokens_low = 0;
  double usd_per_million_tokens_high = 0;
  std::vector<std::string> why;
};

struct Plan {
  int64_t gpus = 0;
  std::string gpu;
  int64_t capacity_bytes = 0;
  int64_t considered = 0;
  int64_t global_batch = 0;
  int64_t host_ram_bytes = 0;  // per node
  bool host_ram_default = true;
  // The precision the search ran with when it differs from the request's
  // (DeepSpeed / Megatron plan bf16 as mixed_bf16): Apply sets it too.
  bool precision_changed = false;
  std::string precision;
  int64_t fitting = 0;
  std::vector<PlanCandidate> candidates;  // best first
  std::vector<std::string> notes;
};

// `req` is a parsed training request whose parallel.gpus is the GPU budget
// and whose gpu names the card. Never throws.
Result<Plan> plan_request(const Request& req, const PlanOptions& options);

}  // namespace vram

// Private: how data-parallel sharding divides the model state of one rank
// (ZeRO paper §5; DeepSpeed stage_1_and_2.py / stage3.py; FSDP
// ShardingStrategy; Megatron-LM distributed optimizer).
#pragma once

#include <cstdint>
#include <string>

#include "vram/request.h"

namespace vram::memory {

// How data-parallel sharding treats the model state.
struct Sharding {
  int64_t group = 1;         // ranks the dense state is sharded over
  int64_t expert_group = 1;  // ranks the routed experts' state is sharded over (group / ep)
  bool states = false;       // optimizer states and fp32 master (ZeRO-1+, FSDP, Megatron)
  bool grads = false;        // gradients (ZeRO-2+, FSDP)
  bool weights = false;      // parameters (ZeRO-3, FSDP FULL_SHARD / HYBRID_SHARD)
  bool deepspeed = false;
  bool fsdp = false;
  bool megatron = false;     // Megatron-LM distributed optimizer
  bool ddp_buckets = false;  // DDP all-reduce buckets hold a second copy of the grads
  std::string label;         // "DDP", "ZeRO-2", "FSDP full_shard", ...
};

Sharding sharding_for(const ParallelOptions& p);

}  // namespace vram::memory

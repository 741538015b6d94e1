// Private: how a multi-GPU layout cuts the model and its state for one rank
// (issue 6; research/memory-internals.md §5).
#pragma once

#include <cstdint>
#include <string>

#include "vram/request.h"

namespace vram::train {

// One pipeline stage as seen by its ranks.
struct Stage {
  bool first = true;      // holds the input embeddings (and the vision tower)
  bool last = true;       // holds the final norm, lm_head and the loss
  int64_t layers = 0;     // decoder layers on this stage
  int64_t in_flight = 1;  // micro-batches whose activations the stage holds (1F1B)
};

// The request one rank of `stage` estimates: tensor parallel divides every
// Linear and embedding (Megatron column/row parallel, vocab-parallel
// embeddings and loss), heads, KV heads (never below one) and MLP widths;
// context parallel divides the sequence; the pipeline keeps the stage's
// layers and, on the first / last stage, the embeddings / head.
Request rank_request(const Request& req, const Stage& stage);

// How data-parallel sharding treats the model state.
struct Sharding {
  int64_t group = 1;     // ranks the state is sharded over
  bool states = false;   // optimizer states and fp32 master (ZeRO-1+, FSDP)
  bool grads = false;    // gradients (ZeRO-2+, FSDP)
  bool weights = false;  // parameters (ZeRO-3, FSDP FULL_SHARD / HYBRID_SHARD)
  bool deepspeed = false;
  bool fsdp = false;
  bool ddp_buckets = false;  // DDP all-reduce buckets hold a second copy of the grads
  std::string label;         // "DDP", "ZeRO-2", "FSDP full_shard", ...
};

Sharding sharding_for(const ParallelOptions& p);

// NCCL communicators this rank joins (one per parallel dimension above 1).
int64_t communicators(const ParallelOptions& p);

}  // namespace vram::train

// Private: how a multi-GPU layout cuts the model and its state for one rank
// (issue 6; research/memory-internals.md §2.4 and §5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/sharding.h"
#include "vram/request.h"

namespace vram::train {

using memory::Sharding;
using memory::sharding_for;

// One pipeline rank: the layers it holds and the activations it keeps.
struct Stage {
  int64_t index = 0;
  bool first = true;             // holds the input embeddings (and the vision tower)
  bool last = true;              // holds the final norm, lm_head and the loss
  int64_t layers = 0;            // decoder layers on this rank (all its model chunks)
  int64_t moe_layers = 0;        // of which sparse (MoE layers are the top ones)
  int64_t ssm_layers = 0;        // of which run a state-space mixer
  int64_t attention_layers = 0;  // of which run attention
  int64_t first_layer = 0;       // the stage's first layer (vp == 1)
  // Activations held at the schedule's peak, in micro-batches of this rank's
  // whole layer set: in_flight_num / in_flight_den (fractional when the
  // interleaved schedule holds some model chunks for more micro-batches).
  int64_t in_flight_num = 1;
  int64_t in_flight_den = 1;
  double in_flight() const { return static_cast<double>(in_flight_num) / static_cast<double>(in_flight_den); }
};

// The whole model on one rank (no pipeline).
Stage whole_model(const Request& req);

// Every pipeline rank, stage 0 first. Layers split evenly with the remainder
// on the first stages; 1F1B holds min(pp - r, m) micro-batches on rank r
// (Megatron schedules.py: pp - r - 1 warm-up forwards plus the one in flight;
// Korthikanti et al. 2022 §4.2.3); the interleaved schedule (vp model chunks
// per rank) holds min(2(pp - r - 1) + (vp - 1) pp + 1, m vp) chunks, which on
// rank 0 is L (1 + (pp - 1) / (pp vp)) layers' worth (Korthikanti et al. §4.2.3).
std::vector<Stage> pipeline_stages(const Request& req);

// The request one rank of `stage` estimates: tensor parallel divides every
// Linear and embedding (Megatron column/row parallel, vocab-parallel
// embeddings and loss), heads, KV heads (never below one) and MLP widths;
// expert parallel keeps experts / ep routed experts per MoE layer; context
// parallel divides the sequence; the pipeline keeps the stage's layers and,
// on the first / last stage, the embeddings / head.
Request rank_request(const Request& req, const Stage& stage);

// NCCL memory of one rank (research/memory-internals.md §2.4).
struct NcclMemory {
  int64_t bytes = 0;
  int64_t communicators = 0;
  bool nvls = false;
  std::string formula;
};

NcclMemory nccl_memory(const Request& req, const Stage& stage);

}  // namespace vram::train

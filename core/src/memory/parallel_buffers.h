// Private memory term: the buffers a multi-GPU layout adds on one rank —
// parameters gathered for compute (ZeRO-3, FSDP), gradient communication
// buckets (DDP, DeepSpeed, FSDP), context-parallel K/V exchange and the
// expert-parallel token dispatch (research/memory-internals.md §2.4, §5).
#pragma once

#include <cstdint>
#include <string>

#include "memory/model_state.h"
#include "memory/recipe.h"
#include "memory/sharding.h"
#include "vram/request.h"

namespace vram::memory {

struct ParallelBuffers {
  int64_t layer_params = 0;  // one decoder layer's parameters on this rank (FSDP unit, ZeRO-3 gather)
  int64_t root_params = 0;   // parameters outside the layers (FSDP root unit)
  int64_t gathered = 0;      // parameters gathered for compute
  std::string gathered_formula;
  int64_t comm = 0;  // gradient communication buckets
  std::string comm_formula;
  int64_t cp_kv = 0;     // one context-parallel K + V receive buffer
  int64_t dispatch = 0;  // expert-parallel all-to-all send + receive
};

// `req` is the rank's view of the model, `par` the layout as the user gave it.
ParallelBuffers parallel_buffers(const Request& req, const ParallelOptions& par, const TrainablePlan& plan,
                                 const Dtypes& dt, const Sharding& sh, const StateSizes& sz, int64_t micro_batch);

}  // namespace vram::memory

// Private: one training step of one rank as an ordered sequence of tensors
// (memory/timeline.h), built from the memory terms in core/src/memory/.
#pragma once

#include <cstdint>
#include <string>

#include "memory/activation_stack.h"
#include "memory/caching_allocator.h"
#include "memory/loss.h"
#include "memory/model_state.h"
#include "memory/parallel_buffers.h"
#include "memory/recipe.h"
#include "memory/sharding.h"
#include "memory/timeline.h"
#include "train/layout.h"
#include "vram/optimizers.h"
#include "vram/request.h"

namespace vram::train {

// What one rank's estimate is made of that does not depend on the
// micro-batch: computed once, then reused by searches over the micro-batch
// (fit.h max_micro_batch) instead of re-running the whole estimate.
struct RankBasis {
  const Request* req = nullptr;     // the rank's view of the model (layout.h rank_request)
  const Request* global = nullptr;  // the request as the user gave it
  Stage stage;
  const OptimizerInfo* opt = nullptr;
  memory::Dtypes dt;
  memory::TrainablePlan plan;
  memory::Sharding sh;
  memory::RankState state;
  memory::StatePieces pieces;
  NcclMemory nccl;
  int64_t cublas = 0;
  int64_t context = 0;
  memory::AllocatorConfig allocator;  // request.allocator, parsed once for every replay of this rank
};

// Throws Failure naming the request field (plan_trainable).
RankBasis rank_basis(const Request& req, const Request& global, const Stage& stage);

// The terms that depend on the micro-batch.
struct StepTerms {
  int64_t micro_batch = 1;
  memory::ParallelBuffers buffers;
  memory::ActivationStack act;
  memory::LossBuffers loss;
};

StepTerms step_terms(const RankBasis& basis, int64_t micro_batch);

// The step in order: load (model state, workspaces), forward layer by layer,
// loss forward and backward, the backward sweep from the top layer down
// (each layer's saved tensors freed as its gradients appear), the optimizer
// step. Marks the phases the result reports.
memory::Timeline training_step(const RankBasis& basis, const StepTerms& terms);

}  // namespace vram::train

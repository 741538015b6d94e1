// Private: one training step of one rank as an ordered sequence of tensors
// (memory/timeline.h), built from the memory terms in core/src/memory/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memory/activation_stack.h"
#include "memory/allocator_replay.h"
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

// What one rank's estimate is made of that does not depend on the tokens of
// a micro-batch: computed once, then reused by every step built on this rank
// (the padded steps of train.padding longest, the searches' probes) instead
// of re-running the whole estimate. Move-only (it caches allocator states).
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
  memory::ParallelBuffers buffers;  // gathered parameters, gradient buckets
  NcclMemory nccl;
  int64_t cublas = 0;
  int64_t context = 0;
  memory::AllocatorConfig allocator;  // request.allocator, parsed once for every replay of this rank
  // The load every step of this rank starts with (model state, workspaces,
  // buckets, kept gradients): training_step copies it and appends the step.
  memory::Timeline load;

  // The caching allocator after `load` under a bound (DeviceLimits::capacity,
  // 0 = none), replayed on first use and kept: every step replayed on this
  // rank starts from a copy of it.
  const memory::LoadedAllocator& loaded(int64_t capacity) const;

 private:
  mutable std::vector<std::unique_ptr<memory::LoadedAllocator>> loaded_;
};

// Throws Failure naming the request field (plan_trainable).
RankBasis rank_basis(const Request& req, const Request& global, const Stage& stage);

// The terms that depend on the tokens of a micro-batch.
struct StepTerms {
  int64_t micro_batch = 1;
  int64_t seq_len = 0;
  memory::TokenBuffers tokens;  // context-parallel K/V, expert-parallel dispatch
  memory::ActivationStack act;
  memory::LossBuffers loss;
};

// `micro_batch` sequences of `seq_len` tokens (the request's own when 0).
StepTerms step_terms(const RankBasis& basis, int64_t micro_batch, int64_t seq_len = 0);

// The step in order: the rank's load (RankBasis::load), forward layer by
// layer, loss forward and backward, the backward sweep from the top layer
// down (each layer's saved tensors freed as its gradients appear), the
// optimizer step. Marks the phases the result reports. With `with_load`
// false, the step alone (Timeline::step_begin 0): what an allocator replay
// runs before the measured steps (memory::replay_reserved `before`).
memory::Timeline training_step(const RankBasis& basis, const StepTerms& terms, bool with_load = true);

}  // namespace vram::train

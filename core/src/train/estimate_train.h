// Private: the single-GPU training step estimate.
#pragma once

#include "vram/gpus.h"
#include "vram/request.h"
#include "vram/result.h"

namespace vram::train {

// Reserved memory comes from replaying the step's tensors through a model of
// PyTorch's caching allocator (memory/allocator_replay.h); a given
// overheads.fragmentation factor replaces the replay.

// How the reserved view is found: the caching-allocator replay (what every
// shown answer uses), or the live tensors alone (reserved = allocated, a
// lower bound of the replay, for ranking many layouts cheaply).
enum class ReservedView { kReplay, kLiveTensors };

Result<Estimate> estimate_train(const Request& req, ReservedView view = ReservedView::kReplay);

// Largest micro-batch whose per-GPU peak fits `capacity`, 0 if none: each
// rank's micro-batch-independent terms are computed once, then only the
// terms that scale with the micro-batch per probe. With `allow_paging`, a
// paged optimizer's managed states may overflow the card (fit.h runs_on).
int64_t max_micro_batch(const Request& req, int64_t capacity, bool allow_paging = false);

// The longest sequence searched (2^20 tokens): a longer one is reported as
// this bound.
inline constexpr int64_t kMaxSearchedSeqLen = int64_t{1} << 20;

// Longest sequence (tokens per sample, at the request's micro-batch) whose
// per-GPU peak fits `capacity`, 0 if none, the same way: how Unsloth and
// LLaMA-Factory publish what fits a card. The model's own context limit is
// not applied here (the result states it).
int64_t max_seq_len(const Request& req, int64_t capacity);

}  // namespace vram::train

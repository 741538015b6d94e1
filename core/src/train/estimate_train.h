// Private: the single-GPU training step estimate.
#pragma once

#include <memory>
#include <vector>

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

// The reserved range's smaller jobs replayed for one rank: (micro-batch,
// sequence, card capacity) -> max_memory_reserved, a few dozen at most. A
// search keeps one per rank over its probes; the planner hands a layout's
// (RankMemos, by pipeline rank) from its estimate to its micro-batch search,
// which replays the same jobs of the same ranks again otherwise.
struct ReservedMemo {
  struct Job {
    int64_t micro_batch = 0;
    int64_t seq_len = 0;
    int64_t card_capacity = 0;
    int64_t reserved = 0;
  };
  std::vector<Job> seen;
};
using RankMemos = std::vector<ReservedMemo>;

// Each rank's micro-batch- and sequence-independent terms of one request
// (train/step.h RankBasis: the rank's view of the model, the model state,
// the load and the allocator after it), built once and shared by the
// request's estimates and fit searches: the planner estimates a layout on
// its live tensors, then with the allocator replay, then searches its
// micro-batch. Empty when a rank's terms cannot be built (the estimate then
// builds them itself and reports why). `req` must outlive it.
class RankBases {
 public:
  explicit RankBases(const Request& req);
  ~RankBases();
  RankBases(const RankBases&) = delete;
  RankBases& operator=(const RankBases&) = delete;
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// `memos` (may be null): the smaller jobs replayed, by rank, kept and added to.
// `bases` (may be null): `req`'s ranks, built for it (RankBases).
Result<Estimate> estimate_train(const Request& req, ReservedView view = ReservedView::kReplay,
                                RankMemos* memos = nullptr, const RankBases* bases = nullptr);

// The longest sequence searched (2^20 tokens): a longer one is reported as
// this bound.
inline constexpr int64_t kMaxSearchedSeqLen = int64_t{1} << 20;

// The fit searches of one request on one card: each rank's micro-batch- and
// sequence-independent terms (train/step.h RankBasis: the parsed layout, the
// model state, the load and the allocator after it) are built once for every
// search, then only the terms that scale with the micro-batch or the
// sequence per probe. A probe checks the live tensors first (a lower bound:
// reserved >= allocated) and replays the caching allocator only when that
// bound fits. `req` must outlive the search.
class FitSearch {
 public:
  // `bases` (may be null): `req`'s ranks, built for it (RankBases), shared.
  explicit FitSearch(const Request& req, const RankBases* bases = nullptr);
  ~FitSearch();
  FitSearch(const FitSearch&) = delete;
  FitSearch& operator=(const FitSearch&) = delete;

  // Largest micro-batch whose per-GPU peak fits `capacity`, 0 if none. With
  // `allow_paging`, a paged optimizer's managed states may overflow the card
  // (fit.h runs_on).
  // `memos` (may be null): the smaller jobs an estimate of the same request
  // replayed (estimate_train), used and added to; replays() then counts only
  // those not already there.
  int64_t max_micro_batch(int64_t capacity, bool allow_paging = false, RankMemos* memos = nullptr);
  // Longest sequence (tokens per sample, at the request's micro-batch) whose
  // per-GPU peak fits `capacity`, 0 if none: how Unsloth and LLaMA-Factory
  // publish what fits a card. The model's own context limit is not applied
  // here (the result states it).
  int64_t max_seq_len(int64_t capacity);

  // What the searches so far ran (result fit.search): steps built and checked
  // (one per rank and probe), and the caching-allocator replays among them (a
  // bounded replay that stops at a failed malloc and the unbounded one after it are two; so is each smaller
  // job of the reserved range's upper end, replayed once per search).
  int64_t probes() const { return probes_; }
  int64_t replays() const { return replays_; }

 private:
  const Request& req_;
  std::unique_ptr<RankBases> own_;  // when none is shared
  const RankBases* bases_ = nullptr;
  int64_t probes_ = 0;
  int64_t replays_ = 0;
};

// One search on its own (the planner's candidates).
int64_t max_micro_batch(const Request& req, int64_t capacity, bool allow_paging = false, RankMemos* memos = nullptr,
                        const RankBases* bases = nullptr);

}  // namespace vram::train

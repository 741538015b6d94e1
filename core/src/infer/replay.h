// Private: a serving job as a timeline of tensors, replayed like a training
// step (memory/timeline.h, memory/allocator_replay.h): the load (the weights
// tensor by tensor, the cuBLAS workspace), then one request's step, whose
// live bytes at each mark are the phases' allocated view and whose replay
// through the caching-allocator model is their reserved view. infer/generate.cpp
// decides which tensors exist when.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "infer/serving.h"
#include "memory/caching_allocator.h"
#include "memory/timeline.h"

namespace vram::infer {

// The weights as loaded: one allocation per parameter tensor (a Linear's
// weight and its bias apart; a quantised Linear's codes and scales as one),
// each tensor-parallel rank's share. Their sum is about Fixed::weights (the
// checkpoint format spreads the stored bytes over the parameters). With
// `engine_layout`, as vLLM's and SGLang's layers hold them: a routed expert
// group is one tensor per layer of all its experts (FusedMoE's w13_weight
// [E, 2I, H] and w2_weight [E, H, I]: vllm/model_executor/layers/fused_moe/
// layer.py FusedMoE create_weights; gate and up stay two pieces here), and a
// quantised Linear's codes and scales are two allocations.
std::vector<memory::Piece> weight_pieces(const ModelSpec& m, const Serving& sv, bool engine_layout = false);

// A serving request as a timeline: the load, then one request. Each mark()
// is also a moment whose max_memory_reserved() the caching-allocator model
// gives: the timeline replayed up to it. empty_cache() stands for
// torch.cuda.empty_cache(): every cached segment without a live block goes
// back to the device, so a mark after it replays only the tensors still live
// then (in their order) and what follows (after_empty_cache). The marks'
// replays share their events: timeline_phases runs them in one pass.
struct ServingTimeline {
  memory::Timeline tl;
  struct Upto {
    int32_t event = -1;    // the mark's index in tl.events()
    int64_t emptied = -1;  // tl.events() index of the last empty_cache() before it, or -1
  };
  std::vector<Upto> upto;  // one per mark, in order
  // Bytes outside PyTorch's allocator by phase key (CUDA graphs, vLLM's
  // non-torch memory): added to the phase's device view under their own keys.
  std::map<std::string, std::map<std::string, int64_t>> outside;
  void mark(const char* phase, const char* label);
  void empty_cache() { emptied_ = static_cast<int64_t>(tl.events().size()); }

 private:
  int64_t emptied_ = -1;  // tl.events() index of the last empty_cache(), or -1
};

// The caching allocator after a serving timeline's load, kept for the next
// replay of the same load: the weights' thousands of mallocs are the same on
// every card of the GPU table and every probe of a search, and replay once.
// A load (a run's allocations and frees before its first mark) replayed
// without the limits acting (CachingAllocator::limits_idle) is in the state
// a bounded replay of it reaches on any card whose bound is at least its
// peak reserved bytes: the bound acts only where a new segment would take
// the reserved total past it (caching_allocator.cpp alloc_block), and with
// expandable segments, which size their address space by it (so never kept
// then). infer::Serving::memo points at one for a sweep of estimates.
struct LoadMemo {
  struct Entry {
    memory::AllocatorConfig config;
    std::vector<int64_t> key;  // the load's mallocs and frees (replay.cpp load_key)
    size_t ops = 0;            // its allocations and frees
    memory::CachingAllocator alloc;
    std::vector<memory::Handle> handles;  // its mallocs', in order
  };
  std::vector<Entry> entries;  // a few loads (one per pipeline stage's start-up)
  int64_t hits = 0;
};

// What the allocator replays for a mark: `tl` after torch.cuda.empty_cache()
// at event `at` (0: from the start), up to event `end` (excluded; -1: every
// event): the tensors live at `at`, allocated again in their order, then
// every event from `at` on.
memory::Timeline after_empty_cache(const memory::Timeline& tl, size_t at, int64_t end = -1);

// The load: the weights (Fixed::weights bytes, weight_pieces as allocated)
// after transformers' caching-allocator warm-up, the cuBLAS workspace and
// overheads.misc_bytes, marked "weights_loaded".
ServingTimeline serving_load(const Request& req, const Serving& sv);

// memory_reserved() at the timeline's last mark so far, as torch reports it
// after torch.cuda.empty_cache() there (the load replayed on the card's
// bound; a timeline that frees nothing before it keeps every segment it
// made): what an engine that measures free device memory sees. With
// overheads.fragmentation, allocated x (1 + fragmentation) instead.
int64_t reserved_at_last_mark(const Request& req, const Serving& sv, const ServingTimeline& st);

// The phases of a serving timeline into `e` (one per phase key, in order):
// the live bytes of each component at the phase's mark; reserved bytes from
// the caching-allocator replay of the load and one request up to the mark
// (max_memory_reserved() then: the cache only grows, its segments go back
// to the device only when a malloc fails), bounded by the request's card as
// on the card, or overheads.fragmentation when given; the device view adds
// the CUDA context and NCCL; and the allocator's max_memory_reserved in
// e.peak_reserved_bytes. `run` names what was replayed after the load ("one
// generate call"). Returns the allocator component's formula ("" with
// overheads.fragmentation).
std::string timeline_phases(Estimate& e, const Request& req, const Serving& sv, const ServingTimeline& st,
                            const char* run = "one generate call");

}  // namespace vram::infer

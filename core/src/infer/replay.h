// Private: a serving job as a timeline of tensors, replayed like a training
// step (memory/timeline.h, memory/allocator_replay.h): the load (the weights
// tensor by tensor, the cuBLAS workspace), then one request's step, whose
// live bytes at each mark are the phases' allocated view and whose replay
// through the caching-allocator model is their reserved view. infer/generate.cpp
// decides which tensors exist when.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "infer/serving.h"
#include "memory/timeline.h"

namespace vram::infer {

// The weights as loaded: one allocation per parameter tensor (a Linear's
// weight and its bias apart; a quantised Linear's codes and scales as one),
// each tensor-parallel rank's share. Their sum is about Fixed::weights (the
// checkpoint format spreads the stored bytes over the parameters).
std::vector<memory::Piece> weight_pieces(const ModelSpec& m, const Serving& sv);

// A serving request as a timeline: the load, then one request. mark()
// also keeps the timeline up to that moment: its replay through the
// caching-allocator model is max_memory_reserved() there.
struct ServingTimeline {
  memory::Timeline tl;
  std::vector<memory::Timeline> upto;  // one per mark, in order
  void mark(const char* phase, const char* label) {
    tl.mark(phase, label);
    upto.push_back(tl);
    upto.back().begin_step();
  }
};

// The load: the weights (Fixed::weights bytes, weight_pieces as allocated)
// after transformers' caching-allocator warm-up, the cuBLAS workspace and
// overheads.misc_bytes, marked "weights_loaded".
ServingTimeline serving_load(const Request& req, const Serving& sv);

// The phases of a serving timeline into `e` (one per phase key, in order):
// the live bytes of each component at the phase's mark; reserved bytes from
// the caching-allocator replay of the load and one request up to the mark
// (max_memory_reserved() then: the cache only grows, its segments go back
// to the device only when a malloc fails), bounded by the request's card as
// on the card, or overheads.fragmentation when given; the device view adds
// the CUDA context and NCCL; and the allocator's max_memory_reserved in
// e.peak_reserved_bytes. Returns the allocator component's formula ("" with
// overheads.fragmentation).
std::string timeline_phases(Estimate& e, const Request& req, const Serving& sv, const ServingTimeline& st);

}  // namespace vram::infer

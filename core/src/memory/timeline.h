// Private: a step as an ordered sequence of tensors (docs/architecture.md).
//
// Every memory term says which tensors exist, of what size, and when they are
// created and freed during the step (load, each layer's forward, loss, each
// layer's backward, optimizer step). The estimate replays that sequence: the
// live bytes per component at each marked moment are the phases, their
// maximum is the peak. The same sequence, tensor by tensor, is what an
// allocator model replays to find reserved memory.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace vram::memory {

// Where a tensor lives. Managed tensors (CUDA unified memory: bitsandbytes
// paged optimizers) occupy the device but are not counted by
// torch.cuda.memory_allocated and never pass through the caching allocator.
enum class Residence { kAllocated, kManaged };

// `count` separate allocations of `bytes` each: how one tensor term is
// really allocated (one weight per Linear, one saved tensor per kernel).
struct Piece {
  int64_t bytes = 0;
  int64_t count = 1;
};

// Names are string literals: a step holds a few hundred tensors and the page
// replays it on every edit. A tensor is plain values (its pieces live in the
// timeline's one array), so a timeline copies like an array: each step of a
// rank starts from a copy of the rank's load (train/step.h).
struct Tensor {
  const char* component = "";  // the component key it counts under ("weights", "activations", ...)
  const char* name = "";       // for people: "saved activations"
  int32_t layer = -1;          // the decoder layer it belongs to, or -1
  int32_t component_id = 0;    // Timeline::components() index of `component`
  int64_t bytes = 0;           // exact size from the term's formula
  // The individual allocations behind `bytes` (Timeline::pieces), largest
  // first; none = one allocation of `bytes`. Their sum may differ from
  // `bytes` by rounding of per-token figures; `bytes` is what the allocated
  // view counts.
  int32_t piece_begin = 0;
  int32_t piece_count = 0;
  // The mallocs it makes through the caching allocator (pieces of 0 bytes
  // and managed tensors make none), and the first one's number among the
  // timeline's: where a replay keeps their handles.
  int64_t mallocs = 0;
  int64_t first_malloc = 0;
  Residence residence = Residence::kAllocated;
  // The CUDA stream it is allocated on (Stream below). The caching allocator
  // reuses a freed block only for a malloc on the stream that allocated it
  // (CUDACachingAllocator.cpp BlockComparatorSize orders blocks by stream
  // first), so a tensor on a side stream keeps its block out of the default
  // stream's reach for good; the allocated view ignores streams.
  int32_t stream = 0;
};

// Streams a step allocates on: 0 is the default (compute) stream. FSDP2
// (torch/distributed/_composable/fsdp/_fsdp_param_group.py FSDPCommContext)
// allocates its all-gather buffers on the all-gather copy-in stream and the
// reduce-scatter outputs (the sharded gradients) on the reduce-scatter stream.
// FSDP1 (parallel_buffers.h Fsdp1Units) unshards on its unshard stream and,
// under CPU offload, copies the shards in on its pre-unshard stream; its
// sharded gradients are allocated on its post-backward stream (torch 2.2
// _runtime_utils.py _post_backward_hook: `with
// state._device_handle.stream(state._post_backward_stream)` around
// _reduce_grad, whose new_sharded_grad becomes the FlatParameter's .grad).
enum Stream : int32_t {
  kDefaultStream = 0,
  kAllGatherCopyInStream = 1,
  kReduceScatterStream = 2,
  kFsdp1UnshardStream = 3,
  kFsdp1PreUnshardStream = 4,
  kFsdp1PostBackwardStream = 5,
};

struct Event {
  enum class Op { kAlloc, kFree, kMark };
  Op op = Op::kAlloc;
  int32_t index = -1;  // a tensor (kAlloc, kFree) or a mark (kMark)
};

// A moment of the step the result reports. Several marks may share a phase
// key (the backward sweep marks every layer); the phase is the one with the
// most live bytes.
struct Mark {
  const char* phase = "";
  const char* label = "";
};

class Timeline {
 public:
  using Id = int32_t;

  Id alloc(const char* component, const char* name, int64_t bytes, std::span<const Piece> pieces = {},
           Residence residence = Residence::kAllocated, int32_t layer = -1);
  Id alloc(const char* component, const char* name, int64_t bytes, std::initializer_list<Piece> pieces,
           Residence residence = Residence::kAllocated, int32_t layer = -1) {
    return alloc(component, name, bytes, std::span<const Piece>(pieces.begin(), pieces.size()), residence, layer);
  }
  // The same on a side stream (Stream).
  Id alloc_on(int32_t stream, const char* component, const char* name, int64_t bytes,
              std::span<const Piece> pieces = {}, int32_t layer = -1);
  void free(Id id);
  // Frees `id` and allocates a tensor of the same component, name and stream with a
  // new size (a buffer that grows or shrinks between two moments).
  Id resize(Id id, int64_t bytes, std::span<const Piece> pieces = {});
  void mark(const char* phase, const char* label);
  // Everything before this point is loaded once (weights, states,
  // workspaces); everything after it is one training step, which frees all
  // it allocates, so it can be replayed again (steady state, step >= 2).
  void begin_step() { step_begin_ = events_.size(); }
  size_t step_begin() const { return step_begin_; }

  const std::vector<Event>& events() const { return events_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Mark>& marks() const { return marks_; }
  std::span<const Piece> pieces(const Tensor& t) const {
    return {pieces_.data() + t.piece_begin, static_cast<size_t>(t.piece_count)};
  }
  // The distinct component keys, in order of first use (Tensor::component_id).
  const std::vector<const char*>& components() const { return components_; }
  // Pieces of every tensor together.
  size_t piece_count() const { return pieces_.size(); }
  // Room for this many events, tensors and pieces in all, so that a step
  // appended to a copied load grows no array (copy the load in after).
  void reserve(size_t events, size_t tensors, size_t pieces) {
    events_.reserve(events);
    tensors_.reserve(tensors);
    pieces_.reserve(pieces);
  }
  // Every tensor's mallocs together (Tensor::first_malloc + mallocs).
  int64_t mallocs() const { return mallocs_; }

 private:
  int32_t component_id(const char* component);

  std::vector<Event> events_;
  std::vector<Tensor> tensors_;
  std::vector<Mark> marks_;
  std::vector<Piece> pieces_;
  std::vector<const char*> components_;
  int64_t mallocs_ = 0;
  size_t step_begin_ = 0;
};

// What is live at one phase: bytes per component (a component with a live
// zero-byte tensor is listed with 0), split by residence.
struct Moment {
  std::string phase;
  std::string label;
  std::map<std::string, int64_t> parts;  // every live tensor, by component
  int64_t allocated = 0;                 // Residence::kAllocated bytes
  int64_t managed = 0;                   // Residence::kManaged bytes
  int32_t event = -1;                    // index of the mark in events()
};

// Replays the timeline: one Moment per phase key, in order of first
// appearance; a phase marked several times keeps its largest moment (the
// first of equals). Without `with_parts` the moments carry their totals only
// (what the searches read), not their bytes by component.
std::vector<Moment> replay(const Timeline& timeline, bool with_parts = true);

// The most live bytes of each component at any mark. A phase keeps only its
// largest moment, where a component need not be at its own largest (the
// backward phase of a model with a huge vocabulary peaks at the head, before
// any layer's backward temporaries exist): a component's size is its peak
// over every marked moment.
std::map<std::string, int64_t> component_peaks(const Timeline& timeline);

}  // namespace vram::memory

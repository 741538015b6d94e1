// A step as an ordered sequence of tensors (timeline.h).
#include "memory/timeline.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "memory/bytes.h"

namespace vram::memory {

Timeline::Id Timeline::alloc(const char* component, const char* name, int64_t bytes, std::vector<Piece> pieces,
                             Residence residence, int32_t layer) {
  const Id id = static_cast<Id>(tensors_.size());
  tensors_.push_back({component, name, layer, bytes, std::move(pieces), residence});
  events_.push_back({Event::Op::kAlloc, id});
  return id;
}

Timeline::Id Timeline::alloc_on(int32_t stream, const char* component, const char* name, int64_t bytes,
                                std::vector<Piece> pieces, int32_t layer) {
  const Id id = alloc(component, name, bytes, std::move(pieces), Residence::kAllocated, layer);
  tensors_.back().stream = stream;
  return id;
}

void Timeline::free(Id id) { events_.push_back({Event::Op::kFree, id}); }

Timeline::Id Timeline::resize(Id id, int64_t bytes, std::vector<Piece> pieces) {
  free(id);
  const Tensor& old = tensors_[static_cast<size_t>(id)];
  const int32_t stream = old.stream;
  const Id out = alloc(old.component, old.name, bytes, std::move(pieces), old.residence, old.layer);
  tensors_.back().stream = stream;
  return out;
}

void Timeline::mark(const char* phase, const char* label) {
  events_.push_back({Event::Op::kMark, static_cast<int32_t>(marks_.size())});
  marks_.push_back({phase, label});
}

std::vector<Moment> replay(const Timeline& timeline) {
  const auto& tensors = timeline.tensors();
  // Live bytes and live tensor count per component: a component is listed
  // while any of its tensors is alive, even at zero bytes.
  std::map<std::string_view, std::pair<int64_t, int64_t>> live;
  int64_t allocated = 0;
  int64_t managed = 0;
  // Every allocation of the step, summed: the caching-allocator replay runs
  // the load and the step twice and its segments and counters never exceed
  // what was ever requested (plus 2 MiB rounding per allocation), so 2^60
  // keeps all of them exact in int64_t. It is not a figure of the result:
  // the sum may pass 2^53 while every figure stays below it.
  constexpr int64_t kMaxRequested = int64_t{1} << 60;
  int64_t requested = 0;
  constexpr const char* kLive = "the tensors alive at one moment of the step";
  std::vector<Moment> out;
  for (size_t e = 0; e < timeline.events().size(); ++e) {
    const Event& ev = timeline.events()[e];
    if (ev.op != Event::Op::kMark) {
      const Tensor& t = tensors[static_cast<size_t>(ev.index)];
      const int64_t sign = ev.op == Event::Op::kAlloc ? 1 : -1;
      auto& slot = live[t.component];
      slot.first = bytes::add(slot.first, sign * t.bytes, kLive);
      slot.second += sign;
      int64_t& total = t.residence == Residence::kManaged ? managed : allocated;
      total = bytes::add(total, sign * t.bytes, kLive);
      bytes::add(allocated, managed, kLive);
      if (sign > 0) {
        int64_t pieces = 0;
        for (const Piece& p : t.pieces) {
          int64_t all = 0;
          if (__builtin_mul_overflow(p.bytes, p.count, &all) || __builtin_add_overflow(pieces, all, &pieces)) {
            bytes::too_large("the allocations of one step", kMaxRequested);
          }
        }
        if (__builtin_add_overflow(requested, std::max(pieces, t.bytes), &requested) || requested > kMaxRequested) {
          bytes::too_large("the allocations of one step", kMaxRequested);
        }
      }
      continue;
    }
    const Mark& m = timeline.marks()[static_cast<size_t>(ev.index)];
    Moment* same = nullptr;
    for (auto& x : out) {
      if (x.phase == m.phase) same = &x;
    }
    // A phase marked again keeps its largest moment (the first of equals).
    if (same != nullptr && allocated + managed <= same->allocated + same->managed) continue;
    if (same == nullptr) same = &out.emplace_back();
    same->phase = m.phase;
    same->label = m.label;
    same->allocated = allocated;
    same->managed = managed;
    same->event = static_cast<int32_t>(e);
    same->parts.clear();
    for (const auto& [k, v] : live) {
      if (v.second > 0) same->parts.emplace(std::string(k), v.first);
    }
  }
  return out;
}

std::map<std::string, int64_t> component_peaks(const Timeline& timeline) {
  std::map<std::string_view, int64_t> live;
  std::map<std::string, int64_t> peaks;
  for (const Event& ev : timeline.events()) {
    if (ev.op != Event::Op::kMark) {
      const Tensor& t = timeline.tensors()[static_cast<size_t>(ev.index)];
      // replay() has checked every sum.
      live[t.component] += ev.op == Event::Op::kAlloc ? t.bytes : -t.bytes;
      continue;
    }
    for (const auto& [k, v] : live) {
      int64_t& p = peaks[std::string(k)];
      p = std::max(p, v);
    }
  }
  return peaks;
}

}  // namespace vram::memory

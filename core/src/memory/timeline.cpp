// A step as an ordered sequence of tensors (timeline.h).
#include "memory/timeline.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "memory/bytes.h"

namespace vram::memory {

int32_t Timeline::component_id(const char* component) {
  // A handful of keys: a linear search, by address first (the same literal)
  // then by text (the same key written in two places).
  for (size_t i = 0; i < components_.size(); ++i) {
    if (components_[i] == component) return static_cast<int32_t>(i);
  }
  for (size_t i = 0; i < components_.size(); ++i) {
    if (std::string_view(components_[i]) == component) return static_cast<int32_t>(i);
  }
  components_.push_back(component);
  return static_cast<int32_t>(components_.size()) - 1;
}

Timeline::Id Timeline::alloc(const char* component, const char* name, int64_t bytes, std::span<const Piece> pieces,
                             Residence residence, int32_t layer) {
  const Id id = static_cast<Id>(tensors_.size());
  Tensor& t = tensors_.emplace_back();
  t.component = component;
  t.name = name;
  t.layer = layer;
  t.component_id = component_id(component);
  t.bytes = bytes;
  t.residence = residence;
  t.piece_begin = static_cast<int32_t>(pieces_.size());
  t.piece_count = static_cast<int32_t>(pieces.size());
  pieces_.insert(pieces_.end(), pieces.begin(), pieces.end());
  // What a replay mallocs (allocator_replay.cpp): each piece's count of
  // non-empty allocations, or `bytes` once; managed tensors bypass it.
  int64_t mallocs = 0;
  if (residence != Residence::kManaged) {
    if (pieces.empty()) {
      mallocs = bytes > 0 ? 1 : 0;
    } else {
      for (const Piece& p : pieces) {
        if (p.bytes > 0 && p.count > 0) mallocs += p.count;
      }
    }
  }
  t.mallocs = mallocs;
  t.first_malloc = mallocs_;
  mallocs_ += mallocs;
  events_.push_back({Event::Op::kAlloc, id});
  return id;
}

Timeline::Id Timeline::alloc_on(int32_t stream, const char* component, const char* name, int64_t bytes,
                                std::span<const Piece> pieces, int32_t layer) {
  const Id id = alloc(component, name, bytes, pieces, Residence::kAllocated, layer);
  tensors_.back().stream = stream;
  return id;
}

void Timeline::free(Id id) { events_.push_back({Event::Op::kFree, id}); }

Timeline::Id Timeline::resize(Id id, int64_t bytes, std::span<const Piece> pieces) {
  free(id);
  const Tensor old = tensors_[static_cast<size_t>(id)];
  const Id out = alloc(old.component, old.name, bytes, pieces, old.residence, old.layer);
  tensors_.back().stream = old.stream;
  return out;
}

void Timeline::mark(const char* phase, const char* label) {
  events_.push_back({Event::Op::kMark, static_cast<int32_t>(marks_.size())});
  marks_.push_back({phase, label});
}

namespace {

// A phase's largest moment so far (replay()).
struct Best {
  const char* phase = "";
  const char* label = "";
  int64_t allocated = 0;
  int64_t managed = 0;
  int32_t event = -1;
};

bool same_text(const char* a, const char* b) { return a == b || std::string_view(a) == b; }

// Live bytes and live tensor count of each component (Timeline::components()
// order): a component is listed while any of its tensors is alive, even at
// zero bytes.
struct LiveParts {
  std::vector<int64_t> bytes;
  std::vector<int64_t> count;
  explicit LiveParts(size_t n) : bytes(n, 0), count(n, 0) {}
  std::map<std::string, int64_t> listed(const Timeline& tl) const {
    std::map<std::string, int64_t> out;
    for (size_t c = 0; c < bytes.size(); ++c) {
      if (count[c] > 0) out.emplace(tl.components()[c], bytes[c]);
    }
    return out;
  }
};

}  // namespace

std::vector<Moment> replay(const Timeline& timeline, bool with_parts) {
  const auto& tensors = timeline.tensors();
  const auto& events = timeline.events();
  LiveParts live(timeline.components().size());
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
  std::vector<Best> best;
  for (size_t e = 0; e < events.size(); ++e) {
    const Event& ev = events[e];
    if (ev.op != Event::Op::kMark) {
      const Tensor& t = tensors[static_cast<size_t>(ev.index)];
      const int64_t sign = ev.op == Event::Op::kAlloc ? 1 : -1;
      const auto c = static_cast<size_t>(t.component_id);
      live.bytes[c] = bytes::add(live.bytes[c], sign * t.bytes, kLive);
      live.count[c] += sign;
      int64_t& total = t.residence == Residence::kManaged ? managed : allocated;
      total = bytes::add(total, sign * t.bytes, kLive);
      bytes::add(allocated, managed, kLive);
      if (sign > 0) {
        int64_t pieces = 0;
        for (const Piece& p : timeline.pieces(t)) {
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
    Best* same = nullptr;
    for (auto& x : best) {
      if (same_text(x.phase, m.phase)) same = &x;
    }
    // A phase marked again keeps its largest moment (the first of equals).
    if (same != nullptr && allocated + managed <= same->allocated + same->managed) continue;
    if (same == nullptr) same = &best.emplace_back();
    *same = {m.phase, m.label, allocated, managed, static_cast<int32_t>(e)};
  }
  std::vector<Moment> out(best.size());
  for (size_t i = 0; i < best.size(); ++i) {
    out[i].phase = best[i].phase;
    out[i].label = best[i].label;
    out[i].allocated = best[i].allocated;
    out[i].managed = best[i].managed;
    out[i].event = best[i].event;
  }
  if (!with_parts || out.empty()) return out;
  // Each moment's live bytes by component: the events again, to each
  // moment's mark (the sums were checked above).
  LiveParts again(timeline.components().size());
  std::vector<size_t> order(out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out[a].event < out[b].event; });
  size_t next = 0;
  for (size_t e = 0; e < events.size() && next < order.size(); ++e) {
    const Event& ev = events[e];
    if (ev.op != Event::Op::kMark) {
      const Tensor& t = tensors[static_cast<size_t>(ev.index)];
      const int64_t sign = ev.op == Event::Op::kAlloc ? 1 : -1;
      again.bytes[static_cast<size_t>(t.component_id)] += sign * t.bytes;
      again.count[static_cast<size_t>(t.component_id)] += sign;
      continue;
    }
    while (next < order.size() && out[order[next]].event == static_cast<int32_t>(e)) {
      out[order[next]].parts = again.listed(timeline);
      ++next;
    }
  }
  return out;
}

std::map<std::string, int64_t> component_peaks(const Timeline& timeline) {
  // replay() has checked every sum. A component counts from its first
  // event on (ids are given in order of first use), even while at zero.
  std::vector<int64_t> live(timeline.components().size(), 0);
  std::vector<int64_t> peak(timeline.components().size(), 0);
  size_t seen = 0;
  size_t listed = 0;  // components that have met a mark
  for (const Event& ev : timeline.events()) {
    if (ev.op != Event::Op::kMark) {
      const Tensor& t = timeline.tensors()[static_cast<size_t>(ev.index)];
      const auto c = static_cast<size_t>(t.component_id);
      live[c] += ev.op == Event::Op::kAlloc ? t.bytes : -t.bytes;
      seen = std::max(seen, c + 1);
      continue;
    }
    for (size_t c = 0; c < seen; ++c) peak[c] = std::max(peak[c], live[c]);
    listed = seen;
  }
  std::map<std::string, int64_t> peaks;
  for (size_t c = 0; c < listed; ++c)
    peaks[timeline.components()[c]] = std::max(peaks[timeline.components()[c]], peak[c]);
  return peaks;
}

}  // namespace vram::memory

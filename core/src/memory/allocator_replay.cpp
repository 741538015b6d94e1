// The step replayed through the caching-allocator model (allocator_replay.h).
#include "memory/allocator_replay.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace vram::memory {

namespace {

// One timeline's live mallocs, per tensor.
struct TensorHandles {
  std::vector<std::vector<Handle>> handles;
  std::vector<char> live;
  explicit TensorHandles(const Timeline& t) : handles(t.tensors().size()), live(t.tensors().size(), 0) {}
};

struct Replayer {
  CachingAllocator alloc;
  bool track_creators = false;
  std::unordered_map<uint64_t, const char*> creator;  // segment address -> tensor name

  Replayer(const AllocatorConfig& c, const DeviceLimits& l) : alloc(c, l) {}

  void malloc_piece(const Tensor& t, std::vector<Handle>& into, int64_t bytes) {
    const int64_t before = alloc.stats().num_device_alloc;
    const Handle h = alloc.malloc(bytes, t.stream);
    if (h <= 0) return;  // an OOM is counted by the allocator
    into.push_back(h);
    // A new segment (or newly mapped pages) starts at this block.
    if (track_creators && alloc.stats().num_device_alloc != before) creator[alloc.address(h)] = t.name;
  }

  void apply(const Timeline& tl, TensorHandles& st, const Event& ev) {
    const auto i = static_cast<size_t>(ev.index);
    const Tensor& t = tl.tensors()[i];
    if (t.residence == Residence::kManaged) return;
    if (ev.op == Event::Op::kAlloc) {
      st.live[i] = 1;
      if (t.pieces.empty()) {
        if (t.bytes > 0) malloc_piece(t, st.handles[i], t.bytes);
        return;
      }
      for (const Piece& p : t.pieces) {
        for (int64_t k = 0; k < p.count && p.bytes > 0; ++k) malloc_piece(t, st.handles[i], p.bytes);
      }
      return;
    }
    // A tensor loaded before the step and freed during it (optimizer in
    // backward's gradients) is freed once.
    if (!st.live[i]) return;
    st.live[i] = 0;
    for (Handle h : st.handles[i]) alloc.free(h);
    st.handles[i].clear();
  }

  // The step part of another timeline, once: a tensor its load part
  // allocated belongs to the main timeline's load and is left alone.
  void run_step_of(const Timeline& tl) {
    TensorHandles st(tl);
    const auto& events = tl.events();
    const size_t begin = std::min(tl.step_begin(), events.size());
    std::vector<char> loaded(tl.tensors().size(), 0);
    for (size_t e = 0; e < begin; ++e) {
      if (events[e].op == Event::Op::kAlloc) loaded[static_cast<size_t>(events[e].index)] = 1;
    }
    for (size_t e = begin; e < events.size(); ++e) {
      const Event& ev = events[e];
      if (ev.op == Event::Op::kMark || loaded[static_cast<size_t>(ev.index)]) continue;
      apply(tl, st, ev);
    }
    // A step frees what it allocates; anything left is freed here so the
    // next step starts from the load alone.
    for (auto& hs : st.handles) {
      for (Handle h : hs) alloc.free(h);
    }
  }
};

}  // namespace

AllocatorConfig allocator_config(const AllocatorOptions& o) {
  AllocatorConfig c;
  if (!o.conf.empty()) {
    auto parsed = parse_alloc_conf(o.conf);
    if (parsed.ok()) c = parsed.value();
  }
  if (o.expandable_segments) c.expandable_segments = *o.expandable_segments;
  if (o.max_split_size_mb) c.max_split_size = *o.max_split_size_mb * kMiB;
  return c;
}

ReservedReplay replay_reserved(const Timeline& timeline, const std::vector<Moment>& moments,
                               const AllocatorConfig& config, const DeviceLimits& limits, int detail_moment,
                               const std::vector<const Timeline*>& before) {
  Replayer r(config, limits);
  TensorHandles main(timeline);
  r.track_creators = detail_moment >= 0;
  ReservedReplay out;
  out.reserved.assign(moments.size(), 0);
  std::unordered_map<int32_t, size_t> moment_of;  // mark event -> moment index
  for (size_t m = 0; m < moments.size(); ++m) moment_of[moments[m].event] = m;
  const auto& events = timeline.events();
  const size_t begin = std::min(timeline.step_begin(), events.size());
  for (size_t e = 0; e < begin; ++e) {
    if (events[e].op != Event::Op::kMark) r.apply(timeline, main, events[e]);
  }
  for (const Timeline* other : before) r.run_step_of(*other);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t e = begin; e < events.size(); ++e) {
      const Event& ev = events[e];
      if (ev.op != Event::Op::kMark) {
        r.apply(timeline, main, ev);
        continue;
      }
      if (pass == 0) continue;
      auto it = moment_of.find(static_cast<int32_t>(e));
      if (it == moment_of.end()) continue;
      out.reserved[it->second] = r.alloc.stats().reserved_bytes.all.current;
      if (static_cast<int>(it->second) != detail_moment) continue;
      // Cached free bytes at this moment, by the tensor that created their segment.
      std::map<std::string, int64_t> by_name;
      for (const SegmentInfo& s : r.alloc.snapshot()) {
        const int64_t unused = s.total_size - s.allocated_size;
        if (unused <= 0) continue;
        auto c = r.creator.find(s.address);
        const std::string name = c == r.creator.end() ? "segments of several tensors" : std::string(c->second);
        by_name[name] += unused;
      }
      out.causes.assign(by_name.begin(), by_name.end());
      // Largest first; equal sizes in name order (stable after the map), so
      // libstdc++ (native) and libc++ (WASM) list them alike: std::sort
      // leaves the order of equal elements to the library.
      std::stable_sort(out.causes.begin(), out.causes.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      out.largest_free_block = r.alloc.largest_free_block();
    }
  }
  const AllocatorStats& st = r.alloc.stats();
  out.peak_reserved = st.reserved_bytes.all.peak;
  out.peak_allocated = st.allocated_bytes.all.peak;
  out.segments = st.segment.all.current;
  out.device_allocs = st.num_device_alloc;
  out.ooms = st.num_ooms;
  out.retries = st.num_alloc_retries;
  return out;
}

}  // namespace vram::memory

// The step replayed through the caching-allocator model (allocator_replay.h).
#include "memory/allocator_replay.h"

#include <algorithm>
#include <map>

#include "reach.h"

namespace vram::memory {

namespace {

// The tensors of `tl` allocated in its load part: the first ones (ids are
// given in event order).
size_t load_tensors(const Timeline& tl, size_t load_events) {
  size_t n = 0;
  for (size_t e = 0; e < load_events; ++e) {
    if (tl.events()[e].op == Event::Op::kAlloc) n = std::max(n, static_cast<size_t>(tl.events()[e].index) + 1);
  }
  return n;
}

// Mallocs `t`'s pieces (or its bytes once) on its stream into `slots`, one
// handle each (a failed malloc leaves kOutOfMemory, which free() ignores).
// `creators` (if given) gets the tensor that made each new segment or newly
// mapped pages; without it no counter is read per malloc. `fits` (if
// given) gets what each successful malloc did (MallocFit). True when a
// malloc returned kOutOfMemory (counted in num_ooms unless the request was
// past what the allocator takes at all).
bool malloc_tensor(CachingAllocator& alloc, const Timeline& tl, const Tensor& t, Handle* slots,
                   std::vector<std::pair<uint64_t, const char*>>* creators, std::vector<MallocFit>* fits = nullptr) {
  bool failed = false;
  auto one = [&](int64_t bytes) {
    const int64_t before = creators != nullptr ? alloc.stats().num_device_alloc : 0;
    const Handle h = alloc.malloc(bytes, t.stream);
    *slots++ = h;
    failed = failed || h == kOutOfMemory;
    if (h <= 0) return;  // an OOM is counted by the allocator
    if (fits != nullptr && reach::skips_repeated_steps()) fits->push_back(alloc.last_fit());
    if (creators != nullptr && alloc.stats().num_device_alloc != before)
      creators->emplace_back(alloc.address(h), t.name);
  };
  const auto pieces = tl.pieces(t);
  if (pieces.empty()) {
    if (t.bytes > 0) one(t.bytes);
    return failed;
  }
  for (const Piece& p : pieces) {
    for (int64_t k = 0; k < p.count && p.bytes > 0; ++k) one(p.bytes);
  }
  return failed;
}

// Whether a second run of the step just run repeats the first exactly, from
// what each malloc of the first did (`fits`, in order). It does when the first
// run freed every tensor it allocated, so each segment it made is one cached
// free block and every older cached block is as it was (free blocks merge as
// they are freed: free_block), and no segment it made would have been the best
// fit of a malloc before it, had it been cached then: get_free_block takes the
// smallest cached block of the malloc's stream and pool at least as large as
// the rounded request, and between equal sizes the lower address, the older
// block (addresses only grow). So neither a malloc served from the cache by a
// larger block nor one that made a larger segment may have a later segment
// whose size lies between its request and that block. Then each malloc of the
// second run takes the very block the first took or made and splits it the
// same way (should_split reads the two sizes only), and frees merge the same:
// the second run makes no segment, reserved stays where the first left it and
// every statistic's peak stands. The caller checks the rest: the default
// rules (no max_split_size, no expandable segments, no memory fraction, so no
// garbage collection) and no failed cudaMalloc, retry or cudaFree in the run.
bool second_run_repeats(const std::vector<MallocFit>& fits) {
  // Sizes of the segments made later than the malloc at hand, sorted, one
  // list per stream and pool (a step uses one or two streams).
  struct Later {
    int32_t stream;
    bool small;
    std::vector<int64_t> sizes;
  };
  std::vector<Later> later;
  const auto find = [&](const MallocFit& f) -> Later* {
    for (Later& l : later) {
      if (l.stream == f.stream && l.small == f.small) return &l;
    }
    return nullptr;
  };
  for (auto f = fits.rbegin(); f != fits.rend(); ++f) {
    const int64_t chosen = f->taken > 0 ? f->taken : f->created;
    Later* l = find(*f);
    if (chosen > f->size && l != nullptr) {
      const auto c = std::lower_bound(l->sizes.begin(), l->sizes.end(), f->size);
      if (c != l->sizes.end() && *c < chosen) return false;
    }
    if (f->created == 0) continue;
    if (l == nullptr) l = &later.emplace_back(Later{f->stream, f->small, {}});
    l->sizes.insert(std::lower_bound(l->sizes.begin(), l->sizes.end(), f->created), f->created);
  }
  return true;
}

}  // namespace

std::unique_ptr<LoadedAllocator> LoadedAllocator::without_bound() const {
  if (fails_ || limits().capacity == 0 || !alloc_.limits_idle()) return nullptr;
  auto out = std::make_unique<LoadedAllocator>(*this);
  out->alloc_.set_limits({});
  return out;
}

LoadedAllocator::LoadedAllocator(const Timeline& load, const AllocatorConfig& config, const DeviceLimits& limits)
    : alloc_(config, limits) {
  const auto& events = load.events();
  events_ = std::min(load.step_begin(), events.size());
  tensors_ = load_tensors(load, events_);
  if (tensors_ > 0) {
    const Tensor& last = load.tensors()[tensors_ - 1];
    mallocs_ = last.first_malloc + last.mallocs;
  }
  handles_.assign(static_cast<size_t>(mallocs_), kNullHandle);
  live_.assign(tensors_, 0);
  for (size_t e = 0; e < events_; ++e) {
    const Event& ev = events[e];
    if (ev.op == Event::Op::kMark) continue;
    const auto i = static_cast<size_t>(ev.index);
    const Tensor& t = load.tensors()[i];
    if (t.residence == Residence::kManaged) continue;
    Handle* slots = handles_.data() + t.first_malloc;
    if (ev.op == Event::Op::kAlloc) {
      live_[i] = 1;
      // A failed load is all a bounded replay needs to know (it stops there).
      fails_ = malloc_tensor(alloc_, load, t, slots, &creators_) && alloc_.stats().num_ooms > 0;
      if (fails_) return;
    } else if (live_[i]) {
      live_[i] = 0;
      for (int64_t k = 0; k < t.mallocs; ++k) alloc_.free(slots[k]);
    }
  }
}

// One replay on a loaded allocator: its own copy of the allocator, the step
// tensors' handles of each timeline it runs, and the load's tensors a step
// frees.
class StepReplayer {
 public:
  StepReplayer(const LoadedAllocator& loaded, bool track_creators, bool stop_at_oom)
      : loaded_(loaded), alloc_(loaded.alloc_), stop_at_oom_(stop_at_oom) {
    if (track_creators) {
      creators_ = loaded.creators_;
      track_ = true;
    }
  }

  // The step tensors' handles of one timeline. A timeline either starts
  // with the load (its first `tensors` tensors and `mallocs` mallocs are the
  // load's) or is a step alone (none are).
  struct Handles {
    size_t tensors = 0;
    int64_t mallocs = 0;
    std::vector<Handle> slots;  // by Tensor::first_malloc, from the load's end
    std::vector<char> live;     // by tensor, from the load's end
    // A tensor allocated again while alive (a step that does not free it,
    // run twice) keeps its earlier handles here, freed with it, first.
    std::vector<std::pair<size_t, Handle>> earlier;
  };
  // `h` set up for `tl`, its arrays reused (a replay runs up to eight
  // steps before its own: one set of arrays for all of them).
  void handles_for(const Timeline& tl, Handles& h) const {
    const bool with_load = tl.step_begin() > 0;
    h.tensors = with_load ? loaded_.tensors_ : 0;
    h.mallocs = with_load ? loaded_.mallocs_ : 0;
    h.slots.assign(static_cast<size_t>(tl.mallocs() - h.mallocs), kNullHandle);
    h.live.assign(tl.tensors().size() - h.tensors, 0);
    h.earlier.clear();
  }

  // One event of a step. A free of a load tensor (`main` timeline only:
  // other steps leave the load alone) frees it once. False once a malloc
  // has failed with stop_at_oom.
  bool apply(const Timeline& tl, Handles& st, const Event& ev, bool main) {
    const auto i = static_cast<size_t>(ev.index);
    const Tensor& t = tl.tensors()[i];
    if (t.residence == Residence::kManaged) return true;
    if (i < st.tensors) {
      if (main && ev.op == Event::Op::kFree) free_load_tensor(t, i);
      return true;
    }
    const size_t local = i - st.tensors;
    Handle* slots = st.slots.data() + (t.first_malloc - st.mallocs);
    if (ev.op == Event::Op::kAlloc) {
      if (st.live[local]) {
        for (int64_t k = 0; k < t.mallocs; ++k) st.earlier.emplace_back(local, slots[k]);
      }
      st.live[local] = 1;
      // num_ooms is 0 until a malloc fails (replay_reserved stops a bounded
      // replay of a failed load first): read only after a failure.
      const bool failed = malloc_tensor(alloc_, tl, t, slots, track_ ? &creators_ : nullptr, fits_);
      return !stop_at_oom_ || !failed || alloc_.stats().num_ooms == 0;
    }
    if (!st.live[local]) return true;
    st.live[local] = 0;
    free_tensor(st, local, slots, t.mallocs);
    return true;
  }

  // The step part of another timeline on the same load, once. False when
  // stopped at an OOM.
  bool run_step_of(const Timeline& tl) {
    Handles& st = scratch_;
    handles_for(tl, st);
    const auto& events = tl.events();
    for (size_t e = std::min(tl.step_begin(), events.size()); e < events.size(); ++e) {
      if (events[e].op == Event::Op::kMark) continue;
      if (!apply(tl, st, events[e], false)) return false;
    }
    // A step frees what it allocates; anything left is freed here so the
    // next step starts from the load alone.
    for (size_t local = 0; local < st.live.size(); ++local) {
      if (!st.live[local]) continue;
      const Tensor& t = tl.tensors()[local + st.tensors];
      free_tensor(st, local, st.slots.data() + (t.first_malloc - st.mallocs), t.mallocs);
    }
    return true;
  }

  // Cached free bytes now, by the tensor that created the segment they sit
  // in, largest first.
  std::vector<std::pair<std::string, int64_t>> causes() const { return causes_of(alloc_.cached_by_segment()); }
  // The same for cached bytes by segment given (CachingAllocator::cached_by_segment).
  std::vector<std::pair<std::string, int64_t>> causes_of(
      const std::vector<std::pair<uint64_t, int64_t>>& cached) const {
    // The last tensor to create a segment at an address is its creator.
    // New segments come at ever higher addresses, so creators_ is in
    // address order unless expandable segments mapped pages below others.
    const auto lower = [](const auto& a, const auto& b) { return a.first < b.first; };
    const bool ordered = std::is_sorted(creators_.begin(), creators_.end(), lower);
    std::map<uint64_t, const char*> by_address;
    for (size_t i = 0; i < creators_.size() && !ordered; ++i) by_address[creators_[i].first] = creators_[i].second;
    const auto creator = [&](uint64_t address) -> const char* {
      if (!ordered) {
        const auto c = by_address.find(address);
        return c != by_address.end() ? c->second : nullptr;
      }
      const auto c =
          std::upper_bound(creators_.begin(), creators_.end(), std::pair<uint64_t, const char*>{address, ""}, lower);
      return c != creators_.begin() && std::prev(c)->first == address ? std::prev(c)->second : nullptr;
    };
    std::map<std::string, int64_t> by_name;
    for (const auto& [address, unused] : cached) {
      const char* name = creator(address);
      by_name[name != nullptr ? name : "segments of several tensors"] += unused;
    }
    // Largest first; equal sizes in name order (the map's), each placed
    // before the first smaller one: the same list from libstdc++ (native)
    // and libc++ (WASM), whose std::sort orders equal elements each its own
    // way. A few dozen names at most.
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& cause : by_name) {
      out.insert(std::find_if(out.begin(), out.end(), [&](const auto& x) { return x.second < cause.second; }), cause);
    }
    return out;
  }

  // The detail moment as a first run sees it (`fits` mallocs recorded so far).
  struct FirstDetail {
    bool seen = false;
    std::vector<std::pair<uint64_t, int64_t>> cached;  // cached_by_segment
    int64_t largest = 0;                               // largest_free_block
    size_t fits = 0;
    size_t creators = 0;
  };
  FirstDetail first_detail(size_t fits) const {
    return {true, alloc_.cached_by_segment(), alloc_.largest_free_block(), fits, creators_.size()};
  }
  // The detail moment of a second run that repeats the first
  // (second_run_repeats): as the first saw it, plus each segment the first
  // made after it, cached whole (the second run has not reached the malloc
  // that takes it). False when the segments made and their creators do not
  // pair up.
  bool repeated_detail(const FirstDetail& d, const std::vector<MallocFit>& fits, ReservedReplay& out) const {
    std::vector<std::pair<uint64_t, int64_t>> cached = d.cached;
    int64_t largest = d.largest;
    size_t c = d.creators;
    for (size_t i = d.fits; i < fits.size(); ++i) {
      if (fits[i].created == 0) continue;
      if (c >= creators_.size()) return false;
      cached.emplace_back(creators_[c++].first, fits[i].created);
      largest = std::max(largest, fits[i].created);
    }
    if (c != creators_.size()) return false;
    out.causes = causes_of(cached);
    out.largest_free_block = largest;
    return true;
  }

  const CachingAllocator& allocator() const { return alloc_; }
  // The handle arrays the steps run before the main one used, for the main one.
  Handles& scratch() { return scratch_; }
  // Record what each malloc does into `fits` (null: stop).
  void record_fits(std::vector<MallocFit>* fits) { fits_ = fits; }
  // Whether a step has freed a tensor of the load.
  bool freed_load() const { return !load_freed_.empty(); }

 private:
  void free_tensor(Handles& st, size_t local, const Handle* slots, int64_t mallocs) {
    if (!st.earlier.empty()) {
      for (const auto& [who, h] : st.earlier) {
        if (who == local) alloc_.free(h);
      }
      std::erase_if(st.earlier, [&](const auto& x) { return x.first == local; });
    }
    for (int64_t k = 0; k < mallocs; ++k) alloc_.free(slots[k]);
  }

  void free_load_tensor(const Tensor& t, size_t i) {
    if (!loaded_.live_[i]) return;
    if (load_freed_.empty()) load_freed_.assign(loaded_.tensors_, 0);
    if (load_freed_[i]) return;
    load_freed_[i] = 1;
    for (int64_t k = 0; k < t.mallocs; ++k) alloc_.free(loaded_.handles_[static_cast<size_t>(t.first_malloc + k)]);
  }

  const LoadedAllocator& loaded_;
  CachingAllocator alloc_;
  bool stop_at_oom_ = false;
  bool track_ = false;
  std::vector<std::pair<uint64_t, const char*>> creators_;
  std::vector<char> load_freed_;  // load tensors a step has freed (empty until one is)
  Handles scratch_;               // the arrays of the steps run before the main one
  std::vector<MallocFit>* fits_ = nullptr;
};

// Whether the second of two runs of a step may be skipped: under the default
// rules, the first run (which began with the statistics `before`) failed,
// retried and freed nothing, left no step tensor live and no load tensor
// freed, and second_run_repeats says so.
bool second_run_skippable(const StepReplayer& r, const StepReplayer::Handles& step, const AllocatorStats& before,
                          const std::vector<MallocFit>& fits) {
  const AllocatorStats& now = r.allocator().stats();
  if (now.num_ooms != before.num_ooms || now.num_alloc_retries != before.num_alloc_retries ||
      now.num_device_free != before.num_device_free || r.freed_load() || !step.earlier.empty()) {
    return false;
  }
  if (std::find(step.live.begin(), step.live.end(), 1) != step.live.end()) return false;
  return second_run_repeats(fits);
}

// Whether an allocator's rules are those second_run_repeats holds under.
bool default_rules(const CachingAllocator& a) {
  return !a.config().expandable_segments && a.config().max_split_size == kNoMaxSplitSize &&
         a.limits().allowed_memory_maximum == 0;
}

AllocatorConfig allocator_config(const AllocatorOptions& o) {
  AllocatorConfig c;
  if (!o.conf.empty()) {
    auto parsed = reach::alloc_conf(o.conf, "allocator.conf");
    if (parsed.ok()) c = parsed.value();
  }
  if (o.expandable_segments) c.expandable_segments = *o.expandable_segments;
  if (o.max_split_size_mb) c.max_split_size = *o.max_split_size_mb * kMiB;
  return c;
}

// The step of `timeline` twice on `r` (the load and the steps before it
// already run), reserved at each of `moments` in the second run and the
// detail moment's facts into `out`. The first run records its mallocs; when
// the second repeats it (second_run_skippable), reserved stays where the
// first left it, and the detail moment is the first run's plus the segments
// it made later, so the second run is not replayed. False when stopped at an
// OOM.
bool two_steps(StepReplayer& r, StepReplayer::Handles& main, const Timeline& timeline,
               const std::vector<Moment>& moments, int detail_moment, ReservedReplay& out) {
  const auto& events = timeline.events();
  const size_t begin = std::min(timeline.step_begin(), events.size());
  const int32_t detail_event = detail_moment >= 0 ? moments[static_cast<size_t>(detail_moment)].event : -1;
  std::vector<MallocFit> fits;
  const bool record = reach::skips_repeated_steps() && default_rules(r.allocator());
  if (record) r.record_fits(&fits);
  const AllocatorStats first_from = r.allocator().stats();
  StepReplayer::FirstDetail detail;
  for (size_t e = begin; e < events.size(); ++e) {
    if (events[e].op != Event::Op::kMark) {
      if (!r.apply(timeline, main, events[e], true)) return false;
    } else if (record && static_cast<int32_t>(e) == detail_event) {
      detail = r.first_detail(fits.size());
    }
  }
  r.record_fits(nullptr);
  const auto at_mark = [&](const Moment& m) {
    const auto e = static_cast<size_t>(m.event);
    return m.event >= 0 && e >= begin && e < events.size() && events[e].op == Event::Op::kMark;
  };
  if (record && !fits.empty() && second_run_skippable(r, main, first_from, fits) &&
      (!detail.seen || r.repeated_detail(detail, fits, out))) {
    for (size_t m = 0; m < moments.size(); ++m) {
      if (at_mark(moments[m])) out.reserved[m] = r.allocator().stats().reserved_bytes.all.current;
    }
    return true;
  }
  for (size_t e = begin; e < events.size(); ++e) {
    const Event& ev = events[e];
    if (ev.op != Event::Op::kMark) {
      if (!r.apply(timeline, main, ev, true)) return false;
      continue;
    }
    for (size_t m = 0; m < moments.size(); ++m) {
      if (moments[m].event != static_cast<int32_t>(e)) continue;
      out.reserved[m] = r.allocator().stats().reserved_bytes.all.current;
      if (static_cast<int>(m) != detail_moment) continue;
      out.causes = r.causes();
      out.largest_free_block = r.allocator().largest_free_block();
    }
  }
  return true;
}

ReservedReplay replay_reserved(const LoadedAllocator& loaded, const Timeline& timeline,
                               const std::vector<Moment>& moments, int detail_moment,
                               const std::vector<const Timeline*>& before, bool stop_at_oom) {
  ReservedReplay out;
  out.reserved.assign(moments.size(), 0);
  const auto stopped = [&] {
    out.ooms = 1;
    return out;
  };
  if (stop_at_oom && loaded.ooms() > 0) return stopped();
  for (const Timeline* tl : before) {
    if (tl->step_begin() > 0 && !loaded.starts(*tl)) {
      fail(errc::kInternal, "", "a step replayed before another does not start with its load");
    }
  }
  if (timeline.step_begin() > 0 && !loaded.starts(timeline)) {
    fail(errc::kInternal, "", "a replayed step does not start with the load given");
  }
  StepReplayer r(loaded, detail_moment >= 0, stop_at_oom);
  for (const Timeline* other : before) {
    if (!r.run_step_of(*other)) return stopped();
  }
  StepReplayer::Handles& main = r.scratch();
  r.handles_for(timeline, main);
  if (!two_steps(r, main, timeline, moments, detail_moment, out)) return stopped();
  const AllocatorStats& st = r.allocator().stats();
  out.peak_reserved = st.reserved_bytes.all.peak;
  out.peak_allocated = st.allocated_bytes.all.peak;
  out.segments = st.segment.all.current;
  out.device_allocs = st.num_device_alloc;
  out.ooms = st.num_ooms;
  out.retries = st.num_alloc_retries;
  return out;
}

ReservedReplay replay_reserved(const Timeline& timeline, const std::vector<Moment>& moments,
                               const AllocatorConfig& config, const DeviceLimits& limits, int detail_moment,
                               const std::vector<const Timeline*>& before) {
  const LoadedAllocator loaded(timeline, config, limits);
  return replay_reserved(loaded, timeline, moments, detail_moment, before);
}

}  // namespace vram::memory

// A serving job's timeline and its phases (infer/replay.h).
#include "infer/replay.h"

#include <algorithm>
#include <map>
#include <span>
#include <string>

#include "fit.h"
#include "format.h"
#include "memory/allocator_replay.h"
#include "memory/overheads.h"

namespace vram::infer {

using memory::ceil_div;
using memory::Piece;

namespace {

// Layers of `g`'s stack that hold it, when its instances are `experts` per
// layer of them (a routed expert group), else 0.
int64_t expert_layers(const ModelSpec& m, const ParamGroup& g) {
  const LayerStack* s = m.stack(g.stack);
  if (s == nullptr || g.active_num == g.active_den || g.layer_index >= 0) return 0;
  const int64_t layers = s->count(g.layers, 0, s->layers);
  return layers > 0 && g.instances % layers == 0 ? layers : 0;
}

}  // namespace

std::vector<Piece> weight_pieces(const ModelSpec& m, const Serving& sv, bool engine_layout) {
  const Format& fmt = *sv.fmt;
  // The checkpoint format knows its stored bytes, not each tensor's: its
  // bytes per parameter, on average, for every tensor.
  const bool stored = std::string(fmt.name) == "checkpoint";
  const double per_param =
      stored ? static_cast<double>(sv.fx.weights) / static_cast<double>(std::max<int64_t>(m.params_total(), 1)) : 0;
  const int64_t hp = fmt.linear_bytes >= 2.0 ? static_cast<int64_t>(fmt.linear_bytes) : 2;
  std::vector<Piece> out;
  auto add = [&](int64_t numel, int64_t share, int64_t count) {
    const int64_t b = stored ? static_cast<int64_t>(per_param * static_cast<double>(numel)) : hp * numel;
    if (b > 0) out.push_back({ceil_div(b, share), count});
  };
  for (const auto& g0 : m.groups) {
    // FusedMoE: one tensor of every expert per layer.
    ParamGroup g = g0;
    if (const int64_t layers = engine_layout ? expert_layers(m, g0) : 0; layers > 0) {
      g.numel = g0.numel * (g0.instances / layers);
      g.out_features = g0.out_features * (g0.instances / layers);
      g.instances = layers;
    }
    const bool split = g.kind == ModuleKind::kLinear || g.kind == ModuleKind::kEmbedding;
    const int64_t share = split ? sv.tp : 1;
    const bool has_bias = (g.kind == ModuleKind::kLinear || g.kind == ModuleKind::kNorm) && g.bias;
    const int64_t bias = has_bias ? g.out_features : 0;
    if (!stored && quantized(g, fmt, sv.quant_head)) {
      const int64_t all = quantized_bytes(g, fmt);
      // The engines' quantised Linears hold codes and scales as parameters
      // of their own (fp8: weight and weight_scale; GPTQ / AWQ: qweight,
      // scales, qzeros).
      const int64_t codes = engine_layout
                                ? std::min(all, ceil_bytes(static_cast<double>(g.in_features) *
                                                               static_cast<double>(g.out_features) * fmt.linear_bytes,
                                                           kWeights))
                                : all;
      out.push_back({ceil_div(codes, share), g.instances});
      if (all > codes) out.push_back({ceil_div(all - codes, share), g.instances});
    } else {
      add(g.numel - bias, share, g.instances);
    }
    // The bias (16-bit beside quantised codes, as weights_per_gpu counts it).
    if (bias > 0) add(bias, share, g.instances);
  }
  std::sort(out.begin(), out.end(), [](const Piece& a, const Piece& b) { return a.bytes > b.bytes; });
  return out;
}

namespace {

// What the caching allocator may take on the request's card: what a process
// can use less the CUDA context and NCCL, allocated outside it; 0 (no
// bound) without a card.
int64_t allocator_capacity(const Request& req, const Serving& sv) {
  const auto card = fit::chosen_gpu(req);
  const int64_t left = card ? card->capacity - sv.fx.context - sv.fx.nccl : 0;
  return left > 0 ? left : 0;
}

}  // namespace

void ServingTimeline::mark(const char* phase, const char* label) {
  tl.mark(phase, label);
  upto.push_back({static_cast<int32_t>(tl.events().size() - 1), emptied_});
}

memory::Timeline after_empty_cache(const memory::Timeline& tl, size_t at, int64_t end) {
  using memory::Event;
  const std::vector<Event>& ev = tl.events();
  const auto& tensors = tl.tensors();
  std::vector<char> live(tensors.size(), 0);
  std::vector<memory::Timeline::Id> ids(tensors.size(), -1);
  memory::Timeline out;
  auto copy = [&](int32_t i) {
    const memory::Tensor& t = tensors[static_cast<size_t>(i)];
    // A serving timeline allocates on the default stream only.
    ids[static_cast<size_t>(i)] = out.alloc(t.component, t.name, t.bytes, tl.pieces(t), t.residence, t.layer);
  };
  const size_t stop = end >= 0 ? std::min(static_cast<size_t>(end), ev.size()) : ev.size();
  for (size_t k = 0; k < stop; ++k) {
    const Event& e = ev[k];
    if (k == at) {
      // Allocation order is tensor order: the live ones again, in it.
      for (size_t i = 0; i < tensors.size(); ++i) {
        if (live[i] != 0) copy(static_cast<int32_t>(i));
      }
    }
    if (e.op == Event::Op::kMark) {
      if (k >= at)
        out.mark(tl.marks()[static_cast<size_t>(e.index)].phase, tl.marks()[static_cast<size_t>(e.index)].label);
      continue;
    }
    const bool alloc = e.op == Event::Op::kAlloc;
    if (k < at) {
      live[static_cast<size_t>(e.index)] = alloc ? 1 : 0;
    } else if (alloc) {
      copy(e.index);
    } else {
      out.free(ids[static_cast<size_t>(e.index)]);
    }
  }
  out.begin_step();
  return out;
}

ServingTimeline serving_load(const Request& req, const Serving& sv) {
  ServingTimeline st;
  memory::Timeline& tl = st.tl;
  const std::vector<Piece> pieces = weight_pieces(req.model, sv);
  // transformers' from_pretrained onto a GPU (device_map) first warms the
  // caching allocator up: one torch.empty of the parameters' bytes on the
  // device, at most the free memory less 1.2 GiB, dropped at once
  // (modeling_utils.py caching_allocator_warmup, since v4.50.0, commit
  // 1603018e), so the weights then split that one cached segment instead of
  // each taking a segment of its own.
  // LitGPT builds the model on the GPU, a tensor per parameter, and copies
  // the checkpoint into it (litgpt/generate/base.py @004cf84f main:
  // fabric.init_module(empty_init=True), load_checkpoint): no warm-up, and
  // no phase of its own.
  if (!sv.litgpt && !sv.paged) {
    int64_t warmup = sv.fx.weights;
    if (const int64_t free = allocator_capacity(req, sv); free > 0) {
      warmup = std::min(warmup, std::max<int64_t>(free - (int64_t{12} << 30) / 10, 0));
    }
    tl.free(tl.alloc("weights", "caching_allocator_warmup", warmup));
  }
  tl.alloc("weights", "weights", sv.fx.weights, pieces);
  tl.alloc("cublas_workspace", "cuBLAS workspace", sv.fx.cublas);
  tl.alloc("misc", "overheads.misc_bytes", req.overheads.misc_bytes);
  if (!sv.litgpt) st.mark("weights_loaded", "weights loaded");
  return st;
}

namespace {

// What the allocator reserved at most up to a mark.
struct AtMark {
  int64_t reserved = 0;
  int64_t segments = 0;
  int64_t device_allocs = 0;
  bool oom = false;  // a malloc failed on the card even after freeing the cache
};

// The marks of a serving timeline replayed through the caching-allocator
// model in one pass, each as if its timeline up to it (after_empty_cache
// from the last empty_cache() before it) were replayed alone: every mark of
// a run (the marks after one empty_cache(), or before the first) reads the
// one allocator that replays the run, since a replay up to a later mark
// passes through the same states (memory/allocator_replay.cpp
// LoadedAllocator replays events in order, skipping marks and managed
// tensors, each piece of a tensor one malloc). On the card's bound, where a
// new segment would not fit the allocator frees its cache and retries, as
// CUDACachingAllocator::malloc does; from a malloc that fails even then, the
// run's later marks are replayed without the bound, to show what they would
// need (oom). A run's load found in the memo starts from its allocator.
class RunReplay {
 public:
  RunReplay(const memory::Timeline& tl, const memory::AllocatorConfig& config, LoadMemo* memo)
      : tl_(tl), config_(config), memo_(memo) {}

  // Replays the run that starts at `emptied` (-1: the timeline's start)
  // under `limits` and reads the allocator at each of `marks` (mark event
  // indices, ascending, in the run) into `out`. Stops at the first failed
  // malloc under a bound; returns how many marks it read.
  size_t run(int64_t emptied, std::span<const int32_t> marks, const memory::DeviceLimits& limits, AtMark* out) {
    const std::vector<Op> ops = run_ops(emptied);
    size_t load = 0;  // the ops before the run's first mark
    while (load < ops.size() && ops[load].mark < 0) ++load;
    handles_.assign(static_cast<size_t>(tl_.mallocs()), memory::kNullHandle);
    std::vector<int64_t> key;
    size_t k = resume(ops, load, limits, key);
    if (k == kFails) return 0;
    const bool bounded = limits.capacity > 0;
    size_t read = 0;
    for (; k < ops.size() && read < marks.size(); ++k) {
      if (k == load && !key.empty()) keep(ops, load, std::move(key));
      const Op& op = ops[k];
      if (op.mark >= 0) {
        if (op.mark != marks[read]) continue;
        const memory::AllocatorStats& st = alloc_.stats();
        out[read++] = {st.reserved_bytes.all.peak, st.segment.all.current, st.num_device_alloc, false};
        continue;
      }
      const memory::Tensor& t = tl_.tensors()[static_cast<size_t>(op.tensor)];
      if (op.alloc) {
        malloc_tensor(t, op.stream);
        if (bounded && alloc_.stats().num_ooms > 0) return read;
      } else {
        for (int64_t m = 0; m < t.mallocs; ++m) alloc_.free(handles_[static_cast<size_t>(t.first_malloc + m)]);
      }
    }
    return read;
  }

 private:
  // A run's allocation or free of a tensor, or a mark (its event).
  struct Op {
    int32_t tensor = -1;
    bool alloc = false;
    int32_t stream = memory::kDefaultStream;
    int32_t mark = -1;
  };

  // The run from `emptied`: after an empty_cache(), the tensors live there
  // again, in their order, on the default stream (after_empty_cache); then
  // every event. Managed tensors and frees of dead ones do nothing.
  std::vector<Op> run_ops(int64_t emptied) const {
    const auto& events = tl_.events();
    const auto& tensors = tl_.tensors();
    std::vector<char> live(tensors.size(), 0);
    std::vector<Op> ops;
    const size_t begin = emptied >= 0 ? static_cast<size_t>(emptied) : 0;
    for (size_t k = 0; k < begin; ++k) {
      if (events[k].op != memory::Event::Op::kMark)
        live[static_cast<size_t>(events[k].index)] = events[k].op == memory::Event::Op::kAlloc ? 1 : 0;
    }
    for (size_t i = 0; i < begin && i < tensors.size(); ++i) {
      if (live[i] != 0 && tensors[i].residence != memory::Residence::kManaged)
        ops.push_back({static_cast<int32_t>(i), true, memory::kDefaultStream, -1});
    }
    for (size_t k = begin; k < events.size(); ++k) {
      const memory::Event& ev = events[k];
      if (ev.op == memory::Event::Op::kMark) {
        ops.push_back({-1, false, memory::kDefaultStream, static_cast<int32_t>(k)});
        continue;
      }
      const auto i = static_cast<size_t>(ev.index);
      if (tensors[i].residence == memory::Residence::kManaged) continue;
      const bool alloc = ev.op == memory::Event::Op::kAlloc;
      if (!alloc && live[i] == 0) continue;
      live[i] = alloc ? 1 : 0;
      ops.push_back({ev.index, alloc, emptied >= 0 ? memory::kDefaultStream : tensors[i].stream, -1});
    }
    return ops;
  }

  // The load's key: an allocation as -1, its stream and each malloc's
  // bytes; a free as -2 and the op that allocated it. `ends`: where each op
  // ends in it.
  std::vector<int64_t> load_key(const std::vector<Op>& ops, size_t load, std::vector<size_t>& ends) const {
    std::vector<int64_t> key;
    std::vector<int32_t> by_tensor(tl_.tensors().size(), -1);
    for (size_t k = 0; k < load; ++k) {
      const memory::Tensor& t = tl_.tensors()[static_cast<size_t>(ops[k].tensor)];
      if (ops[k].alloc) {
        by_tensor[static_cast<size_t>(ops[k].tensor)] = static_cast<int32_t>(k);
        key.insert(key.end(), {-1, ops[k].stream});
        const auto pieces = tl_.pieces(t);
        if (pieces.empty() && t.bytes > 0) key.push_back(t.bytes);
        for (const memory::Piece& p : pieces) {
          for (int64_t c = 0; c < p.count && p.bytes > 0; ++c) key.push_back(p.bytes);
        }
      } else {
        key.insert(key.end(), {-2, by_tensor[static_cast<size_t>(ops[k].tensor)]});
      }
      ends.push_back(key.size());
    }
    return key;
  }

  // resume()'s answer for a run whose load fails under the bound.
  static constexpr size_t kFails = static_cast<size_t>(-1);

  // A fresh allocator under `limits`, or the memo's after a load this run
  // starts with, when the bound cannot have acted on it: the op to go on
  // from. kFails when a malloc of that load fails under the bound, before
  // any mark: its live requests alone exceed the bound at some point, and a
  // bounded allocator never reserves past it (caching_allocator.cpp
  // alloc_block), so the run's marks are all replayed without it. `key` is
  // left with this run's load key when the memo should keep it.
  size_t resume(const std::vector<Op>& ops, size_t load, const memory::DeviceLimits& limits,
                std::vector<int64_t>& key) {
    alloc_ = memory::CachingAllocator(config_, limits);
    if (memo_ == nullptr || config_.expandable_segments || load == 0) return 0;
    std::vector<size_t> ends;
    key = load_key(ops, load, ends);
    for (const LoadMemo::Entry& m : memo_->entries) {
      if (m.ops > load || ends[m.ops - 1] != m.key.size() || !same_config(m.config, config_) ||
          !std::equal(m.key.begin(), m.key.end(), key.begin()))
        continue;
      if (limits.capacity > 0 && m.alloc.stats().requested_bytes.all.peak > limits.capacity) {
        ++memo_->hits;
        return kFails;
      }
      if (limits.capacity > 0 && m.alloc.stats().reserved_bytes.all.peak > limits.capacity) continue;
      alloc_ = m.alloc;
      alloc_.set_limits(limits);
      size_t h = 0;
      for (size_t k = 0; k < m.ops; ++k) {
        if (!ops[k].alloc) continue;
        const memory::Tensor& t = tl_.tensors()[static_cast<size_t>(ops[k].tensor)];
        std::copy_n(m.handles.begin() + static_cast<std::ptrdiff_t>(h), t.mallocs, handles_.begin() + t.first_malloc);
        h += static_cast<size_t>(t.mallocs);
      }
      ++memo_->hits;
      key.clear();
      return m.ops;
    }
    return 0;
  }

  // Keeps the allocator after this run's load (its first `load` ops) in the
  // memo, when the bound never acted on it.
  void keep(const std::vector<Op>& ops, size_t load, std::vector<int64_t> key) {
    constexpr size_t kLoads = 4;
    if (memo_->entries.size() >= kLoads || !alloc_.limits_idle()) return;
    LoadMemo::Entry m{config_, std::move(key), load, alloc_, {}};
    for (size_t k = 0; k < load; ++k) {
      if (!ops[k].alloc) continue;
      const memory::Tensor& t = tl_.tensors()[static_cast<size_t>(ops[k].tensor)];
      const auto first = handles_.begin() + t.first_malloc;
      m.handles.insert(m.handles.end(), first, first + t.mallocs);
    }
    memo_->entries.push_back(std::move(m));
  }

  static bool same_config(const memory::AllocatorConfig& a, const memory::AllocatorConfig& b) {
    return a.max_split_size == b.max_split_size && a.max_non_split_rounding_size == b.max_non_split_rounding_size &&
           a.garbage_collection_threshold == b.garbage_collection_threshold &&
           a.roundup_power2_divisions == b.roundup_power2_divisions && a.expandable_segments == b.expandable_segments;
  }

  // Each piece's count of mallocs, or the tensor's bytes once (a failed
  // malloc keeps kOutOfMemory, which free() ignores).
  void malloc_tensor(const memory::Tensor& t, int32_t stream) {
    memory::Handle* slot = handles_.data() + t.first_malloc;
    const auto pieces = tl_.pieces(t);
    if (pieces.empty()) {
      if (t.bytes > 0) *slot = alloc_.malloc(t.bytes, stream);
      return;
    }
    for (const memory::Piece& p : pieces) {
      for (int64_t k = 0; k < p.count && p.bytes > 0; ++k) *slot++ = alloc_.malloc(p.bytes, stream);
    }
  }

  const memory::Timeline& tl_;
  const memory::AllocatorConfig& config_;
  LoadMemo* memo_;
  memory::CachingAllocator alloc_;
  std::vector<memory::Handle> handles_;  // by Tensor::first_malloc
};

// The allocator at each mark of `wanted` (st.upto entries' events), by
// event, in one replay per run: on the card's bound, and the marks after a
// malloc that fails there replayed again without it.
std::map<int32_t, AtMark> replay_marks(const ServingTimeline& st, std::vector<int32_t> wanted,
                                       const memory::AllocatorConfig& config, const memory::DeviceLimits& limits,
                                       LoadMemo* memo) {
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  const auto emptied_at = [&](int32_t event) {
    for (const auto& u : st.upto) {
      if (u.event == event) return u.emptied;
    }
    return int64_t{-1};
  };
  std::vector<AtMark> at(wanted.size());
  RunReplay replay(st.tl, config, memo);
  for (size_t first = 0, last = 0; first < wanted.size(); first = last) {
    // The run of wanted[first]: every wanted mark after the same empty_cache().
    const int64_t emptied = emptied_at(wanted[first]);
    for (last = first + 1; last < wanted.size() && emptied_at(wanted[last]) == emptied;) ++last;
    const std::span<const int32_t> marks(wanted.data() + first, last - first);
    const size_t read = replay.run(emptied, marks, limits, at.data() + first);
    if (read == marks.size()) continue;
    replay.run(emptied, marks.subspan(read), {}, at.data() + first + read);
    for (size_t i = first + read; i < last; ++i) at[i].oom = true;
  }
  std::map<int32_t, AtMark> out;
  for (size_t i = 0; i < wanted.size(); ++i) out[wanted[i]] = at[i];
  return out;
}

// overheads.fragmentation's reserved view: allocated x (1 + f).
int64_t fragmented(int64_t allocated, double f) {
  constexpr const char* kPhase = "the memory of one phase";
  return bytes::add(allocated, ceil_bytes(f * static_cast<double>(allocated), kPhase), kPhase);
}

}  // namespace

int64_t reserved_at_last_mark(const Request& req, const Serving& sv, const ServingTimeline& st) {
  if (st.upto.empty()) return 0;
  const ServingTimeline::Upto& last = st.upto.back();
  const std::vector<memory::Moment> moments = memory::replay(
      after_empty_cache(st.tl, static_cast<size_t>(std::max<int64_t>(last.emptied, 0)), last.event + 1), false);
  const int64_t allocated = moments.empty() ? 0 : moments.back().allocated;
  if (const std::optional<double>& frag = req.overheads.fragmentation) return fragmented(allocated, *frag);
  memory::DeviceLimits limits;
  limits.capacity = allocator_capacity(req, sv);
  const AtMark at =
      replay_marks(st, {last.event}, memory::allocator_config(req.allocator), limits, sv.memo)[last.event];
  return std::max(at.reserved, allocated);
}

std::string timeline_phases(Estimate& e, const Request& req, const Serving& sv, const ServingTimeline& st,
                            const char* run) {
  const std::vector<memory::Moment> moments = memory::replay(st.tl);
  const std::optional<double>& frag = req.overheads.fragmentation;
  const memory::AllocatorConfig config = memory::allocator_config(req.allocator);
  memory::DeviceLimits limits;
  limits.capacity = allocator_capacity(req, sv);
  // Each phase's mark, by its event (a phase keeps its largest moment).
  std::vector<AtMark> at(moments.size());
  if (!frag) {
    std::vector<int32_t> wanted;
    for (const memory::Moment& m : moments) {
      for (const auto& upto : st.upto) {
        if (upto.event == m.event) wanted.push_back(m.event);
      }
    }
    std::map<int32_t, AtMark> read = replay_marks(st, wanted, config, limits, sv.memo);
    for (size_t i = 0; i < moments.size(); ++i) {
      if (const auto it = read.find(moments[i].event); it != read.end()) at[i] = it->second;
    }
  }
  constexpr const char* kPhase = "the memory of one phase";
  for (size_t i = 0; i < moments.size(); ++i) {
    const memory::Moment& m = moments[i];
    Phase p;
    p.key = m.phase;
    p.label = m.label;
    p.parts = m.parts;
    p.allocated_bytes = m.allocated;
    p.reserved_bytes = frag ? fragmented(m.allocated, *frag) : std::max(at[i].reserved, m.allocated);
    p.parts["allocator"] = p.reserved_bytes - p.allocated_bytes;
    p.parts["cuda_context"] = sv.fx.context;
    if (sv.fx.nccl > 0) p.parts["nccl"] = sv.fx.nccl;
    p.device_bytes = bytes::add(bytes::add(p.reserved_bytes, sv.fx.context, kPhase), sv.fx.nccl, kPhase);
    if (const auto it = st.outside.find(m.phase); it != st.outside.end()) {
      for (const auto& [key, b] : it->second) {
        if (b <= 0) continue;
        p.parts[key] = b;
        p.device_bytes = bytes::add(p.device_bytes, b, kPhase);
      }
    }
    e.peak_reserved_bytes = std::max(e.peak_reserved_bytes, p.reserved_bytes);
    e.phases.push_back(std::move(p));
  }
  if (frag || at.empty()) return "";
  if (!sv.litgpt && !sv.paged) {
    e.assumptions.push_back(
        "weights loaded by from_pretrained onto the GPU (device_map): transformers' caching_allocator_warmup (since "
        "4.50) first reserves one segment of the parameters' bytes, which the weights then split; "
        "model.to('cuda') skips it");
  }
  const AtMark& last = at.back();
  return std::string("PyTorch caching allocator replayed over the load") +
         (sv.litgpt || sv.paged ? "" : " (after transformers' caching_allocator_warmup)") + " and " + run + ": " +
         fmt_int(last.segments) + " segments, " + fmt_int(last.device_allocs) + " cudaMalloc calls" +
         (last.oom ? " (replayed without the card's bound: a malloc fails there even after freeing the cache)" : "");
}

}  // namespace vram::infer

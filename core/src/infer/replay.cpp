// A serving job's timeline and its phases (infer/replay.h).
#include "infer/replay.h"

#include <algorithm>
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
  const auto event = static_cast<int32_t>(tl.events().size() - 1);
  upto.push_back({event, emptied_ >= 0 ? after_empty_cache(tl, static_cast<size_t>(emptied_)) : tl});
  upto.back().tl.begin_step();
}

memory::Timeline after_empty_cache(const memory::Timeline& tl, size_t at) {
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
  for (size_t k = 0; k < ev.size(); ++k) {
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

// `upto` (a timeline up to a mark, all of it the "load") replayed on the
// card's bound: where a new segment would not fit, the allocator frees its
// cache and retries, as CUDACachingAllocator::malloc does; one that fails
// even then is replayed without the bound to show what it would need.
AtMark replay_upto(const memory::Timeline& upto, const memory::AllocatorConfig& config,
                   const memory::DeviceLimits& limits) {
  const memory::LoadedAllocator loaded(upto, config, limits);
  if (loaded.ooms() > 0) {
    AtMark out = replay_upto(upto, config, {});
    out.oom = true;
    return out;
  }
  // An empty request on it: its peak is the replay's max_memory_reserved.
  const memory::ReservedReplay rr = memory::replay_reserved(loaded, upto, {});
  return {rr.peak_reserved, rr.segments, rr.device_allocs, false};
}

// overheads.fragmentation's reserved view: allocated x (1 + f).
int64_t fragmented(int64_t allocated, double f) {
  constexpr const char* kPhase = "the memory of one phase";
  return bytes::add(allocated, ceil_bytes(f * static_cast<double>(allocated), kPhase), kPhase);
}

}  // namespace

int64_t reserved_at_last_mark(const Request& req, const Serving& sv, const ServingTimeline& st) {
  if (st.upto.empty()) return 0;
  const std::vector<memory::Moment> moments = memory::replay(st.upto.back().tl, false);
  const int64_t allocated = moments.empty() ? 0 : moments.back().allocated;
  if (const std::optional<double>& frag = req.overheads.fragmentation) return fragmented(allocated, *frag);
  memory::DeviceLimits limits;
  limits.capacity = allocator_capacity(req, sv);
  const AtMark at = replay_upto(st.upto.back().tl, memory::allocator_config(req.allocator), limits);
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
  for (size_t i = 0; i < moments.size() && !frag; ++i) {
    for (const auto& upto : st.upto) {
      if (upto.event == moments[i].event) at[i] = replay_upto(upto.tl, config, limits);
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

// One training step on one GPU, phase by phase (DESIGN.md §3 "Phases, not a sum";
// research/memory-internals.md §3.2 and §9.1): the step's tensors in order
// (train/step.cpp, from the memory terms in core/src/memory/), replayed into
// phases, components and assumptions.
#include "train/estimate_train.h"

#include <algorithm>
#include <map>
#include <optional>

#include "fit.h"
#include "format.h"
#include "memory/allocator_replay.h"
#include "memory/bytes.h"
#include "memory/overheads.h"
#include "train/step.h"

namespace vram::train {

namespace {

using memory::to_bytes;

// The input blamed when a training figure exceeds limits::kMaxBytes: the
// token count's larger factor (every activation and loss term scales with
// micro_batch x seq_len).
std::string token_driver(const TrainOptions& t) {
  return t.micro_batch > t.seq_len ? "train.micro_batch" : "train.seq_len";
}

// train.padding longest: batches come in every length up to seq_len, and
// the caching allocator keeps the segments each length made
// (CUDACachingAllocator.cpp gives segments back only in
// release_cached_blocks: on empty_cache() or when a cudaMalloc fails). A
// step no longer than one before it is served from the cache by splitting
// its blocks (best fit, should_split); a step longer than every one before
// it (a record) needs new segments for its larger tensors. So the replay
// runs the records before the two full-length steps. Their lengths are the
// expected records of uniformly random batch lengths in (0, s]: the record
// after r is uniform on (r, s], so on average (r + s) / 2, which gives
// s(1 - 2^-k); a run of n steps sees about ln n records (the harmonic
// number H_n), 7 for about a thousand steps. The request does not know the
// dataset's length histogram: this is a stated stand-in for it
// (README "Validation": torchtune's padded Alpaca rows 43-48).
constexpr int64_t kPaddedRecords = 7;

std::vector<memory::Timeline> shorter_steps(const RankBasis& b, const StepTerms& t) {
  std::vector<memory::Timeline> out;
  if (b.req->train.padding != Padding::kLongest) return out;
  int64_t previous = 0;
  for (int64_t k = 1; k <= kPaddedRecords; ++k) {
    // s(1 - 2^-k), rounded up: s - floor(s / 2^k).
    const int64_t shorter = t.seq_len - (t.seq_len >> k);
    if (shorter >= t.seq_len || shorter <= previous) continue;
    previous = shorter;
    out.push_back(training_step(b, step_terms(b, t.micro_batch, shorter), /*with_load=*/false));
  }
  return out;
}

// What the caching allocator may take on the request's card: what a process
// can use (fit.h Card::capacity) less the CUDA context and NCCL's buffers,
// which are allocated outside it; 0 (no limit) without a card.
int64_t allocator_capacity(const RankBasis& b, int64_t card_capacity) {
  const int64_t left = card_capacity - b.context - b.nccl.bytes;
  return card_capacity > 0 && left > 0 ? left : 0;
}

// The reserved view of a step: the caching-allocator replay, on the rank's
// loaded allocator (RankBasis::loaded), after the padded steps' records
// (shorter_steps). `card_capacity` (fit.h Card::capacity, 0 = no card)
// bounds it: when a new segment would not fit, the allocator frees its
// cached blocks and retries, as on the card; a step that fails even then
// does not fit, and is replayed without the bound to show what it would
// need. `detail_moment` as memory::replay_reserved.
memory::ReservedReplay reserved_replay(const RankBasis& b, const StepTerms& t, const memory::Timeline& tl,
                                       const std::vector<memory::Moment>& moments, int detail_moment,
                                       int64_t card_capacity) {
  const std::vector<memory::Timeline> shorter = shorter_steps(b, t);
  std::vector<const memory::Timeline*> before;
  for (const auto& s : shorter) before.push_back(&s);
  const int64_t capacity = allocator_capacity(b, card_capacity);
  memory::ReservedReplay rr =
      memory::replay_reserved(b.loaded(capacity), tl, moments, detail_moment, before, /*stop_at_oom=*/true);
  rr.capacity = capacity;
  if (rr.ooms > 0) {
    const int64_t ooms = rr.ooms;
    rr = memory::replay_reserved(b.loaded(0), tl, moments, detail_moment, before);
    rr.ooms = ooms;  // on the card; the figures are the unbounded replay's
  }
  return rr;
}

// The reserved range (issue 33). A caching allocator can hold more for a
// smaller job than for a larger one: a freed block serves a later request
// only if it is at least as large (CUDACachingAllocator.cpp get_free_block,
// pytorch v2.5.1), so at a small micro-batch the fixed-size tensors that
// follow the freed activations (gradients, optimizer temporaries) get
// segments of their own, while a larger micro-batch's freed activations
// hold them, and a segment goes back to the device only in
// release_cached_blocks (empty_cache(), a failed cudaMalloc). The job
// replayed alone is the lower end of the range; the upper end is the most
// the job or one of its smaller jobs reserves alone: the job's sequence at
// micro-batches 1 to kEveryMicroBatchUpTo and at every power of two below
// its micro-batch, and micro-batch 1 at every power of two from
// kSmallestSeqLen below its sequence. A smaller job's set is inside a larger
// one's, so the upper end never falls as the micro-batch grows (at any
// sequence: through kEveryMicroBatchUpTo, then from power of two to power of
// two) or as the sequence grows from power of two to power of two at
// micro-batch 1 (README "Reliability"); the peak, the fit and the searches
// use it. Both bounds are set by cost: a set of k jobs costs k replays.
constexpr int64_t kEveryMicroBatchUpTo = 8;
constexpr int64_t kSmallestSeqLen = 128;

std::vector<std::pair<int64_t, int64_t>> smaller_jobs(int64_t micro_batch, int64_t seq_len) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t m = 1; m < micro_batch && m <= kEveryMicroBatchUpTo; ++m) out.emplace_back(m, seq_len);
  for (int64_t m = 2 * kEveryMicroBatchUpTo; m < micro_batch; m *= 2) out.emplace_back(m, seq_len);
  for (int64_t s = kSmallestSeqLen; s < seq_len; s *= 2) out.emplace_back(1, s);
  return out;
}

// The largest reserved peak among the smaller jobs (0 when there are none),
// which one, and the peaks already replayed (`memo`, estimate_train.h; may
// be null).
struct SmallerPeak {
  int64_t reserved = 0;
  int64_t micro_batch = 0;
  int64_t seq_len = 0;
};
SmallerPeak smaller_jobs_peak(const RankBasis& b, const StepTerms& t, int64_t card_capacity, ReservedMemo* memo) {
  SmallerPeak out;
  for (const auto& job : smaller_jobs(t.micro_batch, t.seq_len)) {
    int64_t reserved = -1;
    if (memo != nullptr) {
      for (const ReservedMemo::Job& j : memo->seen) {
        if (j.micro_batch == job.first && j.seq_len == job.second && j.card_capacity == card_capacity)
          reserved = j.reserved;
      }
    }
    if (reserved < 0) {
      const StepTerms st = step_terms(b, job.first, job.second);
      // Its peak alone: the step without a copy of the load (no moment of it is read).
      reserved = reserved_replay(b, st, training_step(b, st, /*with_load=*/false), {}, -1, card_capacity).peak_reserved;
      if (memo != nullptr) memo->seen.push_back({job.first, job.second, card_capacity, reserved});
    }
    if (reserved > out.reserved) out = {reserved, job.first, job.second};
  }
  return out;
}

// One phase's views: the allocated view (live tensors), the reserved view
// (the caching-allocator replay's `replayed`, or a given fragmentation factor
// `frag` over allocated) and the device view (plus what lives outside the
// allocator: CUDA context, managed optimizer states, NCCL).
struct PhaseBytes {
  int64_t reserved = 0;
  int64_t device = 0;
};
PhaseBytes phase_bytes(const RankBasis& b, const memory::Moment& m, int64_t replayed,
                       const std::optional<double>& frag) {
  constexpr const char* kDevice = "the device memory of one phase";
  const int64_t alloc = m.allocated;
  PhaseBytes p;
  p.reserved = frag ? bytes::add(alloc, to_bytes(*frag * static_cast<double>(alloc), kDevice), kDevice)
                    : std::max(replayed, alloc);
  p.device =
      bytes::add(bytes::add(p.reserved, b.context, kDevice), bytes::add(m.managed, b.nccl.bytes, kDevice), kDevice);
  return p;
}

// The fragmentation factor a view applies instead of the replay: the given
// overheads.fragmentation, or none at all for the live tensors' view.
std::optional<double> given_fragmentation(const RankBasis& b, ReservedView view) {
  std::optional<double> frag = b.req->overheads.fragmentation;
  if (view == ReservedView::kLiveTensors && !frag) frag = 0.0;
  return frag;
}

// The upper end of the reserved range (smaller_jobs) at the peak phase; the
// job alone is the lower end (Estimate::peak_reserved_low_bytes). A smaller
// job counts with its max_memory_reserved, which with a card can exceed what
// this job's phases show after the allocator freed its cache to retry.
void raise_to_upper_end(Estimate& e, const RankBasis& b, const StepTerms& t, int64_t card_capacity, size_t peak_index,
                        ReservedMemo* memo) {
  e.peak_reserved_low_bytes = e.peak_reserved_bytes;
  const SmallerPeak s = smaller_jobs_peak(b, t, card_capacity, memo);
  e.peak_reserved_bytes = std::max(e.peak_reserved_bytes, s.reserved);
  Phase& ph = e.phases[peak_index];
  if (s.reserved <= ph.reserved_bytes) return;
  constexpr const char* kDevice = "the device memory of one phase";
  const int64_t extra = s.reserved - ph.reserved_bytes;
  ph.reserved_bytes = s.reserved;
  ph.parts["allocator"] += extra;
  ph.device_bytes = bytes::add(ph.device_bytes, extra, kDevice);
  e.peak_bytes = ph.device_bytes;
  e.assumptions.push_back("reserved at the peak: the upper end of the reserved range, what micro-batch " +
                          std::to_string(s.micro_batch) + " x " + std::to_string(s.seq_len) +
                          " tokens reserves alone; this job alone: peak_reserved_low_bytes (a freed block serves "
                          "only requests no larger than itself, CUDACachingAllocator.cpp get_free_block)");
}

// Phases from the replayed moments. `detail` gets the allocator replay's
// facts when it ran (taken at the allocation peak).
void assemble_phases(Estimate& e, const RankBasis& b, const StepTerms& t, const memory::Timeline& tl,
                     const std::vector<memory::Moment>& moments, memory::ReservedReplay* detail,
                     ReservedView view = ReservedView::kReplay, int64_t card_capacity = 0,
                     ReservedMemo* memo = nullptr) {
  const std::optional<double> frag = given_fragmentation(b, view);
  memory::ReservedReplay rr;
  if (!frag) {
    int peak_moment = -1;
    for (size_t i = 0; i < moments.size(); ++i) {
      if (peak_moment < 0 || moments[i].allocated > moments[static_cast<size_t>(peak_moment)].allocated) {
        peak_moment = static_cast<int>(i);
      }
    }
    rr = reserved_replay(b, t, tl, moments, detail != nullptr ? peak_moment : -1, card_capacity);
    e.peak_reserved_bytes = rr.peak_reserved;
  }
  int64_t max_alloc = 0;
  int64_t alloc_at_peak = 0;
  size_t peak_index = 0;
  for (size_t i = 0; i < moments.size(); ++i) {
    const memory::Moment& m = moments[i];
    const PhaseBytes pb = phase_bytes(b, m, frag ? 0 : rr.reserved[i], frag);
    Phase ph;
    ph.key = m.phase;
    ph.label = m.label;
    ph.parts = m.parts;
    const int64_t alloc = m.allocated;
    ph.allocated_bytes = alloc;
    ph.reserved_bytes = pb.reserved;
    ph.parts["allocator"] = ph.reserved_bytes - alloc;
    ph.parts["cuda_context"] = b.context;
    if (b.nccl.bytes > 0) ph.parts["nccl"] = b.nccl.bytes;
    ph.device_bytes = pb.device;
    e.managed_bytes = std::max(e.managed_bytes, m.managed);
    // The peak phase: the largest device view; among equals (the cache
    // holds its size from phase to phase), the one with the most live tensors.
    if (ph.device_bytes > e.peak_bytes || (ph.device_bytes == e.peak_bytes && alloc > alloc_at_peak)) {
      e.peak_bytes = ph.device_bytes;
      e.peak_phase = ph.key;
      alloc_at_peak = alloc;
      peak_index = i;
    }
    max_alloc = std::max(max_alloc, alloc);
    e.peak_reserved_bytes = std::max(e.peak_reserved_bytes, ph.reserved_bytes);
    e.phases.push_back(std::move(ph));
  }
  e.peak_allocated_bytes = max_alloc;
  if (!frag && detail != nullptr && !e.phases.empty()) raise_to_upper_end(e, b, t, card_capacity, peak_index, memo);
  if (detail != nullptr) *detail = std::move(rr);
}

// The largest size of a component at any marked moment of the step
// (memory/timeline.h component_peaks).
int64_t peak_of(const std::map<std::string, int64_t>& peaks, const std::string& key) {
  auto it = peaks.find(key);
  return it == peaks.end() ? 0 : it->second;
}

// How the reserved view was found: the caching-allocator replay (with the
// tensors whose segments hold the cached free bytes), or the given factor.
std::string allocator_formula(const RankBasis& b, const memory::ReservedReplay& rr) {
  const Request& req = *b.req;
  if (req.overheads.fragmentation) {
    return "overheads.fragmentation " + std::to_string(*req.overheads.fragmentation).substr(0, 4) +
           " x allocated (given; replaces the allocator replay)";
  }
  const memory::AllocatorConfig& cfg = b.allocator;
  const bool varied = req.train.padding == Padding::kLongest;
  std::string f =
      std::string("PyTorch caching allocator replayed over load + ") +
      (varied ? "steps at seq_len x (1 - 2^-k), k = 1..7 (padded to the longest: the expected record lengths) + "
                "2 full-length steps"
              : "2 steps") +
      " (CUDACachingAllocator.cpp";
  if (cfg.expandable_segments) f += ", expandable_segments";
  if (cfg.max_split_size != memory::kNoMaxSplitSize)
    f += ", max_split_size_mb " + std::to_string(cfg.max_split_size >> 20);
  f += "): " + fmt_int(rr.segments) + " segments, " + fmt_int(rr.device_allocs) + " device allocations";
  if (rr.capacity > 0) {
    f += "; bounded by the card's " + fmt_int(rr.capacity) + " B left to the allocator";
    if (rr.retries > 0) f += ", where it freed its cache and retried " + fmt_int(rr.retries) + " times";
  } else if (rr.ooms > 0) {
    f += "; more than the card holds even after freeing the cache: replayed without the card's bound";
  }
  if (!rr.causes.empty()) {
    f += "; cached free bytes at the allocation peak sit in segments made for";
    for (size_t i = 0; i < rr.causes.size() && i < 3; ++i) {
      f += std::string(i == 0 ? " " : ", ") + rr.causes[i].first + " (" + fmt_int(rr.causes[i].second) + " B)";
    }
  }
  return f;
}

// Components after the model state: activations, temporaries, loss,
// workspaces, the layout's buffers and what lives outside the allocator.
void step_components(Estimate& e, const RankBasis& b, const StepTerms& t, const memory::ReservedReplay& rr,
                     const std::map<std::string, int64_t>& peaks) {
  const Request& req = *b.req;
  const LayerStack& st = req.model.text;
  const memory::ParallelBuffers& pb = b.buffers;
  const memory::TokenBuffers& tb = t.tokens;
  const int64_t N = bytes::mul(t.micro_batch, req.train.seq_len, "tokens per micro-batch");
  const int64_t n = b.sh.group;
  auto& c = e.components;
  c.push_back({"activations", "Saved activations", peak_of(peaks, "activations"), t.act.formula, Pool::kAllocated});
  c.push_back({"layer_backward", "Backward temporaries (one layer)", peak_of(peaks, "layer_backward"),
               "hidden-state grads, attention backward workspace" +
                   std::string(req.train.checkpointing == Checkpointing::kFull ? ", one recomputed layer" : ""),
               Pool::kAllocated});
  c.push_back({"loss_buffers", "Logits and loss buffers", peak_of(peaks, "loss_buffers"),
               t.loss.formula + (t.act.returned_kv_fp32 > 0
                                     ? "; + Accelerate's fp32 copy of the returned key/value cache (" +
                                           fmt_int(t.act.returned_kv_fp32) + " B, train.returns_kv_cache)"
                                     : ""),
               Pool::kAllocated});
  if (const int64_t d = peak_of(peaks, "dequant"); d > 0) {
    c.push_back({"dequant", "4-bit lm_head dequantised (forward and backward)", d,
                 "fp16 + bf16 copies of lm_head (Lightning quantises from fp16; MatMul4Bit casts to bf16)",
                 Pool::kAllocated});
  }
  c.push_back({"cublas_workspace", "cuBLAS/cuBLASLt workspaces", b.cublas,
               "2 handles x (cuBLAS + 1 MiB cuBLASLt) (CublasHandlePool.cpp)", Pool::kAllocated});
  if (req.overheads.misc_bytes > 0) {
    c.push_back({"misc", "User cushion", req.overheads.misc_bytes, "overheads.misc_bytes", Pool::kAllocated});
  }
  // The allocator's cache at the peak phase: what it adds to the answer
  // (after the peak, freed blocks stay cached, so later phases show more).
  int64_t cached = 0;
  for (const auto& ph : e.phases) {
    if (ph.key == e.peak_phase) cached = ph.parts.at("allocator");
  }
  c.push_back(
      {"allocator", "Allocator cache (reserved - allocated)", cached, allocator_formula(b, rr), Pool::kOutside});
  if (pb.gathered > 0) {
    c.push_back({"gathered_params", "Gathered parameters (current + prefetched layer)", pb.gathered,
                 pb.gathered_formula + " (" + b.sh.label + ")", Pool::kAllocated});
  }
  if (b.state.grad_partitions > 0) {
    c.push_back({"grad_partitions", "fp32 gradient partitions", b.state.grad_partitions,
                 fmt_int(b.state.trainable_local) + " trainable x 4 B / " + std::to_string(n) +
                     (b.sh.expert_group != n && b.state.has_experts
                          ? " (routed experts / " + std::to_string(b.sh.expert_group) + ")"
                          : "") +
                     (b.sh.megatron ? " (Megatron fp32 main-grad shard)" : " (DeepSpeed)"),
                 Pool::kAllocated});
  }
  if (tb.cp_kv > 0) {
    c.push_back({"cp_kv_exchange", "Context-parallel KV exchange", peak_of(peaks, "cp_kv_exchange"),
                 "2 K/V receive buffers of the local chunk (" + fmt_int(N) +
                     " tokens) in forward; + 2 dK/dV buffers in backward (ring attention)",
                 Pool::kAllocated});
  }
  if (tb.dispatch > 0) {
    c.push_back({"moe_dispatch", "Expert-parallel token dispatch", tb.dispatch,
                 "2 x N " + fmt_int(N) + " x top-k " + std::to_string(st.experts_per_token) + " x h " +
                     fmt_int(st.hidden) + " (all-to-all send + receive, balanced routing)",
                 Pool::kAllocated});
  }
  if (pb.comm > 0) c.push_back({"comm_buffers", "Communication buckets", pb.comm, pb.comm_formula, Pool::kAllocated});
  if (b.nccl.bytes > 0) c.push_back({"nccl", "NCCL buffers", b.nccl.bytes, b.nccl.formula, Pool::kOutside});
  c.push_back(
      {"cuda_context", "CUDA context", b.context,
       req.overheads.cuda_context_bytes ? "overheads.cuda_context_bytes" : "512 MiB lazy-loading prior (research §2.1)",
       Pool::kOutside});
}

// The run's precision, optimizer, attention and padding, each with the
// default that chose it when the request left it out.
void run_settings(Estimate& e, const TrainOptions& t, const OptimizerInfo& opt) {
  // QLoRA computes in the 4-bit layers' 16-bit compute dtype (dtypes_for):
  // fp16 when the run says fp16, else bf16; both take the same bytes.
  const bool half = t.precision == Precision::kFp16 || t.precision == Precision::kAmpFp16;
  const std::string qlora_precision =
      std::string(half ? "fp16" : "bf16") + " (QLoRA: 16-bit compute over 4-bit weights" +
      (t.precision_given && !half && t.precision != Precision::kBf16
           ? std::string("; ") + to_string(t.precision) + " applies to nothing else the estimate counts"
           : std::string()) +
      ")";
  e.assumptions.push_back(
      std::string("precision ") + (t.method == Method::kQlora ? qlora_precision : std::string(to_string(t.precision))) +
      (t.precision_given ? "" : " (default: transformers v5 loads the checkpoint dtype, dtype=\"auto\")"));
  e.assumptions.push_back(std::string("optimizer ") + opt.name +
                          (t.optimizer_given ? "" : " (default: HF Trainer optim in current transformers)"));
  e.assumptions.push_back(std::string("attention ") + to_string(t.attention) +
                          (t.attention_given ? "" : " (default: transformers attn_implementation)"));
  e.assumptions.push_back("steady-state step (step >= 2): optimizer states exist during forward and backward");
  if (t.padding == Padding::kLongest) {
    e.assumptions.push_back(
        "padding longest: batches vary in length up to seq_len; the allocator replay runs steps at seq_len x "
        "(1 - 2^-k), k = 1..7 (the expected record lengths of uniformly random batch lengths) before the "
        "full-length steps, and keeps the blocks each cached");
  } else {
    e.assumptions.push_back(std::string("padding ") + to_string(t.padding) + ": every step is micro_batch x seq_len" +
                            (t.padding_given ? ""
                                             : " (default; train.padding longest if batches are padded to their "
                                               "longest sample)"));
  }
}

// The LoRA targets, and what a LoRA on the output layer adds and risks.
void lora_notes(Estimate& e, const RankBasis& b) {
  const TrainOptions& t = b.req->train;
  if (!b.plan.lora_targets.empty()) {
    std::string tg;
    for (const auto& x : b.plan.lora_targets) tg += (tg.empty() ? "" : ", ") + x;
    e.assumptions.push_back("LoRA targets: " + tg + " (rank " + std::to_string(t.lora.rank) + ")");
  }
  if (const memory::HeadLora& hl = b.plan.head_lora; hl.on) {
    e.assumptions.push_back("LoRA on the output layer " + hl.module + ": r x (in " + fmt_int(hl.in) + " + vocab " +
                            fmt_int(hl.out) + ") = " + fmt_int(hl.params) +
                            " adapter params; its B(A x) output, tokens x vocab, is added to the logits in forward "
                            "and its gradient formed in backward (peft tuners/lora/layer.py Linear.forward), counted "
                            "under the logits and loss buffers");
    if (hl.tied) {
      e.warnings.push_back(hl.module +
                           " is tied to the input embeddings: PEFT wraps the output Linear and keeps the shared "
                           "weight frozen, but warns that merging or converting the adapter can disturb the tied "
                           "embedding (peft tuners/tuners_utils.py tied_target_modules)");
    }
    if (t.lora.use_dora) {
      e.warnings.push_back("DoRA on " + hl.module +
                           ": its magnitude vector is counted, not the vocab x hidden weight-norm temporaries DoRA "
                           "builds every forward (peft tuners/lora/dora.py DoraLinearLayer.forward)");
    }
  } else if (hl.targeted) {
    e.assumptions.push_back("LoRA on the output layer: it lives on the last pipeline stage, not on this rank");
  }
}

void step_assumptions(Estimate& e, const RankBasis& b) {
  const Request& req = *b.req;
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  const OptimizerInfo& opt = *b.opt;
  run_settings(e, t, opt);
  if (!t.zero_grad_set_to_none && t.grad_accum == 1 && !t.optimizer_in_backward) {
    e.assumptions.push_back(
        "zero_grad(set_to_none=False) (PyTorch < 2.0's default): gradients stay allocated, zeroed, through forward");
  }
  if (t.softmax_saves_input) {
    e.assumptions.push_back("softmax / log_softmax keep their input for backward (PyTorch <= 1.10)");
  }
  lora_notes(e, b);
  if (t.compile) {
    e.warnings.push_back(
        "train.compile: torch.compile is not modelled; this is the eager-mode estimate, likely an upper bound for "
        "activations (Inductor fuses pointwise ops, and the min-cut partitioner, torch/_functorch/partitioners.py "
        "min_cut_rematerialization_partition, recomputes some of them in backward instead of saving them). "
        "Measured: torchtune's README 'Optimization flags' table (1814feb, Llama-3.2-3B full fine-tune, 2 x 4096 "
        "packed, no checkpointing) goes from 60.0 to 51.0 GiB of active memory with compile, 15 % below eager");
  }
  if (m.stack("vision") != nullptr) {
    e.assumptions.push_back("train.seq_len counts the image tokens the language model sees");
    if (t.images_per_sample == 0) {
      e.assumptions.push_back(
          "train.images_per_sample 0 (default): text-only samples, no image through the vision tower; set it for "
          "image data");
    }
  } else if (t.images_per_sample > 0) {
    // As infer.images_per_prompt (estimate_infer.cpp image_serving): an image
    // count for a model that cannot read images is a mistake, not a no-op.
    fail(errc::kInconsistent, "train.images_per_sample",
         "train.images_per_sample (" + std::to_string(t.images_per_sample) + ") needs a vision-language model; " +
             vram::quoted(m.model_type) + " has no vision tower");
  }
  if (t.activation_offload) {
    e.assumptions.push_back("saved activations offloaded to host memory; two layers resident on the GPU");
  }
  if (!m.text.causal) e.assumptions.push_back("encoder model: classification head, no vocabulary-sized loss");
  if (opt.paged) {
    e.warnings.push_back(
        "paged optimizer: states live in CUDA managed memory and are evicted to host RAM under "
        "pressure; counted as GPU-resident in the peak, and the fit verdict says whether they page");
  }
  if (t.attention == AttentionImpl::kEager && t.seq_len >= 4096) {
    e.warnings.push_back("eager attention keeps a s^2 score matrix per layer; sdpa or flash_attention_2 avoids it");
  }
  if (!m.exact) {
    for (const auto& r : m.inexact) e.warnings.push_back("approximate model: " + r);
  }
  if (t.method == Method::kQlora && t.optimizer_given == false) {
    e.assumptions.push_back("QLoRA base weights NF4, compute dtype bf16");
  }
}

// The device peak of a step's phases and the most managed bytes among them
// (assemble_phases' peak_bytes and managed_bytes, without the phases).
struct StepPeak {
  int64_t peak = 0;
  int64_t managed = 0;
};
StepPeak step_peak(const RankBasis& b, const std::vector<memory::Moment>& moments, const memory::ReservedReplay& rr,
                   const std::optional<double>& frag) {
  StepPeak p;
  for (size_t i = 0; i < moments.size(); ++i) {
    p.peak = std::max(p.peak, phase_bytes(b, moments[i], frag ? 0 : rr.reserved[i], frag).device);
    p.managed = std::max(p.managed, moments[i].managed);
  }
  return p;
}

// Whether one rank's step at `micro_batch` sequences of `seq_len` tokens (the
// rank's own when 0) fits `capacity`: the live tensors
// first (a lower bound: reserved >= allocated), the allocator replay only
// when that bound fits. With `allow_paging`, a paged optimizer's managed
// states may page out (fit.h runs_on).
// One rank's step at a probe's size and the peak of its live tensors: what
// every probe builds first.
struct LiveStep {
  StepTerms terms;
  memory::Timeline tl;
  std::vector<memory::Moment> moments;
  StepPeak live;
};
LiveStep live_step(const RankBasis& basis, int64_t micro_batch, int64_t seq_len) {
  LiveStep s;
  s.terms = step_terms(basis, micro_batch, seq_len);
  s.tl = training_step(basis, s.terms);
  s.moments = memory::replay(s.tl, /*with_parts=*/false);
  s.live = step_peak(basis, s.moments, {}, given_fragmentation(basis, ReservedView::kLiveTensors));
  return s;
}

bool step_fits(const RankBasis& basis, int64_t micro_batch, int64_t seq_len, int64_t capacity, bool allow_paging,
               ReservedMemo& memo, int64_t& replays) {
  const Result<bool> fits = attempt<bool>([&] {
    const LiveStep step = live_step(basis, micro_batch, seq_len);
    const StepTerms& terms = step.terms;
    const memory::Timeline& tl = step.tl;
    const std::vector<memory::Moment>& moments = step.moments;
    if (!fit::runs_on(step.live.peak, allow_paging ? step.live.managed : 0, capacity)) return false;
    // A given fragmentation factor is the reserved view itself.
    if (basis.req->overheads.fragmentation) return true;
    const memory::ReservedReplay rr = reserved_replay(basis, terms, tl, moments, -1, capacity);
    replays += rr.ooms > 0 ? 2 : 1;  // reserved_replay replays again without the bound after a failed malloc
    const StepPeak e = step_peak(basis, moments, rr, std::nullopt);
    if (!fit::runs_on(e.peak, allow_paging ? e.managed : 0, capacity)) return false;
    // The upper end of the reserved range (smaller_jobs): every smaller job fits.
    const size_t remembered = memo.seen.size();
    const SmallerPeak smaller = smaller_jobs_peak(basis, terms, capacity, &memo);
    replays += static_cast<int64_t>(memo.seen.size() - remembered);  // each smaller job not replayed before
    constexpr const char* kDevice = "the device memory of one phase";
    const int64_t upper = bytes::add(bytes::add(smaller.reserved, basis.context, kDevice),
                                     bytes::add(e.managed, basis.nccl.bytes, kDevice), kDevice);
    return fit::runs_on(upper, allow_paging ? e.managed : 0, capacity);
  });
  if (fits.ok()) return fits.value();
  // A micro-batch whose figures exceed limits::kMaxBytes fits no GPU (the
  // searches try sizes past the request's own).
  if (fits.error().code == errc::kOutOfRange) return false;
  fail(fits.error());
}

}  // namespace

// Each rank's view of the request, its stage and its RankBasis (the bases
// point into `ranks`); none when one cannot be built.
struct RankBases::Impl {
  std::vector<Request> ranks;
  std::vector<Stage> stages;
  std::vector<RankBasis> bases;
};

RankBases::RankBases(const Request& req) : impl_(std::make_unique<Impl>()) {
  std::vector<Stage>& stages = impl_->stages;
  std::vector<Request>& ranks = impl_->ranks;
  const ParallelOptions& p = req.parallel;
  if (p.tp == 1 && p.pp == 1 && p.cp == 1 && p.dp == 1 && p.ep == 1) {
    stages.push_back(whole_model(req));
    ranks.push_back(req);
  } else {
    for (const Stage& stage : pipeline_stages(req)) {
      stages.push_back(stage);
      ranks.push_back(rank_request(req, stage));
    }
  }
  std::vector<RankBasis>& bases = impl_->bases;
  if (recover([&] {
        for (size_t i = 0; i < ranks.size(); ++i) bases.push_back(rank_basis(ranks[i], req, stages[i]));
      })) {
    bases.clear();
  }
}

RankBases::~RankBases() = default;

// One rank: `req` is the rank's view of the model (layout.h rank_request),
// `global` the request as the user gave it.
// `shared` (may be null): the rank's basis, built for this rank (RankBases).
Result<Estimate> estimate_rank(const Request& req, const Request& global, const Stage& stage, ReservedView view,
                               ReservedMemo* memo, const RankBasis* shared = nullptr) {
  return attempt<Estimate>([&]() -> Result<Estimate> {
    const bytes::Driver driver(token_driver(global.train));
    std::optional<RankBasis> own;
    const RankBasis& basis = shared != nullptr ? *shared : own.emplace(rank_basis(req, global, stage));
    const StepTerms terms = step_terms(basis, req.train.micro_batch);
    Estimate e;
    e.tokens_per_micro_batch = bytes::mul(req.train.micro_batch, req.train.seq_len, "tokens per micro-batch");
    e.params_trainable = basis.plan.base_trainable + basis.plan.lora_params;
    const memory::Timeline tl = training_step(basis, terms);
    memory::ReservedReplay alloc;
    const std::optional<fit::Card> card = fit::chosen_gpu(global);
    assemble_phases(e, basis, terms, tl, memory::replay(tl), &alloc, view, card ? card->capacity : 0, memo);
    memory::state_components(e.components, req, global.parallel, basis.plan, basis.dt, *basis.opt, basis.sh,
                             basis.state);
    step_components(e, basis, terms, alloc, memory::component_peaks(tl));
    step_assumptions(e, basis);
    return e;
  });
}

namespace {

// Where more GPUs cost memory (issue 33): NCCL's buffers are not sharded, and
// they grow with the data-parallel group (a dp communicator appears at 2
// ranks; NVLS buffers scale with the ranks in a node, layout.cpp
// nccl_memory). When this layout's buffers exceed those of half its
// data-parallel ranks, the note says by how much: where the shards shrink
// by less than that, adding GPUs raises the per-GPU peak.
void nccl_growth_note(Estimate& e, const Request& req) {
  const ParallelOptions& p = req.parallel;
  if (p.dp < 2 || p.dp % 2 != 0) return;
  const Stage stage = pipeline_stages(req).front();
  Request half = req;
  half.parallel.dp = p.dp / 2;
  half.parallel.gpus = p.gpus / 2;
  const int64_t now = nccl_memory(req, stage).bytes;
  const int64_t before = nccl_memory(half, stage).bytes;
  if (now <= before) return;
  e.assumptions.push_back("NCCL buffers grow with the GPUs: " + fmt_int(now) + " B per GPU, " + fmt_int(before) +
                          " B with half the data-parallel ranks; not sharded, so more GPUs can raise the per-GPU peak");
}

}  // namespace

Result<Estimate> estimate_train(const Request& req, ReservedView view, RankMemos* memos, const RankBases* bases) {
  const ParallelOptions& p = req.parallel;
  // The ranks' bases when they were built (RankBases), else each rank's own.
  const RankBases::Impl* built = bases != nullptr && !bases->impl().bases.empty() ? &bases->impl() : nullptr;
  // Rank i's memo: FitSearch numbers the ranks the same way.
  const auto memo = [&](size_t i) -> ReservedMemo* {
    if (memos == nullptr) return nullptr;
    if (memos->size() <= i) memos->resize(i + 1);
    return &(*memos)[i];
  };
  if (p.tp == 1 && p.pp == 1 && p.cp == 1 && p.dp == 1 && p.ep == 1) {
    return built != nullptr ? estimate_rank(built->ranks[0], req, built->stages[0], view, memo(0), &built->bases[0])
                            : estimate_rank(req, req, whole_model(req), view, memo(0));
  }
  // Every pipeline rank is estimated; the busiest decides the per-GPU answer.
  Result<Estimate> best = Error{errc::kInternal, "no pipeline stage", "parallel.pp"};
  std::vector<StageSummary> summaries;
  int64_t params_per_gpu = 0;
  const std::vector<Stage> stages = built != nullptr ? built->stages : pipeline_stages(req);
  for (size_t i = 0; i < stages.size(); ++i) {
    const Stage& stage = stages[i];
    std::optional<Request> own;
    const Request& rank = built != nullptr ? built->ranks[i] : own.emplace(rank_request(req, stage));
    auto r = estimate_rank(rank, req, stage, view, memo(i), built != nullptr ? &built->bases[i] : nullptr);
    if (!r.ok()) return r;
    summaries.push_back({stage.index, stage.layers, stage.moe_layers, rank.model.params_total(), stage.in_flight(),
                         stage.first, stage.last, r.value().peak_bytes});
    if (!best.ok() || r.value().peak_bytes > best.value().peak_bytes) {
      best = r;
      params_per_gpu = rank.model.params_total();
    }
  }
  Estimate& e = best.value();
  // Trainable parameters of the whole model, not of one rank.
  const memory::TrainablePlan plan = memory::plan_trainable(req);
  e.params_trainable = plan.base_trainable + plan.lora_params;
  const Sharding sh = sharding_for(p);
  for (const auto& [k, v] : std::initializer_list<std::pair<const char*, int64_t>>{{"gpus", p.gpus},
                                                                                   {"dp", p.dp},
                                                                                   {"tp", p.tp},
                                                                                   {"pp", p.pp},
                                                                                   {"cp", p.cp},
                                                                                   {"ep", p.ep},
                                                                                   {"vp", p.vp},
                                                                                   {"nodes", p.nodes},
                                                                                   {"gpus_per_node", p.gpus_per_node},
                                                                                   {"shard_group", sh.group}}) {
    e.facts.emplace_back(k, v);
  }
  const LayerStack& t = req.model.text;
  e.facts.emplace_back("params_per_gpu", params_per_gpu);  // on the busiest rank, after tp / pp / ep
  if (t.experts > 0) e.facts.emplace_back("experts_per_rank", t.experts / p.ep);
  for (const auto& c : e.components) {
    if (c.key == "nccl") e.facts.emplace_back("nccl_bytes", c.bytes);
  }
  nccl_growth_note(e, req);
  if (p.pp > 1) {
    const auto busiest = std::max_element(summaries.begin(), summaries.end(),
                                          [](const auto& a, const auto& b) { return a.peak_bytes < b.peak_bytes; });
    e.facts.emplace_back("busiest_stage", busiest->stage);
    e.facts.emplace_back("first_stage_peak_bytes", summaries.front().peak_bytes);
    e.facts.emplace_back("last_stage_peak_bytes", summaries.back().peak_bytes);
    e.stages = std::move(summaries);
  }
  e.engine = sh.label.empty() ? "model parallel" : sh.label;
  e.assumptions.push_back(
      "layout: " + e.engine + ", dp " + std::to_string(p.dp) + " x tp " + std::to_string(p.tp) + " x pp " +
      std::to_string(p.pp) + " x cp " + std::to_string(p.cp) + (p.ep > 1 ? ", ep " + std::to_string(p.ep) : "") +
      (p.vp > 1 ? ", " + std::to_string(p.vp) + " virtual stages per rank (interleaved 1F1B)" : "") +
      (p.pp > 1 ? "; every pipeline rank is estimated and the busiest is reported" : ""));
  if (p.pp > 1 && t.layers % p.pp != 0) {
    e.assumptions.push_back("layers split " + std::to_string(t.layers / p.pp + 1) + "/" +
                            std::to_string(t.layers / p.pp) +
                            " over the stages, the extra layers on the first ones (Megatron needs an even split "
                            "or --decoder-first/last-pipeline-num-layers)");
  }
  if (p.ep > 1) e.assumptions.push_back("expert parallel: balanced routing (each rank processes N x top-k tokens)");
  if (sh.deepspeed && p.zero < 3) {
    // stage_1_and_2.py step(): all_gather_dp_groups gathers the updated bf16
    // partitions into the flat bf16 groups in allgather_bucket_size chunks.
    e.assumptions.push_back("ZeRO-" + std::to_string(p.zero) +
                            " all-gathers the updated weights in place into the flat bf16 buffer: "
                            "allgather_bucket_size adds no buffer");
  }
  // NCCL_RUNTIME_CONNECT=1 (nccl init.cc): buffers appear at a communicator's
  // first collective, not at init.
  e.assumptions.push_back(
      "NCCL buffers counted in every phase (steady state); they appear at each communicator's first collective: "
      "forward for tensor/context parallel and ZeRO-3/FSDP gathers, the first gradient reduction for data parallel");
  return best;
}

}  // namespace vram::train

namespace vram::train {

FitSearch::FitSearch(const Request& req, const RankBases* bases) : req_(req), bases_(bases) {
  if (bases_ == nullptr) {
    own_ = std::make_unique<RankBases>(req);
    bases_ = own_.get();
  }
}

FitSearch::~FitSearch() = default;

namespace {

// `memos`: one per basis, kept over a search's probes (the smaller jobs of
// one probe are mostly those of the one before).
bool every_rank_fits(const std::vector<RankBasis>& bases, int64_t micro_batch, int64_t seq_len, int64_t capacity,
                     bool allow_paging, std::vector<ReservedMemo>& memos, int64_t& probes, int64_t& replays) {
  memos.resize(bases.size());
  for (size_t i = 0; i < bases.size(); ++i) {
    ++probes;
    if (!step_fits(bases[i], micro_batch, seq_len, capacity, allow_paging, memos[i], replays)) return false;
  }
  return true;
}

// Whether one rank's step exceeds `capacity` on its live tensors alone
// (false when it cannot be built: step_fits answers those).
bool live_exceeds(const RankBasis& basis, int64_t micro_batch, int64_t seq_len, int64_t capacity, bool allow_paging) {
  const Result<bool> exceeds = attempt<bool>([&] {
    const StepPeak live = live_step(basis, micro_batch, seq_len).live;
    return !fit::runs_on(live.peak, allow_paging ? live.managed : 0, capacity);
  });
  return exceeds.ok() && exceeds.value();
}

// A search's probe at size `v` (`probe`: every_rank_fits), answered without
// building a step once the search knows that none fits. A size only grows
// the step (fit::largest_fitting's premise: the peak never falls as the
// micro-batch or the sequence grows), so when the first rank's step at the
// smallest size, 1, exceeds the card on its live tensors (`floor_exceeds`),
// every probe would stop there, at its first rank, before any replay. The
// floor is asked once, after the first probe above 1 that stopped that way
// (a search that halves down to 1 then builds no more steps), and a probe it
// answers counts as the probe it stands for: fit.search is unchanged.
struct ProbeFloor {
  enum class State { kUnknown, kFits, kExceeds } state = State::kUnknown;

  template <class Probe, class Floor>
  bool probe(int64_t v, int64_t& probes, const int64_t& replays, const Probe& probe, const Floor& floor_exceeds) {
    if (state == State::kExceeds) {
      ++probes;
      return false;
    }
    const int64_t probes_before = probes;
    const int64_t replays_before = replays;
    const bool fits = probe();
    if (!fits && v > 1 && state == State::kUnknown && probes == probes_before + 1 && replays == replays_before) {
      state = floor_exceeds() ? State::kExceeds : State::kFits;
    }
    return fits;
  }
};

}  // namespace

int64_t FitSearch::max_micro_batch(int64_t capacity, bool allow_paging, RankMemos* shared) {
  const bytes::Driver driver(token_driver(req_.train));
  if (bases_->impl().bases.empty()) return 0;
  const std::vector<RankBasis>& bases = bases_->impl().bases;
  RankMemos own;
  RankMemos& memos = shared != nullptr ? *shared : own;
  ProbeFloor floor;
  return fit::largest_fitting(
      [&](int64_t b) {
        return floor.probe(
            b, probes_, replays_,
            [&] { return every_rank_fits(bases, b, 0, capacity, allow_paging, memos, probes_, replays_); },
            [&] { return live_exceeds(bases.front(), 1, 0, capacity, allow_paging); });
      },
      int64_t{1} << 16);
}

int64_t FitSearch::max_seq_len(int64_t capacity) {
  const bytes::Driver driver("train.seq_len");
  if (bases_->impl().bases.empty()) return 0;
  const std::vector<RankBasis>& bases = bases_->impl().bases;
  const int64_t cp = req_.parallel.cp;
  std::vector<ReservedMemo> memos;
  ProbeFloor floor;
  return fit::largest_fitting(
      [&](int64_t s) {
        // A context-parallel rank holds its share of the sequence (layout.h
        // rank_request).
        return floor.probe(
            s, probes_, replays_,
            [&] {
              return every_rank_fits(bases, req_.train.micro_batch, memory::ceil_div(s, cp), capacity, false, memos,
                                     probes_, replays_);
            },
            [&] { return live_exceeds(bases.front(), req_.train.micro_batch, 1, capacity, false); });
      },
      kMaxSearchedSeqLen, req_.train.seq_len);
}

int64_t max_micro_batch(const Request& req, int64_t capacity, bool allow_paging, RankMemos* memos,
                        const RankBases* bases) {
  return FitSearch(req, bases).max_micro_batch(capacity, allow_paging, memos);
}

}  // namespace vram::train

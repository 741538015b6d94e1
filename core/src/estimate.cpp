// Dispatch by task, then fit against the chosen GPU and the catalog.
#include "vram/estimate.h"

#include <functional>
#include <string>

#include "fit.h"
#include "infer/replay.h"
#include "reach.h"
#include "train/estimate_train.h"
#include "vram/gpus.h"

namespace vram {

using fit::fit_for;
using fit::largest_fitting;

namespace {

Result<Estimate> run(const Request& req) {
  return reach::infers(req) ? reach::estimate_infer(req) : train::estimate_train(req);
}

std::string gib(int64_t bytes) {
  const int64_t centi = (bytes * 100 + (int64_t{1} << 29)) >> 30;  // GiB to two decimals, rounded
  const int64_t frac = centi % 100;
  return std::to_string(centi / 100) + "." + (frac < 10 ? "0" : "") + std::to_string(frac) + " GiB";
}

// Largest value of `field` (infer.batch or infer.context_len) whose peak fits
// `capacity`: the peak is non-decreasing in both.
// The probes share their load's replay (the card and the weights are theirs).
int64_t max_infer(const Request& req, int64_t capacity, int64_t InferOptions::*field, int64_t limit) {
  Request r = req;
  infer::LoadMemo memo;
  return largest_fitting(
      [&](int64_t v) {
        r.infer.*field = v;
        if (r.infer.prompt_len > r.infer.context_len) r.infer.prompt_len = r.infer.context_len;
        auto e = reach::estimate_infer(r, &memo);
        return e.ok() && e.value().peak_bytes <= capacity;
      },
      limit);
}

// vLLM and SGLang size themselves to each GPU: a card fits when the KV
// cache they give themselves holds one sequence of context_len.
bool sizes_itself(const Request& req) {
  return reach::infers(req) && (req.infer.engine == "vllm" || req.infer.engine == "sglang");
}

int64_t kv_sequences(const Estimate& x) {
  for (const auto& [k, v] : x.facts) {
    if (k == "max_concurrent_sequences") return v;
  }
  return int64_t{0};
}

// One catalog card's row: refused, sized by the engine itself (estimated
// again on the card, `memo` shared by the table's cards), or the peak against
// the card's usable memory.
GpuRow catalog_row(const Request& req, const Estimate& e, const GpuInfo& g, infer::LoadMemo* memo) {
  const int64_t total = g.total_mib * 1048576;
  if (auto no = fit::refusal_on(req, g)) {
    return GpuRow{g.name,
                  g.usable_bytes(),
                  false,
                  kDoesNotFit,
                  static_cast<double>(e.peak_bytes) / static_cast<double>(g.usable_bytes()),
                  false,
                  true,
                  no->message};
  }
  if (memo != nullptr) {
    Request r = req;
    r.gpu.name = g.name;
    r.gpu.memory_gib.reset();
    auto x = reach::estimate_infer(r, memo);
    const bool ok = x.ok() && kv_sequences(x.value()) > 0;
    const int64_t peak = x.ok() ? x.value().peak_bytes : 0;
    return {g.name,
            g.usable_bytes(),
            ok,
            ok ? kFits : kDoesNotFit,
            static_cast<double>(peak) / static_cast<double>(g.usable_bytes()),
            true,
            false,
            ""};
  }
  const Fit f = fit_for(e.peak_bytes, total, g.usable_bytes(), g.name, e.managed_bytes);
  // llama.cpp allocates its buffers once at start-up (no caching
  // allocator to fragment): the 80% headroom rule does not apply.
  const bool fixed = !e.devices.empty();
  return {g.name, f.capacity_bytes, f.fits, f.verdict, f.utilization, f.headroom_ok || fixed, !fixed, ""};
}

// Training on the chosen card: the largest micro-batch and sequence that fit.
void train_limits(const Request& req, int64_t capacity, Estimate& e) {
  train::FitSearch search(req);
  e.fit.max_micro_batch = search.max_micro_batch(capacity);
  e.fit.max_seq_len = search.max_seq_len(capacity);
  if (e.managed_bytes > 0) e.fit.max_micro_batch_with_paging = search.max_micro_batch(capacity, true);
  e.fit.search_probes = search.probes();
  e.fit.search_replays = search.replays();
}

// Fewest GPUs for this layout: grow data parallel (the shard group) in
// powers of two, keeping tp x pp x cp, until the per-GPU peak fits.
int64_t min_gpus_to_fit(const Request& req, int64_t capacity) {
  const ParallelOptions& par = req.parallel;
  Request r = req;
  int64_t found = 0;
  for (int64_t dp = 1; dp <= 4096 && found == 0; dp *= 2) {
    if ((dp * par.cp) % par.ep != 0) continue;  // expert parallel lives inside dp x cp
    r.parallel.dp = dp;
    r.parallel.gpus = dp * par.tp * par.pp * par.cp;
    r.parallel.nodes = (r.parallel.gpus + par.gpus_per_node - 1) / par.gpus_per_node;
    auto x = train::estimate_train(r);
    if (x.ok() && x.value().peak_bytes <= capacity) found = r.parallel.gpus;
  }
  return found;
}

// What the verdict on the chosen card says: fixed buffers (llama.cpp), an
// engine sizing itself (vLLM, SGLang), or the caching allocator's peak with
// paging and the 80% headroom rule.
void explain_verdict(const Request& req, const std::string& name, int64_t capacity, bool paged, Estimate& e) {
  if (!e.devices.empty()) {
    e.fit.headroom_ok = true;
    e.fit.headroom_applies = false;
    if (!e.fit.fits)
      e.warnings.push_back("does not fit: the busiest GPU's buffers exceed the " + name + "'s usable memory");
  } else if (paged) {
    // vLLM takes gpu_memory_utilization of the card by design, SGLang
    // mem_fraction_static; it fits when one sequence of the context fits
    // in the KV cache.
    e.fit.fits = e.fit.fits && kv_sequences(e) > 0;
    e.fit.verdict = e.fit.fits ? kFits : kDoesNotFit;
    e.fit.headroom_ok = true;
    e.fit.headroom_applies = false;
    e.assumptions.push_back(req.infer.engine == "vllm"
                                ? "vLLM takes gpu_memory_utilization of the GPU by design, so the 80% headroom rule "
                                  "does not apply; it fits when one sequence of context_len fits in its KV blocks"
                                : "SGLang takes mem_fraction_static of the GPU by design, so the 80% headroom rule "
                                  "does not apply; it fits when one sequence of context_len fits in its token pool");
  } else if (!e.fit.fits) {
    e.warnings.push_back(e.managed_bytes > 0
                             ? "does not fit, even with paging: without the paged optimizer's " + gib(e.managed_bytes) +
                                   " of states the peak is " + gib(e.peak_bytes - e.managed_bytes) + ", above the " +
                                   name + "'s usable " + gib(capacity)
                             : "does not fit: peak exceeds the " + name + "'s usable memory");
  } else if (e.fit.verdict == kFitsWithPaging) {
    e.warnings.push_back("runs with paging: everything but the paged optimizer's states fits the " + name + " (" +
                         gib(e.peak_bytes - e.managed_bytes) + " of usable " + gib(capacity) + "); about " +
                         gib(e.fit.paged_bytes) + " of the " + gib(e.managed_bytes) +
                         " of states in CUDA managed memory are evicted to host RAM and paged back at each "
                         "optimizer step, at a throughput cost");
  } else if (!e.fit.headroom_ok) {
    e.warnings.push_back("fits, but above the 80% headroom rule: allocator fragmentation or longer samples may OOM");
  }
}

// The chosen card: its fit, the limits searched on it, and what the verdict says.
void fit_chosen(const Request& req, const fit::Card& card, bool paged, Estimate& e) {
  const int64_t capacity = card.capacity;
  e.has_fit = true;
  e.fit = fit_for(e.peak_bytes, card.total, capacity, card.name, e.managed_bytes);
  if (req.task == Task::kTrain) train_limits(req, capacity, e);
  const ParallelOptions& par = req.parallel;
  const bool sharded = par.zero > 0 || (!par.fsdp.empty() && par.fsdp != "no_shard") || par.distributed_optimizer;
  if (req.task == Task::kTrain && sharded) e.facts.push_back({"min_gpus_to_fit", min_gpus_to_fit(req, capacity)});
  if (reach::infers(req) && req.infer.engine == "hf") {
    // transformers generate: the answers users ask for (issue 5).
    e.facts.push_back({"max_concurrent_sequences", max_infer(req, capacity, &InferOptions::batch, int64_t{1} << 16)});
    // Bounded by the model's max_position_embeddings when the config has one.
    const int64_t model_max =
        req.model.max_position_embeddings > 0 ? req.model.max_position_embeddings : int64_t{1} << 24;
    e.facts.push_back({"max_context_len", max_infer(req, capacity, &InferOptions::context_len, model_max)});
  }
  if (reach::infers(req)) reach::infer_fit(req, capacity, e);
  explain_verdict(req, card.name, capacity, paged, e);
}

}  // namespace

Result<Estimate> estimate_request(const Request& req) {
  // A card that cannot run the job (bf16 on a T4) is an error naming the
  // field, not a "fits" (issue 18).
  if (auto no = fit::gpu_refusal(req)) return Error{errc::kInconsistent, no->message, no->path};
  auto r = run(req);
  if (!r.ok()) return r;
  Estimate& e = r.value();
  for (const auto& a : req.assumptions) e.assumptions.push_back(a);
  if (auto w = fit::gpu_warning(req)) e.warnings.push_back(*w);
  const bool paged = sizes_itself(req);
  if (paged) {
    // vLLM and SGLang load the same weights on every card: replayed once.
    infer::LoadMemo memo;
    for (const auto& g : gpu_catalog()) e.gpus.push_back(catalog_row(req, e, g, &memo));
  } else {
    for (const auto& g : gpu_catalog()) e.gpus.push_back(catalog_row(req, e, g, nullptr));
  }
  if (const auto card = fit::chosen_gpu(req)) fit_chosen(req, *card, paged, e);
  return r;
}

}  // namespace vram

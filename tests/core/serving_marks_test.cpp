// A serving timeline's marks replayed in one pass (infer/replay.cpp
// timeline_phases) give each phase the reserved bytes of its timeline up to
// the mark replayed alone through the caching-allocator model
// (memory/allocator_replay.h), as ServingTimeline defines them: across an
// empty_cache(), and on a card where a malloc fails, after which a mark is
// replayed without the card's bound.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "infer/estimate_infer.h"
#include "infer/replay.h"
#include "memory/allocator_replay.h"
#include "vram/gpus.h"

namespace vram::infer {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// The definition: the timeline up to the mark (after the last empty_cache()
// before it) replayed alone on the bound; a replay in which a malloc fails
// replayed again without it.
int64_t reserved_alone(const memory::Timeline& upto, const memory::AllocatorConfig& config,
                       const memory::DeviceLimits& limits, bool* oom) {
  const memory::LoadedAllocator loaded(upto, config, limits);
  if (loaded.ooms() > 0) {
    *oom = true;
    return reserved_alone(upto, config, {}, oom);
  }
  return memory::replay_reserved(loaded, upto, {}).peak_reserved;
}

// Weights in 100 pieces, a profile run larger than what is left of a 16 GiB
// card, empty_cache(), a KV cache that fits, then a decode step that does not.
ServingTimeline start_up() {
  ServingTimeline st;
  memory::Timeline& tl = st.tl;
  tl.alloc("weights", "weights", 100 * 100 * kMiB, {{100 * kMiB, 90}, {50 * kMiB, 20}, {3 * kMiB / 2, 3}});
  tl.alloc("misc", "small", kMiB / 4);
  st.mark("weights_loaded", "weights loaded");
  const memory::Timeline::Id act = tl.alloc("activations", "profile", 7 * kGiB, {{3 * kGiB, 1}, {4 * kGiB, 1}});
  st.mark("profile", "profile run");
  tl.free(act);
  const memory::Timeline::Id logits = tl.alloc("logits", "sampler", 300 * kMiB);
  st.mark("profile", "profile run");
  tl.free(logits);
  st.empty_cache();
  const memory::Timeline::Id kv = tl.alloc("kv_cache", "KV cache", 3 * kGiB, {{kGiB / 2, 6}});
  st.mark("serving", "serving");
  const memory::Timeline::Id decode = tl.alloc("activations", "decode", 6 * kGiB);
  st.mark("decode", "decode");
  tl.free(decode);
  tl.free(kv);
  return st;
}

TEST(ServingMarks, OnePassGivesEachPhaseItsTimelineReplayedAloneAcrossEmptyCacheAndOoms) {
  Request req;
  req.gpu.memory_gib = 16.0;
  Serving sv;
  sv.paged = true;  // no transformers warm-up assumption
  const ServingTimeline st = start_up();
  Estimate e;
  const std::string formula = timeline_phases(e, req, sv, st, "a start-up");
  const memory::AllocatorConfig config;
  memory::DeviceLimits limits;
  limits.capacity = static_cast<int64_t>(16.0 * static_cast<double>(kGiB) * (1.0 - kDriverReserveFraction));
  const std::vector<memory::Moment> moments = memory::replay(st.tl, false);
  ASSERT_EQ(e.phases.size(), 4u);
  ASSERT_EQ(moments.size(), 4u);
  int ooms = 0;
  for (size_t i = 0; i < moments.size(); ++i) {
    int64_t emptied = -1;
    for (const auto& u : st.upto) {
      if (u.event == moments[i].event) emptied = u.emptied;
    }
    bool oom = false;
    const memory::Timeline upto =
        after_empty_cache(st.tl, static_cast<size_t>(std::max<int64_t>(emptied, 0)), moments[i].event + 1);
    const int64_t alone = reserved_alone(upto, config, limits, &oom);
    ooms += oom ? 1 : 0;
    EXPECT_EQ(e.phases[i].reserved_bytes, std::max(alone, moments[i].allocated)) << moments[i].phase;
  }
  // Both paths ran: the profile run and the decode step fail on the card.
  EXPECT_EQ(ooms, 2);
  EXPECT_NE(formula.find("replayed without the card's bound"), std::string::npos) << formula;
}

// reserved_at_last_mark (what SGLang measures after its load) is the same
// replay, at the timeline's last mark so far.
TEST(ServingMarks, ReservedAtTheLastMarkIsItsTimelineReplayedAlone) {
  Request req;
  req.gpu.memory_gib = 80.0;
  Serving sv;
  ServingTimeline st;
  st.tl.alloc("weights", "weights", 0, {{700 * kMiB, 3}, {9 * kMiB, 5}, {kMiB / 2, 7}});
  st.mark("weights_loaded", "weights loaded");
  memory::DeviceLimits limits;
  limits.capacity = static_cast<int64_t>(80.0 * static_cast<double>(kGiB) * (1.0 - kDriverReserveFraction));
  bool oom = false;
  const int64_t alone = reserved_alone(after_empty_cache(st.tl, 0), {}, limits, &oom);
  EXPECT_FALSE(oom);
  // 700 MiB pieces take a segment each; 9 MiB ones share 20 MiB segments;
  // the small ones two 2 MiB segments.
  EXPECT_EQ(alone, 3 * 700 * kMiB + 3 * 20 * kMiB + 2 * 2 * kMiB);
  EXPECT_EQ(reserved_at_last_mark(req, sv, st), alone);
}

// Everything an estimate answers, as text.
std::string answer(const Result<Estimate>& r) {
  if (!r.ok()) return "error: " + r.error().message;
  const Estimate& e = r.value();
  std::string out = e.peak_phase + " " + std::to_string(e.peak_bytes) + " " + std::to_string(e.peak_reserved_bytes);
  for (const Phase& p : e.phases) {
    out += "\n" + p.key + " " + std::to_string(p.allocated_bytes) + " " + std::to_string(p.reserved_bytes) + " " +
           std::to_string(p.device_bytes);
    for (const auto& [k, b] : p.parts) out += " " + k + "=" + std::to_string(b);
  }
  for (const auto& [k, v] : e.facts) out += "\n" + k + " " + std::to_string(v);
  for (const Component& c : e.components) out += "\n" + c.key + " " + std::to_string(c.bytes) + " " + c.formula;
  for (const std::string& a : e.assumptions) out += "\n" + a;
  for (const std::string& w : e.warnings) out += "\n" + w;
  return out;
}

// The GPU table's sweep (estimate.cpp catalog_row): every card's estimate
// with one LoadMemo is the estimate alone, for each engine that replays its
// start-up, on cards that hold the weights and cards whose load fails.
TEST(ServingMarks, ASweepSharingItsLoadsAnswersAsEachEstimateAlone) {
  for (const char* engine : {"vllm", "sglang", "hf"}) {
    const json body = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.1-8B")}}},
                       {"task", "infer"},
                       {"infer", {{"engine", engine}, {"context_len", 8192}}}};
    Request req = parse_request(body).value();
    LoadMemo memo;
    int fails = 0;
    for (const GpuInfo& g : gpu_catalog()) {
      req.gpu.name = g.name;
      const std::string alone = answer(estimate_infer(req));
      EXPECT_EQ(answer(estimate_infer(req, &memo)), alone) << engine << " on " << g.name;
      fails += alone.find("replayed without the card's bound") != std::string::npos ? 1 : 0;
    }
    // The memo served the cards, and 16 GiB of weights fail on the small ones.
    if (std::string(engine) != "hf") EXPECT_GE(memo.hits, static_cast<int64_t>(gpu_catalog().size())) << engine;
    EXPECT_GT(fails, 0) << engine;
  }
}

}  // namespace
}  // namespace vram::infer

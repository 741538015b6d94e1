// The layout planner: every candidate is a real estimate, the ranking puts
// what fits (with headroom) and costs least first, and bad input names the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

json request(const char* model, int64_t gpus, const char* gpu, json train = json::object()) {
  json t = {{"seq_len", 2048}, {"micro_batch", 1}, {"grad_accum", 8}};
  for (auto& [k, v] : train.items()) t[k] = v;
  return {{"model", {{"config", testing::model_config(model)}}},
          {"train", t},
          {"parallel", {{"gpus", gpus}}},
          {"gpu", {{"name", gpu}}}};
}

TEST(Planner, EveryCandidateIsTheEstimateOfItsLayout) {
  json req = request("meta-llama/Llama-2-7b-hf", 8, "A100 80GB");
  const json r = plan(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const json& cands = r["plan"]["candidates"];
  ASSERT_GE(cands.size(), 5u);
  for (const auto& c : cands) {
    json applied = req;
    for (auto& [k, v] : c["parallel"].items()) applied["parallel"][k] = v;
    applied["train"]["grad_checkpointing"] = c["grad_checkpointing"] == "full";
    applied["train"]["precision"] = "mixed_bf16";  // the planner's DeepSpeed precision
    const json e = estimate(applied);
    ASSERT_FALSE(e.contains("error")) << c.dump() << e.dump();
    EXPECT_EQ(e["peak_bytes"], c["peak_bytes"]) << c["label"];
  }
}

// The planner's FSDP candidates for Llama-3.1-8B on 8 x A100 40GB under
// `framework` (and `method`, "" for the default): each candidate's own patch
// of the request (`apply`) estimated must give the candidate's peak. Returns
// the candidates' labels.
std::vector<std::string> fsdp_candidates_match_their_estimates(const std::string& framework,
                                                               const std::string& method = "") {
  json req = request("meta-llama/Llama-3.1-8B", 8, "A100 40GB", {{"framework", framework}, {"precision", "bf16"}});
  if (!method.empty()) req["train"]["method"] = method;
  req["plan"] = {{"top", 1000}, {"framework", "fsdp"}};  // the planner's FSDP candidates
  const json r = plan(req);
  EXPECT_FALSE(r.contains("error")) << r.dump();
  std::vector<std::string> labels;
  for (const auto& c : r.value("plan", json::object()).value("candidates", json::array())) {
    json applied = req;  // the candidate's own patch of the request (`apply`)
    applied.erase("plan");
    for (const char* part : {"parallel", "train"}) {
      for (auto& [k, v] : c["apply"][part].items()) applied[part][k] = v;
    }
    const json e = estimate(applied);
    EXPECT_FALSE(e.contains("error")) << c.dump() << e.dump();
    EXPECT_EQ(e.value("peak_bytes", json()), c["peak_bytes"]) << c["label"];
    labels.push_back(c["label"].get<std::string>());
  }
  return labels;
}

size_t labels_with(const std::vector<std::string>& labels, const std::string& part) {
  return static_cast<size_t>(std::count_if(labels.begin(), labels.end(),
                                           [&](const std::string& l) { return l.find(part) != std::string::npos; }));
}

// Every layout, FSDP1 ones too: their request gets hf's sync_module_states
// rule (release_table.h), and so does the planner's candidate of that
// layout (plan.cpp candidate_request: layout_with_rules).
TEST(Planner, EveryCandidateIsTheEstimateOfItsLayoutWithItsLayoutsReleaseRules) {
  const std::vector<std::string> labels = fsdp_candidates_match_their_estimates("hf@4.39.0");
  EXPECT_GT(labels_with(labels, "FSDP "), 0u);
  EXPECT_EQ(labels_with(labels, "FSDP2 "), 0u);
}

// LitGPT wraps whole Blocks under FSDP1 (release_table.h: its
// parallel.fsdp_adapter_units rule, false): a LoRA request that names no
// layout gets FSDP1 candidates estimated with that rule, as each candidate's
// own request is (plan.cpp layout_with_rules).
TEST(Planner, LitgptLoraFsdp1CandidatesKeepItsBlockWrapPolicy) {
  const std::vector<std::string> labels = fsdp_candidates_match_their_estimates("litgpt@0.4.0", "lora");
  EXPECT_GT(labels_with(labels, "FSDP "), 0u);
}

// hf from transformers 5.10.3 on: the Trainer's FSDP is FSDP2 (the version
// rule), for full_shard and shard_grad_op layouts; each candidate is labelled
// and estimated as its applied request is.
TEST(Planner, TheTrainersFsdp2DefaultHoldsForEachCandidate) {
  const std::vector<std::string> labels = fsdp_candidates_match_their_estimates("hf");
  EXPECT_GT(labels_with(labels, "FSDP2 "), 0u);
  for (const std::string& l : labels) {
    if (l.find("full_shard") != std::string::npos || l.find("shard_grad_op") != std::string::npos) {
      EXPECT_NE(l.find("FSDP2 "), std::string::npos) << l;
    }
  }
}

// 7B full fine-tuning on 8 x A100 80GB: DDP needs 16 bytes per parameter of
// model state (108 GB) and cannot fit; ZeRO without tensor or pipeline
// parallel and without recomputation can, so it ranks first (HF "Parallelism
// methods": DDP or ZeRO when the model fits).
TEST(Planner, PrefersPlainZeroOverModelParallelAndRecompute) {
  const json r = plan(request("meta-llama/Llama-2-7b-hf", 8, "A100 80GB"));
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const json& best = r["plan"]["candidates"][0];
  EXPECT_TRUE(best["headroom_ok"].get<bool>()) << best.dump();
  EXPECT_EQ(best["parallel"]["tp"], 1);
  EXPECT_EQ(best["parallel"]["pp"], 1);
  EXPECT_EQ(best["grad_checkpointing"], "none");
  EXPECT_GE(best["parallel"].value("zero", 0), 1);
  EXPECT_LT(best["parallel"].value("zero", 0), 3);  // ZeRO-3's 1.5x traffic is not needed
  EXPECT_GE(best["max_micro_batch"].get<int64_t>(), 1);
  // Ranked: nothing that fits comes after something that does not.
  bool seen_misfit = false;
  for (const auto& c : r["plan"]["candidates"]) {
    if (!c["fits"].get<bool>()) seen_misfit = true;
    if (seen_misfit) EXPECT_FALSE(c["fits"].get<bool>()) << c["label"];
  }
}

// Llama-3.1-8B full fine-tuning on 2 x RTX 4090: 16 bytes per parameter of
// model state over two 24 GB cards cannot fit, so CPU offload layouts are
// searched and the best of them is offered; a 0.6B model never gets offload.
// Offload needs host RAM: 16 bytes per parameter for the optimizer side
// (DeepSpeed estimate_zero3_model_states_mem_needs) x 1.5 pinned buffers,
// 8.03e9 x 16 x 1.5 = 180 GiB, more than the default 2 x 48 GB of a
// two-card box, so there nothing fits; with 256 GiB of host RAM it does.
TEST(Planner, OffloadsOnlyWhenNothingElseFits) {
  json req = request("meta-llama/Llama-3.1-8B", 2, "RTX 4090 24GB", {{"seq_len", 1024}});
  req["plan"] = {{"top", 100}};
  const json tight = plan(req);
  ASSERT_FALSE(tight.contains("error")) << tight.dump();
  EXPECT_TRUE(tight["plan"]["host_ram_default"].get<bool>());
  EXPECT_EQ(tight["plan"]["fitting"], 0) << tight.dump();
  bool offload_seen = false;
  for (const auto& c : tight["plan"]["candidates"]) {
    if (!c["parallel"].value("offload_optimizer", false)) continue;
    offload_seen = true;
    EXPECT_FALSE(c["host_fits"].get<bool>()) << c.dump();
    EXPECT_FALSE(c["fits"].get<bool>()) << c.dump();
    EXPECT_GT(c["host_bytes"].get<int64_t>(), int64_t{170} << 30);
  }
  EXPECT_TRUE(offload_seen);
  req["plan"] = {{"host_ram_gib", 256}};
  const json r = plan(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["plan"]["host_ram_bytes"], int64_t{256} << 30);
  const json& best = r["plan"]["candidates"][0];
  ASSERT_TRUE(best["fits"].get<bool>()) << best.dump();
  EXPECT_TRUE(best["parallel"].value("offload_optimizer", false)) << best.dump();
  EXPECT_TRUE(best["host_fits"].get<bool>());
  const json small = plan(request("Qwen/Qwen3-0.6B", 2, "RTX 4090 24GB"));
  for (const auto& c : small["plan"]["candidates"]) EXPECT_FALSE(c["parallel"].value("offload_optimizer", false));
}

// Issue 33: when nothing fits, the layouts rank by how far they miss, the
// closest first, and a note names it. DeepSeek-V3 full fine-tuning at 16K
// tokens on 65,521 H100s (a prime: data parallel only): ZeRO-3 with full
// recomputation misses by about a quarter of the card; ZeRO-2 without
// recomputation by 26x. Before, the preference key (no recompute first)
// ranked the 26x miss first and the closest eighth.
TEST(Planner, WhenNothingFitsTheClosestRanksFirst) {
  json req = request("deepseek-ai/DeepSeek-V3", 65521, "H100 80GB", {{"seq_len", 16384}, {"grad_accum", 1}});
  req["plan"] = {{"top", 20}};
  const json r = plan(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_EQ(r["plan"]["fitting"], 0) << r.dump();
  const json& cands = r["plan"]["candidates"];
  ASSERT_GE(cands.size(), 8u);
  const json& best = cands[0];
  EXPECT_EQ(best["parallel"].value("zero", 0), 3) << best.dump();
  EXPECT_EQ(best["grad_checkpointing"], "full") << best.dump();
  EXPECT_GT(best["fit_ratio"].get<double>(), 1.0);
  EXPECT_LT(best["fit_ratio"].get<double>(), 1.5);
  for (size_t i = 1; i < cands.size(); ++i) {
    EXPECT_LE(cands[i - 1]["fit_ratio"].get<double>(), cands[i]["fit_ratio"].get<double>()) << cands[i]["label"];
  }
  const auto& notes = r["plan"]["notes"];
  const bool named = std::any_of(notes.begin(), notes.end(), [&](const json& n) {
    return n.get<std::string>().find("nothing fits; the closest is " + best["label"].get<std::string>()) == 0;
  });
  EXPECT_TRUE(named) << notes.dump(2);
}

// Issue 18: every layout trains the same global batch (data parallel and
// accumulation fill it), and for an 8B model on 8 x A100 80GB at 4k tokens,
// where sharded data parallel fits without recomputation, it ranks before
// "tp 8, no data parallel" (which all-reduces activations every layer);
// Apply's fields include the accumulation and the precision.
TEST(Planner, HoldsTheGlobalBatchAndPrefersDataParallel) {
  const json r = plan(request("meta-llama/Llama-3.1-8B", 8, "A100 80GB", {{"seq_len", 4096}}));
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const int64_t global = r["plan"]["global_batch"].get<int64_t>();
  EXPECT_EQ(global, 8 * 1 * 8);
  for (const auto& c : r["plan"]["candidates"]) {
    EXPECT_EQ(c["global_batch"], global) << c["label"];
    EXPECT_EQ(c["parallel"]["dp"].get<int64_t>() * c["grad_accum"].get<int64_t>(), global) << c["label"];
    EXPECT_EQ(c["apply"]["train"]["grad_accum"], c["grad_accum"]);
    EXPECT_EQ(c["apply"]["train"]["precision"], "mixed_bf16");
  }
  const json& best = r["plan"]["candidates"][0];
  ASSERT_TRUE(best["fits"].get<bool>()) << best.dump();
  EXPECT_EQ(best["parallel"]["tp"], 1) << best.dump();
  EXPECT_EQ(best["parallel"]["dp"], 8) << best.dump();
}

TEST(Planner, MegatronCandidatesUseSequenceParallelWithTensorParallel) {
  json req = request("meta-llama/Llama-2-7b-hf", 8, "H100 80GB");
  req["plan"] = {{"framework", "megatron"}, {"top", 100}};
  const json r = plan(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  int with_tp = 0;
  for (const auto& c : r["plan"]["candidates"]) {
    if (c["parallel"]["tp"].get<int64_t>() > 1) {
      ++with_tp;
      EXPECT_TRUE(c["parallel"].value("sequence_parallel", false)) << c["label"];
    }
    EXPECT_FALSE(c["parallel"].contains("zero"));
  }
  EXPECT_GT(with_tp, 0);
}

TEST(Planner, BadInputNamesTheField) {
  json no_gpu = request("Qwen/Qwen3-0.6B", 8, "A100 80GB");
  no_gpu.erase("gpu");
  EXPECT_EQ(plan(no_gpu)["error"]["path"], "gpu");
  json infer = request("Qwen/Qwen3-0.6B", 1, "A100 80GB");
  infer["task"] = "infer";
  infer.erase("train");
  EXPECT_EQ(plan(infer)["error"]["path"], "task");
  json framework = request("Qwen/Qwen3-0.6B", 8, "A100 80GB");
  framework["plan"] = {{"framework", "colossal"}};
  EXPECT_EQ(plan(framework)["error"]["path"], "plan.framework");
  json top = request("Qwen/Qwen3-0.6B", 8, "A100 80GB");
  top["plan"] = {{"top", 0}};
  EXPECT_EQ(plan(top)["error"]["path"], "plan.top");
  EXPECT_EQ(json::parse(plan_json("{not json"))["error"]["code"], "bad_json");
}

}  // namespace
}  // namespace vram

namespace vram {
namespace {

// The planner ranks by the time model's step (issue 31): within a fit class
// the middle of the step's range never decreases, every candidate carries its
// time and its cost per million tokens at the card's default price, and with
// the global batch fixed a layout's tokens per step are the same.
TEST(Planner, RanksFittingLayoutsByStepTime) {
  const json r = plan(request("meta-llama/Llama-2-7b-hf", 8, "A100 80GB"));
  ASSERT_FALSE(r.contains("error")) << r.dump();
  double last = 0;
  std::string last_class;
  for (const auto& c : r["plan"]["candidates"]) {
    ASSERT_TRUE(c["time"].is_object()) << c.dump();
    const json& s = c["time"]["step_seconds"];
    const double mid = std::sqrt(s["low"].get<double>() * s["high"].get<double>());
    const std::string cls = c["headroom_ok"].get<bool>() ? "headroom" : c["fits"].get<bool>() ? "fits" : "no";
    if (cls == last_class) EXPECT_GE(mid, last * (1 - 1e-3)) << c["label"];
    last = mid;
    last_class = cls;
    EXPECT_GT(c["time"]["usd_per_million_tokens"]["low"].get<double>(), 0) << c["label"];
  }
}

// A card without speed figures keeps the factor ranking and says so.
TEST(Planner, WithoutSpeedFiguresRanksByFactors) {
  json req = request("meta-llama/Llama-2-7b-hf", 8, "A100 80GB");
  req["gpu"] = {{"memory_gib", 80}};
  const json r = plan(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_TRUE(r["plan"]["candidates"][0]["time"].is_null());
  bool said = false;
  for (const auto& n : r["plan"]["notes"]) said = said || n.get<std::string>().find("no speed figures") == 0;
  EXPECT_TRUE(said) << r["plan"]["notes"].dump();
}

}  // namespace
}  // namespace vram

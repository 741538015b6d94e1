// What would make it fit (issue 18): every suggestion is the estimate of its
// own patch, reaches the goal, and the list is ranked by cost.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

json train_request(const char* model, const char* gpu, json train) {
  return {{"model", {{"config", testing::model_config(model)}}}, {"train", train}, {"gpu", {{"name", gpu}}}};
}

int kind_rank(const std::string& kind) {
  const char* order[] = {"none", "speed", "optimizer precision", "quality", "data", "hardware"};
  for (int i = 0; i < 6; ++i) {
    if (kind == order[i]) return i;
  }
  ADD_FAILURE() << "unknown cost kind " << kind;
  return -1;
}

// Every suggestion, its patch merged into the request, estimates to its own
// peak and fits; the list never puts a costlier kind before a cheaper one.
void expect_honest(const json& req, const json& s, bool need_headroom) {
  ASSERT_FALSE(s.contains("error")) << s.dump();
  int last = -1;
  for (const auto& x : s["suggestions"]) {
    json patched = req;
    patched.merge_patch(x["patch"]);
    const json e = estimate(patched);
    ASSERT_FALSE(e.contains("error")) << x.dump() << e.dump();
    EXPECT_EQ(e["peak_bytes"], x["peak_bytes"]) << x["key"];
    EXPECT_TRUE(e["fit"]["fits"].get<bool>()) << x["key"];
    EXPECT_EQ(e["fit"]["status"], x["status"]) << x["key"];
    if (need_headroom) EXPECT_TRUE(e["fit"]["headroom_ok"].get<bool>()) << x["key"];
    EXPECT_FALSE(x["cost"]["text"].get<std::string>().empty());
    EXPECT_FALSE(x["cost"]["source"].get<std::string>().empty());
    const int k = kind_rank(x["cost"]["kind"]);
    EXPECT_GE(k, last) << x["key"];
    last = k;
  }
}

// Llama-3.1-8B full fine-tuning, micro-batch 4 x 2048 on one RTX 4090: 16
// bytes per parameter of model state alone (128 GB) cannot fit 24 GB, and
// with 4 x 2048 tokens of activations neither can LoRA or QLoRA alone; the
// cheap changes together can, and so can a larger card.
TEST(Suggest, FullFineTuneOn4090CombinesTheCheapChanges) {
  const json req = train_request("meta-llama/Llama-3.1-8B", "RTX 4090 24GB",
                                 {{"method", "full"}, {"micro_batch", 4}, {"seq_len", 2048}, {"grad_accum", 2}});
  const json e = estimate(req);
  ASSERT_FALSE(e["fit"]["fits"].get<bool>()) << e["fit"].dump();
  const json s = suggest(req);
  EXPECT_EQ(s["goal"], "fit");
  ASSERT_GE(s["suggestions"].size(), 2u) << s.dump(2);
  expect_honest(req, s, false);
  std::set<std::string> keys;
  for (const auto& x : s["suggestions"]) keys.insert(x["key"].get<std::string>());
  EXPECT_EQ(keys.count("checkpointing_full"), 0u);  // 128 GB of state: recomputation alone cannot
  EXPECT_EQ(keys.count("combined"), 1u);
  EXPECT_EQ(keys.count("gpu"), 1u);
  // The first suggestion, applied, fits (issue 18 "Done when").
  json applied = req;
  applied.merge_patch(s["suggestions"][0]["patch"]);
  EXPECT_TRUE(estimate(applied)["fit"]["fits"].get<bool>());
}

// Llama-3.1-8B full fine-tuning, micro-batch 2 x 2112 on one H100 80GB, just
// over (at 2048 the allocator frees its cache and the step fits): every kind
// of change reaches it, cheapest first (a fused loss, then checkpointing and
// the micro-batch split, then the optimizer, ...).
TEST(Suggest, JustOverGetsEveryKindCheapestFirst) {
  const json req = train_request("meta-llama/Llama-3.1-8B", "H100 80GB",
                                 {{"method", "full"}, {"micro_batch", 2}, {"seq_len", 2112}, {"grad_accum", 1}});
  ASSERT_FALSE(estimate(req)["fit"]["fits"].get<bool>());
  const json s = suggest(req);
  expect_honest(req, s, false);
  std::set<std::string> keys;
  for (const auto& x : s["suggestions"]) keys.insert(x["key"].get<std::string>());
  for (const char* k : {"fused_loss", "checkpointing_full", "micro_batch", "optimizer_8bit", "lora", "qlora", "seq_len",
                        "more_gpus", "gpu"}) {
    EXPECT_EQ(keys.count(k), 1u) << k << "\n" << s.dump(2);
  }
  EXPECT_EQ(s["suggestions"][0]["key"], "fused_loss");
  for (const auto& x : s["suggestions"]) {
    if (x["key"] == "micro_batch") {
      // Same samples per GPU and step: 2 x 1 = 1 x 2.
      EXPECT_EQ(x["patch"]["train"]["micro_batch"], 1);
      EXPECT_EQ(x["patch"]["train"]["grad_accum"], 2);
    }
    if (x["key"] == "more_gpus") {
      // Data parallel 4 with grad_accum 1 cannot keep the global batch of 2
      // by lowering accumulation: the cost says the batch grows.
      EXPECT_NE(x["cost"]["text"].get<std::string>().find("global batch grows"), std::string::npos);
    }
  }
}

// LoRA, micro-batch 4 x 2048 on an A100 40GB: the activations do not fit,
// the weights do: recomputation or a smaller micro-batch are enough.
TEST(Suggest, ActivationBoundLoraGetsCheckpointingAndMicroBatch) {
  const json req = train_request("meta-llama/Llama-3.1-8B", "A100 40GB",
                                 {{"method", "lora"}, {"micro_batch", 4}, {"seq_len", 2048}, {"grad_accum", 1}});
  ASSERT_FALSE(estimate(req)["fit"]["fits"].get<bool>());
  const json s = suggest(req);
  expect_honest(req, s, false);
  ASSERT_FALSE(s["suggestions"].empty());
  EXPECT_EQ(s["suggestions"][0]["cost"]["kind"], "speed");
  std::set<std::string> keys;
  for (const auto& x : s["suggestions"]) keys.insert(x["key"].get<std::string>());
  EXPECT_EQ(keys.count("checkpointing_full"), 1u);
  EXPECT_EQ(keys.count("micro_batch"), 1u);
  EXPECT_EQ(keys.count("combined"), 0u);  // single changes suffice
}

// A job that fits above the 80 % rule gets changes that bring it under it.
TEST(Suggest, TightJobAimsForTheHeadroomRule) {
  // Llama-3.2-1B full fine-tuning, 4 x 2048, on a 24 GB L4: find a micro-batch
  // between 80 % and 100 % of the card by the estimator itself.
  json req = train_request("meta-llama/Llama-3.2-1B", "L4 24GB", {{"method", "full"}, {"seq_len", 2048}});
  int64_t tight = 0;
  for (int64_t m = 1; m <= 16 && tight == 0; ++m) {
    req["train"]["micro_batch"] = m;
    const json e = estimate(req);
    if (e["fit"]["fits"].get<bool>() && !e["fit"]["headroom_ok"].get<bool>()) tight = m;
  }
  ASSERT_GT(tight, 0) << "no micro-batch lands between 80 % and 100 % of the L4";
  const json s = suggest(req);
  EXPECT_EQ(s["goal"], "headroom");
  EXPECT_EQ(estimate(req)["fit"]["status"], "tight");
  ASSERT_FALSE(s["suggestions"].empty());
  expect_honest(req, s, true);
}

TEST(Suggest, NothingToSuggestWhenItFits) {
  const json req = train_request("meta-llama/Llama-3.2-1B", "H100 80GB", {{"method", "lora"}, {"micro_batch", 1}});
  const json s = suggest(req);
  EXPECT_EQ(s["goal"], "none");
  EXPECT_TRUE(s["suggestions"].empty());
}

TEST(Suggest, BadInputNamesTheField) {
  json req = train_request("meta-llama/Llama-3.2-1B", "H100 80GB", {{"micro_batch", 0}});
  EXPECT_EQ(suggest(req)["error"]["path"], "train.micro_batch");
  req = train_request("meta-llama/Llama-3.2-1B", "H100 80GB", json::object());
  req.erase("gpu");
  EXPECT_EQ(suggest(req)["error"]["path"], "gpu");
  EXPECT_TRUE(json::parse(suggest_json("{not json"))["error"].is_object());
}

// Issue 18: T4 and V100 have no bf16, so a bf16 job there is an error naming
// the precision, not a "Fits"; the GPU table marks them unsupported.
TEST(GpuCapability, Bf16OnT4IsAnErrorNamingThePrecision) {
  json req = train_request("meta-llama/Llama-3.2-1B", "T4 16GB", {{"method", "lora"}, {"precision", "bf16"}});
  const json e = estimate(req);
  ASSERT_TRUE(e.contains("error")) << e.dump();
  EXPECT_EQ(e["error"]["path"], "train.precision");
  req["train"]["precision"] = "fp16";
  const json ok = estimate(req);
  ASSERT_FALSE(ok.contains("error")) << ok.dump();
  // FlashAttention-2 below Ampere: a warning naming the field (xformers'
  // kernels run there with the same memory).
  req["train"]["attention"] = "flash_attention_2";
  const json fa = estimate(req);
  ASSERT_FALSE(fa.contains("error")) << fa.dump();
  EXPECT_NE(fa["warnings"].dump().find("train.attention flash_attention_2 does not run on the T4"), std::string::npos);
  req["gpu"]["name"] = "H100 80GB";
  req["train"]["precision"] = "bf16";
  const json h = estimate(req);
  ASSERT_FALSE(h.contains("error")) << h.dump();
  for (const auto& g : h["gpus"]) {
    if (g["name"] == "T4 16GB" || g["name"] == "V100 16GB") {
      EXPECT_EQ(g["status"], "unsupported") << g.dump();
      EXPECT_FALSE(g["fits"].get<bool>());
    }
    if (g["name"] == "RTX 3060 12GB") EXPECT_NE(g["status"], "unsupported");
  }
}

TEST(GpuCatalog, CommonCardsByTheNamesPeopleUse) {
  const json v = json::parse(version_json());
  std::map<std::string, json> by_name;
  for (const auto& g : v["gpus"]) by_name[g["name"].get<std::string>()] = g;
  for (const char* n : {"RTX 3060 12GB", "RTX 4060 Ti 16GB", "RTX 5090 32GB", "A10G 24GB", "L4 24GB", "L40S 48GB",
                        "RTX A6000 48GB", "RTX 6000 Ada 48GB", "A100 40GB", "A100 80GB", "H100 80GB", "H100 PCIe 80GB",
                        "H100 NVL 94GB", "H200 141GB", "B200 180GB", "MI250X 64GB", "MI300X 192GB"}) {
    ASSERT_EQ(by_name.count(n), 1u) << n;
  }
  EXPECT_EQ(by_name["RTX 3060 12GB"]["compute_capability"], 8.6);
  EXPECT_FALSE(by_name["T4 16GB"]["bf16"].get<bool>());
  EXPECT_FALSE(by_name["A100 80GB"]["fp8"].get<bool>());
  EXPECT_TRUE(by_name["L4 24GB"]["fp8"].get<bool>());
  EXPECT_TRUE(by_name["MI300X 192GB"]["fp8"].get<bool>());
  EXPECT_FALSE(by_name["MI250X 64GB"]["fp8"].get<bool>());
  // Aliases as people type them.
  auto gpu_of = [](const char* name) {
    json req = train_request("meta-llama/Llama-3.2-1B", name, {{"method", "lora"}});
    return estimate(req)["fit"]["gpu"];
  };
  EXPECT_EQ(gpu_of("RTX 3060"), "RTX 3060 12GB");
  EXPECT_EQ(gpu_of("3090"), "RTX 3090 24GB");
  EXPECT_EQ(gpu_of("A10"), "A10 24GB");
  EXPECT_EQ(gpu_of("A100"), "A100 80GB");
  EXPECT_EQ(gpu_of("H100"), "H100 80GB");
  EXPECT_EQ(gpu_of("4090"), "RTX 4090 24GB");
}

// The verdict is decided once: 95 % of the card is "tight", never "Fits".
TEST(Verdict, StatusAndWordsComeFromOnePlace) {
  const json req = train_request("meta-llama/Llama-3.2-1B", "H100 80GB", {{"method", "lora"}});
  const json e = estimate(req);
  EXPECT_EQ(e["fit"]["status"], "fits");
  EXPECT_EQ(e["fit"]["words"], "Fits");
  const json big = train_request("meta-llama/Llama-3.1-8B", "RTX 4090 24GB", {{"method", "full"}});
  EXPECT_EQ(estimate(big)["fit"]["status"], "does_not_fit");
  EXPECT_EQ(estimate(big)["fit"]["words"], "Does not fit");
}

}  // namespace
}  // namespace vram

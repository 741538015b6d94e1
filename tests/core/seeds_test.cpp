// The seeds' worked examples (../shared/seeds), reproduced with our model, and
// where a seed's number differs, a test that shows by how much and why.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "vram/api.h"
#include "vram/families.h"

namespace vram {
namespace {

json gemma3_4b() { return testing::model_config("google/gemma-3-4b-it"); }

// Seed 002 §1: "params = 4_300_079_472; memory = params * 2 / 1024**3 = 8.01 GB".
TEST(Seed002, Gemma3_4bWeightsAreEightGiBInBf16) {
  auto spec = model_from_config(gemma3_4b(), "model.config");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec.value().params_total(), 4300079472);
  const json r = estimate({{"model", {{"config", gemma3_4b()}}}, {"task", "infer"}, {"infer", {{"context_len", 1}}}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  int64_t w = 0;
  for (const auto& c : r["components"]) {
    if (c["key"] == "weights") w = c["bytes"].get<int64_t>();
  }
  EXPECT_EQ(w, int64_t{2} * 4300079472);
  EXPECT_NEAR(static_cast<double>(w) / (1 << 30), 8.01, 0.005);
}

// Seed 002 §6: Gemma 3 4B, B = 2, 5076 tokens, 4 KV heads x 256, 34 layers:
// "kv_total = 1.32 GB" — every layer caching all 5076 tokens. Gemma 3 caches
// only sliding_window = 1024 tokens on 5 of every 6 layers (Gemma3TextConfig
// sliding_window_pattern 6; config.json sliding_window 1024), so the real
// cache is far smaller: the seed's figure is the full-attention upper bound.
TEST(Seed002, Gemma3KvCacheIsSmallerThanTheSeedsBecauseOfSlidingLayers) {
  const double seed_bytes = 2.0 * 2 * 4 * 5076 * 256 * 2 * 34;
  EXPECT_NEAR(seed_bytes / (1 << 30), 1.32, 0.005);
  const json r = estimate(
      {{"model", {{"config", gemma3_4b()}}}, {"task", "infer"}, {"infer", {{"batch", 2}, {"context_len", 5076}}}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  int64_t kv = 0;
  for (const auto& c : r["components"]) {
    if (c["key"] == "kv_cache") kv = c["bytes"].get<int64_t>();
  }
  // 34 layers, every 6th global (layers 5, 11, 17, 23, 29): 29 sliding
  // (window 1024) + 5 global (5076 tokens).
  const double per_token_layer = 2.0 * 4 * 256 * 2;
  const double expected = 2 * per_token_layer * (5.0 * 5076 + 29.0 * 1024);
  EXPECT_NEAR(static_cast<double>(kv), expected, expected * 1e-6);
  EXPECT_LT(static_cast<double>(kv), 0.5 * seed_bytes);
}

// Seed 002 §5 LoRA: "lora_params = num_layers * hidden_dim * 8 * 2 ≈ 1,397,760"
// counts one h x r pair per layer. PEFT's default targets for Gemma are q_proj
// and v_proj, each r x (in + out): q 8 x (2560 + 2048), v 8 x (2560 + 1024).
TEST(Seed002, LoraCountIsExactNotTheSeedsHeuristic) {
  const json cfg = gemma3_4b()["text_config"];
  json text = cfg;
  text["model_type"] = "gemma3_text";
  const json r = estimate({{"model", {{"config", text}}}, {"train", {{"method", "lora"}, {"lora", {{"rank", 8}}}}}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const int64_t ours = r["model"]["params_trainable"].get<int64_t>();
  EXPECT_EQ(ours, 34 * (8 * (2560 + 2048) + 8 * (2560 + 1024)));
  EXPECT_EQ(34 * 2560 * 8 * 2, 1392640);  // the seed prints 1,397,760; its own formula gives 1,392,640
  EXPECT_GT(ours, 34 * 2560 * 8 * 2);
}

// Seed 000 §1: "nf4 (QLoRA): 0.56 (includes scales/zeros overhead)". NF4 with
// an fp32 absmax per 64 values is 0.5625 B; with double quantisation (the
// QLoRA recipe) 0.5 + 1/64 + 4/(64*256) = 0.5159 B (QLoRA paper §3).
TEST(Seed000, Nf4BytesPerParamAreExactPerRecipe) {
  const json cfg = testing::model_config("meta-llama/Llama-2-7b-hf");
  auto weights = [&](bool dq) {
    const json r =
        estimate({{"model", {{"config", cfg}}},
                  {"train", {{"method", "qlora"}, {"quant", {{"double_quant", dq}, {"prepare_kbit", false}}}}}});
    EXPECT_FALSE(r.contains("error")) << r.dump();
    return r["components"][0]["bytes"].get<int64_t>();
  };
  // Linear weights of Llama-2-7B: 32 layers x (4 x 4096^2 + 3 x 4096 x 11008).
  const double linear = 32.0 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008);
  const double other = 2.0 * (6738415616.0 - linear);  // embeddings, norms, lm_head in bf16
  const double adapters = 4.0 * 32 * (8 * 8192 + 8 * 8192);
  EXPECT_NEAR((weights(false) - other - adapters) / linear, 0.5625, 1e-4);
  EXPECT_NEAR((weights(true) - other - adapters) / linear, 0.5 + 1.0 / 64 + 4.0 / (64 * 256), 1e-4);
}

// Seed 002 "Quick Reference": for partial training it adds activation
// gradients as a second full copy of the activations. Autograd frees each
// layer's saved tensors as its backward runs and keeps only one layer's
// gradient of the hidden state, so training only the top of a model costs
// less than full training's activations, never double.
TEST(Seed002, FrozenLayersDoNotDoubleTheActivations) {
  const json cfg = testing::model_config("meta-llama/Llama-3.2-1B");
  auto act = [&](json train) {
    const json r = estimate({{"model", {{"config", cfg}}}, {"train", train}});
    EXPECT_FALSE(r.contains("error")) << r.dump();
    for (const auto& c : r["components"]) {
      if (c["key"] == "activations") return c["bytes"].get<int64_t>();
    }
    return int64_t{-1};
  };
  const int64_t full = act({{"seq_len", 2048}});
  const int64_t head_only = act({{"seq_len", 2048}, {"method", "freeze"}, {"trainable_modules", {"layers.15"}}});
  EXPECT_LT(head_only, full);
}

TEST(ActivationOffload, KeepsAtMostTwoLayersOnTheGpu) {
  const json cfg = testing::model_config("meta-llama/Llama-3.1-8B");
  auto act = [&](bool offload) {
    const json r =
        estimate({{"model", {{"config", cfg}}}, {"train", {{"seq_len", 4096}, {"activation_offload", offload}}}});
    EXPECT_FALSE(r.contains("error")) << r.dump();
    int64_t a = -1;
    for (const auto& c : r["components"]) {
      if (c["key"] == "activations") a = c["bytes"].get<int64_t>();
    }
    return std::make_pair(a, r["peak_bytes"].get<int64_t>());
  };
  const auto on = act(true);
  const auto off = act(false);
  EXPECT_LT(on.first, off.first / 10);
  EXPECT_LT(on.second, off.second);
}

}  // namespace
}  // namespace vram

// OLMo 2, Granite, SmolLM3, OLMoE and gpt-oss (issue 14): exact counts against the
// published checkpoints (sources in the comments and tests/fixtures/models.json),
// what each family changes in the module tree, and an inference and a training
// estimate that exercise it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fixtures.h"
#include "vram/api.h"
#include "vram/families.h"

namespace vram {
namespace {

class RecentFamilyTest : public ::testing::Test {
 protected:
  static ModelSpec build(const json& cfg) {
    auto r = model_from_config(cfg, "model.config");
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().path + ": " + r.error().message);
    return r.ok() ? r.value() : ModelSpec{};
  }
  static ModelSpec named(const std::string& id) { return build(testing::model_config(id)); }
  static const ParamGroup* group(const ModelSpec& s, const std::string& module) {
    for (const auto& g : s.groups) {
      if (g.module == module && g.stack == "text") return &g;
    }
    return nullptr;
  }
  static int64_t component(const ModelSpec& s, const std::string& name) {
    const auto by = s.params_by_component();
    const auto it = by.find(name);
    return it == by.end() ? 0 : it->second;
  }
  static bool has_note(const ModelSpec& s, const std::string& needle) {
    return std::any_of(s.notes.begin(), s.notes.end(),
                       [&](const std::string& n) { return n.find(needle) != std::string::npos; });
  }
  static json run(json req) {
    json r = estimate(req);
    EXPECT_FALSE(r.contains("error")) << r.dump();
    return r;
  }
  static json infer(const json& cfg, json opts) {
    return run({{"model", {{"config", cfg}}}, {"task", "infer"}, {"infer", std::move(opts)}});
  }
  static json train(const json& cfg, json opts) {
    return run({{"model", {{"config", cfg}}}, {"task", "train"}, {"train", std::move(opts)}});
  }
  static int64_t result_component(const json& r, const std::string& key) {
    for (const auto& c : r["components"]) {
      if (c["key"] == key) return c["bytes"].get<int64_t>();
    }
    ADD_FAILURE() << "no component " << key;
    return -1;
  }
  // gpt-oss-20b: gpt-oss-120b's config with 24 layers and 32 experts, the
  // only sizes the two published configs differ in (OpenAI model card, Table 1:
  // 36 / 24 layers, 128 / 32 experts, top-4, same widths).
  static json gpt_oss_20b() {
    json cfg = testing::model_config("openai/gpt-oss-120b");
    cfg["num_hidden_layers"] = 24;
    cfg["num_local_experts"] = 32;
    json types = json::array();
    for (int i = 0; i < 24; ++i) types.push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
    cfg["layer_types"] = types;
    return cfg;
  }
};

// ---- OLMo 2 ------------------------------------------------------------------

// allenai/OLMo-2-1124-7B-Instruct: 7,298,617,344 (Hub API safetensors
// parameters, "Num parameters | 7,298,617,344 total stored parameters
// (safetensors metadata)"; the base OLMo-2-1124-7B has the same count,
// safetensors.total 7298617344 at revision 7df9a825).
TEST_F(RecentFamilyTest, Olmo2_7bInstructMatchesCheckpoint) {
  EXPECT_EQ(named("allenai/OLMo-2-1124-7B-Instruct").params_total(), 7298617344);
}

// modeling_olmo2.py: no input_layernorm; post_attention_layernorm and
// post_feedforward_layernorm per layer; q_norm over all 32 x 128 query
// features and k_norm over the key features, not one head as in Qwen3.
TEST_F(RecentFamilyTest, Olmo2NormalisesBranchOutputsAndAllHeadsOfQueriesAndKeys) {
  const ModelSpec s = named("allenai/OLMo-2-1124-7B-Instruct");
  EXPECT_EQ(group(s, "input_layernorm"), nullptr);
  ASSERT_NE(group(s, "post_feedforward_layernorm"), nullptr);
  ASSERT_NE(group(s, "q_norm"), nullptr);
  EXPECT_EQ(group(s, "q_norm")->numel, 32 * 128);
  EXPECT_EQ(group(s, "k_norm")->numel, 32 * 128);
  EXPECT_TRUE(s.text.qk_norm);
  EXPECT_FALSE(s.tie_word_embeddings);
  // Per layer: q/k norms (2 x 4096) + 2 branch norms (2 x 4096); plus the final norm.
  EXPECT_EQ(component(s, comp::kNorms), 32 * 4 * 4096 + 4096);
}

// Multi-head attention, 32 layers: 2 x 32 x 128 x 2 B x 32 = 512 KiB per token
// of bf16 KV cache; bf16 full fine-tuning keeps 2 + 2 + 4 B per parameter.
TEST_F(RecentFamilyTest, Olmo2InferenceAndTrainingEstimate) {
  const json cfg = testing::model_config("allenai/OLMo-2-1124-7B-Instruct");
  const json inf = infer(cfg, {{"context_len", 4096}});
  EXPECT_EQ(inf["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 32 * 128 * 2 * 32);
  const json tr = train(cfg, {{"precision", "bf16"}, {"optimizer", "adamw_torch_fused"}, {"seq_len", 2048}});
  EXPECT_EQ(result_component(tr, "weights"), 2 * int64_t{7298617344});
  EXPECT_EQ(result_component(tr, "optimizer_states"), 4 * int64_t{7298617344});
  EXPECT_GT(tr["peak_bytes"].get<int64_t>(), result_component(tr, "weights"));
}

// ---- Granite -----------------------------------------------------------------

// ibm-granite/granite-3.3-8b-instruct: 8,170,864,640 (Hub API parameter count
// quoted in a public model table: "ibm-granite/granite-3.3-8b-instruct |
// **8,170,864,640**"; also "8,190,735,360 / 8,188,548,096 / 8,170,864,640
// params" for Qwen3-8B / Qwen3-Reranker-8B / granite-3.3-8b-instruct).
// Tied: 49159 x 4096 counted once.
TEST_F(RecentFamilyTest, Granite33_8bInstructMatchesCheckpoint) {
  const ModelSpec s = named("ibm-granite/granite-3.3-8b-instruct");
  EXPECT_EQ(s.params_total(), 8170864640);
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(group(s, "lm_head"), nullptr);
  EXPECT_TRUE(has_note(s, "holds no parameters"));
}

// GraniteConfig: attention_bias and mlp_bias add a bias to q/k/v/o and
// gate/up/down (modeling_granite.py), as in Llama.
TEST_F(RecentFamilyTest, GraniteBiasesFollowTheConfigSwitches) {
  json cfg = testing::model_config("ibm-granite/granite-3.3-8b-instruct");
  cfg["attention_bias"] = true;
  cfg["mlp_bias"] = true;
  const int64_t per_layer = (4096 + 1024 + 1024 + 4096) + (12800 + 12800 + 4096);
  EXPECT_EQ(build(cfg).params_total(), 8170864640 + 40 * per_layer);
}

// 8 KV heads of 128 over 40 layers: 2 x 8 x 128 x 2 B x 40 = 160 KiB per token.
TEST_F(RecentFamilyTest, GraniteInferenceAndLoraTrainingEstimate) {
  const json cfg = testing::model_config("ibm-granite/granite-3.3-8b-instruct");
  const json inf = infer(cfg, {{"context_len", 8192}});
  EXPECT_EQ(inf["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 8 * 128 * 2 * 40);
  const json tr = train(cfg, {{"method", "lora"}, {"seq_len", 1024}});
  EXPECT_GT(tr["peak_bytes"].get<int64_t>(), 2 * int64_t{8170864640});
}

// ---- SmolLM3 -----------------------------------------------------------------

// HuggingFaceTB/SmolLM3-3B-Base: 3,075,098,624 (Hub API safetensors.total
// 3075098624 at revision d78a42f7; the instruct SmolLM3-3B has the same count
// in a public Hub-API model table). Tied embeddings.
TEST_F(RecentFamilyTest, SmolLM3_3bBaseMatchesCheckpoint) {
  const ModelSpec s = named("HuggingFaceTB/SmolLM3-3B-Base");
  EXPECT_EQ(s.params_total(), 3075098624);
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(s.text.sliding_layers, 0);
}

// SmolLM3Config.__post_init__: with use_sliding_window and a window, the NoPE
// layers (every 4th: 3, 7, ..., 35) use the window.
TEST_F(RecentFamilyTest, SmolLM3SlidesOnItsNoPeLayersWhenAsked) {
  json cfg = testing::model_config("HuggingFaceTB/SmolLM3-3B-Base");
  cfg["use_sliding_window"] = true;
  cfg["sliding_window"] = 4096;
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.text.sliding_window, 4096);
  EXPECT_EQ(s.text.sliding_layers, 9);
  EXPECT_EQ(s.params_total(), 3075098624);
}

// GQA 4 KV heads of 128 over 36 layers: 2 x 4 x 128 x 2 B x 36 = 72 KiB per token.
TEST_F(RecentFamilyTest, SmolLM3InferenceAndTrainingEstimate) {
  const json cfg = testing::model_config("HuggingFaceTB/SmolLM3-3B-Base");
  const json inf = infer(cfg, {{"context_len", 65536}});
  EXPECT_EQ(inf["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 4 * 128 * 2 * 36);
  const json tr = train(cfg, {{"precision", "bf16"}, {"optimizer", "adamw_torch_fused"}, {"seq_len", 4096}});
  EXPECT_EQ(result_component(tr, "weights"), 2 * int64_t{3075098624});
}

// ---- OLMoE ------------------------------------------------------------------

// allenai/OLMoE-1B-7B-0125-Instruct: 6,919,161,856 (the 0924 release with the
// same sizes: safetensors headers "parameterCount": 6919161856; Hub API
// {"F32": 6919161856}; sources in tests/fixtures/models.json).
TEST_F(RecentFamilyTest, OlmoeMatchesCheckpointAndRoutesEightOfSixtyFourExperts) {
  const ModelSpec s = named("allenai/OLMoE-1B-7B-0125-Instruct");
  EXPECT_EQ(s.params_total(), 6919161856);
  EXPECT_EQ(group(s, "q_norm")->numel, 2048);
  EXPECT_EQ(group(s, "k_norm")->numel, 2048);
  EXPECT_EQ(component(s, comp::kExperts), int64_t{16} * 64 * 3 * 2048 * 1024);
  EXPECT_EQ(component(s, comp::kRouter), 16 * 2048 * 64);
  EXPECT_EQ(component(s, comp::kMlp), 0);  // no dense MLP, no shared expert
  const int64_t experts_all = component(s, comp::kExperts);
  EXPECT_EQ(s.params_active(), s.params_total() - experts_all + experts_all / 8);
}

// MHA 16 x 128 over 16 layers: 2 x 16 x 128 x 2 B x 16 = 128 KiB per token.
// LoRA training of the MoE keeps every expert's frozen weights resident.
TEST_F(RecentFamilyTest, OlmoeInferenceAndLoraTrainingEstimate) {
  const json cfg = testing::model_config("allenai/OLMoE-1B-7B-0125-Instruct");
  const json inf = infer(cfg, {{"context_len", 4096}});
  EXPECT_EQ(inf["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 16 * 128 * 2 * 16);
  const json tr = train(cfg, {{"method", "lora"}, {"seq_len", 2048}});
  EXPECT_GE(result_component(tr, "weights"), 2 * int64_t{6919161856});
  EXPECT_GT(tr["peak_bytes"].get<int64_t>(), 2 * int64_t{6919161856});
}

// ---- gpt-oss -----------------------------------------------------------------

// openai/gpt-oss-120b: 116,829,156,672 parameters as transformers builds the
// model (public GitHub files: "Parameters as laid out by the loader |
// 20,914,757,184 | 116,829,156,672"; "gpt-oss-120b | 36 | 64 | 8 | 64 | 2880 |
// 201088 | no | 116,829,156,672"). The checkpoint's total_size cannot be
// divided by one dtype: the experts are stored as MXFP4 blocks and scales.
TEST_F(RecentFamilyTest, GptOss120bMatchesTheDequantisedModel) {
  const ModelSpec s = named("openai/gpt-oss-120b");
  EXPECT_EQ(s.params_total(), 116829156672);
  EXPECT_TRUE(has_note(s, "MXFP4"));
}

// openai/gpt-oss-20b: 20,914,757,184 ("gpt-oss-20b's 13,761,316,904 on-disk
// bytes dequantize to 20,914,757,184 parameters"; "It reproduces the
// 20,914,757,184 parameters Hugging Face reports"). w_mlp1 + w_mlp2 alone are
// 19,110,297,600 of them (same public table).
TEST_F(RecentFamilyTest, GptOss20bMatchesTheDequantisedModel) {
  const ModelSpec s = build(gpt_oss_20b());
  EXPECT_EQ(s.params_total(), 20914757184);
  int64_t expert_weights = 0;
  for (const auto& g : s.groups) {
    if (g.component == std::string(comp::kExperts)) expert_weights += g.in_features * g.out_features * g.instances;
  }
  EXPECT_EQ(expert_weights, 19110297600);
}

// modeling_gpt_oss.py: one sink logit per head per layer, a router with a bias,
// biased experts; layer_types alternates a 128-token window with full attention.
TEST_F(RecentFamilyTest, GptOssHasSinksBiasedRouterAndAlternatingWindows) {
  const ModelSpec s = named("openai/gpt-oss-120b");
  ASSERT_NE(group(s, "sinks"), nullptr);
  EXPECT_EQ(group(s, "sinks")->total(), 64 * 36);
  ASSERT_NE(group(s, "router"), nullptr);
  EXPECT_EQ(group(s, "router")->numel, 2880 * 128 + 128);
  EXPECT_EQ(component(s, comp::kRouter), 36 * (2880 * 128 + 128));
  EXPECT_EQ(s.text.sliding_window, 128);
  EXPECT_EQ(s.text.sliding_layers, 18);
  EXPECT_EQ(s.text.experts, 128);
  EXPECT_EQ(s.text.experts_per_token, 4);
  EXPECT_EQ(s.text.moe_layers, 36);
  // Active per token: everything but 124 of 128 experts' weights.
  const int64_t experts_all = component(s, comp::kExperts);
  EXPECT_EQ(s.params_active(), s.params_total() - experts_all + experts_all / 32);
}

// The sliding layers keep at most 128 tokens (2 x 8 x 64 x 2 B = 2 KiB per
// layer per token): a 131072-token sequence caches 131072 tokens on the 18
// full layers and 128 on the 18 sliding ones, half of what 36 full layers hold.
TEST_F(RecentFamilyTest, GptOssSlidingLayersCapTheKvCache) {
  const json cfg = testing::model_config("openai/gpt-oss-120b");
  const int64_t per_layer = 2 * 8 * 64 * 2;
  const json inf = infer(cfg, {{"context_len", 131072}});
  EXPECT_EQ(result_component(inf, "kv_cache"), per_layer * (18 * int64_t{131072} + 18 * 128));
  EXPECT_EQ(inf["infer"]["kv_bytes_per_token"].get<int64_t>(), per_layer * 36);  // uncapped, per token
  json all_full = cfg;
  all_full["sliding_window"] = nullptr;
  EXPECT_EQ(result_component(infer(all_full, {{"context_len", 131072}}), "kv_cache"), per_layer * 36 * int64_t{131072});
}

// Training gpt-oss-20b (dequantised to bf16): the weights are all 20.9 B
// parameters, and the MoE layers route tokens (saved routing activations).
TEST_F(RecentFamilyTest, GptOss20bTrainingEstimateCountsEveryExpert) {
  const json tr = train(gpt_oss_20b(), {{"precision", "bf16"}, {"optimizer", "adamw_torch_fused"}, {"seq_len", 1024}});
  EXPECT_EQ(result_component(tr, "weights"), 2 * int64_t{20914757184});
  EXPECT_EQ(tr["model"]["params_total"].get<int64_t>(), 20914757184);
  EXPECT_GT(tr["peak_bytes"].get<int64_t>(), 8 * int64_t{20914757184});
}

// Serving gpt-oss-20b as published (infer.weights_dtype mxfp4): the
// 19,110,297,600 expert weight values at 4.25 bits (16 B of e2m1 + 1 e8m0
// scale per 32, OpenAI's model card), every other parameter (attention,
// router, embeddings, expert biases: 1,804,459,584) in bf16 =
// 13,761,264,768 B, 52,136 B under the checkpoint's 13,761,316,904 on-disk
// bytes (its safetensors headers).
TEST_F(RecentFamilyTest, GptOss20bMxfp4WeightsAreTheCheckpointsBytes) {
  const json inf = infer(gpt_oss_20b(), {{"context_len", 4096}, {"weights_dtype", "mxfp4"}});
  const int64_t w = result_component(inf, "weights");
  EXPECT_EQ(w, int64_t{19110297600} / 32 * 17 + 2 * (int64_t{20914757184} - 19110297600));
  EXPECT_EQ(w, 13761264768);
  EXPECT_LT(13761316904 - w, 64 * 1024);
  // Without experts the format has nothing to quantise: an error, not bf16.
  const json dense = estimate({{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
                               {"task", "infer"},
                               {"infer", {{"weights_dtype", "mxfp4"}}}});
  ASSERT_TRUE(dense.contains("error"));
  EXPECT_EQ(dense["error"]["path"], "infer.weights_dtype");
}

TEST_F(RecentFamilyTest, GptOssLayerTypesOfTheWrongLengthAreInconsistent) {
  json cfg = testing::model_config("openai/gpt-oss-120b");
  cfg["num_hidden_layers"] = 24;
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "inconsistent");
  EXPECT_EQ(r.error().path, "model.config.layer_types");
}

}  // namespace
}  // namespace vram

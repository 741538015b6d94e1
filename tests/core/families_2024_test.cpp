// InternLM2, Command R / Aya (cohere), Command R7B (cohere2), GLM-4-0414,
// Phi-3.5-MoE, StarCoder2 and Granite MoE (issue 14): exact counts against the published checkpoints
// (sources in tests/fixtures/models.json), what each family changes in the
// module tree, and an inference and a training estimate that exercise it.
#include <gtest/gtest.h>

#include <string>

#include "fixtures.h"
#include "model_helpers.h"
#include "vram/api.h"
#include "vram/families.h"

namespace vram {
namespace {

using testing::build;
ModelSpec named(const std::string& id) { return build(testing::model_config(id)); }
const ParamGroup* group(const ModelSpec& s, const std::string& module) {
  for (const auto& g : s.groups) {
    if (g.module == module && g.stack == "text") return &g;
  }
  return nullptr;
}
int64_t component(const ModelSpec& s, const std::string& name) {
  const auto by = s.params_by_component();
  const auto it = by.find(name);
  return it == by.end() ? 0 : it->second;
}
json run(json req) {
  json r = estimate(req);
  EXPECT_FALSE(r.contains("error")) << r.dump();
  return r;
}
json infer(const json& cfg, json opts) {
  return run({{"model", {{"config", cfg}}}, {"task", "infer"}, {"infer", std::move(opts)}});
}
json train(const json& cfg, json opts) {
  return run({{"model", {{"config", cfg}}}, {"task", "train"}, {"train", std::move(opts)}});
}
int64_t result_component(const json& r, const std::string& key) {
  for (const auto& c : r["components"]) {
    if (c["key"] == key) return c["bytes"].get<int64_t>();
  }
  ADD_FAILURE() << "no component " << key;
  return -1;
}

// ---- InternLM2 ---------------------------------------------------------------

// internlm/internlm2_5-7b-chat: 7,737,708,544 (Hub safetensors metadata).
TEST(InternLM2, Chat7bMatchesCheckpointWithFusedWqkv) {
  const ModelSpec s = named("internlm/internlm2_5-7b-chat");
  EXPECT_EQ(s.params_total(), 7737708544);
  ASSERT_NE(group(s, "wqkv"), nullptr);
  EXPECT_EQ(group(s, "wqkv")->out_features, (32 + 2 * 8) * 128);
  EXPECT_FALSE(group(s, "wqkv")->bias);  // "bias": false in the config
  ASSERT_NE(group(s, "output"), nullptr);
  EXPECT_EQ(group(s, "q_proj"), nullptr);
}

// internlm2_5-1_8b-chat (2048 x 24 layers, 16 heads, 8 KV heads, 8192):
// 1,889,110,016 in the same Hub listing.
TEST(InternLM2, TheOneAndAHalfBShapeMatchesToo) {
  json cfg = testing::model_config("internlm/internlm2_5-7b-chat");
  cfg["hidden_size"] = 2048;
  cfg["num_hidden_layers"] = 24;
  cfg["num_attention_heads"] = 16;
  cfg["intermediate_size"] = 8192;
  EXPECT_EQ(build(cfg).params_total(), 1889110016);
}

// 8 KV heads of 128 over 32 layers: 128 KiB per token. LoRA on the fused wqkv
// (PEFT names the leaf module) trains r x (4096 + 6144) per layer.
TEST(InternLM2, InferenceAndLoraOnTheFusedProjection) {
  const json cfg = testing::model_config("internlm/internlm2_5-7b-chat");
  EXPECT_EQ(infer(cfg, {{"context_len", 4096}})["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 8 * 128 * 2 * 32);
  const json tr = train(cfg, {{"method", "lora"}, {"lora", {{"rank", 16}, {"targets", {"wqkv"}}}}, {"seq_len", 2048}});
  EXPECT_EQ(tr["model"]["params_trainable"].get<int64_t>(), 32 * 16 * (4096 + 6144));
  EXPECT_GT(result_component(tr, "activations"), 0);
}

// ---- Cohere ------------------------------------------------------------------

// CohereForAI/aya-expanse-8b: 8,028,033,024 (Hub safetensors metadata).
TEST(Cohere, AyaExpanse8bMatchesCheckpoint) {
  const ModelSpec s = named("CohereForAI/aya-expanse-8b");
  EXPECT_EQ(s.params_total(), 8028033024);
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_TRUE(s.text.parallel_block);
  EXPECT_EQ(s.text.norm, NormKind::kLayerNorm);
  // One LayerNorm per layer and the final one, weights only (no bias).
  EXPECT_EQ(component(s, comp::kNorms), 33 * 4096);
}

// Command R+ sets use_qk_norm: one LayerNorm weight per head and feature.
TEST(Cohere, QkNormAddsAWeightPerHeadFeature) {
  json cfg = testing::model_config("CohereForAI/aya-expanse-8b");
  cfg["use_qk_norm"] = true;
  EXPECT_EQ(build(cfg).params_total(), 8028033024 + 32 * (4096 + 1024));
}

// The parallel block normalises once per layer: its training estimate saves
// one norm site per layer where a sequential block of the same sizes saves two.
TEST(Cohere, ParallelBlockSavesOneNormPerLayer) {
  const json cfg = testing::model_config("CohereForAI/aya-expanse-8b");
  const json opts = {{"precision", "bf16"}, {"optimizer", "adamw_torch_fused"}, {"seq_len", 2048}};
  const json tr = train(cfg, opts);
  EXPECT_EQ(result_component(tr, "weights"), 2 * int64_t{8028033024});
  json as_llama = cfg;
  as_llama["model_type"] = "llama";
  as_llama["intermediate_size"] = 14336;
  // Same sizes, sequential block with two RMSNorms: more saved per layer.
  EXPECT_GT(result_component(train(as_llama, opts), "activations"), result_component(tr, "activations"));
  EXPECT_EQ(infer(cfg, {{"context_len", 8192}})["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 8 * 128 * 2 * 32);
}

// ---- Cohere2 -----------------------------------------------------------------

// Command R7B has Aya Expanse 8B's sizes in a cohere2 config: same module tree
// minus use_qk_norm, so the same count; three of four layers keep a
// 4096-token window.
TEST(Cohere2, SlidingWindowOnThreeOfFourLayersCapsTheKvCache) {
  json cfg = testing::model_config("CohereForAI/aya-expanse-8b");
  cfg["model_type"] = "cohere2";
  cfg["architectures"] = {"Cohere2ForCausalLM"};
  cfg["sliding_window"] = 4096;
  cfg["sliding_window_pattern"] = 4;
  cfg.erase("use_qk_norm");
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.params_total(), 8028033024);
  EXPECT_EQ(s.text.sliding_layers, 24);
  EXPECT_EQ(s.text.sliding_window, 4096);
  const int64_t per_layer = 2 * 8 * 128 * 2;
  const json inf = infer(cfg, {{"context_len", 131072}});
  EXPECT_EQ(result_component(inf, "kv_cache"), per_layer * (8 * int64_t{131072} + 24 * 4096));
  const json tr = train(cfg, {{"method", "lora"}, {"seq_len", 4096}});
  EXPECT_GT(tr["peak_bytes"].get<int64_t>(), 2 * int64_t{8028033024});
}

TEST(Cohere2, LayerTypesOfTheWrongLengthAreInconsistent) {
  json cfg = testing::model_config("CohereForAI/aya-expanse-8b");
  cfg["model_type"] = "cohere2";
  cfg["layer_types"] = {"sliding_attention", "full_attention"};
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.layer_types");
}

// ---- GLM-4 -------------------------------------------------------------------

// THUDM/GLM-4-9B-0414: 9,400,279,040 (source in models.json).
TEST(Glm4, Glm4_9bMatchesCheckpointWithFourNormsAndFusedGateUp) {
  const ModelSpec s = named("THUDM/GLM-4-9B-0414");
  EXPECT_EQ(s.params_total(), 9400279040);
  ASSERT_NE(group(s, "gate_up_proj"), nullptr);
  EXPECT_EQ(group(s, "gate_up_proj")->out_features, 2 * 13696);
  EXPECT_TRUE(group(s, "q_proj")->bias);
  EXPECT_FALSE(group(s, "o_proj")->bias);
  EXPECT_EQ(component(s, comp::kNorms), (40 * 4 + 1) * 4096);
}

// 2 KV heads of 128 over 40 layers: 40 KiB per token; full fine-tuning keeps
// bf16 weights and gradients and fp32 Adam moments.
TEST(Glm4, InferenceAndTrainingEstimate) {
  const json cfg = testing::model_config("THUDM/GLM-4-9B-0414");
  EXPECT_EQ(infer(cfg, {{"context_len", 32768}})["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 2 * 128 * 2 * 40);
  const json tr = train(cfg, {{"precision", "bf16"}, {"optimizer", "adamw_torch_fused"}, {"seq_len", 2048}});
  EXPECT_EQ(result_component(tr, "optimizer_states"), 4 * int64_t{9400279040});
}

// ---- Phi-3.5-MoE -------------------------------------------------------------

// microsoft/Phi-3.5-MoE-instruct: 41,873,153,344, of which 40,267,415,552
// feed-forward (experts + routers), as published.
TEST(PhiMoe, Phi35MoeMatchesCheckpoint) {
  const ModelSpec s = named("microsoft/Phi-3.5-MoE-instruct");
  EXPECT_EQ(s.params_total(), 41873153344);
  EXPECT_EQ(component(s, comp::kExperts) + component(s, comp::kRouter), 40267415552);
  EXPECT_TRUE(group(s, "lm_head")->bias);
  EXPECT_TRUE(group(s, "input_layernorm")->bias);
  EXPECT_EQ(s.text.experts, 16);
  EXPECT_EQ(s.text.experts_per_token, 2);
  const int64_t experts_all = component(s, comp::kExperts);
  EXPECT_EQ(s.params_active(), s.params_total() - experts_all + experts_all / 8);
}

// QLoRA on the MoE: every expert stays resident in 4 bits; the KV cache is
// 2 x 8 x 128 x 2 B x 32 = 128 KiB per token (the 131072 window spans the
// whole context).
TEST(PhiMoe, InferenceAndQloraEstimate) {
  const json cfg = testing::model_config("microsoft/Phi-3.5-MoE-instruct");
  const json inf = infer(cfg, {{"context_len", 8192}});
  EXPECT_EQ(inf["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 8 * 128 * 2 * 32);
  EXPECT_EQ(result_component(inf, "kv_cache"), int64_t{2 * 8 * 128 * 2 * 32} * 8192);
  const json tr = train(cfg, {{"method", "qlora"}, {"seq_len", 1024}});
  EXPECT_LT(result_component(tr, "weights"), 2 * int64_t{41873153344} / 3);
  EXPECT_GT(result_component(tr, "weights"), int64_t{41873153344} / 2);
}

// ---- StarCoder2 --------------------------------------------------------------

// bigcode/starcoder2-15b: 15,957,889,024 (Hub safetensors metadata).
TEST(Starcoder2, Starcoder2_15bMatchesCheckpoint) {
  const ModelSpec s = named("bigcode/starcoder2-15b");
  EXPECT_EQ(s.params_total(), 15957889024);
  EXPECT_EQ(s.text.mlp, MlpKind::kPlain);
  EXPECT_TRUE(group(s, "c_fc")->bias);
  EXPECT_TRUE(group(s, "input_layernorm")->bias);
  EXPECT_EQ(s.text.sliding_layers, 40);
}

// starcoder2-3b and -7b tie their embeddings (tie_word_embeddings left to the
// config class, True): 3072 x 30 layers, 24 heads, 2 KV heads, 12288 gives
// 3,030,371,328 ("Parameter Count 3.03B" on the model's page).
TEST(Starcoder2, TheTiedThreeBShape) {
  json cfg = testing::model_config("bigcode/starcoder2-15b");
  cfg.erase("tie_word_embeddings");
  cfg["hidden_size"] = 3072;
  cfg["num_hidden_layers"] = 30;
  cfg["num_attention_heads"] = 24;
  cfg["num_key_value_heads"] = 2;
  cfg["intermediate_size"] = 12288;
  const ModelSpec s = build(cfg);
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(s.params_total(), 3030371328);
}

// Every layer keeps at most 4096 tokens: 2 x 4 x 128 x 2 B x 40 = 80 KiB per
// token up to the window, then flat. Training saves the GELU MLP's fc output
// and activation input (plain MLP).
TEST(Starcoder2, WindowCapsTheKvCacheAndTrainingRuns) {
  const json cfg = testing::model_config("bigcode/starcoder2-15b");
  const int64_t per_token = 2 * 4 * 128 * 2 * 40;
  EXPECT_EQ(result_component(infer(cfg, {{"context_len", 16384}}), "kv_cache"), per_token * 4096);
  const json tr = train(cfg, {{"method", "lora"}, {"seq_len", 4096}});
  EXPECT_GT(result_component(tr, "activations"), 0);
}

// ---- Granite MoE -------------------------------------------------------------

// ibm-granite/granite-3.1-1b-a400m-instruct: 1,334,628,352 (model.parameters()).
TEST(GraniteMoe, Granite31_1bA400mMatchesCheckpoint) {
  const ModelSpec s = named("ibm-granite/granite-3.1-1b-a400m-instruct");
  EXPECT_EQ(s.params_total(), 1334628352);
  EXPECT_EQ(component(s, comp::kExperts), int64_t{24} * 32 * 3 * 1024 * 512);
  EXPECT_EQ(component(s, comp::kRouter), 24 * 1024 * 32);
  EXPECT_EQ(component(s, comp::kMlp), 0);
  const int64_t experts_all = component(s, comp::kExperts);
  EXPECT_EQ(s.params_active(), s.params_total() - experts_all + experts_all / 4);  // 8 of 32
}

TEST(GraniteMoe, InferenceAndTrainingEstimate) {
  const json cfg = testing::model_config("ibm-granite/granite-3.1-1b-a400m-instruct");
  EXPECT_EQ(infer(cfg, {{"context_len", 4096}})["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 8 * 64 * 2 * 24);
  const json tr = train(cfg, {{"precision", "bf16"}, {"optimizer", "adamw_torch_fused"}, {"seq_len", 2048}});
  EXPECT_EQ(result_component(tr, "weights"), 2 * int64_t{1334628352});
}

// ---- EXAONE 3.5 --------------------------------------------------------------

// LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct: 7,818,448,896; the depth comes from
// ExaoneConfig's own key num_layers.
TEST(Exaone, Exaone35_7_8bMatchesCheckpoint) {
  const ModelSpec s = named("LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct");
  EXPECT_EQ(s.params_total(), 7818448896);
  EXPECT_EQ(s.text.layers, 32);
  ASSERT_NE(group(s, "c_fc_0"), nullptr);
  ASSERT_NE(group(s, "out_proj"), nullptr);
}

// Tied (EXAONE 3.5 2.4B ties): one 102400 x hidden table, no lm_head.
TEST(Exaone, TyingDropsTheHead) {
  json cfg = testing::model_config("LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct");
  cfg["tie_word_embeddings"] = true;
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.params_total(), 7818448896 - int64_t{102400} * 4096);
  EXPECT_EQ(group(s, "lm_head"), nullptr);
}

// 8 KV heads of 128 over 32 layers; LoRA on PEFT's default q_proj / v_proj
// (both exist under those names) trains r x (4096 + 4096) + r x (4096 + 1024)
// per layer.
TEST(Exaone, InferenceAndLoraEstimate) {
  const json cfg = testing::model_config("LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct");
  EXPECT_EQ(infer(cfg, {{"context_len", 32768}})["infer"]["kv_bytes_per_token"].get<int64_t>(), 2 * 8 * 128 * 2 * 32);
  const json tr = train(cfg, {{"method", "lora"}, {"lora", {{"rank", 8}}}, {"seq_len", 2048}});
  EXPECT_EQ(tr["model"]["params_trainable"].get<int64_t>(), 32 * 8 * ((4096 + 4096) + (4096 + 1024)));
}

}  // namespace
}  // namespace vram

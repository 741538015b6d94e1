// Mixture-of-experts, latent-attention and vision-language families: exact
// counts against the real checkpoints (tests/fixtures/models.json cites the
// sources), active parameters, architecture facts and malformed configs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fixtures.h"
#include "vram/families.h"

namespace vram {
namespace {

class MoeVlmTest : public ::testing::Test {
 protected:
  static ModelSpec build(const json& cfg) {
    auto r = model_from_config(cfg, "model.config");
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? r.value() : ModelSpec{};
  }
  static ModelSpec named(const std::string& id) { return build(testing::model_config(id)); }
  static Error error_of(const json& cfg) {
    auto r = model_from_config(cfg, "model.config");
    EXPECT_FALSE(r.ok()) << "expected an error";
    return r.ok() ? Error{} : r.error();
  }
  static int64_t component(const ModelSpec& s, const std::string& name) {
    const auto by = s.params_by_component();
    const auto it = by.find(name);
    return it == by.end() ? 0 : it->second;
  }
  static bool has_note(const ModelSpec& s, const std::string& needle) {
    for (const auto& n : s.notes) {
      if (n.find(needle) != std::string::npos) return true;
    }
    return false;
  }
};

// --- Mixture of experts -----------------------------------------------------

TEST_F(MoeVlmTest, Mixtral8x7bMatchesCheckpoint) {
  const ModelSpec s = named("mistralai/Mixtral-8x7B-v0.1");
  EXPECT_EQ(s.params_total(), 46702792704);
  // 32 layers x 8 experts x 3 x 4096 x 14336; the router is 32 x 8 x 4096.
  EXPECT_EQ(component(s, comp::kExperts), 45097156608);
  EXPECT_EQ(component(s, comp::kRouter), 1048576);
  EXPECT_EQ(s.text.moe_layers, 32);
  EXPECT_EQ(s.text.experts, 8);
  EXPECT_EQ(s.text.experts_per_token, 2);
  EXPECT_EQ(s.text.expert_intermediate, 14336);
}

TEST_F(MoeVlmTest, Mixtral8x7bActiveParamsAreTheCardsTwelvePointNineBillion) {
  const ModelSpec s = named("mistralai/Mixtral-8x7B-v0.1");
  // Shared weights plus 2 of 8 experts per layer; the card rounds to 12.9B.
  EXPECT_EQ(s.params_active(), 12879925248);
  EXPECT_NEAR(static_cast<double>(s.params_active()), 12.9e9, 0.05e9);
}

TEST_F(MoeVlmTest, Qwen3_30bA3bMatchesCheckpointAndActivatesAboutThreePointThreeBillion) {
  const ModelSpec s = named("Qwen/Qwen3-30B-A3B");
  EXPECT_EQ(s.params_total(), 30532122624);
  EXPECT_EQ(s.params_active(), 3353032704);
  EXPECT_NEAR(static_cast<double>(s.params_active()), 3.3e9, 0.1e9);
  EXPECT_TRUE(s.text.qk_norm);
  EXPECT_EQ(s.text.moe_layers, 48);
  EXPECT_EQ(s.text.shared_expert_intermediate, 0);
}

TEST_F(MoeVlmTest, Qwen15MoeA27bCountsTheSharedExpertAndItsGate) {
  const ModelSpec s = named("Qwen/Qwen1.5-MoE-A2.7B");
  EXPECT_EQ(s.params_total(), 14315784192);
  // 60 routed experts top-4, plus a 5632-wide shared expert on every layer.
  EXPECT_EQ(s.params_active(), 2689173504);
  EXPECT_EQ(s.text.shared_expert_intermediate, 5632);
  EXPECT_EQ(s.text.experts_per_token, 4);
}

TEST_F(MoeVlmTest, Qwen2MoeWithoutQkvBiasDropsTheBiases) {
  json cfg = testing::model_config("Qwen/Qwen1.5-MoE-A2.7B");
  cfg["qkv_bias"] = false;
  // 24 layers x (2048 + 2048 + 2048) bias values.
  EXPECT_EQ(build(cfg).params_total(), 14315784192 - 24 * 3 * 2048);
}

TEST_F(MoeVlmTest, MlpOnlyLayersGetADenseMlpInsteadOfExperts) {
  json cfg = testing::model_config("Qwen/Qwen3-30B-A3B");
  cfg["mlp_only_layers"] = {0, 1};
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.text.moe_layers, 46);
  // Each such layer trades 128 experts + router for one 6144-wide dense MLP.
  const int64_t sparse_mlp = 128 * 3 * 2048 * 768 + 128 * 2048;
  const int64_t dense_mlp = 3 * 2048 * 6144;
  EXPECT_EQ(s.params_total(), 30532122624 - 2 * sparse_mlp + 2 * dense_mlp);
}

TEST_F(MoeVlmTest, DecoderSparseStepOfTwoMakesEveryOtherLayerSparse) {
  json cfg = testing::model_config("Qwen/Qwen1.5-MoE-A2.7B");
  cfg["decoder_sparse_step"] = 2;
  EXPECT_EQ(build(cfg).text.moe_layers, 12);
}

TEST_F(MoeVlmTest, MlpOnlyLayerIndexBeyondTheModelNamesTheEntry) {
  json cfg = testing::model_config("Qwen/Qwen3-30B-A3B");
  cfg["mlp_only_layers"] = {48};
  const Error e = error_of(cfg);
  EXPECT_EQ(e.code, "out_of_range");
  EXPECT_EQ(e.path, "model.config.mlp_only_layers[0]");
}

TEST_F(MoeVlmTest, MoreExpertsPerTokenThanExpertsNamesTheField) {
  json cfg = testing::model_config("mistralai/Mixtral-8x7B-v0.1");
  cfg["num_experts_per_tok"] = 9;
  const Error e = error_of(cfg);
  EXPECT_EQ(e.code, "inconsistent");
  EXPECT_EQ(e.path, "model.config.num_experts_per_tok");
  EXPECT_NE(e.message.find("num_local_experts"), std::string::npos);
}

TEST_F(MoeVlmTest, DeepSeekRouterCannotPickMoreThanItsRoutedExperts) {
  json cfg = testing::model_config("deepseek-ai/DeepSeek-V2-Lite");
  cfg["num_experts_per_tok"] = 65;
  const Error e = error_of(cfg);
  EXPECT_EQ(e.code, "inconsistent");
  EXPECT_EQ(e.path, "model.config.num_experts_per_tok");
}

// --- Multi-head latent attention ----------------------------------------------

TEST_F(MoeVlmTest, DeepSeekV2LiteMatchesCheckpointWithDirectQueryProjection) {
  const ModelSpec s = named("deepseek-ai/DeepSeek-V2-Lite");
  EXPECT_EQ(s.params_total(), 15706484224);
  EXPECT_EQ(s.text.attention, AttnKind::kMla);
  EXPECT_EQ(s.text.q_lora_rank, 0);  // q_lora_rank null: a direct q_proj
  EXPECT_EQ(s.text.kv_lora_rank, 512);
  EXPECT_EQ(s.text.head_dim, 192);  // qk_nope 128 + qk_rope 64
  EXPECT_EQ(s.text.v_head_dim, 128);
  EXPECT_EQ(s.text.moe_layers, 26);  // first_k_dense_replace 1
  EXPECT_EQ(s.text.shared_expert_intermediate, 2 * 1408);
}

TEST_F(MoeVlmTest, DeepSeekV3MatchesTheModelTransformersBuildsWithoutMtp) {
  const ModelSpec s = named("deepseek-ai/DeepSeek-V3");
  // The checkpoint's main model holds 671,026,419,200 values: these plus
  // 58 x 256 e_score_correction_bias entries, a buffer in transformers. The
  // 14B multi-token-prediction layer is stored but never built.
  EXPECT_EQ(s.params_total(), 671026404352);
  EXPECT_EQ(s.params_total() + 58 * 256, 671026419200);
  EXPECT_EQ(s.params_active(), 37552282624);
  EXPECT_EQ(s.text.q_lora_rank, 1536);
  EXPECT_EQ(s.text.moe_layers, 58);
  EXPECT_TRUE(has_note(s, "num_nextn_predict_layers"));
  EXPECT_TRUE(has_note(s, "e_score_correction_bias"));
}

TEST_F(MoeVlmTest, NullKvLoraRankIsAMissingFieldNamedInTheError) {
  json cfg = testing::model_config("deepseek-ai/DeepSeek-V2-Lite");
  cfg["kv_lora_rank"] = nullptr;
  const Error e = error_of(cfg);
  EXPECT_EQ(e.code, "missing_field");
  EXPECT_EQ(e.path, "model.config.kv_lora_rank");
}

TEST_F(MoeVlmTest, AbsentKvLoraRankTakesTheConfigClassDefault) {
  json cfg = testing::model_config("deepseek-ai/DeepSeek-V2-Lite");
  cfg.erase("kv_lora_rank");
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.params_total(), 15706484224);  // DeepseekV2Config default 512
  EXPECT_TRUE(has_note(s, "kv_lora_rank missing"));
}

TEST_F(MoeVlmTest, MoeLayerFreqOtherThanOneIsFlaggedInexact) {
  json cfg = testing::model_config("deepseek-ai/DeepSeek-V2-Lite");
  cfg["moe_layer_freq"] = 2;
  const ModelSpec s = build(cfg);
  EXPECT_FALSE(s.exact);
  EXPECT_EQ(s.text.moe_layers, 13);  // layers 2, 4, ..., 26
}

// --- Vision-language models ---------------------------------------------------

TEST_F(MoeVlmTest, Gemma3_4bSplitsIntoVisionProjectorAndText) {
  const ModelSpec s = named("google/gemma-3-4b-it");
  EXPECT_EQ(s.params_total(), 4300079472);
  EXPECT_EQ(component(s, comp::kVision), 416866032);
  EXPECT_EQ(component(s, comp::kProjector), 2950272);
  EXPECT_EQ(s.params_total() - component(s, comp::kVision) - component(s, comp::kProjector), 3880263168);
  EXPECT_EQ(component(s, comp::kLmHead), 0);  // tied
  EXPECT_EQ(s.vision.tokens_per_image, 256);
  EXPECT_EQ(s.vision.encoder_tokens_per_image, 4096);
  EXPECT_EQ(s.text.sliding_layers, 29);  // 34 layers, every 6th global
  ASSERT_NE(s.stack("vision"), nullptr);
  EXPECT_EQ(s.stack("vision")->layers, 27);
}

TEST_F(MoeVlmTest, CompactGemma3HubConfigAppliesTheConfigClassDefaults) {
  // google/gemma-3-4b-it's config.json as published: heads, head_dim, vocab
  // and the rest of text_config come from Gemma3TextConfig.
  const json compact = json::parse(R"({
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "mm_tokens_per_image": 256, "torch_dtype": "bfloat16",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16,
                      "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}})");
  const ModelSpec s = build(compact);
  EXPECT_EQ(s.params_total(), 4300079472);
  EXPECT_TRUE(has_note(s, "text_config.vocab_size missing"));
}

TEST_F(MoeVlmTest, Gemma3_1bTextOnlyCountsItsTiedHeadOnce) {
  const ModelSpec s = named("google/gemma-3-1b-it");
  EXPECT_EQ(s.params_total(), 999885952);
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(s.text.norms_per_layer, 4);
  EXPECT_EQ(s.text.sliding_window, 512);
  EXPECT_EQ(s.text.sliding_layers, 22);
}

TEST_F(MoeVlmTest, Gemma3TextConfigOfTheWrongTypeNamesTheField) {
  json cfg = testing::model_config("google/gemma-3-4b-it");
  cfg["text_config"] = json::array({1, 2});
  const Error e = error_of(cfg);
  EXPECT_EQ(e.code, "wrong_type");
  EXPECT_EQ(e.path, "model.config.text_config");
}

TEST_F(MoeVlmTest, Llava15_7bMatchesCheckpointIncludingTheUnusedLastVisionLayer) {
  const ModelSpec s = named("llava-hf/llava-1.5-7b-hf");
  EXPECT_EQ(s.params_total(), 7063427072);
  // CLIP ViT-L/14-336: all 24 layers and post_layernorm are in memory even
  // though vision_feature_layer -2 reads the second-to-last output.
  EXPECT_EQ(component(s, comp::kVision), 303507456);
  EXPECT_EQ(component(s, comp::kProjector), 20979712);
  EXPECT_EQ(s.vision.encoder_tokens_per_image, 577);
  EXPECT_EQ(s.vision.tokens_per_image, 576);  // "default" drops the CLS token
  EXPECT_EQ(s.text.layers, 32);
}

TEST_F(MoeVlmTest, LlavaTextConfigWithoutModelTypeIsLlama) {
  json cfg = testing::model_config("llava-hf/llava-1.5-7b-hf");
  cfg["text_config"].erase("model_type");
  EXPECT_EQ(build(cfg).params_total(), 7063427072);
}

TEST_F(MoeVlmTest, LlavaFullFeatureStrategyKeepsTheClsToken) {
  json cfg = testing::model_config("llava-hf/llava-1.5-7b-hf");
  cfg["vision_feature_select_strategy"] = "full";
  EXPECT_EQ(build(cfg).vision.tokens_per_image, 577);
}

TEST_F(MoeVlmTest, LlavaTextConfigOfTheWrongTypeNamesTheField) {
  json cfg = testing::model_config("llava-hf/llava-1.5-7b-hf");
  cfg["text_config"] = "llama";
  const Error e = error_of(cfg);
  EXPECT_EQ(e.code, "wrong_type");
  EXPECT_EQ(e.path, "model.config.text_config");
}

TEST_F(MoeVlmTest, LlavaWithAnUnknownLanguageModelNamesItsModelType) {
  json cfg = testing::model_config("llava-hf/llava-1.5-7b-hf");
  cfg["text_config"]["model_type"] = "not_a_language_model";
  const Error e = error_of(cfg);
  EXPECT_EQ(e.code, "unsupported_model");
  EXPECT_EQ(e.path, "model.config.text_config.model_type");
}

TEST_F(MoeVlmTest, LlavaWithoutTextConfigUsesLlamaConfigDefaults) {
  json cfg = testing::model_config("llava-hf/llava-1.5-7b-hf");
  cfg.erase("text_config");
  // LlamaConfig() is Llama-2-7B with vocab 32000: 64 x 4096 fewer rows in
  // embed_tokens and lm_head than llava's 32064.
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.params_total(), 7063427072 - 2 * 64 * 4096);
  EXPECT_TRUE(has_note(s, "text_config missing"));
}

TEST_F(MoeVlmTest, LlavaWithoutVisionConfigUsesClipVitL336) {
  json cfg = testing::model_config("llava-hf/llava-1.5-7b-hf");
  cfg.erase("vision_config");
  EXPECT_EQ(build(cfg).params_total(), 7063427072);
}

TEST_F(MoeVlmTest, Gemma3WithoutSubConfigsUsesTheClassDefaults) {
  const ModelSpec s = build(json{{"model_type", "gemma3"}});
  // Gemma3TextConfig() and SiglipVisionConfig() (which keeps its pooling head).
  EXPECT_EQ(s.text.layers, 26);
  EXPECT_EQ(s.stack("vision")->layers, 12);
  EXPECT_GT(component(s, comp::kVision), 0);
  EXPECT_TRUE(has_note(s, "text_config missing"));
}

TEST_F(MoeVlmTest, Qwen2VlWithNestedTextConfigCountsTheSame) {
  json cfg = testing::model_config("Qwen/Qwen2-VL-2B-Instruct");
  json text = json::object();
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "vocab_size", "tie_word_embeddings"}) {
    text[key] = cfg[key];
    cfg.erase(key);
  }
  cfg["text_config"] = text;
  EXPECT_EQ(build(cfg).params_total(), 2208985600);
}

TEST_F(MoeVlmTest, Qwen2Vl2bMatchesCheckpointWithTiedHead) {
  const ModelSpec s = named("Qwen/Qwen2-VL-2B-Instruct");
  EXPECT_EQ(s.params_total(), 2208985600);
  EXPECT_EQ(component(s, comp::kVision), 631183360);
  EXPECT_EQ(component(s, comp::kProjector), 34087936);  // the patch merger
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_TRUE(s.vision.dynamic_resolution);
  EXPECT_EQ(s.vision.spatial_merge, 2);
}

TEST_F(MoeVlmTest, EveryGroupLandsInAKnownBreakdownBucket) {
  const std::vector<std::string> known = {comp::kEmbeddings, comp::kAttention, comp::kMlp,
                                          comp::kExperts,    comp::kRouter,    comp::kNorms,
                                          comp::kLmHead,     comp::kVision,    comp::kProjector};
  for (const char* id : {"mistralai/Mixtral-8x7B-v0.1", "Qwen/Qwen1.5-MoE-A2.7B", "deepseek-ai/DeepSeek-V3",
                         "google/gemma-3-4b-it", "llava-hf/llava-1.5-7b-hf", "Qwen/Qwen2-VL-2B-Instruct"}) {
    for (const auto& [name, n] : named(id).params_by_component()) {
      EXPECT_NE(std::find(known.begin(), known.end(), name), known.end()) << id << ": " << name;
      EXPECT_GT(n, 0) << id << ": " << name;
    }
  }
}

TEST_F(MoeVlmTest, Qwen2VlMergerMustWriteTheTextHiddenSize) {
  json cfg = testing::model_config("Qwen/Qwen2-VL-2B-Instruct");
  cfg["vision_config"]["hidden_size"] = 3584;
  const Error e = error_of(cfg);
  EXPECT_EQ(e.code, "inconsistent");
  EXPECT_EQ(e.path, "model.config.vision_config.hidden_size");
}

}  // namespace
}  // namespace vram

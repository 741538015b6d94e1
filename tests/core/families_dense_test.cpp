// Dense families (Gemma, Phi, GPT-2, GPT-NeoX, GPTBigCode, Falcon, OPT, BLOOM,
// BERT, T5): exact counts against real checkpoints, the architecture facts
// later estimates read, config-class defaults and malformed configs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fixtures.h"
#include "vram/families.h"

namespace vram {
namespace {

class DenseFamilyTest : public ::testing::Test {
 protected:
  static ModelSpec build(const json& cfg) {
    auto r = model_from_config(cfg, "model.config");
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().path + ": " + r.error().message);
    return r.ok() ? r.value() : ModelSpec{};
  }
  static ModelSpec fixture(const std::string& id) { return build(testing::model_config(id)); }
  static int64_t count(const std::string& id) { return fixture(id).params_total(); }
  static Error error_for(const json& cfg) {
    auto r = model_from_config(cfg, "model.config");
    EXPECT_FALSE(r.ok()) << "expected an error, got " << (r.ok() ? r.value().params_total() : 0) << " parameters";
    return r.ok() ? Error{} : r.error();
  }
  static bool has_note(const ModelSpec& s, const std::string& needle) {
    return std::any_of(s.notes.begin(), s.notes.end(),
                       [&](const std::string& n) { return n.find(needle) != std::string::npos; });
  }
  static int64_t component(const ModelSpec& s, const char* name) {
    const auto by = s.params_by_component();
    auto it = by.find(name);
    return it == by.end() ? 0 : it->second;
  }
  static const ParamGroup* group(const ModelSpec& s, const std::string& module, const std::string& stack = "text") {
    for (const auto& g : s.groups) {
      if (g.module == module && g.stack == stack) return &g;
    }
    return nullptr;
  }
};

// ---- Exact counts (sources in tests/fixtures/models.json) ------------------

TEST_F(DenseFamilyTest, Gemma2bTiedEmbeddingCountsOnce) { EXPECT_EQ(count("google/gemma-2b"), 2506172416); }
TEST_F(DenseFamilyTest, Gemma7bMatchesCheckpoint) { EXPECT_EQ(count("google/gemma-7b"), 8537680896); }
TEST_F(DenseFamilyTest, Gemma2_2bWithFourNormsMatchesCheckpoint) { EXPECT_EQ(count("google/gemma-2-2b"), 2614341888); }
TEST_F(DenseFamilyTest, Gemma2_9bMatchesCheckpoint) { EXPECT_EQ(count("google/gemma-2-9b"), 9241705984); }
TEST_F(DenseFamilyTest, Phi2BiasedHeadMatchesCheckpoint) { EXPECT_EQ(count("microsoft/phi-2"), 2779683840); }
TEST_F(DenseFamilyTest, Phi15MatchesCheckpoint) { EXPECT_EQ(count("microsoft/phi-1_5"), 1418270720); }
TEST_F(DenseFamilyTest, Phi3FusedQkvMatchesCheckpoint) {
  EXPECT_EQ(count("microsoft/Phi-3-mini-4k-instruct"), 3821079552);
}
TEST_F(DenseFamilyTest, Phi4GroupedFusedQkvMatchesCheckpoint) { EXPECT_EQ(count("microsoft/phi-4"), 14659507200); }
TEST_F(DenseFamilyTest, Phi4MiniTiedMatchesCheckpoint) {
  EXPECT_EQ(count("microsoft/Phi-4-mini-instruct"), 3836021760);
}
TEST_F(DenseFamilyTest, Gpt2TiedHeadMatchesCheckpoint) { EXPECT_EQ(count("openai-community/gpt2"), 124439808); }
TEST_F(DenseFamilyTest, Gpt2MediumMatchesCheckpoint) { EXPECT_EQ(count("openai-community/gpt2-medium"), 354823168); }
TEST_F(DenseFamilyTest, Pythia160mUntiedEmbedOutMatchesCheckpoint) {
  EXPECT_EQ(count("EleutherAI/pythia-160m"), 162322944);
}
TEST_F(DenseFamilyTest, Pythia410mMatchesCheckpoint) { EXPECT_EQ(count("EleutherAI/pythia-410m"), 405334016); }
TEST_F(DenseFamilyTest, StarcoderBase1bMultiQueryMatchesPublishedCount) {
  EXPECT_EQ(count("bigcode/starcoderbase-1b"), 1137207296);
}
TEST_F(DenseFamilyTest, Starcoder15bMatchesPublishedCount) { EXPECT_EQ(count("bigcode/starcoder"), 15517456384); }
TEST_F(DenseFamilyTest, Falcon7bMultiQueryMatchesCheckpoint) { EXPECT_EQ(count("tiiuae/falcon-7b"), 6921720704); }
TEST_F(DenseFamilyTest, Falcon40bNewDecoderArchitectureMatchesCheckpoint) {
  EXPECT_EQ(count("tiiuae/falcon-40b"), 41303293952);
}
TEST_F(DenseFamilyTest, FalconRw1bAlibiSequentialBlockMatchesCheckpoint) {
  EXPECT_EQ(count("tiiuae/falcon-rw-1b"), 1311625216);
}
TEST_F(DenseFamilyTest, Opt125mPositionOffsetMatchesCheckpoint) { EXPECT_EQ(count("facebook/opt-125m"), 125239296); }
TEST_F(DenseFamilyTest, Opt350mProjectsEmbeddingsAndDropsFinalNorm) {
  EXPECT_EQ(count("facebook/opt-350m"), 331196416);
}
TEST_F(DenseFamilyTest, Bloom560mMatchesCheckpoint) { EXPECT_EQ(count("bigscience/bloom-560m"), 559214592); }
TEST_F(DenseFamilyTest, Bloom1b1MatchesCheckpoint) { EXPECT_EQ(count("bigscience/bloom-1b1"), 1065314304); }
TEST_F(DenseFamilyTest, BertLargeCountsBertModelWithPooler) {
  EXPECT_EQ(count("google-bert/bert-large-uncased"), 335141888);
}
TEST_F(DenseFamilyTest, BertBaseCountsBertModelWithPooler) {
  EXPECT_EQ(count("google-bert/bert-base-uncased"), 109482240);
}
TEST_F(DenseFamilyTest, T5V11BaseGatedGeluUntiedHeadMatchesCheckpoint) {
  EXPECT_EQ(count("google/t5-v1_1-base"), 247577856);
}
TEST_F(DenseFamilyTest, T5SmallReluTiedHeadMatchesCheckpoint) { EXPECT_EQ(count("google-t5/t5-small"), 60506624); }

// ---- Architecture facts ----------------------------------------------------

TEST_F(DenseFamilyTest, Gemma2AlternatesSlidingAndGlobalLayers) {
  const ModelSpec s = fixture("google/gemma-2-2b");
  EXPECT_EQ(s.text.sliding_window, 4096);
  EXPECT_EQ(s.text.sliding_layers, 13);  // layers 0, 2, ..., 24 of 26
  EXPECT_EQ(s.text.norms_per_layer, 4);
  EXPECT_EQ(s.text.head_dim, 256);
  EXPECT_EQ(s.text.kv_heads, 4);
  EXPECT_EQ(s.text.attention, AttnKind::kGqa);
  EXPECT_EQ(s.text.activation, "gelu_pytorch_tanh");
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(component(s, comp::kLmHead), 0);
}

TEST_F(DenseFamilyTest, Gemma2LayerTypesDecideWhichLayersSlide) {
  json cfg = testing::model_config("google/gemma-2-2b");
  cfg["num_hidden_layers"] = 4;
  cfg["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention", "full_attention"};
  EXPECT_EQ(build(cfg).text.sliding_layers, 3);
}

// Gemma2Config's soft-caps (configuration_gemma2.py at 008e5743: 50.0 and
// 30.0): on with a positive number, off when null, the class default (noted)
// when missing; anything else is an error naming the key.
TEST_F(DenseFamilyTest, Gemma2SoftCapsAreReadFromTheConfig) {
  json cfg = testing::model_config("google/gemma-2-2b");
  EXPECT_TRUE(build(cfg).text.attn_softcap);
  EXPECT_TRUE(build(cfg).text.final_softcap);
  EXPECT_FALSE(has_note(build(cfg), "softcapping missing"));
  cfg["attn_logit_softcapping"] = nullptr;
  EXPECT_FALSE(build(cfg).text.attn_softcap);
  EXPECT_TRUE(build(cfg).text.final_softcap);
  cfg.erase("final_logit_softcapping");
  const ModelSpec s = build(cfg);
  EXPECT_TRUE(s.text.final_softcap);
  EXPECT_TRUE(
      has_note(s, "final_logit_softcapping missing: using Gemma2Config (configuration_gemma2.py) default 30.0"));
  EXPECT_FALSE(fixture("google/gemma-2b").text.attn_softcap);  // Gemma has no cap
  for (const json& bad : {json(-30.0), json(0), json("30")}) {
    cfg["final_logit_softcapping"] = bad;
    const auto r = model_from_config(cfg, "model.config");
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(r.error().path, "model.config.final_logit_softcapping") << bad.dump();
  }
}

TEST_F(DenseFamilyTest, GemmaIsMultiQueryWithExplicitHeadDim) {
  const ModelSpec s = fixture("google/gemma-2b");
  EXPECT_EQ(s.text.attention, AttnKind::kMqa);
  EXPECT_EQ(s.text.head_dim, 256);
  EXPECT_EQ(s.text.mlp, MlpKind::kGated);
  EXPECT_EQ(s.text.norm, NormKind::kRmsNorm);
  EXPECT_EQ(s.text.sliding_layers, 0);
}

TEST_F(DenseFamilyTest, Phi2IsAParallelLayerNormBlockWithABiasedHead) {
  const ModelSpec s = fixture("microsoft/phi-2");
  EXPECT_TRUE(s.text.parallel_block);
  EXPECT_EQ(s.text.norms_per_layer, 1);
  EXPECT_EQ(s.text.norm, NormKind::kLayerNorm);
  EXPECT_EQ(s.text.mlp, MlpKind::kPlain);
  EXPECT_EQ(s.text.head_dim, 80);
  EXPECT_EQ(component(s, comp::kLmHead), 51200 * 2560 + 51200);
  EXPECT_EQ(component(s, comp::kNorms), 32 * 2 * 2560 + 2 * 2560);
}

TEST_F(DenseFamilyTest, Phi3MiniSlidesOnEveryLayer) {
  const ModelSpec s = fixture("microsoft/Phi-3-mini-4k-instruct");
  EXPECT_EQ(s.text.sliding_window, 2047);
  EXPECT_EQ(s.text.sliding_layers, 32);
  const ParamGroup* qkv = group(s, "qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->kind, ModuleKind::kLinear);
  EXPECT_EQ(qkv->out_features, 3 * 3072);
  const ParamGroup* gate_up = group(s, "gate_up_proj");
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(gate_up->out_features, 2 * 8192);
}

TEST_F(DenseFamilyTest, Gpt2ConvProjectionsAreLinearsWithInAndOutDims) {
  const ModelSpec s = fixture("openai-community/gpt2");
  const ParamGroup* c_attn = group(s, "c_attn");
  ASSERT_NE(c_attn, nullptr);
  EXPECT_EQ(c_attn->kind, ModuleKind::kLinear);
  EXPECT_EQ(c_attn->in_features, 768);
  EXPECT_EQ(c_attn->out_features, 3 * 768);
  EXPECT_TRUE(c_attn->bias);
  EXPECT_EQ(s.text.position_encoding, "learned");
  EXPECT_EQ(s.text.intermediate, 3072);
  EXPECT_EQ(component(s, comp::kEmbeddings), 50257 * 768 + 1024 * 768);
}

TEST_F(DenseFamilyTest, StarcoderCAttnHoldsOneSharedKeyValueHead) {
  const ModelSpec s = fixture("bigcode/starcoderbase-1b");
  EXPECT_EQ(s.text.kv_heads, 1);
  EXPECT_EQ(s.text.attention, AttnKind::kMqa);
  const ParamGroup* c_attn = group(s, "c_attn");
  ASSERT_NE(c_attn, nullptr);
  EXPECT_EQ(c_attn->out_features, 2048 + 2 * 128);
}

TEST_F(DenseFamilyTest, PythiaIsParallelResidualWithUntiedEmbedOut) {
  const ModelSpec s = fixture("EleutherAI/pythia-160m");
  EXPECT_TRUE(s.text.parallel_block);
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_EQ(component(s, comp::kLmHead), 50304 * 768);
}

TEST_F(DenseFamilyTest, FalconLayoutsSetKvHeadsNormsAndPositions) {
  const ModelSpec f7 = fixture("tiiuae/falcon-7b");
  EXPECT_EQ(f7.text.kv_heads, 1);
  EXPECT_TRUE(f7.text.parallel_block);
  EXPECT_EQ(f7.text.norms_per_layer, 1);
  EXPECT_EQ(f7.text.position_encoding, "rope");
  const ModelSpec f40 = fixture("tiiuae/falcon-40b");
  EXPECT_EQ(f40.text.kv_heads, 8);
  EXPECT_EQ(f40.text.attention, AttnKind::kGqa);
  EXPECT_EQ(f40.text.norms_per_layer, 2);
  EXPECT_NE(group(f40, "ln_attn"), nullptr);
  const ModelSpec rw = fixture("tiiuae/falcon-rw-1b");
  EXPECT_EQ(rw.text.position_encoding, "alibi");
  EXPECT_FALSE(rw.text.parallel_block);
  EXPECT_EQ(rw.text.attention, AttnKind::kMha);
}

TEST_F(DenseFamilyTest, BloomHasAnEmbeddingLayerNormAndAlibi) {
  const ModelSpec s = fixture("bigscience/bloom-560m");
  EXPECT_NE(group(s, "word_embeddings_layernorm"), nullptr);
  EXPECT_EQ(s.text.position_encoding, "alibi");
  EXPECT_EQ(s.text.intermediate, 4096);
}

TEST_F(DenseFamilyTest, OptPositionTableHasTwoExtraRows) {
  const ModelSpec s = fixture("facebook/opt-125m");
  const ParamGroup* pos = group(s, "embed_positions");
  ASSERT_NE(pos, nullptr);
  EXPECT_EQ(pos->numel, 2050 * 768);
  const ModelSpec m = fixture("facebook/opt-350m");
  EXPECT_NE(group(m, "project_in"), nullptr);
  EXPECT_NE(group(m, "project_out"), nullptr);
}

TEST_F(DenseFamilyTest, BertIsABidirectionalEncoderWithANote) {
  const ModelSpec s = fixture("google-bert/bert-large-uncased");
  EXPECT_FALSE(s.text.causal);
  EXPECT_EQ(s.text.norm, NormKind::kLayerNorm);
  EXPECT_EQ(component(s, comp::kOther), 1024 * 1024 + 1024);  // pooler.dense
  EXPECT_TRUE(has_note(s, "BertForMaskedLM"));
}

TEST_F(DenseFamilyTest, BertDecoderWithCrossAttentionAddsASecondAttentionPerLayer) {
  json cfg = testing::model_config("google-bert/bert-base-uncased");
  cfg["is_decoder"] = true;
  cfg["add_cross_attention"] = true;
  const ModelSpec s = build(cfg);
  EXPECT_TRUE(s.text.causal);
  EXPECT_TRUE(s.text.cross_attention);
  // Per layer: query/key/value/dense (4 * (768*768 + 768)) and a LayerNorm (2 * 768).
  EXPECT_EQ(s.params_total(), 109482240 + 12 * (4 * (768 * 768 + 768) + 2 * 768));
}

TEST_F(DenseFamilyTest, T5HasAnEncoderStackAndACrossAttendingDecoder) {
  const ModelSpec s = fixture("google/t5-v1_1-base");
  ASSERT_EQ(s.extra_stacks.size(), 1u);
  const LayerStack* enc = s.stack("encoder");
  ASSERT_NE(enc, nullptr);
  EXPECT_FALSE(enc->causal);
  EXPECT_EQ(enc->layers, 12);
  EXPECT_TRUE(s.text.cross_attention);
  EXPECT_EQ(s.text.norms_per_layer, 3);
  EXPECT_EQ(s.text.mlp, MlpKind::kGated);
  EXPECT_EQ(s.text.activation, "gelu_new");
  const ParamGroup* bias = group(s, "relative_attention_bias", "encoder");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->layer_index, 0);
  EXPECT_EQ(bias->instances, 1);
  EXPECT_EQ(bias->numel, 32 * 12);
  EXPECT_EQ(component(s, comp::kLmHead), 32128 * 768);
}

TEST_F(DenseFamilyTest, T5EncoderModelCountsSharedEmbeddingAndEncoderOnly) {
  json cfg = testing::model_config("google/t5-v1_1-base");
  cfg["architectures"] = {"T5EncoderModel"};
  const ModelSpec s = build(cfg);
  EXPECT_TRUE(s.extra_stacks.empty());
  EXPECT_FALSE(s.text.causal);
  // shared 32128*768 + 12 blocks of (4*768*768 + 3*768*2048 + 2*768) + bias 32*12 + final norm 768.
  EXPECT_EQ(s.params_total(), 32128 * 768 + 12 * (4 * 768 * 768 + 3 * 768 * 2048 + 2 * 768) + 32 * 12 + 768);
}

// ---- Defaults from the config class ---------------------------------------

TEST_F(DenseFamilyTest, BareGpt2ConfigUsesGpt2ConfigDefaults) {
  const ModelSpec s = build(json{{"model_type", "gpt2"}});
  EXPECT_EQ(s.params_total(), 124439808);  // GPT2Config() is GPT-2 small
  EXPECT_TRUE(has_note(s, "n_embd missing"));
  EXPECT_TRUE(has_note(s, "GPT2Config"));
}

TEST_F(DenseFamilyTest, BareGemma2ConfigUsesGemma2ConfigDefaults) {
  EXPECT_EQ(build(json{{"model_type", "gemma2"}}).params_total(), 2614341888);  // Gemma2Config() is 2B
}

TEST_F(DenseFamilyTest, T5MissingDModelTakesTheDefaultWithANote) {
  json cfg = testing::model_config("google-t5/t5-small");
  cfg.erase("d_model");
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.params_total(), 60506624);  // T5Config d_model=512 is t5-small's
  EXPECT_TRUE(has_note(s, "d_model missing: using T5Config"));
}

TEST_F(DenseFamilyTest, AttributeMapAliasesGiveTheSameCount) {
  json gpt2 = testing::model_config("openai-community/gpt2");
  gpt2["hidden_size"] = gpt2["n_embd"];
  gpt2.erase("n_embd");
  EXPECT_EQ(build(gpt2).params_total(), 124439808);
  json bloom = testing::model_config("bigscience/bloom-560m");
  bloom["n_embed"] = bloom["hidden_size"];
  bloom.erase("hidden_size");
  EXPECT_EQ(build(bloom).params_total(), 559214592);
}

TEST_F(DenseFamilyTest, FalconOldLayoutIgnoresNumKvHeadsLikeTransformers) {
  json cfg = testing::model_config("tiiuae/falcon-7b");
  cfg["num_kv_heads"] = 7;
  EXPECT_EQ(build(cfg).params_total(), 6921720704);
}

// ---- Malformed configs -----------------------------------------------------

TEST_F(DenseFamilyTest, Gpt2EmbdNotDivisibleByHeadsNamesNEmbd) {
  json cfg = testing::model_config("openai-community/gpt2");
  cfg["n_embd"] = 770;
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "inconsistent");
  EXPECT_EQ(e.path, "model.config.n_embd");
  EXPECT_NE(e.message.find("model.config.n_head"), std::string::npos);
}

TEST_F(DenseFamilyTest, FalconKvHeadsNotDividingHeadsIsInconsistent) {
  json cfg = testing::model_config("tiiuae/falcon-40b");
  cfg["num_kv_heads"] = 7;
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "inconsistent");
  EXPECT_EQ(e.path, "model.config.num_kv_heads");
}

TEST_F(DenseFamilyTest, T5DModelOfTheWrongTypeIsAnError) {
  json cfg = testing::model_config("google-t5/t5-small");
  cfg["d_model"] = "512";
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "wrong_type");
  EXPECT_EQ(e.path, "model.config.d_model");
}

TEST_F(DenseFamilyTest, T5MalformedFeedForwardProjIsUnknownValue) {
  json cfg = testing::model_config("google/t5-v1_1-base");
  cfg["feed_forward_proj"] = "gated-gelu-extra";
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "unknown_value");
  EXPECT_EQ(e.path, "model.config.feed_forward_proj");
}

TEST_F(DenseFamilyTest, Phi3KvHeadsNotDividingHeadsIsInconsistent) {
  json cfg = testing::model_config("microsoft/Phi-3-mini-4k-instruct");
  cfg["num_key_value_heads"] = 5;
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "inconsistent");
  EXPECT_EQ(e.path, "model.config.num_key_value_heads");
}

TEST_F(DenseFamilyTest, GptNeoxHiddenNotDivisibleByHeadsIsInconsistent) {
  json cfg = testing::model_config("EleutherAI/pythia-160m");
  cfg["num_attention_heads"] = 7;
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "inconsistent");
  EXPECT_EQ(e.path, "model.config.hidden_size");
}

TEST_F(DenseFamilyTest, GptBigCodeCrossAttentionWithMultiQueryIsRejected) {
  json cfg = testing::model_config("bigcode/starcoderbase-1b");
  cfg["add_cross_attention"] = true;
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "inconsistent");
  EXPECT_EQ(e.path, "model.config.add_cross_attention");
}

TEST_F(DenseFamilyTest, Gemma2LayerTypesOfTheWrongLengthAreInconsistent) {
  json cfg = testing::model_config("google/gemma-2-2b");
  cfg["layer_types"] = {"sliding_attention", "full_attention"};
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "inconsistent");
  EXPECT_EQ(e.path, "model.config.layer_types");
}

TEST_F(DenseFamilyTest, BertUnknownPositionEmbeddingTypeIsRejected) {
  json cfg = testing::model_config("google-bert/bert-base-uncased");
  cfg["position_embedding_type"] = "rotary";
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "unknown_value");
  EXPECT_EQ(e.path, "model.config.position_embedding_type");
}

TEST_F(DenseFamilyTest, OptNegativeFfnDimIsOutOfRange) {
  json cfg = testing::model_config("facebook/opt-125m");
  cfg["ffn_dim"] = -1;
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "out_of_range");
  EXPECT_EQ(e.path, "model.config.ffn_dim");
}

TEST_F(DenseFamilyTest, BloomHeadsOfTheWrongTypeNameTheAliasUsed) {
  json cfg = testing::model_config("bigscience/bloom-560m");
  cfg["n_head"] = true;
  const Error e = error_for(cfg);
  EXPECT_EQ(e.code, "wrong_type");
  EXPECT_EQ(e.path, "model.config.n_head");
}

}  // namespace
}  // namespace vram

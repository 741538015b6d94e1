// Exact parameter counts: every fixture model must match its real checkpoint.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "vram/families.h"

namespace vram {
namespace {

int64_t count(const std::string& id) {
  auto r = model_from_config(testing::model_config(id), "model.config");
  EXPECT_TRUE(r.ok()) << id << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value().params_total() : -1;
}

// Counts from tests/fixtures/models.json (sources cited there).
TEST(ParamCount, Llama2_7bMatchesCheckpoint) { EXPECT_EQ(count("meta-llama/Llama-2-7b-hf"), 6738415616); }
TEST(ParamCount, Llama31_8bMatchesCheckpoint) { EXPECT_EQ(count("meta-llama/Llama-3.1-8B"), 8030261248); }
TEST(ParamCount, Llama32_1bTiedEmbeddingCountsOnce) { EXPECT_EQ(count("meta-llama/Llama-3.2-1B"), 1235814400); }
TEST(ParamCount, SmolLm2_135mMatchesCheckpoint) { EXPECT_EQ(count("HuggingFaceTB/SmolLM2-135M"), 134515008); }
TEST(ParamCount, Mistral7bMatchesCheckpoint) { EXPECT_EQ(count("mistralai/Mistral-7B-v0.1"), 7241732096); }
TEST(ParamCount, Qwen25_7bHasQkvBiases) { EXPECT_EQ(count("Qwen/Qwen2.5-7B"), 7615616512); }
TEST(ParamCount, Qwen3_06bHasQkNorms) { EXPECT_EQ(count("Qwen/Qwen3-0.6B"), 596049920); }

// Every row of models.json whose model_type has an adapter must match exactly.
TEST(ParamCount, EverySupportedFixtureMatchesModelsJson) {
  const json rows = json::parse(testing::read_text("models.json"));
  const auto supported = supported_model_types();
  int checked = 0;
  for (const auto& row : rows) {
    const json cfg = json::parse(testing::read_text(row["config"].get<std::string>()));
    const std::string mt = cfg.value("model_type", "");
    if (std::find(supported.begin(), supported.end(), mt) == supported.end()) continue;
    auto r = model_from_config(cfg, "model.config");
    ASSERT_TRUE(r.ok()) << row["id"] << ": " << r.error().message;
    EXPECT_EQ(r.value().params_total(), row["params_total"].get<int64_t>()) << row["id"];
    ++checked;
  }
  EXPECT_GE(checked, 7);
}

TEST(ParamCount, UnknownModelTypeListsSupportedTypes) {
  auto r = model_from_config(json{{"model_type", "not_a_model"}}, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "unsupported_model");
  EXPECT_EQ(r.error().path, "model.config.model_type");
  EXPECT_NE(r.error().message.find("llama"), std::string::npos);
}

TEST(ParamCount, GenericFallbackIsFlaggedApproximate) {
  json cfg = testing::model_config("meta-llama/Llama-3.1-8B");
  cfg["model_type"] = "my_private_llama";
  auto r = model_from_config(cfg, "model.config", /*allow_generic=*/true);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().exact);
  EXPECT_EQ(r.value().params_total(), 8030261248);
}

TEST(ParamCount, HiddenNotDivisibleByHeadsNamesTheField) {
  json cfg = testing::model_config("meta-llama/Llama-3.1-8B");
  cfg["hidden_size"] = 4097;
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.hidden_size");
  EXPECT_EQ(r.error().code, "inconsistent");
}

TEST(ParamCount, NegativeLayersIsOutOfRange) {
  json cfg = testing::model_config("meta-llama/Llama-3.1-8B");
  cfg["num_hidden_layers"] = -2;
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "out_of_range");
  EXPECT_EQ(r.error().path, "model.config.num_hidden_layers");
}

TEST(ParamCount, StringWhereIntegerExpectedIsWrongType) {
  json cfg = testing::model_config("meta-llama/Llama-3.1-8B");
  cfg["vocab_size"] = "lots";
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "wrong_type");
  EXPECT_EQ(r.error().path, "model.config.vocab_size");
}

TEST(ParamCount, AbsurdVocabIsRejectedNotOverflowed) {
  json cfg = testing::model_config("meta-llama/Llama-3.1-8B");
  cfg["vocab_size"] = int64_t{1} << 40;
  cfg["hidden_size"] = int64_t{1} << 20;
  cfg["num_attention_heads"] = 1;
  cfg["num_key_value_heads"] = 1;
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "out_of_range");
}

TEST(ParamCount, MissingModelTypeIsMissingField) {
  auto r = model_from_config(json{{"hidden_size", 8}}, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "missing_field");
  EXPECT_EQ(r.error().path, "model.config.model_type");
}

TEST(ParamCount, CustomSizesBuildALlamaShapedDecoder) {
  // Llama-2-7B's sizes through model.custom give Llama-2-7B's count.
  json c = {{"layers", 32}, {"hidden", 4096}, {"heads", 32}, {"intermediate", 11008}, {"vocab", 32000}};
  auto r = model_from_custom(c, "model.custom");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().params_total(), 6738415616);
  EXPECT_FALSE(r.value().exact);
}

}  // namespace
}  // namespace vram

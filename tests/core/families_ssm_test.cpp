// Mamba (issue 14): exact counts against the published checkpoints (sources in
// tests/fixtures/models.json), and what is new about state-space layers: a
// fixed-size conv + SSM state per sequence instead of a KV cache (transformers
// MambaCache), and the mixer's own saved activations (mamba_ssm
// MambaInnerFn), linear in the sequence with no attention-score term.
#include <gtest/gtest.h>

#include <string>

#include "fixtures.h"
#include "vram/api.h"
#include "vram/families.h"

namespace vram {
namespace {

ModelSpec build(const json& cfg) {
  auto r = model_from_config(cfg, "model.config");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().path + ": " + r.error().message);
  return r.ok() ? r.value() : ModelSpec{};
}
json run(json req) {
  json r = estimate(req);
  EXPECT_FALSE(r.contains("error")) << r.dump();
  return r;
}
int64_t component(const json& r, const std::string& key) {
  for (const auto& c : r["components"]) {
    if (c["key"] == key) return c["bytes"].get<int64_t>();
  }
  ADD_FAILURE() << "no component " << key;
  return -1;
}
json mamba130m() { return testing::model_config("state-spaces/mamba-130m-hf"); }

// state-spaces/mamba-130m-hf: 129,135,360 (model.parameters(), tied head).
TEST(Mamba, Mamba130mMatchesCheckpoint) {
  const ModelSpec s = build(mamba130m());
  EXPECT_EQ(s.params_total(), 129135360);
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(s.text.ssm_layers, 24);
  EXPECT_EQ(s.text.ssm_inner, 1536);
  EXPECT_EQ(s.text.ssm_dt_rank, 48);
  // Per layer: in_proj 768 x 3072, conv1d 1536 x 4 + 1536, x_proj 1536 x 80,
  // dt_proj 48 x 1536 + 1536, A_log 1536 x 16, D 1536, out_proj 1536 x 768.
  const auto by = s.params_by_component();
  EXPECT_EQ(by.at(comp::kSsm), 24 * (2359296 + 7680 + 122880 + 75264 + 24576 + 1536 + 1179648));
}

// The Hub's larger checkpoints from the same listing: mamba-1.4b-hf (2048 x 48
// layers, rank 128) 1,372,178,432 and mamba-2.8b-hf (2560 x 64, rank 160)
// 2,768,345,600; time_step_rank "auto" is ceil(hidden / 16).
TEST(Mamba, LargerCheckpointsAndAutoRank) {
  json cfg = mamba130m();
  cfg["hidden_size"] = 2048;
  cfg["num_hidden_layers"] = 48;
  cfg["intermediate_size"] = 4096;
  cfg["time_step_rank"] = "auto";
  EXPECT_EQ(build(cfg).params_total(), 1372178432);
  cfg["hidden_size"] = 2560;
  cfg["num_hidden_layers"] = 64;
  cfg["intermediate_size"] = 5120;
  cfg["time_step_rank"] = 160;
  EXPECT_EQ(build(cfg).params_total(), 2768345600);
  cfg["time_step_rank"] = "big";
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.time_step_rank");
}

// No KV cache: the state is 24 layers x 1536 x (4 + 16) x 2 B per sequence,
// the same at 2k and 32k tokens.
TEST(Mamba, InferenceKeepsAFixedStateInsteadOfAKvCache) {
  const int64_t per_seq = int64_t{24} * 1536 * (4 + 16) * 2;
  for (int64_t ctx : {2048, 32768}) {
    const json r = run({{"model", {{"config", mamba130m()}}},
                        {"task", "infer"},
                        {"infer", {{"context_len", ctx}, {"batch", 4}, {"weights_dtype", "bf16"}}}});
    EXPECT_EQ(r["infer"]["kv_bytes_per_token"].get<int64_t>(), 0);
    EXPECT_EQ(component(r, "kv_cache"), 0);
    EXPECT_EQ(component(r, "ssm_state"), 4 * per_seq) << ctx;
  }
}

TEST(Mamba, VllmIsNotModelledAndSaysSo) {
  const json r = estimate({{"model", {{"config", mamba130m()}}},
                           {"task", "infer"},
                           {"gpu", {{"name", "H100 80GB"}}},
                           {"infer", {{"engine", "vllm"}}}});
  ASSERT_TRUE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["error"]["path"], "infer.engine");
}

// Training saves the mixer's xz, x_dbl, B, C and scan output per token (no
// s^2 attention term): doubling the sequence doubles the saved activations.
TEST(Mamba, TrainingActivationsAreLinearInTheSequence) {
  auto acts = [](int64_t seq) {
    return component(run({{"model", {{"config", mamba130m()}}},
                          {"task", "train"},
                          {"train",
                           {{"precision", "bf16"},
                            {"optimizer", "adamw_torch_fused"},
                            {"seq_len", seq},
                            {"attention", "eager"},
                            {"grad_checkpointing", false}}}}),
                     "activations");
  };
  const int64_t a2 = acts(2048), a4 = acts(4096);
  EXPECT_GT(a2, 0);
  EXPECT_NEAR(static_cast<double>(a4), 2.0 * static_cast<double>(a2), 0.001 * static_cast<double>(a4));
  // At least xz + x_dbl + B + C + out (2 B each) per token per layer.
  EXPECT_GT(a2, int64_t{2048} * 24 * 2 * (3 * 1536 + 48 + 64));
}

// LoRA without targets: PEFT has no default for Mamba; the mixer's linears are used.
TEST(Mamba, LoraTrainsTheMixerLinears) {
  const json r = run({{"model", {{"config", mamba130m()}}},
                      {"task", "train"},
                      {"train", {{"method", "lora"}, {"lora", {{"rank", 8}}}, {"seq_len", 1024}}}});
  // in_proj 768 -> 3072, x_proj 1536 -> 80, dt_proj 48 -> 1536, out_proj 1536 -> 768.
  EXPECT_EQ(r["model"]["params_trainable"].get<int64_t>(),
            24 * 8 * ((768 + 3072) + (1536 + 80) + (48 + 1536) + (1536 + 768)));
}

}  // namespace
}  // namespace vram

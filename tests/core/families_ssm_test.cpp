// Mamba (issue 14): exact counts against the published checkpoints (sources in
// tests/fixtures/models.json), and what is new about state-space layers: a
// fixed-size conv + SSM state per sequence instead of a KV cache (transformers
// MambaCache), and the mixer's own saved activations (mamba_ssm
// MambaInnerFn), linear in the sequence with no attention-score term.
#include <gtest/gtest.h>

#include <string>

#include "fixtures.h"
#include "memory/recipe.h"
#include "model_helpers.h"
#include "train/layout.h"
#include "vram/api.h"
#include "vram/families.h"
#include "vram/request.h"

namespace vram {
namespace {

using testing::build;
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

// ---- Mamba-2 -------------------------------------------------------------

json codestral() { return testing::model_config("mistralai/Mamba-Codestral-7B-v0.1"); }

// mistralai/Mamba-Codestral-7B-v0.1: 7,285,403,648 (Mistral's announcement;
// worked by hand in tests/fixtures/models.json).
TEST(Mamba2, CodestralMambaMatchesCheckpoint) {
  const ModelSpec s = build(codestral());
  EXPECT_EQ(s.params_total(), 7285403648);
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_EQ(s.text.ssm_kind, SsmKind::kMamba2);
  EXPECT_EQ(s.text.ssm_layers, 64);
  EXPECT_EQ(s.text.ssm_inner, 8192);
  // conv over x, B and C: 8192 + 2 x 8 groups x 128.
  EXPECT_EQ(s.text.conv_dim(), 10240);
  EXPECT_EQ(s.text.attention_layers(), 0);
  // Per layer: in_proj 4096 x (8192 + 10240 + 128), conv1d 10240 x 4 + 10240,
  // dt_bias + A_log + D (128 each), gated norm 8192, out_proj 8192 x 4096.
  const auto by = s.params_by_component();
  EXPECT_EQ(by.at(comp::kSsm), int64_t{64} * (76021760 + 51200 + 3 * 128 + 8192 + 33554432));
  EXPECT_EQ(by.at(comp::kNorms), 64 * 4096 + 4096);
}

// Mamba2Config's class defaults are Codestral's sizes: an empty config
// counts the same, and every default applied is noted.
TEST(Mamba2, ClassDefaultsAreNotedAndHeadsMustCoverTheInnerWidth) {
  const ModelSpec s = build({{"model_type", "mamba2"}});
  EXPECT_EQ(s.params_total(), 7285403648);
  EXPECT_FALSE(s.notes.empty());
  json cfg = codestral();
  cfg["num_heads"] = 64;
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.num_heads");
  cfg["num_heads"] = 128;
  cfg["n_groups"] = 3;
  r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.num_heads");
}

// Mamba2Cache: per layer conv_states (conv_dim x conv_kernel) and ssm_states
// (num_heads x head_dim x state_size) in the model dtype:
// 64 x (10240 x 4 + 8192 x 128) x 2 B = 139,460,608 B per sequence, at any
// context. Tensor parallel splits both by the inner width.
TEST(Mamba2, InferenceKeepsAConvAndSsmStatePerSequence) {
  const int64_t per_seq = int64_t{64} * (10240 * 4 + 8192 * 128) * 2;
  ASSERT_EQ(per_seq, 139460608);
  for (int64_t ctx : {4096, 65536}) {
    const json r = run({{"model", {{"config", codestral()}}},
                        {"task", "infer"},
                        {"infer", {{"context_len", ctx}, {"batch", 4}, {"weights_dtype", "bf16"}}}});
    EXPECT_EQ(r["infer"]["kv_bytes_per_token"].get<int64_t>(), 0);
    EXPECT_EQ(component(r, "kv_cache"), 0);
    EXPECT_EQ(component(r, "ssm_state"), 4 * per_seq) << ctx;
  }
  const json tp2 = run({{"model", {{"config", codestral()}}},
                        {"task", "infer"},
                        {"parallel", {{"gpus", 2}, {"tp", 2}}},
                        {"infer", {{"context_len", 4096}, {"batch", 1}, {"weights_dtype", "bf16"}}}});
  EXPECT_EQ(component(tp2, "ssm_state"), int64_t{64} * (5120 * 4 + 4096 * 128) * 2);
}

// Training: mamba_split_conv1d_scan_combined saves zxbcdt (8192 + 10240 +
// 128), out_x (8192) in bf16 and the gated norm's rstd (fp32 per group, 8)
// per token: 53,536 B, plus the block norm and in_proj's input; nothing
// grows with the square of the sequence.
TEST(Mamba2, TrainingSavesTheFusedKernelsTensors) {
  json req = {
      {"model", {{"config", codestral()}}},
      {"task", "train"},
      {"train",
       {{"precision", "bf16"}, {"optimizer", "adamw_torch_fused"}, {"seq_len", 2048}, {"grad_checkpointing", false}}}};
  auto parsed = parse_request(req);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const Request& q = parsed.value();
  const auto plan = memory::plan_trainable(q);
  const auto dt = memory::dtypes_for(q);
  const auto acts = memory::layer_activations(q, q.model.text, plan, dt, 2048, false, true);
  double mixer = -1;
  for (const auto& i : acts.items) {
    if (i.name.find("Mamba-2 mixer") != std::string::npos) mixer = i.bytes_per_token;
  }
  EXPECT_EQ(mixer, 2.0 * ((8192 + 10240 + 128) + 8192) + 4.0 * 8);
  // The norm (fp32 input + rstd, and its bf16 output since its weight trains)
  // and in_proj's bf16 input.
  EXPECT_EQ(acts.per_token(), mixer + (4.0 * 4096 + 4 + 2.0 * 4096) + 2.0 * 4096);
  auto total = [&](int64_t seq) {
    req["train"]["seq_len"] = seq;
    return component(run(req), "activations");
  };
  const int64_t a2 = total(2048), a4 = total(4096);
  EXPECT_NEAR(static_cast<double>(a4), 2.0 * static_cast<double>(a2), 0.001 * static_cast<double>(a4));
  EXPECT_GE(a2, static_cast<int64_t>(2048.0 * 64 * acts.per_token()));
}

// ---- Jamba ---------------------------------------------------------------

json jamba() { return testing::model_config("ai21labs/AI21-Jamba-1.5-Mini"); }

// ai21labs/AI21-Jamba-1.5-Mini: total_size 103,140,646,656 B of bf16 =
// 51,570,323,328 parameters (models.json).
TEST(Jamba, Jamba15MiniMatchesCheckpoint) {
  const ModelSpec s = build(jamba());
  EXPECT_EQ(s.params_total(), 51570323328);
  // Layers 4, 12, 20, 28 attend (attn_layer_period 8, offset 4); the odd
  // layers are MoE (expert_layer_period 2, offset 1).
  EXPECT_EQ(s.text.attention_layers(), 4);
  EXPECT_EQ(s.text.ssm_layers, 28);
  EXPECT_EQ(s.text.moe_layers, 16);
  EXPECT_FALSE(s.text.ssm_layer(4));
  EXPECT_TRUE(s.text.ssm_layer(5));
  const auto by = s.params_by_component();
  // Mamba mixer: in_proj 4096 x 16384, conv1d 8192 x 4 + 8192, x_proj 8192 x
  // 288, dt_proj 256 x 8192 + 8192, A_log 8192 x 16, D 8192, out_proj 8192 x
  // 4096, dt/b/c norms 256 + 16 + 16.
  EXPECT_EQ(by.at(comp::kSsm), int64_t{28} * 105308448);
  EXPECT_EQ(by.at(comp::kAttention), int64_t{4} * 41943040);
  EXPECT_EQ(by.at(comp::kMlp), int64_t{16} * 176160768);
  EXPECT_EQ(by.at(comp::kRouter), int64_t{16} * 4096 * 16);
  // Per token: 2 of 16 experts; the rest of the model always runs.
  EXPECT_EQ(s.params_active(), s.params_total() - int64_t{16} * 14 * 176160768);
}

// Only the 4 attention layers cache keys and values (8 KV heads x 128 x 2 x
// 2 B = 4,096 B per token each); the 28 Mamba layers keep 8192 x (4 + 16)
// values each per sequence, at any context.
TEST(Jamba, InferenceCachesKeysOnTheAttentionLayersAndAStateOnTheRest) {
  const json r = run({{"model", {{"config", jamba()}}},
                      {"task", "infer"},
                      {"infer", {{"context_len", 8192}, {"batch", 2}, {"weights_dtype", "bf16"}}}});
  EXPECT_EQ(r["infer"]["kv_bytes_per_token"].get<int64_t>(), 4 * 4096);
  EXPECT_EQ(r["infer"]["kv_bytes_per_token_per_layer"].get<int64_t>(), 4096);  // per attention layer
  EXPECT_EQ(component(r, "kv_cache"), int64_t{4} * 4096 * 8192 * 2);
  EXPECT_EQ(component(r, "ssm_state"), int64_t{28} * 8192 * (4 + 16) * 2 * 2);
}

// Training: each layer's saved tensors are the stack's average (attention on
// 4 of 32 layers, the unfused Mamba mixer on 28), the MoE MLP on 16; the
// pipeline splits the mixers by where they sit.
TEST(Jamba, TrainingMixesTheMixersAndPipelineStagesSplitThem) {
  json req = {
      {"model", {{"config", jamba()}}},
      {"task", "train"},
      {"train",
       {{"precision", "bf16"}, {"seq_len", 4096}, {"attention", "flash_attention_2"}, {"grad_checkpointing", false}}}};
  auto parsed = parse_request(req);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const Request& q = parsed.value();
  const auto plan = memory::plan_trainable(q);
  const auto dt = memory::dtypes_for(q);
  const auto acts = memory::layer_activations(q, q.model.text, plan, dt, 4096, false, true);
  double mixer = -1, qkv = -1;
  for (const auto& i : acts.items) {
    if (i.name.find("Jamba Mamba mixer") != std::string::npos) mixer = i.bytes_per_token;
    if (i.name.find("q, k, v") != std::string::npos) qkv = i.bytes_per_token;
  }
  // xz (2 x 8192), conv output, delta, scan output, gated output in bf16.
  EXPECT_DOUBLE_EQ(mixer, 2.0 * 6 * 8192 * 28 / 32);
  // q (32 x 128) and k, v (8 x 128 each, FlashAttention-2 keeps GQA's heads)
  // in bf16, on 4 of 32 layers.
  EXPECT_DOUBLE_EQ(qkv, 2.0 * (32 + 8 + 8) * 128 * 4 / 32);

  req["parallel"] = {{"gpus", 2}, {"pp", 2}};
  parsed = parse_request(req);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const auto stages = train::pipeline_stages(parsed.value());
  ASSERT_EQ(stages.size(), 2u);
  // Layers 0-15 hold attention layers 4 and 12, layers 16-31 hold 20 and 28.
  EXPECT_EQ(stages[0].ssm_layers, 14);
  EXPECT_EQ(stages[0].attention_layers, 2);
  EXPECT_EQ(stages[1].ssm_layers, 14);
  int64_t sum = 0;
  for (const auto& st : stages) {
    const Request rank = train::rank_request(parsed.value(), st);
    EXPECT_EQ(rank.model.text.ssm_layers, 14);
    EXPECT_EQ(rank.model.text.attention_layers(), 2);
    sum += rank.model.params_total();
  }
  EXPECT_EQ(sum, 51570323328);
  EXPECT_GT(component(run(req), "activations"), 0);
}

// ---- Falcon-H1 -----------------------------------------------------------

json falcon_h1() { return testing::model_config("tiiuae/Falcon-H1-0.5B-Base"); }

// tiiuae/Falcon-H1-0.5B-Base: 521,411,104 (models.json); the same listing
// gives Falcon-H1-1.5B-Instruct 1,554,863,488 and Falcon-H1-7B-Base
// 7,585,648,736, whose sizes a public config sweep lists (1.5B: 24 layers,
// 2048, MLP 4608, 8/2 heads of 128, Mamba 48 x 64, state 256, gated norm,
// vocab 65537; 7B: 44 layers, 3072, MLP 12288, 12/2 heads of 128, Mamba
// 24 x 128, state 256, gated norm, vocab 130048).
TEST(FalconH1, CountsMatchTheCheckpoints) {
  const ModelSpec s = build(falcon_h1());
  EXPECT_EQ(s.params_total(), 521411104);
  EXPECT_TRUE(s.text.ssm_with_attention);
  EXPECT_EQ(s.text.attention_layers(), 36);
  EXPECT_EQ(s.text.ssm_layers, 36);
  const auto by = s.params_by_component();
  // in_proj 1024 x (1536 + 1792 + 24), conv1d 1792 x 4 + 1792, dt_bias /
  // A_log / D 24 each, out_proj 1536 x 1024 (mamba_rms_norm false: no norm).
  EXPECT_EQ(by.at(comp::kSsm), int64_t{36} * (3432448 + 8960 + 72 + 1572864));
  EXPECT_EQ(by.at(comp::kAttention), int64_t{36} * 1310720);

  json cfg = falcon_h1();
  const json b15 = {{"hidden_size", 2048},  {"num_hidden_layers", 24}, {"intermediate_size", 4608},
                    {"head_dim", 128},      {"mamba_n_heads", 48},     {"mamba_d_ssm", 3072},
                    {"mamba_d_state", 256}, {"mamba_rms_norm", true},  {"vocab_size", 65537}};
  for (const auto& [key, v] : b15.items()) cfg[key] = v;
  EXPECT_EQ(build(cfg).params_total(), 1554863488);
  const json b7 = {{"hidden_size", 3072},       {"num_hidden_layers", 44}, {"intermediate_size", 12288},
                   {"num_attention_heads", 12}, {"mamba_n_heads", 24},     {"mamba_d_head", 128},
                   {"vocab_size", 130048}};
  for (const auto& [key, v] : b7.items()) cfg[key] = v;
  EXPECT_EQ(build(cfg).params_total(), 7585648736);
  cfg["mamba_d_head"] = "auto";  // 3072 / 24
  EXPECT_EQ(build(cfg).params_total(), 7585648736);
  cfg["mamba_d_head"] = 64;
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.mamba_n_heads");
}

// Every layer caches keys and values (2 KV heads x 64 x 2 x 2 B = 512 B per
// token) and keeps a Mamba-2 state: conv (1536 + 2 x 128) x 4 and SSM 1536 x
// 128 values per layer per sequence.
TEST(FalconH1, InferenceKeepsAKvCacheAndAStateInEveryLayer) {
  const json r = run({{"model", {{"config", falcon_h1()}}},
                      {"task", "infer"},
                      {"infer", {{"context_len", 16384}, {"batch", 2}, {"weights_dtype", "bf16"}}}});
  EXPECT_EQ(r["infer"]["kv_bytes_per_token"].get<int64_t>(), 36 * 512);
  EXPECT_EQ(component(r, "kv_cache"), int64_t{36} * 512 * 16384 * 2);
  EXPECT_EQ(component(r, "ssm_state"), int64_t{36} * (1792 * 4 + 1536 * 128) * 2 * 2);
}

// Training: one shared norm, then both branches on every layer; in_proj and
// q/k/v each keep their own input (the multipliers make two tensors).
TEST(FalconH1, TrainingSavesBothBranchesOfEveryLayer) {
  json req = {
      {"model", {{"config", falcon_h1()}}},
      {"task", "train"},
      {"train",
       {{"precision", "bf16"}, {"seq_len", 2048}, {"attention", "flash_attention_2"}, {"grad_checkpointing", false}}}};
  auto parsed = parse_request(req);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const Request& q = parsed.value();
  const auto acts =
      memory::layer_activations(q, q.model.text, memory::plan_trainable(q), memory::dtypes_for(q), 2048, false, true);
  int norms = 0;
  double in_proj = -1, qkv_in = -1, mixer = -1;
  for (const auto& i : acts.items) {
    if (i.name.find("norm (input") != std::string::npos) ++norms;
    if (i.name == "in_proj input") in_proj = i.bytes_per_token;
    if (i.name == "q/k/v projection inputs") qkv_in = i.bytes_per_token;
    if (i.name.find("Mamba-2 mixer") != std::string::npos) mixer = i.bytes_per_token;
  }
  EXPECT_EQ(norms, 2);  // input_layernorm and pre_ff_layernorm
  EXPECT_EQ(in_proj, 2.0 * 1024);
  EXPECT_EQ(qkv_in, 2.0 * 1024);
  EXPECT_EQ(mixer, 2.0 * ((1536 + 1792 + 24) + 1536) + 4.0 * 1);
}

// ---- LFM2 ----------------------------------------------------------------

json lfm2() { return testing::model_config("LiquidAI/LFM2-1.2B"); }

// LiquidAI/LFM2-1.2B: 1,170,340,608 (Hub safetensors metadata, models.json);
// the same table gives LFM2-350M 354,483,968 (1024 wide, 16 / 8 heads,
// block_ff_dim 6656 -> 4608) and LFM2-700M 742,489,344 (1536 wide, 24 / 8
// heads, block_ff_dim 10240 -> 6912).
TEST(Lfm2, CountsMatchTheCheckpoints) {
  const ModelSpec s = build(lfm2());
  EXPECT_EQ(s.params_total(), 1170340608);
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(s.text.intermediate, 8192);  // int(2 x 12288 / 3), a multiple of 256
  EXPECT_EQ(s.text.ssm_layers, 10);
  EXPECT_EQ(s.text.attention_layers(), 6);
  EXPECT_FALSE(s.text.ssm_layer(2));
  EXPECT_TRUE(s.text.ssm_layer(3));
  const auto by = s.params_by_component();
  // in_proj 2048 x 6144, conv 2048 x 3, out_proj 2048 x 2048.
  EXPECT_EQ(by.at(comp::kSsm), int64_t{10} * 16783360);
  // q 2048 x 2048, k / v 2048 x 512, out_proj 2048 x 2048 (q/k norms are norms).
  EXPECT_EQ(by.at(comp::kAttention), int64_t{6} * (10485888 - 128));

  json cfg = lfm2();
  for (const char* key : {"head_dim", "intermediate_size"}) cfg.erase(key);
  cfg["hidden_size"] = 1024;
  cfg["num_attention_heads"] = 16;
  cfg["block_ff_dim"] = 6656;
  EXPECT_EQ(build(cfg).params_total(), 354483968);
  cfg["hidden_size"] = 1536;
  cfg["num_attention_heads"] = 24;
  cfg["block_ff_dim"] = 10240;
  EXPECT_EQ(build(cfg).params_total(), 742489344);
  // layer_types says the same as full_attn_idxs.
  json listed = lfm2();
  listed.erase("full_attn_idxs");
  listed["layer_types"] = json::array();
  for (int i = 0; i < 16; ++i) {
    const bool attn = i == 2 || i == 5 || i == 8 || i == 10 || i == 12 || i == 14;
    listed["layer_types"].push_back(attn ? "full_attention" : "conv");
  }
  EXPECT_EQ(build(listed).params_total(), 1170340608);
  listed["layer_types"][0] = "mamba";
  auto r = model_from_config(listed, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.layer_types[0]");
}

// The 6 attention layers cache keys and values (8 KV heads x 64 x 2 x 2 B =
// 2,048 B per token each); Lfm2HybridConvCache keeps a hidden x conv_L_cache
// window on all 16 layers, whatever the context.
TEST(Lfm2, InferenceCachesKeysOnAttentionLayersAndAConvWindowOnEveryLayer) {
  const json r = run({{"model", {{"config", lfm2()}}},
                      {"task", "infer"},
                      {"infer", {{"context_len", 32768}, {"batch", 4}, {"weights_dtype", "bf16"}}}});
  EXPECT_EQ(r["infer"]["kv_bytes_per_token"].get<int64_t>(), 6 * 2048);
  EXPECT_EQ(component(r, "kv_cache"), int64_t{6} * 2048 * 32768 * 4);
  EXPECT_EQ(component(r, "ssm_state"), int64_t{16} * 2048 * 3 * 2 * 4);
  // The model summary says so (api.cpp stack_json "ssm").
  const json ssm = r["model"]["facts"]["ssm"];
  EXPECT_EQ(ssm["kind"], "short_conv");
  EXPECT_EQ(ssm["layers"], 10);
  EXPECT_EQ(ssm["attention_layers"], 6);
  EXPECT_EQ(ssm["state_layers"], 16);
  EXPECT_EQ(ssm["conv_dim"], 2048);
}

// Training: the short conv keeps BCx (3 x hidden), B*x, the conv output and
// the gated output per token, on 10 of 16 layers.
TEST(Lfm2, TrainingSavesTheShortConvTensors) {
  json req = {{"model", {{"config", lfm2()}}},
              {"task", "train"},
              {"train", {{"precision", "bf16"}, {"seq_len", 4096}, {"grad_checkpointing", false}}}};
  auto parsed = parse_request(req);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const Request& q = parsed.value();
  const auto acts =
      memory::layer_activations(q, q.model.text, memory::plan_trainable(q), memory::dtypes_for(q), 4096, false, true);
  double conv = -1;
  for (const auto& i : acts.items) {
    if (i.name.find("short conv") != std::string::npos) conv = i.bytes_per_token;
  }
  EXPECT_DOUBLE_EQ(conv, 2.0 * 6 * 2048 * 10 / 16);
  EXPECT_GT(component(run(req), "activations"), 0);
}

}  // namespace
}  // namespace vram

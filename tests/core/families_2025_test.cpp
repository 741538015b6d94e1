// Issue 14's 2025 architectures: exact counts against the published
// checkpoints (sources in tests/fixtures/models.json) and what each changes in
// memory. GLM-4.5 (glm4_moe): dense first layers, a DeepSeek-V3-style MoE with
// a shared expert and an fp32 sigmoid router, a multi-token-prediction layer
// the checkpoint stores and transformers never builds. Qwen3-Next
// (qwen3_next): gated DeltaNet layers that keep a fixed conv window and an
// fp32 recurrent state instead of keys and values, gated attention on one
// layer in four, 512 experts on every layer. Qwen3-VL (qwen3_vl): a
// dynamic-resolution tower with learned position embeddings and three
// DeepStack mergers beside the final one, over a Qwen3 text model.
#include <gtest/gtest.h>

#include <string>

#include "estimate_helpers.h"
#include "fixtures.h"
#include "memory/recipe.h"
#include "model_helpers.h"
#include "vram/api.h"
#include "vram/families.h"
#include "vram/request.h"

namespace vram {
namespace {

using testing::build;
json run(const json& req) { return testing::estimate_ok(req); }
int64_t component(const json& r, const std::string& key) {
  for (const auto& c : r["components"]) {
    if (c["key"] == key) return c["bytes"].get<int64_t>();
  }
  ADD_FAILURE() << "no component " << key;
  return -1;
}
int64_t by_component(const ModelSpec& s, const char* name) {
  const auto by = s.params_by_component();
  const auto it = by.find(name);
  return it == by.end() ? 0 : it->second;
}
bool has_note(const ModelSpec& s, const std::string& needle) {
  for (const auto& n : s.notes) {
    if (n.find(needle) != std::string::npos) return true;
  }
  return false;
}
using testing::saved_item;

// ---- GLM-4.5 (glm4_moe) ----------------------------------------------------

json glm_air() { return testing::model_config("zai-org/GLM-4.5-Air"); }

// zai-org/GLM-4.5-Air: 106,852,245,504 in memory (models.json): the Hub's
// safetensors total of 110,468,824,832 adds the MTP layer 46 (3,616,573,440)
// and 46 x 128 fp32 router-bias buffers.
TEST(Glm4Moe, GlmAirMatchesTheCheckpointWithoutItsMtpLayer) {
  const ModelSpec s = build(glm_air());
  EXPECT_EQ(s.params_total(), 106852245504);
  EXPECT_EQ(s.params_total() + 3616573440 + 46 * 128, 110468824832);
  EXPECT_EQ(s.text.moe_layers, 45);  // layer 0 keeps a dense MLP (first_k_dense_replace 1)
  EXPECT_EQ(s.text.experts, 128);
  EXPECT_EQ(s.text.experts_per_token, 8);
  EXPECT_EQ(s.text.shared_expert_intermediate, 1408);
  EXPECT_EQ(s.text.head_dim, 128);  // 96 heads x 128 = 12288, three times the hidden size
  EXPECT_FALSE(s.text.qk_norm);
  EXPECT_TRUE(s.text.router_fp32);
  // q/k/v carry biases, o_proj none: 4096 x (12288 + 2 x 1024) + 14336 + 12288 x 4096.
  EXPECT_EQ(by_component(s, comp::kAttention), int64_t{46} * 109066240);
  // The router is a bare nn.Parameter of 128 x 4096 per MoE layer.
  EXPECT_EQ(by_component(s, comp::kRouter), int64_t{45} * 128 * 4096);
  EXPECT_EQ(by_component(s, comp::kExperts), int64_t{45} * 128 * 3 * 4096 * 1408);
  // The dense MLP of layer 0 and the shared expert of the 45 others.
  EXPECT_EQ(by_component(s, comp::kMlp), int64_t{3} * 4096 * 10944 + int64_t{45} * 3 * 4096 * 1408);
  // 8 of 128 experts per token: 13,424,123,904 active; the card's "12B
  // active" leaves out the 1,241,513,984 embedding and head parameters.
  EXPECT_EQ(s.params_active(), 13424123904);
  EXPECT_TRUE(has_note(s, "num_nextn_predict_layers 1"));
  EXPECT_TRUE(has_note(s, "e_score_correction_bias"));
}

// zai-org/GLM-4.5 (355B): the Hub total 358,337,791,296 = 352,797,814,784 in
// memory + its MTP layer 92 (5,539,962,112) + 90 x 160 router biases. It has
// three dense layers, 160 experts of 1536 and per-head q/k norms.
TEST(Glm4Moe, Glm45ByItsSizesWithQkNorms) {
  json cfg = glm_air();
  cfg["hidden_size"] = 5120;
  cfg["num_hidden_layers"] = 92;
  cfg["intermediate_size"] = 12288;
  cfg["moe_intermediate_size"] = 1536;
  cfg["n_routed_experts"] = 160;
  cfg["first_k_dense_replace"] = 3;
  cfg["use_qk_norm"] = true;
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.params_total(), 352797814784);
  EXPECT_EQ(s.params_total() + 5539962112 + 90 * 160, 358337791296);
  EXPECT_TRUE(s.text.qk_norm);
  EXPECT_EQ(s.text.moe_layers, 89);
  // Without use_qk_norm the 92 x 2 x 128 norm weights go.
  cfg["use_qk_norm"] = false;
  EXPECT_EQ(build(cfg).params_total(), 352797814784 - 92 * 2 * 128);
  // A router cannot pick more experts than exist.
  cfg["num_experts_per_tok"] = 200;
  auto r = model_from_config(cfg, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.num_experts_per_tok");
}

// Serving: the MTP layer is not loaded, so bf16 weights are 2 B x the
// in-memory count; the cache holds 8 KV heads x 128 per layer (the 96 query
// heads are 3x the hidden width and are not cached): 46 x 2 x 8 x 128 x 2 B.
TEST(Glm4Moe, InferenceLoadsNoMtpLayerAndCachesEightKvHeads) {
  const json r = run({{"model", {{"config", glm_air()}}},
                      {"task", "infer"},
                      {"infer", {{"context_len", 8192}, {"batch", 2}, {"weights_dtype", "bf16"}}},
                      {"gpu", {{"memory_gib", 1024}}}});
  EXPECT_EQ(r["infer"]["kv_bytes_per_token"].get<int64_t>(), 46 * 2 * 8 * 128 * 2);
  EXPECT_EQ(component(r, "kv_cache"), int64_t{46} * 2 * 8 * 128 * 2 * 8192 * 2);
  EXPECT_EQ(component(r, "weights"), int64_t{2} * 106852245504);
}

// Training: the fp32 sigmoid router keeps an fp32 copy of each token's
// hidden state when its weight trains (full bf16 fine-tuning) and its fp32
// scores always; a LoRA run leaves the bare-Parameter router frozen. Mixtral's
// Linear + softmax router keeps bf16 logits and their fp32 softmax.
TEST(Glm4Moe, TrainingKeepsTheFp32RouterInput) {
  const json full = {{"model", {{"config", glm_air()}}},
                     {"task", "train"},
                     {"train", {{"precision", "bf16"}, {"seq_len", 1024}, {"grad_checkpointing", false}}}};
  EXPECT_DOUBLE_EQ(saved_item(full, "router (fp32", true), 4.0 * 4096 + 4.0 * 128);
  EXPECT_EQ(saved_item(full, "router logits + softmax", true), -1);
  EXPECT_GT(saved_item(full, "shared expert MLP", true), 0);
  json lora = full;
  lora["train"]["method"] = "lora";
  EXPECT_DOUBLE_EQ(saved_item(lora, "router (fp32", true), 4.0 * 128);
  // Under autocast F.linear keeps autocast's bf16 cast, and sigmoid runs in bf16.
  json amp = full;
  amp["train"]["precision"] = "amp_bf16";
  EXPECT_DOUBLE_EQ(saved_item(amp, "router (fp32", true), 2.0 * 4096 + 2.0 * 128);
  // In fp32 the .type(torch.float32) is the norm output itself.
  json fp32 = full;
  fp32["train"]["precision"] = "fp32";
  EXPECT_DOUBLE_EQ(saved_item(fp32, "router (fp32", true), 4.0 * 128);
  // DeepSeek-V3 runs the same router; Mixtral's is unchanged.
  json dsv3 = full;
  dsv3["model"]["config"] = testing::model_config("deepseek-ai/DeepSeek-V3");
  EXPECT_DOUBLE_EQ(saved_item(dsv3, "router (fp32", true), 4.0 * 7168 + 4.0 * 256);
  json mixtral = full;
  mixtral["model"]["config"] = testing::model_config("mistralai/Mixtral-8x7B-v0.1");
  EXPECT_DOUBLE_EQ(saved_item(mixtral, "router logits + softmax", true), (2.0 + 4.0) * 8);
  // The whole estimate runs, with LoRA on the attention and every expert.
  lora["train"]["lora"] = {{"rank", 8}, {"targets", "all-linear"}};
  EXPECT_GT(component(run(lora), "activations"), 0);
}

// ---- Qwen3-Next (qwen3_next) ----------------------------------------------

json qwen3_next() { return testing::model_config("Qwen/Qwen3-Next-80B-A3B-Instruct"); }

// Qwen/Qwen3-Next-80B-A3B-Instruct: 79,674,391,296 in memory (models.json);
// the Hub's safetensors total of 81,324,862,720 adds the mtp.* module
// (1,650,471,424), which Qwen3-Coder-Next's checkpoint leaves out (79,674,391,296).
TEST(Qwen3Next, CountMatchesTheCheckpointWithoutItsMtpModule) {
  const ModelSpec s = build(qwen3_next());
  EXPECT_EQ(s.params_total(), 79674391296);
  EXPECT_EQ(s.params_total() + 1650471424, 81324862720);
  EXPECT_EQ(s.text.ssm_layers, 36);
  EXPECT_EQ(s.text.attention_layers(), 12);
  EXPECT_TRUE(s.text.ssm_layer(0));
  EXPECT_FALSE(s.text.ssm_layer(3));  // (3 + 1) % full_attention_interval == 0
  EXPECT_TRUE(s.text.attn_output_gate);
  EXPECT_EQ(s.text.moe_layers, 48);
  // Gated DeltaNet: in_proj_qkvz 2048 x 12288, in_proj_ba 2048 x 64, conv1d
  // 8192 x 4, dt_bias and A_log 32 each, out_proj 4096 x 2048 (its gated norm
  // of 128 is a norm).
  EXPECT_EQ(by_component(s, comp::kSsm), int64_t{36} * (33718464 - 128));
  // Gated attention: q_proj writes query and gate (2 x 16 x 256).
  EXPECT_EQ(by_component(s, comp::kAttention), int64_t{12} * (27263488 - 512));
  EXPECT_EQ(by_component(s, comp::kExperts), int64_t{48} * 512 * 3 * 2048 * 512);
  EXPECT_EQ(by_component(s, comp::kRouter), int64_t{48} * (512 * 2048 + 2048));
  // 10 of 512 experts per token.
  EXPECT_EQ(s.params_active(), 3874929408);
  EXPECT_TRUE(has_note(s, "mtp.*"));
  // layer_types says the same as full_attention_interval.
  json listed = qwen3_next();
  listed.erase("full_attention_interval");
  listed["layer_types"] = json::array();
  for (int i = 0; i < 48; ++i) listed["layer_types"].push_back(i % 4 == 3 ? "full_attention" : "linear_attention");
  EXPECT_EQ(build(listed).params_total(), 79674391296);
  listed["layer_types"][5] = "mamba";
  auto r = model_from_config(listed, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.layer_types[5]");
  json odd = qwen3_next();
  odd["linear_num_value_heads"] = 24;
  odd["linear_num_key_heads"] = 16;
  r = model_from_config(odd, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.linear_num_value_heads");
}

// Serving: 12 attention layers cache 2 KV heads x 256 (24 KiB per token in
// bf16); the 36 gated DeltaNet layers keep a conv window over q, k and v
// (8192 x 4, bf16) and a 32 x 128 x 128 recurrent state in fp32 per sequence
// (74.25 MiB for the batch of one), the same at any context.
TEST(Qwen3Next, InferenceKeepsKeysOnAQuarterOfTheLayersAndAnFp32StateOnTheRest) {
  const int64_t per_seq = int64_t{36} * (8192 * 4 * 2 + 4096 * 128 * 4);
  EXPECT_EQ(per_seq, 77856768);
  for (int64_t ctx : {4096, 65536}) {
    const json r = run({{"model", {{"config", qwen3_next()}}},
                        {"task", "infer"},
                        {"infer", {{"context_len", ctx}, {"batch", 2}, {"weights_dtype", "bf16"}}},
                        {"gpu", {{"memory_gib", 1024}}}});
    EXPECT_EQ(r["infer"]["kv_bytes_per_token"].get<int64_t>(), 12 * 2 * 2 * 256 * 2);
    EXPECT_EQ(component(r, "kv_cache"), int64_t{12} * 2 * 2 * 256 * 2 * ctx * 2);
    EXPECT_EQ(component(r, "ssm_state"), per_seq * 2);
    EXPECT_EQ(component(r, "weights"), int64_t{2} * 79674391296);
  }
  // vLLM keeps hybrid states in its own blocks: not modelled, refused.
  const json v = estimate({{"model", {{"config", qwen3_next()}}},
                           {"task", "infer"},
                           {"infer", {{"engine", "vllm"}}},
                           {"gpu", {{"memory_gib", 1024}}}});
  ASSERT_TRUE(v.contains("error"));
  EXPECT_EQ(v["error"]["path"], "infer.engine");
}

// Training: a gated DeltaNet layer keeps the conv input (8192), the
// l2-normalised q and k repeated to 32 heads (2 x 4096), a copy of v (4096),
// beta (32), the 64-wide intra-chunk matrix per head (2048), the gated norm's
// input and gate and out_proj's input (3 x 4096), in bf16, plus fp32
// statistics (6 x 32 x 4 B); the attention layers keep sigmoid(gate) and the
// gated product o_proj reads. Both are averaged over the stack (36 and 12 of
// 48 layers).
TEST(Qwen3Next, TrainingSavesTheDeltaNetKernelTensorsAndTheOutputGate) {
  const json req = {
      {"model", {{"config", qwen3_next()}}},
      {"task", "train"},
      {"train",
       {{"precision", "bf16"}, {"seq_len", 2048}, {"attention", "flash_attention_2"}, {"grad_checkpointing", false}}}};
  EXPECT_DOUBLE_EQ(saved_item(req, "gated DeltaNet: conv input", true),
                   2.0 * (8192 + 2 * 32 * 128 + 4096 + 32 + 64 * 32 + 3 * 4096) * 36 / 48);
  EXPECT_DOUBLE_EQ(saved_item(req, "gated DeltaNet fp32", true), 4.0 * 6 * 32 * 36 / 48);
  // sigmoid(gate) and the gated product, 16 heads x 256 each in bf16.
  EXPECT_DOUBLE_EQ(saved_item(req, "attention output gate", true), 2.0 * 2 * 16 * 256 * 12 / 48);
  EXPECT_GT(saved_item(req, "shared expert MLP", true), 0);
  // The whole estimate runs, full and with LoRA on every linear.
  EXPECT_GT(component(run(req), "activations"), 0);
  json lora = req;
  lora["train"]["method"] = "lora";
  lora["train"]["lora"] = {{"rank", 16}, {"targets", "all-linear"}};
  EXPECT_GT(component(run(lora), "activations"), 0);
}

// ---- Qwen3-VL (qwen3_vl) ---------------------------------------------------

json qwen3_vl() { return testing::model_config("Qwen/Qwen3-VL-8B-Instruct"); }

// Qwen/Qwen3-VL-8B-Instruct: 8,767,123,696 (Hub safetensors, models.json):
// the tower 576,388,336 (the mergers' 4 x 37.8 M included) and the Qwen3-8B
// text model 8,190,735,360.
TEST(Qwen3Vl, CountMatchesTheCheckpoint) {
  const ModelSpec s = build(qwen3_vl());
  EXPECT_EQ(s.params_total(), 8767123696);
  int64_t tower = 0;
  for (const auto& g : s.groups) tower += g.stack == "text" ? 0 : g.total();
  EXPECT_EQ(tower, 576388336);
  // The final merger and three DeepStack mergers: LayerNorm (1152, then 4608
  // for the post-shuffle ones) and 4608 -> 4608 -> 4096 with biases.
  const int64_t mlp = 4608 * 4608 + 4608 + 4608 * 4096 + 4096;
  EXPECT_EQ(by_component(s, comp::kProjector), 4 * mlp + 2 * 1152 + 3 * 2 * 4608);
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_TRUE(s.text.qk_norm);
  EXPECT_TRUE(s.vision.dynamic_resolution);
  EXPECT_EQ(s.vision.patch_size, 16);
  EXPECT_TRUE(has_note(s, "DeepStack: 3"));
  // Without DeepStack indexes only the final merger is left.
  json plain = qwen3_vl();
  plain["vision_config"]["deepstack_visual_indexes"] = json::array();
  EXPECT_EQ(build(plain).params_total(), 8767123696 - 3 * (mlp + 2 * 4608));
  plain["vision_config"]["deepstack_visual_indexes"] = {8, 27};
  auto r = model_from_config(plain, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.vision_config.deepstack_visual_indexes[1]");
  json wrong = qwen3_vl();
  wrong["vision_config"]["out_hidden_size"] = 2048;
  r = model_from_config(wrong, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.vision_config.out_hidden_size");
}

// Serving: the whole model is loaded (tower and four mergers, 2 B each);
// keys and values are the text model's, 36 x 2 x 8 x 128 x 2 B a token; an
// image's tokens depend on its size, so the request counts them in context_len.
TEST(Qwen3Vl, InferenceLoadsTheTowerAndCachesTheTextKeys) {
  const json r = run({{"model", {{"config", qwen3_vl()}}},
                      {"task", "infer"},
                      {"infer", {{"context_len", 8192}, {"images_per_prompt", 2}, {"weights_dtype", "bf16"}}},
                      {"gpu", {{"memory_gib", 80}}}});
  EXPECT_EQ(r["infer"]["kv_bytes_per_token"].get<int64_t>(), 36 * 2 * 8 * 128 * 2);
  EXPECT_EQ(component(r, "weights"), int64_t{2} * 8767123696);
  bool dynamic = false;
  for (const auto& a : r["assumptions"])
    dynamic = dynamic || a.get<std::string>().find("dynamic-resolution") != std::string::npos;
  EXPECT_TRUE(dynamic);
}

// Training with LoRA on every linear: PEFT's all-linear reaches the tower's
// qkv / proj / linear_fc1 / linear_fc2 and the four mergers' two linears,
// DeepStack's included, beside the text model's seven projections.
TEST(Qwen3Vl, TrainingPutsAdaptersOnTheTowerAndEveryMerger) {
  json req = {{"model", {{"config", qwen3_vl()}}},
              {"task", "train"},
              {"train",
               {{"precision", "bf16"},
                {"seq_len", 2048},
                {"method", "lora"},
                {"lora", {{"rank", 16}, {"targets", "all-linear"}}}}}};
  const json r = run(req);
  const int64_t rank = 16;
  const int64_t text = 36 * rank * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096) + 3 * (4096 + 12288));
  const int64_t tower = 27 * rank * ((1152 + 3456) + (1152 + 1152) + 2 * (1152 + 4304));
  const int64_t mergers = 4 * rank * ((4608 + 4608) + (4608 + 4096));
  EXPECT_EQ(r["model"]["params_trainable"].get<int64_t>(), text + tower + mergers);
  EXPECT_GT(component(r, "activations"), 0);
}

}  // namespace
}  // namespace vram

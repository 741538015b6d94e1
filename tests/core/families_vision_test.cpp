// Vision-language and audio families of issue 14 part 2: exact counts against
// the published checkpoints (sources in tests/fixtures/models.json) and what
// is new about each: Mllama's image cross-attention layers (keys/values of the
// image tokens, not of the text, cached once per sequence whatever the
// context) and the images a request carries (infer.images_per_prompt,
// train.images_per_sample).
#include <gtest/gtest.h>

#include <string>

#include "estimate_helpers.h"
#include "fixtures.h"
#include "model_helpers.h"
#include "vram/api.h"
#include "vram/families.h"

namespace vram {
namespace {

using testing::component_bytes;
using testing::estimate_ok;

using testing::build;
Error error_of(const json& cfg) {
  auto r = model_from_config(cfg, "model.config");
  EXPECT_FALSE(r.ok()) << "expected an error";
  return r.ok() ? Error{} : r.error();
}
int64_t part(const ModelSpec& s, const std::string& name) {
  const auto by = s.params_by_component();
  const auto it = by.find(name);
  return it == by.end() ? 0 : it->second;
}
json fact(const json& r, const std::string& key) {
  EXPECT_TRUE(r.contains("infer") && r["infer"].contains(key)) << "no fact " << key;
  return r["infer"].value(key, json());
}

json mllama11b() { return testing::model_config("meta-llama/Llama-3.2-11B-Vision-Instruct"); }

json infer_req(const json& cfg, int64_t ctx, int64_t batch, int64_t images) {
  return {{"model", {{"config", cfg}}},
          {"task", "infer"},
          {"infer", {{"context_len", ctx}, {"batch", batch}, {"images_per_prompt", images}}}};
}

// ---- Mllama (Llama 3.2 Vision) ----------------------------------------------

// 10,670,220,835 = text 9,775,192,080 + vision 863,567,379 + projector
// 31,461,376 (worked by hand from modeling_mllama.py in models.json).
TEST(Mllama, Llama32Vision11bMatchesCheckpoint) {
  const ModelSpec s = build(mllama11b());
  EXPECT_EQ(s.params_total(), 10670220835);
  // Projector: Linear(7680, 4096) with bias.
  EXPECT_EQ(part(s, comp::kProjector), 7680 * 4096 + 4096);
  // Vision: patch conv 3 x 14 x 14 x 1280, class token, position embedding
  // 1601 x 1280 + gate, tile embedding 9 x (4 x 1601 x 1280), pre/post tile
  // embeddings 9 x (4 x 1280) + gates, two LayerNorms, 40 layers (32 + 8
  // global with 2 gates each) of q/k/v/o 1280^2 and fc1/fc2 1280 x 5120 + biases.
  const int64_t layer = 4 * 1280 * 1280 + 2 * 1280 * 5120 + 5120 + 1280 + 4 * 1280;
  EXPECT_EQ(part(s, comp::kVision), 3 * 14 * 14 * 1280 + 1280 + 1601 * 1280 + 1 + 9 * 4 * 1601 * 1280 +
                                        2 * (9 * 4 * 1280 + 1) + 4 * 1280 + 40 * layer + 16);
  EXPECT_EQ(s.text.image_cross_layers, 8);
  EXPECT_EQ(s.text.layers, 40);
  EXPECT_EQ(s.vision.cross_tokens_per_image, 4 * 1601);
  // Inside the tower each tile's 1601 tokens are padded to 1608 (a multiple of 8).
  EXPECT_EQ(s.vision.encoder_tokens_per_image, 4 * 1608);
  EXPECT_EQ(s.vision.tokens_per_image, 1);
  ASSERT_NE(s.stack("vision"), nullptr);
  EXPECT_EQ(s.stack("vision")->layers, 40);
}

TEST(Mllama, CrossAttentionLayersOutsideTheModelNameTheEntry) {
  json cfg = mllama11b();
  cfg["text_config"]["cross_attention_layers"] = json::array({3, 40});
  const Error e = error_of(cfg);
  EXPECT_EQ(e.path, "model.config.text_config.cross_attention_layers[1]");
}

TEST(Mllama, VisionOutputDimMustMatchTheConcatenatedFeatures) {
  json cfg = mllama11b();
  cfg["vision_config"]["vision_output_dim"] = 6400;
  const Error e = error_of(cfg);
  EXPECT_EQ(e.path, "model.config.vision_config.vision_output_dim");
  EXPECT_NE(e.message.find("7680"), std::string::npos) << e.message;
}

// Fewer cross-attention layers: 8 -> 2 removes 6 x (q_norm + k_norm + 2 gates)
// and nothing else (the layer count and the projections stay).
TEST(Mllama, CrossLayerListOnlyMovesNormsAndGates) {
  json cfg = mllama11b();
  cfg["text_config"]["cross_attention_layers"] = json::array({3, 8});
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.params_total(), 10670220835 - 6 * (128 + 128 + 2));
  EXPECT_EQ(s.text.image_cross_layers, 2);
}

// Only the 32 self-attention layers cache the text: 32 x 2 x 8 KV heads x 128
// x 2 B = 131,072 B per token (40 layers would be 163,840).
TEST(Mllama, SelfAttentionLayersAloneCacheTheText) {
  const json r = estimate_ok(infer_req(mllama11b(), 4096, 1, 0));
  EXPECT_EQ(fact(r, "kv_bytes_per_token").get<int64_t>(), 131072);
  EXPECT_EQ(fact(r, "kv_bytes_per_token_per_layer").get<int64_t>(), 4096);
  EXPECT_EQ(component_bytes(r, "kv_cache"), int64_t{131072} * 4096);
}

// One image: 8 cross layers x 6404 tokens x 2 x 8 x 128 x 2 B = 209,846,272 B
// per sequence, the same at any context length, plus its one <|image|> text
// token (131,072 B in the self-attention layers).
TEST(Mllama, ImageKeysAndValuesDependOnImagesNotOnContext) {
  const int64_t per_image = int64_t{8} * 6404 * 2 * 8 * 128 * 2;
  EXPECT_EQ(per_image, 209846272);
  for (int64_t ctx : {1024, 8192}) {
    const int64_t none = component_bytes(estimate_ok(infer_req(mllama11b(), ctx, 2, 0)), "kv_cache");
    const int64_t two = component_bytes(estimate_ok(infer_req(mllama11b(), ctx, 2, 2)), "kv_cache");
    EXPECT_EQ(two - none, 2 * 2 * (per_image + 131072)) << "context " << ctx;
  }
}

TEST(Mllama, ImagesListTheirCacheInTheAssumptions) {
  const json r = estimate_ok(infer_req(mllama11b(), 2048, 1, 1));
  bool found = false;
  for (const auto& a : r["assumptions"]) found = found || a.get<std::string>().find("6404") != std::string::npos;
  EXPECT_TRUE(found) << r["assumptions"].dump();
  const json text_only = estimate_ok(infer_req(mllama11b(), 2048, 1, 0));
  bool said = false;
  for (const auto& a : text_only["assumptions"]) {
    said = said || a.get<std::string>().find("infer.images_per_prompt 0") != std::string::npos;
  }
  EXPECT_TRUE(said) << text_only["assumptions"].dump();
}

TEST(Mllama, VllmWithImagesIsRefusedNamingTheEngine) {
  json req = infer_req(mllama11b(), 2048, 1, 1);
  req["infer"]["engine"] = "vllm";
  req["gpu"] = {{"name", "H100 80GB"}};
  const json r = estimate(req);
  ASSERT_TRUE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["error"]["path"], "infer.engine");
}

TEST(Mllama, ImagesOnATextOnlyModelNameTheField) {
  const json r = estimate(infer_req(testing::model_config("meta-llama/Llama-3.1-8B"), 2048, 1, 1));
  ASSERT_TRUE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["error"]["path"], "infer.images_per_prompt");
}

json train_req(const json& cfg, int64_t images, bool ckpt, const json& targets) {
  return {{"model", {{"config", cfg}}},
          {"train",
           {{"method", "lora"},
            {"seq_len", 1024},
            {"micro_batch", 1},
            {"images_per_sample", images},
            {"grad_checkpointing", ckpt},
            {"lora", {{"targets", targets}}}}}};
}

int64_t activations(const json& r) { return component_bytes(r, "activations"); }

// LoRA on the text MLPs only (the tower has no gate/up/down_proj, so it stays
// frozen and saves nothing): the frozen k_proj / v_proj save no input and
// k_norm nothing, SDPA keeps k and v of each of the 8 cross-attention layers:
// 2 B x 8 x 2 x 8 x 128 x 6404 tokens = 209,846,272 B per image. Full
// checkpointing keeps only the layers' inputs, the projected image tokens
// (4096 each): 2 x 4096 x 6404 per image.
TEST(Mllama, TrainingSavesTheImageKeysAndValues) {
  const json mlp = json::array({"gate_proj", "up_proj", "down_proj"});
  const int64_t none = activations(estimate_ok(train_req(mllama11b(), 0, false, mlp)));
  const int64_t one = activations(estimate_ok(train_req(mllama11b(), 1, false, mlp)));
  EXPECT_EQ(one - none, int64_t{2} * 8 * 2 * 1024 * 6404);
  const int64_t none_ck = activations(estimate_ok(train_req(mllama11b(), 0, true, mlp)));
  const int64_t two_ck = activations(estimate_ok(train_req(mllama11b(), 2, true, mlp)));
  EXPECT_EQ(two_ck - none_ck, int64_t{2} * 2 * 4096 * 6404);
}

// Training says so as well: an image count for a text-only model names the
// field, and a VLM trained on no images says the tower sees none.
TEST(Mllama, TrainingImagesOnATextOnlyModelNameTheField) {
  const json r =
      estimate(train_req(testing::model_config("meta-llama/Llama-3.1-8B"), 1, false, json::array({"q_proj"})));
  ASSERT_TRUE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["error"]["path"], "train.images_per_sample");
  const json text_only = estimate_ok(train_req(mllama11b(), 0, false, json::array({"q_proj"})));
  bool said = false;
  for (const auto& a : text_only["assumptions"]) {
    said = said || a.get<std::string>().find("train.images_per_sample 0") != std::string::npos;
  }
  EXPECT_TRUE(said) << text_only["assumptions"].dump();
}

// ---- Qwen2.5-VL -------------------------------------------------------------

json qwen25vl7b() { return testing::model_config("Qwen/Qwen2.5-VL-7B-Instruct"); }

// 8,292,166,656 = vision 676,550,144 + Qwen2.5-7B text 7,615,616,512.
TEST(Qwen25Vl, SevenBMatchesCheckpoint) {
  const ModelSpec s = build(qwen25vl7b());
  EXPECT_EQ(s.params_total(), 8292166656);
  // Per block: norm1/norm2 RMSNorm 1280 each, qkv 1280 x 3840 + 3840, proj
  // 1280^2 + 1280, gate/up 1280 x 3420 + 3420, down 3420 x 1280 + 1280.
  const int64_t block =
      2 * 1280 + (1280 * 3840 + 3840) + (1280 * 1280 + 1280) + 2 * (1280 * 3420 + 3420) + (3420 * 1280 + 1280);
  EXPECT_EQ(part(s, comp::kVision), 3 * 2 * 14 * 14 * 1280 + 32 * block);
  EXPECT_EQ(part(s, comp::kProjector), 1280 + (5120 * 5120 + 5120) + (5120 * 3584 + 3584));
  EXPECT_EQ(part(s, comp::kVision) + part(s, comp::kProjector), 676550144);
  EXPECT_FALSE(s.tie_word_embeddings);
  // The re-saved text_config says float32; the checkpoint (top level) is bf16.
  EXPECT_EQ(s.torch_dtype, "bfloat16");
  EXPECT_TRUE(s.vision.dynamic_resolution);
  ASSERT_NE(s.stack("vision"), nullptr);
  EXPECT_EQ(s.stack("vision")->mlp, MlpKind::kGated);
}

// Qwen2.5-VL-3B-Instruct (same table): 3,754,622,976 with a tied 2048-wide
// Qwen2.5-3B text model (36 layers, 16 heads, 2 KV heads, vocab 151,936) and
// the same tower writing 2048.
TEST(Qwen25Vl, ThreeBFromTheSameTowerMatchesCheckpoint) {
  json cfg = qwen25vl7b();
  json& t = cfg["text_config"];
  t["hidden_size"] = 2048;
  t["intermediate_size"] = 11008;
  t["num_hidden_layers"] = 36;
  t["num_attention_heads"] = 16;
  t["num_key_value_heads"] = 2;
  t["vocab_size"] = 151936;
  cfg["tie_word_embeddings"] = true;
  cfg["vision_config"]["out_hidden_size"] = 2048;
  EXPECT_EQ(build(cfg).params_total(), 3754622976);
}

TEST(Qwen25Vl, MergerMustWriteTheTextHiddenSize) {
  json cfg = qwen25vl7b();
  cfg["vision_config"]["out_hidden_size"] = 2048;
  EXPECT_EQ(error_of(cfg).path, "model.config.vision_config.out_hidden_size");
}

// ---- PaliGemma ----------------------------------------------------------------

json paligemma224() { return testing::model_config("google/paligemma-3b-pt-224"); }

// 2,923,466,480 = SigLIP 412,442,352 (no pooling head) + projector 2,361,344
// + Gemma text 2,508,662,784 (tied).
TEST(PaliGemma, ThreeBPt224MatchesCheckpoint) {
  const ModelSpec s = build(paligemma224());
  EXPECT_EQ(s.params_total(), 2923466480);
  EXPECT_EQ(part(s, comp::kProjector), 1152 * 2048 + 2048);
  // Patch conv with bias, 256 positions, 27 layers, post_layernorm.
  const int64_t layer = 4 * (1152 * 1152 + 1152) + 4 * 1152 + (1152 * 4304 + 4304) + (4304 * 1152 + 1152);
  EXPECT_EQ(part(s, comp::kVision), 3 * 14 * 14 * 1152 + 1152 + 256 * 1152 + 27 * layer + 2 * 1152);
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(s.vision.tokens_per_image, 256);
}

// openpi's PaliGemma (the pi0 backbone) keeps the 257,152-token vocabulary:
// 2,923,335,408, the other cited count, 64 x 2048 fewer.
TEST(PaliGemma, OpenpiVocabularyGivesItsPublishedCount) {
  json cfg = paligemma224();
  cfg["text_config"]["vocab_size"] = 257152;
  EXPECT_EQ(build(cfg).params_total(), 2923335408);
}

TEST(PaliGemma, SubConfigsAreRequired) {
  json cfg = paligemma224();
  cfg.erase("text_config");
  EXPECT_EQ(error_of(cfg).path, "model.config.text_config");
}

TEST(PaliGemma, ProjectionMustWriteTheTextHiddenSize) {
  json cfg = paligemma224();
  cfg["projection_dim"] = 1024;
  EXPECT_EQ(error_of(cfg).path, "model.config.projection_dim");
}

// An image adds 256 prefix tokens to the sequence: at context 1024 the cache
// holds 1280 tokens of 18 layers x 2 x 1 KV head x 256 x 2 B = 18,432 B.
TEST(PaliGemma, ImageTokensJoinThePromptAndTheCache) {
  const json none = estimate_ok(infer_req(paligemma224(), 1024, 1, 0));
  const json one = estimate_ok(infer_req(paligemma224(), 1024, 1, 1));
  EXPECT_EQ(fact(one, "kv_bytes_per_token").get<int64_t>(), 18432);
  EXPECT_EQ(component_bytes(one, "kv_cache") - component_bytes(none, "kv_cache"), 18432 * 256);
  EXPECT_EQ(one["tokens_per_micro_batch"].get<int64_t>(), 1280);
}

// ---- Llama 4 -----------------------------------------------------------------

json scout() { return testing::model_config("meta-llama/Llama-4-Scout-17B-16E"); }

TEST(Llama4, ScoutMatchesCheckpointAndActivatesSeventeenBillionTextParameters) {
  const ModelSpec s = build(scout());
  EXPECT_EQ(s.params_total(), 108641793536);
  const int64_t vision = part(s, comp::kVision) + part(s, comp::kProjector);
  EXPECT_EQ(vision, 871932416);
  EXPECT_EQ(s.params_total() - vision, 107769861120);
  // Routed experts: 48 layers x 16 x (5120 x 16384 + 8192 x 5120).
  EXPECT_EQ(part(s, comp::kExperts), int64_t{48} * 16 * (5120 * 16384 + 8192 * 5120));
  EXPECT_EQ(s.params_active() - vision, 17172894720);
  EXPECT_EQ(s.text.moe_layers, 48);
  EXPECT_EQ(s.text.experts, 16);
  EXPECT_EQ(s.text.shared_expert_intermediate, 8192);
  // 36 RoPE layers attend within 8192-token chunks; 12 NoPE layers globally.
  EXPECT_EQ(s.text.sliding_layers, 36);
  EXPECT_EQ(s.text.sliding_window, 8192);
  EXPECT_EQ(s.vision.tokens_per_image, 144);
}

// Maverick: 128 experts on every second layer (interleave_moe_layer_step 2),
// the other 24 layers a dense 16384-wide MLP: 400,711,848,960 text parameters
// (+ the same 871,932,416 of vision = 401,583,781,376), 17,184,691,200 active.
TEST(Llama4, MaverickInterleavesDenseAndMoeLayers) {
  json cfg = scout();
  json& t = cfg["text_config"];
  t["num_local_experts"] = 128;
  t["interleave_moe_layer_step"] = 2;
  t.erase("moe_layers");
  const ModelSpec s = build(cfg);
  EXPECT_EQ(s.params_total(), 401583781376);
  EXPECT_EQ(s.params_active() - part(s, comp::kVision) - part(s, comp::kProjector), 17184691200);
  EXPECT_EQ(s.text.moe_layers, 24);
  EXPECT_EQ(s.text.intermediate, 16384);
}

TEST(Llama4, MoeLayerOutsideTheModelNamesTheEntry) {
  json cfg = scout();
  cfg["text_config"]["moe_layers"] = json::array({0, 48});
  EXPECT_EQ(error_of(cfg).path, "model.config.text_config.moe_layers[1]");
}

// Per layer 2 x 8 KV heads x 128 x 2 B = 4096 B a token. Up to the chunk
// size every layer keeps every token; beyond it the 36 chunked layers keep
// 8192 and only the 12 NoPE layers grow: at 32768 tokens 12 x 4096 x 32768
// + 36 x 4096 x 8192 (a third of the 48 x 4096 x 32768 a full cache holds).
TEST(Llama4, ChunkedLayersCapTheirCacheAtTheChunk) {
  const json short_ctx = estimate_ok(infer_req(scout(), 8192, 1, 0));
  EXPECT_EQ(component_bytes(short_ctx, "kv_cache"), int64_t{48} * 4096 * 8192);
  const json long_ctx = estimate_ok(infer_req(scout(), 32768, 1, 0));
  EXPECT_EQ(component_bytes(long_ctx, "kv_cache"), int64_t{12} * 4096 * 32768 + int64_t{36} * 4096 * 8192);
}

// Two images = two 336 x 336 tiles = 2 x 144 tokens more in the cache.
TEST(Llama4, ImageTilesJoinTheSequence) {
  const json none = estimate_ok(infer_req(scout(), 4096, 1, 0));
  const json two = estimate_ok(infer_req(scout(), 4096, 1, 2));
  EXPECT_EQ(component_bytes(two, "kv_cache") - component_bytes(none, "kv_cache"), int64_t{48} * 4096 * 288);
}

// ---- Whisper -------------------------------------------------------------------

json whisper_v3() { return testing::model_config("openai/whisper-large-v3"); }

// 1,543,490,560 = encoder 636,968,960 + decoder 906,521,600 (proj_out tied).
TEST(Whisper, LargeV3MatchesCheckpoint) {
  const ModelSpec s = build(whisper_v3());
  EXPECT_EQ(s.params_total(), 1543490560);
  int64_t encoder = 0;
  for (const auto& g : s.groups) encoder += g.stack == "encoder" ? g.total() : 0;
  EXPECT_EQ(encoder, 636968960);
  // One encoder layer: q/v/out with bias, k without, two LayerNorms, fc1/fc2.
  EXPECT_EQ((encoder - (128 * 1280 * 3 + 1280) - (1280 * 1280 * 3 + 1280) - 1500 * 1280 - 2 * 1280) / 32, 19676160);
  EXPECT_EQ(s.encoder_positions, 1500);
  EXPECT_TRUE(s.text.cross_attention);
  EXPECT_EQ(s.max_position_embeddings, 448);
}

// Cross-attention keys/values: 32 decoder layers x 2 x 1280 x 2 B = 163,840 B
// per encoder position, 1500 positions per sequence, the same at any prompt.
TEST(Whisper, CrossAttentionCachesFifteenHundredAudioPositions) {
  auto kv = [](int64_t ctx, int64_t batch) {
    json req = infer_req(whisper_v3(), ctx, batch, 0);
    req["infer"]["prompt_len"] = 4;
    return component_bytes(estimate_ok(req), "kv_cache");
  };
  const int64_t self_per_token = int64_t{32} * 2 * 1280 * 2;
  const int64_t cross = int64_t{32} * 2 * 1280 * 2 * 1500;
  EXPECT_EQ(kv(448, 1), self_per_token * 448 + cross);
  EXPECT_EQ(kv(448, 4), 4 * (self_per_token * 448 + cross));
  EXPECT_EQ(kv(448, 1) - kv(100, 1), self_per_token * (448 - 100));
}

TEST(Whisper, TrainingSavesTheEncoderOverFifteenHundredPositions) {
  json req = {{"model", {{"config", whisper_v3()}}},
              {"train", {{"method", "full"}, {"seq_len", 448}, {"micro_batch", 1}}}};
  const json r = estimate_ok(req);
  req["train"]["micro_batch"] = 2;
  const json r2 = estimate_ok(req);
  // A second sample adds its encoder pass (1500 positions x 32 layers) and
  // its decoder pass (448 x 32). The decoder's saved tensors stay below 21
  // hidden-sized 16-bit values a token per layer (448 x 32 x 1280 x 2 x 21 =
  // 0.77 GB), so anything above 1500 x 32 x 1280 x 2 x 10 = 1.23 GB holds the
  // encoder's activations.
  const int64_t per_sample = component_bytes(r2, "activations") - component_bytes(r, "activations");
  EXPECT_GT(per_sample, int64_t{1500} * 32 * 1280 * 2 * 10);
}

// ---- Idefics3 (SmolVLM) -----------------------------------------------------------

json smolvlm256() { return testing::model_config("HuggingFaceTB/SmolVLM-256M-Instruct"); }

// 256,484,928 = SigLIP-B/16-512 86,433,024 + connector 7,077,888 + text
// 162,974,016 (untied head).
TEST(Idefics3, SmolVlm256mMatchesCheckpoint) {
  const ModelSpec s = build(smolvlm256());
  EXPECT_EQ(s.params_total(), 256484928);
  EXPECT_EQ(part(s, comp::kProjector), 768 * 16 * 576);
  const int64_t layer = 4 * (768 * 768 + 768) + 4 * 768 + (768 * 3072 + 3072) + (3072 * 768 + 768);
  EXPECT_EQ(part(s, comp::kVision), 3 * 16 * 16 * 768 + 768 + 1024 * 768 + 12 * layer + 2 * 768);
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_EQ(part(s, comp::kLmHead), 49280 * 576);
  // (512 / 16)^2 / 4^2 = 64 text tokens a tile.
  EXPECT_EQ(s.vision.tokens_per_image, 64);
}

// The composite's tie_word_embeddings decides: tied, the head is the embedding.
TEST(Idefics3, TiedCompositeDropsTheHead) {
  json cfg = smolvlm256();
  cfg["tie_word_embeddings"] = true;
  EXPECT_EQ(build(cfg).params_total(), 256484928 - 49280 * 576);
}

TEST(Idefics3, ScaleFactorMustDivideThePatchGrid) {
  json cfg = smolvlm256();
  cfg["scale_factor"] = 5;
  EXPECT_EQ(error_of(cfg).path, "model.config.scale_factor");
}

}  // namespace
}  // namespace vram

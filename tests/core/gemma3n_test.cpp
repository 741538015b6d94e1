// Gemma 3n (gemma3n, issue 14): the count worked from transformers'
// modeling_gemma3n.py and timm's mobilenetv5_300m_enc, which equals the Hub's
// safetensors totals as transcribed in public documents (models.json quotes
// them; Keras Hub's totals are 157,184 higher, the conv biases of its own
// vision tower port), and what the
// architecture changes in memory: the last num_kv_shared_layers layers cache
// no keys, the per-layer embeddings stay on the GPU as transformers loads
// them, AltUp carries four copies of the hidden state through every layer, and
// the towers' activations are refused rather than left out.
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
int64_t by_component(const ModelSpec& s, const char* name) {
  const auto by = s.params_by_component();
  const auto it = by.find(name);
  return it == by.end() ? 0 : it->second;
}
int64_t text_params(const ModelSpec& s) {
  int64_t n = 0;
  for (const auto& g : s.groups) n += g.stack == "text" ? g.total() : 0;
  return n;
}
using testing::saved_item;

json e4b() { return testing::model_config("google/gemma-3n-E4B-it"); }
json e2b() { return testing::model_config("google/gemma-3n-E2B-it"); }

constexpr int64_t kE4b = 7849978192;
constexpr int64_t kE2b = 5439438272;
constexpr int64_t kAudioTower = 681348640;
constexpr int64_t kVisionTower = 294126912;
// embed_vision 128 x 2048 + 2 x 2048 + 2048 x 2048, embed_audio 128 x 1536 + 2 x 1536 + 1536 x 2048.
constexpr int64_t kEmbedders = 4460544 + 3345408;

TEST(Gemma3n, E4bCountFollowsTheModelingSource) {
  const ModelSpec s = build(e4b());
  EXPECT_EQ(s.params_total(), kE4b);
  EXPECT_EQ(by_component(s, comp::kAudio), kAudioTower);
  EXPECT_EQ(by_component(s, comp::kVision), kVisionTower);
  EXPECT_EQ(by_component(s, comp::kProjector), kEmbedders);
  EXPECT_EQ(text_params(s), 6866696688);
  // One decoder layer: attention 10,486,272, MLP 3 x 2048 x 16384, four
  // norms, AltUp 12,368, LAuReL 264,192, the per-layer input path 1,050,624.
  const int64_t layer = 10486272 + 3 * 2048 * 16384 + 4 * 2048 + 12368 + 264192 + 1050624;
  EXPECT_EQ(layer, 112484944);
  // Per-layer embeddings: 262144 x 35 x 256.
  EXPECT_EQ(by_component(s, comp::kEmbeddings), 262400LL * 2048 + 262144LL * 35 * 256 + 2048LL * 35 * 256);
  EXPECT_TRUE(s.tie_word_embeddings);
  // Keras Hub's published gemma3n_e4b total: the same text model, audio
  // tower and embedders; its MobileNetV5 port counts 294,284,096.
  EXPECT_EQ(s.params_total() - kVisionTower + 294284096, 7850135376);
}

TEST(Gemma3n, E2bCountFollowsTheModelingSource) {
  const ModelSpec s = build(e2b());
  EXPECT_EQ(s.params_total(), kE2b);
  EXPECT_EQ(text_params(s), 4456156768);
  EXPECT_EQ(s.params_total() - kVisionTower + 294284096, 5439595456);  // Keras Hub gemma3n_e2b
  EXPECT_EQ(s.text.kv_shared_layers, 10);
  EXPECT_EQ(s.text.kv_shared_sliding, 8);
}

// The verbatim Hub config.json of the E2B base checkpoint (unsloth's mirror,
// models.json): the same count as the rebuilt E2B-it fixture, and its extra
// keys (vision_config num_classes / label_names, which TimmWrapperModel
// ignores: it builds the tower with num_classes=0) add nothing.
TEST(Gemma3n, VerbatimE2bConfigGivesTheHubTotal) {
  const ModelSpec s = build(testing::model_config("google/gemma-3n-E2B"));
  EXPECT_EQ(s.params_total(), kE2b);
  EXPECT_EQ(by_component(s, comp::kVision), kVisionTower);
  EXPECT_EQ(by_component(s, comp::kAudio), kAudioTower);
  EXPECT_EQ(s.text.kv_shared_layers, 10);
  const json out = run({{"task", "infer"}, {"model", {{"config", testing::model_config("google/gemma-3n-E2B")}}}});
  EXPECT_EQ(out["model"]["params_total"], kE2b);
}

TEST(Gemma3n, ReadsTheLayerPatternKvSharingAndAltUp) {
  const ModelSpec s = build(e4b());
  EXPECT_EQ(s.text.layers, 35);
  EXPECT_EQ(s.text.sliding_window, 512);
  EXPECT_EQ(s.text.sliding_layers, 28);  // every fifth layer is global
  // Layers 20-34 share: 12 sliding, 3 global (24, 29, 34).
  EXPECT_EQ(s.text.kv_shared_layers, 15);
  EXPECT_EQ(s.text.kv_shared_sliding, 12);
  EXPECT_EQ(s.text.altup_inputs, 4);
  EXPECT_EQ(s.text.per_layer_input, 256);
  EXPECT_EQ(s.text.sparse_mlp_layers, 10);
  // A text-only Gemma3nForCausalLM of the same text config: the text count.
  json text = e4b()["text_config"];
  EXPECT_EQ(build(text).params_total(), 6866696688);
  // Per-layer MLP widths (MatFormer slices) are counted layer by layer.
  json sliced = e4b();
  for (int i = 0; i < 10; ++i) sliced["text_config"]["intermediate_size"][i] = 8192;
  EXPECT_EQ(build(sliced).params_total(), kE4b - 10LL * 3 * 2048 * 8192);
  EXPECT_EQ(build(sliced).text.intermediate, 16384);
  // A timm architecture other than the released tower is refused, not guessed.
  json other = e4b();
  other["vision_config"]["architecture"] = "mobilenetv5_base";
  auto r = model_from_config(other, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.vision_config.architecture");
  json share_all = e4b();
  share_all["text_config"]["layer_types"] = json::array();
  for (int i = 0; i < 35; ++i)
    share_all["text_config"]["layer_types"].push_back(i < 30 ? "sliding_attention" : "full_attention");
  r = model_from_config(share_all, "model.config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.config.text_config.num_kv_shared_layers");
}

// Serving: the whole model is loaded (per-layer embeddings on the GPU, as
// transformers loads them), and only the 20 layers below the KV-sharing
// point cache keys and values: 2 x 2 KV heads x 256 x 2 B = 2 KiB each, the
// 16 sliding ones at most 512 tokens.
TEST(Gemma3n, InferenceCachesKeysOnlyBelowTheSharedLayers) {
  json req = {{"model", {{"config", e4b()}}},
              {"task", "infer"},
              {"infer", {{"context_len", 32768}, {"weights_dtype", "bf16"}}},
              {"gpu", {{"memory_gib", 80}}}};
  const json r = run(req);
  EXPECT_EQ(r["infer"]["kv_bytes_per_token"].get<int64_t>(), 20 * 2048);
  EXPECT_EQ(r["infer"]["kv_bytes_per_token_per_layer"].get<int64_t>(), 2048);
  int64_t weights = -1;
  for (const auto& c : r["components"])
    if (c["key"] == "weights") weights = c["bytes"].get<int64_t>();
  EXPECT_EQ(weights, 2 * kE4b);
  // Without sharing all 35 layers would cache: the KV cache shrinks.
  json unshared = req;
  unshared["model"]["config"]["text_config"]["num_kv_shared_layers"] = 0;
  const json u = run(unshared);
  EXPECT_EQ(u["infer"]["kv_bytes_per_token"].get<int64_t>(), 35 * 2048);
  EXPECT_LT(r["infer"]["kv_cache_bytes"].get<int64_t>(), u["infer"]["kv_cache_bytes"].get<int64_t>());
  // At 32768 tokens: 4 global layers x 32768 + 16 sliding layers x 512.
  EXPECT_EQ(r["infer"]["kv_cache_bytes"].get<int64_t>(), 2048LL * (4 * 32768 + 16 * 512));
  // Images: the MobileNetV5 tower's activations are not modelled; refused.
  json images = req;
  images["infer"]["images_per_prompt"] = 1;
  const json e = estimate(images);
  ASSERT_TRUE(e.contains("error")) << e.dump();
  EXPECT_EQ(e["error"]["code"], "unsupported");
  EXPECT_EQ(e["error"]["path"], "infer.images_per_prompt");
}

// Training: each layer's input is AltUp's four stacked hidden states, so a
// checkpointed layer keeps 4 x 2048 values a token; the layer also keeps
// AltUp's stacked input and repeated innovation, and the model keeps the
// per-layer embedding tensors (35 x 256 a token) through backward.
TEST(Gemma3n, TrainingKeepsAltUpCopiesAndThePerLayerEmbeddings) {
  json req = {{"model", {{"config", e4b()}}},
              {"task", "train"},
              {"train",
               {{"precision", "bf16"},
                {"seq_len", 1024},
                {"micro_batch", 1},
                {"method", "lora"},
                {"grad_checkpointing", false},
                {"lora", {{"rank", 16}, {"targets", {"q_proj", "v_proj"}}}}}},
              {"gpu", {{"memory_gib", 80}}}};
  EXPECT_DOUBLE_EQ(saved_item(req, "AltUp predict: router input"), 2.0 * 2048 + 4.0 * 4 + 2.0 * 16 + 2.0 * 4 * 2048);
  EXPECT_DOUBLE_EQ(saved_item(req, "AltUp correct: router input"), 2.0 * 2048 + 4.0 * 4 + 2.0 * 4 * 2048 + 2.0 * 4);
  EXPECT_GT(saved_item(req, "activation sparsity"), 0);
  const json r = run(req);
  // Without AltUp, LAuReL and the per-layer inputs the same layers keep less.
  json plain = req;
  plain["model"]["config"]["text_config"]["altup_num_inputs"] = 1;
  const json p = run(plain);
  int64_t act = 0, act_plain = 0;
  for (const auto& c : r["components"])
    if (c["key"] == "activations") act = c["bytes"].get<int64_t>();
  for (const auto& c : p["components"])
    if (c["key"] == "activations") act_plain = c["bytes"].get<int64_t>();
  EXPECT_GT(act, act_plain);

  json ckpt = req;
  ckpt["train"]["grad_checkpointing"] = true;
  const json c = run(ckpt);
  bool four = false;
  for (const auto& x : c["components"]) {
    const std::string f = x.value("formula", "");
    four = four || f.find("x 4 AltUp copies") != std::string::npos;
  }
  EXPECT_TRUE(four) << c["components"].dump();
  // Images in training: refused as in serving.
  json images = req;
  images["train"]["images_per_sample"] = 1;
  const json e = estimate(images);
  ASSERT_TRUE(e.contains("error")) << e.dump();
  EXPECT_EQ(e["error"]["path"], "train.images_per_sample");
}

}  // namespace
}  // namespace vram

// model.safetensors: any model from its checkpoint's tensor list. The
// inventories are written here tensor by tensor in each checkpoint format's
// layout (bf16, GPTQ, AWQ, FP8 with block scales, MXFP4, bitsandbytes 4-bit),
// for Llama-3.1-8B's shapes, whose count (8,030,261,248) is known from the
// checkpoint and from families_dense_test.
#include "vram/checkpoint.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "estimate_helpers.h"
#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

using testing::component_bytes;
using testing::estimate_ok;
using testing::model_config;

constexpr int64_t kLlama31_8b = 8'030'261'248;
constexpr int64_t kH = 4096, kI = 14336, kV = 128256, kKv = 1024, kL = 32;

void add(json& tensors, const std::string& name, const std::string& dtype, std::vector<int64_t> shape) {
  tensors.push_back({{"name", name}, {"dtype", dtype}, {"shape", shape}});
}

// How one Linear is stored: bf16 weight, or a quantised layout.
using LinearWriter = std::function<void(json&, const std::string& module, int64_t in, int64_t out)>;

void bf16_linear(json& t, const std::string& m, int64_t in, int64_t out) { add(t, m + ".weight", "BF16", {out, in}); }

// Llama-3.1-8B in modeling_llama.py's names; `linear` writes the decoder's linears.
json llama_inventory(const LinearWriter& linear, int64_t layers = kL) {
  json t = json::array();
  add(t, "model.embed_tokens.weight", "BF16", {kV, kH});
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    linear(t, p + "self_attn.q_proj", kH, kH);
    linear(t, p + "self_attn.k_proj", kH, kKv);
    linear(t, p + "self_attn.v_proj", kH, kKv);
    linear(t, p + "self_attn.o_proj", kH, kH);
    linear(t, p + "mlp.gate_proj", kH, kI);
    linear(t, p + "mlp.up_proj", kH, kI);
    linear(t, p + "mlp.down_proj", kI, kH);
    add(t, p + "input_layernorm.weight", "BF16", {kH});
    add(t, p + "post_attention_layernorm.weight", "BF16", {kH});
  }
  add(t, "model.norm.weight", "BF16", {kH});
  add(t, "lm_head.weight", "BF16", {kV, kH});
  return t;
}

int64_t linear_values() { return kL * (2 * kH * kH + 2 * kH * kKv + 3 * kH * kI); }

json info(const json& model) { return model_info(json{{"model", model}}); }

TEST(Checkpoint, Bf16LlamaWithoutConfigIsCountedExactlyAndItsShapeInferred) {
  const json m = info({{"safetensors", {{"tensors", llama_inventory(bf16_linear)}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  EXPECT_EQ(m["params_total"], kLlama31_8b);
  EXPECT_EQ(m["family"], "safetensors");
  EXPECT_TRUE(m["exact"].get<bool>());
  const json& f = m["facts"];
  EXPECT_EQ(f["layers"], kL);
  EXPECT_EQ(f["hidden"], kH);
  EXPECT_EQ(f["intermediate"], kI);
  EXPECT_EQ(f["vocab"], kV);
  EXPECT_EQ(f["heads"], 32);  // head_dim 128 assumed: 4096 / 128
  EXPECT_EQ(f["kv_heads"], 8);
  EXPECT_FALSE(f["tie_word_embeddings"].get<bool>());
  EXPECT_EQ(m["checkpoint"]["stored_bytes"], 2 * kLlama31_8b);
  EXPECT_EQ(m["checkpoint"]["tensors"], 1 + kL * 9 + 2);
  EXPECT_TRUE(m["checkpoint"]["unplaced"].empty());
}

TEST(Checkpoint, KnownArchitectureCrossCheckMatchesTheAdaptersCount) {
  const json m = info({{"config", model_config("meta-llama/Llama-3.1-8B")},
                       {"safetensors", {{"tensors", llama_inventory(bf16_linear)}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  EXPECT_EQ(m["family"], "llama");  // the adapter builds the model, the checkpoint checks it
  const json& x = m["checkpoint"]["cross_check"];
  EXPECT_EQ(x["model_params"], kLlama31_8b);
  EXPECT_EQ(x["checkpoint_params"], kLlama31_8b);
  EXPECT_EQ(x["difference"], 0);
  EXPECT_TRUE(x["matches"].get<bool>());
}

TEST(Checkpoint, CrossCheckExplainsLayersPastNumHiddenLayers) {
  // One layer more than the config says, as DeepSeek-V3's layer 61 (its
  // multi-token-prediction module) sits past num_hidden_layers = 61.
  json t = llama_inventory(bf16_linear, kL + 1);
  const json m = info({{"config", model_config("meta-llama/Llama-3.1-8B")}, {"safetensors", {{"tensors", t}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  const int64_t layer = 2 * kH * kH + 2 * kH * kKv + 3 * kH * kI + 2 * kH;
  const json& x = m["checkpoint"]["cross_check"];
  EXPECT_EQ(x["difference"], layer);
  EXPECT_FALSE(x["matches"].get<bool>());
  ASSERT_EQ(x["explained"].size(), 1u);
  EXPECT_EQ(x["explained"][0]["params"], layer);
}

TEST(Checkpoint, CrossCheckExplainsAnMtpModuleUnderItsOwnPrefix) {
  // Qwen3-Next stores its multi-token-prediction module as mtp.fc (2 hidden
  // -> hidden), three norms and mtp.layers.0.* (a whole decoder layer), which
  // must not be taken for layer 0 of the model.
  json t = llama_inventory(bf16_linear);
  add(t, "mtp.fc.weight", "BF16", {kH, 2 * kH});
  for (const char* n : {"mtp.pre_fc_norm_hidden.weight", "mtp.pre_fc_norm_embedding.weight", "mtp.norm.weight"}) {
    add(t, n, "BF16", {kH});
  }
  for (const auto& x : llama_inventory(bf16_linear, 1)) {
    const std::string name = x["name"];
    if (name.rfind("model.layers.0.", 0) == 0) add(t, "mtp.layers.0." + name.substr(15), "BF16", x["shape"]);
  }
  const int64_t layer = 2 * kH * kH + 2 * kH * kKv + 3 * kH * kI + 2 * kH;
  const int64_t mtp = layer + 2 * kH * kH + 3 * kH;
  const json alone = info({{"safetensors", {{"tensors", t}}}});
  ASSERT_FALSE(alone.contains("error")) << alone.dump();
  EXPECT_EQ(alone["facts"]["layers"], kL);
  EXPECT_EQ(alone["facts"]["intermediate"], kI);
  EXPECT_TRUE(alone["checkpoint"]["unplaced"].empty());
  EXPECT_EQ(alone["checkpoint"]["params"], kLlama31_8b + mtp);
  const json m = info({{"config", model_config("meta-llama/Llama-3.1-8B")}, {"safetensors", {{"tensors", t}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  const json& x = m["checkpoint"]["cross_check"];
  EXPECT_EQ(x["difference"], mtp);
  ASSERT_EQ(x["explained"].size(), 1u);
  EXPECT_EQ(x["explained"][0]["params"], mtp);
}

TEST(Checkpoint, GptqPackedWeightsCountTheirDequantisedParametersAndStoredBytes) {
  // auto_gptq QuantLinear, 4 bits, group 128: qweight [in/8, out] int32,
  // qzeros [in/128, out/8] int32, scales [in/128, out] fp16, g_idx [in] int32.
  auto gptq = [](json& t, const std::string& m, int64_t in, int64_t out) {
    add(t, m + ".qweight", "I32", {in / 8, out});
    add(t, m + ".qzeros", "I32", {in / 128, out / 8});
    add(t, m + ".scales", "F16", {in / 128, out});
    add(t, m + ".g_idx", "I32", {in});
  };
  const json m = info({{"safetensors", {{"tensors", llama_inventory(gptq)}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  EXPECT_EQ(m["params_total"], kLlama31_8b);
  EXPECT_EQ(m["checkpoint"]["quantization"], "gptq");
  int64_t per_layer_meta = 0;
  for (auto [in, out] : std::vector<std::pair<int64_t, int64_t>>{
           {kH, kH}, {kH, kKv}, {kH, kKv}, {kH, kH}, {kH, kI}, {kH, kI}, {kI, kH}}) {
    per_layer_meta += in / 128 * out / 8 * 4 + in / 128 * out * 2 + in * 4;
  }
  const int64_t expected = linear_values() / 2 + kL * per_layer_meta +
                           2 * (2 * kV * kH + kL * 2 * kH + kH);  // 4-bit values, side tensors, bf16 rest
  EXPECT_EQ(m["checkpoint"]["stored_bytes"], expected);
  EXPECT_EQ(m["facts"]["intermediate"], kI);
}

TEST(Checkpoint, AwqPacksAlongTheOutputDimension) {
  // AutoAWQ WQLinear_GEMM: qweight [in, out/8], qzeros [in/128, out/8], scales [in/128, out].
  auto awq = [](json& t, const std::string& m, int64_t in, int64_t out) {
    add(t, m + ".qweight", "I32", {in, out / 8});
    add(t, m + ".qzeros", "I32", {in / 128, out / 8});
    add(t, m + ".scales", "F16", {in / 128, out});
  };
  const json m = info({{"safetensors", {{"tensors", llama_inventory(awq)}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  EXPECT_EQ(m["params_total"], kLlama31_8b);
  EXPECT_EQ(m["checkpoint"]["quantization"], "awq");
}

TEST(Checkpoint, Fp8WithBlockScalesKeepsTheWeightShape) {
  // transformers FP8Linear: weight float8_e4m3 [out, in], weight_scale_inv
  // fp32 per 128 x 128 block.
  auto fp8 = [](json& t, const std::string& m, int64_t in, int64_t out) {
    add(t, m + ".weight", "F8_E4M3", {out, in});
    add(t, m + ".weight_scale_inv", "F32", {(out + 127) / 128, (in + 127) / 128});
  };
  const json m = info({{"safetensors", {{"tensors", llama_inventory(fp8)}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  EXPECT_EQ(m["params_total"], kLlama31_8b);
  EXPECT_EQ(m["checkpoint"]["quantization"], "fp8");
  EXPECT_EQ(m["checkpoint"]["elements_by_dtype"]["F8_E4M3"], linear_values());
}

TEST(Checkpoint, BitsandbytesFourBitUnpacksTwoValuesPerByte) {
  // transformers' bnb 4-bit save: weight uint8 [n/2, 1], weight.absmax,
  // weight.quant_map, weight.nested_absmax, weight.nested_quant_map,
  // weight.quant_state.bitsandbytes__nf4.
  auto bnb = [](json& t, const std::string& m, int64_t in, int64_t out) {
    const int64_t n = in * out;
    add(t, m + ".weight", "U8", {n / 2, 1});
    add(t, m + ".weight.absmax", "U8", {n / 64});
    add(t, m + ".weight.quant_map", "F32", {16});
    add(t, m + ".weight.nested_absmax", "F32", {n / 64 / 256});
    add(t, m + ".weight.nested_quant_map", "F32", {256});
    add(t, m + ".weight.quant_state.bitsandbytes__nf4", "U8", {120});
  };
  const json m = info({{"safetensors", {{"tensors", llama_inventory(bnb)}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  EXPECT_EQ(m["params_total"], kLlama31_8b);
  EXPECT_EQ(m["checkpoint"]["quantization"], "bnb_4bit");
  // The packed bytes do not say in and out: one side is the hidden size.
  for (const auto& row : m["modules"]) {
    if (row["module"] == "down_proj") EXPECT_EQ(row["shape"], json({kH, kI})) << row.dump();
    if (row["module"] == "k_proj") EXPECT_EQ(row["shape"], json({kKv, kH})) << row.dump();
  }
}

TEST(Checkpoint, Mxfp4ExpertsAndRouterAndSinksArePlaced) {
  // gpt-oss-20b's layout (its model.safetensors.index.json): fused experts
  // in MXFP4 blocks and scales, biases in bf16, a biased router, attention
  // sinks. 2 layers, 4 experts, hidden 2880, expert width 2880.
  const int64_t H = 2880, E = 4, I = 2880, L = 2, V = 201088;
  json t = json::array();
  add(t, "model.embed_tokens.weight", "BF16", {V, H});
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(t, p + "self_attn.q_proj.weight", "BF16", {4096, H});
    add(t, p + "self_attn.q_proj.bias", "BF16", {4096});
    add(t, p + "self_attn.k_proj.weight", "BF16", {512, H});
    add(t, p + "self_attn.k_proj.bias", "BF16", {512});
    add(t, p + "self_attn.v_proj.weight", "BF16", {512, H});
    add(t, p + "self_attn.v_proj.bias", "BF16", {512});
    add(t, p + "self_attn.o_proj.weight", "BF16", {H, 4096});
    add(t, p + "self_attn.o_proj.bias", "BF16", {H});
    add(t, p + "self_attn.sinks", "BF16", {64});
    add(t, p + "mlp.router.weight", "BF16", {E, H});
    add(t, p + "mlp.router.bias", "BF16", {E});
    add(t, p + "mlp.experts.gate_up_proj_blocks", "U8", {E, 2 * I, H / 32, 16});
    add(t, p + "mlp.experts.gate_up_proj_scales", "U8", {E, 2 * I, H / 32});
    add(t, p + "mlp.experts.gate_up_proj_bias", "BF16", {E, 2 * I});
    add(t, p + "mlp.experts.down_proj_blocks", "U8", {E, H, I / 32, 16});
    add(t, p + "mlp.experts.down_proj_scales", "U8", {E, H, I / 32});
    add(t, p + "mlp.experts.down_proj_bias", "BF16", {E, H});
    add(t, p + "input_layernorm.weight", "BF16", {H});
    add(t, p + "post_attention_layernorm.weight", "BF16", {H});
  }
  add(t, "model.norm.weight", "BF16", {H});
  add(t, "lm_head.weight", "BF16", {V, H});
  const json cfg = {{"model_type", "a_future_moe"}, {"head_dim", 64}, {"num_experts_per_tok", 2}};
  const json m = info({{"config", cfg}, {"safetensors", {{"tensors", t}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  const int64_t attn = (4096 * H + 4096) + 2 * (512 * H + 512) + (H * 4096 + H) + 64;
  const int64_t experts = E * (2 * I * H + 2 * I) + E * (H * I + H);
  const int64_t per_layer = attn + (E * H + E) + experts + 2 * H;
  EXPECT_EQ(m["params_total"], 2 * V * H + L * per_layer + H);
  EXPECT_EQ(m["checkpoint"]["quantization"], "mxfp4");
  EXPECT_TRUE(m["checkpoint"]["unplaced"].empty()) << m["checkpoint"].dump();
  const json& f = m["facts"];
  EXPECT_EQ(f["heads"], 64);
  EXPECT_EQ(f["kv_heads"], 8);
  EXPECT_EQ(f["moe"]["experts"], E);
  EXPECT_EQ(f["moe"]["experts_per_token"], 2);
  EXPECT_EQ(m["model_type"], "a_future_moe");
  int64_t by_experts = 0;
  for (const auto& row : m["breakdown"]) {
    if (row["component"] == "experts") by_experts = row["params"].get<int64_t>();
  }
  EXPECT_EQ(by_experts, L * experts);
}

TEST(Checkpoint, UnplacedTensorsAreListedCountedAndFlagged) {
  json t = llama_inventory(bf16_linear);
  add(t, "model.layers.0.mixer.A_log", "F32", {4096});
  add(t, "model.layers.1.mixer.A_log", "F32", {4096});
  const json m = info({{"safetensors", {{"tensors", t}}}});
  ASSERT_FALSE(m.contains("error")) << m.dump();
  EXPECT_EQ(m["params_total"], kLlama31_8b + 2 * 4096);
  EXPECT_FALSE(m["exact"].get<bool>());
  EXPECT_EQ(m["checkpoint"]["unplaced"].size(), 2u);
  EXPECT_EQ(m["checkpoint"]["unplaced_params"], 2 * 4096);
  ASSERT_FALSE(m["inexact"].empty());
  EXPECT_NE(m["inexact"][0].get<std::string>().find("model.layers.0.mixer.A_log"), std::string::npos);
}

TEST(Checkpoint, ServingSizesTheWeightsAsStored) {
  auto gptq = [](json& t, const std::string& m, int64_t in, int64_t out) {
    add(t, m + ".qweight", "I32", {in / 8, out});
    add(t, m + ".qzeros", "I32", {in / 128, out / 8});
    add(t, m + ".scales", "F16", {in / 128, out});
  };
  const json inv = {{"tensors", llama_inventory(gptq)}};
  const json stored = info({{"safetensors", inv}});
  const json r = estimate_ok({{"model", {{"safetensors", inv}}}, {"task", "infer"}, {"gpu", {{"name", "A100 80GB"}}}});
  EXPECT_EQ(component_bytes(r, "weights"), stored["checkpoint"]["stored_bytes"].get<int64_t>());
  bool said = false;
  for (const auto& a : r["assumptions"]) said = said || a.get<std::string>().find("checkpoint") != std::string::npos;
  EXPECT_TRUE(said) << r["assumptions"].dump();
  // Naming a dtype sizes the dequantised model instead: bf16 is 2 bytes a parameter.
  const json bf16 = estimate_ok({{"model", {{"safetensors", inv}}},
                                 {"task", "infer"},
                                 {"infer", {{"weights_dtype", "bf16"}}},
                                 {"gpu", {{"name", "A100 80GB"}}}});
  EXPECT_EQ(component_bytes(bf16, "weights"), 2 * kLlama31_8b);
}

TEST(Checkpoint, TrainingAnUnknownModelFromItsTensorsGivesTheSameStateAsTheKnownOne) {
  const json train = {{"method", "full"}, {"micro_batch", 1}, {"seq_len", 2048}};
  const json from_tensors =
      estimate_ok({{"model", {{"safetensors", {{"tensors", llama_inventory(bf16_linear)}}}}}, {"train", train}});
  const json from_config =
      estimate_ok({{"model", {{"config", model_config("meta-llama/Llama-3.1-8B")}}}, {"train", train}});
  for (const char* key : {"weights", "gradients", "optimizer_states"}) {
    EXPECT_EQ(component_bytes(from_tensors, key), component_bytes(from_config, key)) << key;
  }
  // Same tensors, same layer shapes: the saved activations agree too.
  EXPECT_EQ(component_bytes(from_tensors, "activations"), component_bytes(from_config, "activations"));
}

TEST(Checkpoint, CheckpointWeightsDtypeWithoutTensorsIsAnError) {
  const json r = estimate({{"model", {{"config", model_config("meta-llama/Llama-3.1-8B")}}},
                           {"task", "infer"},
                           {"infer", {{"weights_dtype", "checkpoint"}}}});
  ASSERT_TRUE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["error"]["path"], "infer.weights_dtype");
}

struct BadInventory {
  const char* what;
  json inventory;
  const char* path;
};

TEST(Checkpoint, BadInventoriesAreErrorsNamingTheField) {
  const json ok = {{"name", "model.layers.0.self_attn.q_proj.weight"}, {"dtype", "BF16"}, {"shape", {8, 8}}};
  const std::vector<BadInventory> cases = {
      {"no tensors", json::object(), "model.safetensors.tensors"},
      {"empty", {{"tensors", json::array()}}, "model.safetensors.tensors"},
      {"unknown key", {{"tensors", {ok}}, {"shards", 3}}, "model.safetensors.shards"},
      {"bad dtype",
       {{"tensors", {ok, {{"name", "x.weight"}, {"dtype", "F12"}, {"shape", {1}}}}}},
       "model.safetensors.tensors[1].dtype"},
      {"negative dim",
       {{"tensors", {{{"name", "x.weight"}, {"dtype", "F32"}, {"shape", {-1, 2}}}}}},
       "model.safetensors.tensors[0].shape"},
      {"too many elements",
       {{"tensors", {{{"name", "x.weight"}, {"dtype", "F32"}, {"shape", {1 << 30, 1 << 30, 1 << 30}}}}}},
       "model.safetensors.tensors[0].shape"},
      {"duplicate", {{"tensors", {ok, ok}}}, "model.safetensors.tensors[1].name"},
      {"unknown tensor key",
       {{"tensors", {{{"name", "x"}, {"dtype", "F32"}, {"shape", {1}}, {"offsets", 0}}}}},
       "model.safetensors.tensors[0].offsets"},
      {"no layers",
       {{"tensors", {{{"name", "wte.weight"}, {"dtype", "F32"}, {"shape", {10, 4}}}}}},
       "model.safetensors.tensors"},
      {"not an object", json::array(), "model.safetensors"},
  };
  for (const auto& c : cases) {
    const json r = estimate({{"model", {{"safetensors", c.inventory}}}});
    ASSERT_TRUE(r.contains("error")) << c.what << ": " << r.dump();
    EXPECT_EQ(r["error"]["path"], c.path) << c.what << ": " << r.dump();
  }
}

TEST(Checkpoint, DtypeBitsFollowSafetensors) {
  EXPECT_EQ(dtype_bits("BF16"), 16);
  EXPECT_EQ(dtype_bits("F8_E4M3"), 8);
  EXPECT_EQ(dtype_bits("F4"), 4);
  EXPECT_EQ(dtype_bits("I64"), 64);
  EXPECT_EQ(dtype_bits("Q4_K"), 0);
}

}  // namespace
}  // namespace vram

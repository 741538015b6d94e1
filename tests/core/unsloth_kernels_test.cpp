// Unsloth's patched Llama-family layers (train.kernels: unsloth): hand-worked
// saved tensors of a Llama-3.1-8B layer from what Unsloth's autograd
// functions keep (unslothai/unsloth 015bdef0, the same in 2024.1):
// kernels/fast_lora.py LoRA_QKV saves X; LoRA_W (o_proj) saves X, the
// attention output; LoRA_MLP saves X, e and g (the SwiGLU product is
// recomputed); kernels/rms_layernorm.py Fast_RMS_Layernorm saves X and an
// fp32 rstd per row; RoPE is in place; kernels/cross_entropy_loss.py
// Fast_CrossEntropyLoss keeps the logits and writes their gradient into them.
#include <gtest/gtest.h>

#include "estimate_helpers.h"
#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

const json kAllLinear = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};

// Llama-3.1-8B: hidden 4096, 32 heads of 128, 8 KV heads (h_kv 1024),
// intermediate 14336, 32 layers, vocab 128256.
constexpr int64_t h = 4096, hkv = 1024, inter = 14336, a = 32, L = 32, V = 128256;

json qlora(json extra) {
  json t = {{"method", "qlora"},
            {"kernels", "unsloth"},
            {"micro_batch", 1},
            {"seq_len", 1024},
            {"attention", "flash_attention_2"},
            {"lora", {{"rank", 16}, {"dropout", 0.0}, {"targets", kAllLinear}}},
            {"quant", {{"prepare_kbit", false}}}};
  if (extra.is_object()) t.update(extra);
  return {{"model", {{"config", testing::model_config("meta-llama/Llama-3.1-8B")}}}, {"task", "train"}, {"train", t}};
}

int64_t activations(const json& r) { return testing::component_bytes(r, "activations"); }

int64_t phase_part(const json& r, const std::string& key, const std::string& part) {
  for (const auto& p : r["phases"]) {
    if (p["key"] == key) return p["parts"].value(part, int64_t{0});
  }
  ADD_FAILURE() << "no phase " << key;
  return -1;
}

// bf16 residual (Unsloth does not upcast the non-4-bit weights), per token:
//   attention norm X + rstd           2h + 4
//   LoRA_QKV X                        2h
//   q, k, v (flash: k, v at kv heads) 2h + 4 h_kv
//   attention output (= o_proj's X)   2h, + fp32 lse 4a
//   MLP norm X + rstd                 2h + 4
//   LoRA_MLP X, e, g                  2h + 4I
// = 12h + 4h_kv + 4I + 4a + 8 per layer; the final norm keeps X + rstd
// (2h + 4); the frozen lm_head keeps nothing.
TEST(UnslothKernels, LlamaQloraLayerSavesTwelveHPlusFourI) {
  const json r = testing::estimate_ok(qlora({}));
  const int64_t layer = 12 * h + 4 * hkv + 4 * inter + 4 * a + 8;
  EXPECT_EQ(activations(r), 1024 * (L * layer + 2 * h + 4));
}

// PEFT's layers on the same job keep much more: fp32 copies of each adapter
// input, lora_A outputs, the SwiGLU product and HF RMSNorm's fp32 upcast.
TEST(UnslothKernels, StandardLayersOfTheSameJobSaveMore) {
  const json fast = testing::estimate_ok(qlora({}));
  const json peft = testing::estimate_ok(qlora({{"kernels", "standard"}}));
  EXPECT_LT(activations(fast) * 2, activations(peft));
}

// xformers is trained on K and V expanded to all 32 heads
// (attention_dispatch.py run_attention): k and v grow from h_kv to h each.
TEST(UnslothKernels, XformersKeepsKeyAndValueExpandedToEveryHead) {
  const json flash = testing::estimate_ok(qlora({}));
  const json xf = testing::estimate_ok(qlora({{"attention", "xformers"}}));
  EXPECT_EQ(activations(xf) - activations(flash), 1024 * L * 2 * 2 * (h - hkv));
}

// SDPA without enable_gqa expands K and V as well, and its transposed
// output is copied by o_proj's reshape, which LoRA_W keeps: + 2h more.
TEST(UnslothKernels, SdpaOutputIsCopiedForOProj) {
  const json xf = testing::estimate_ok(qlora({{"attention", "xformers"}}));
  const json sdpa = testing::estimate_ok(qlora({{"attention", "sdpa"}}));
  EXPECT_EQ(activations(sdpa) - activations(xf), 1024 * L * 2 * h);
}

// Unsloth patches a block only when each of its linears carries LoRA
// (patch_peft_model); with q_proj and v_proj only, the attention and MLP
// blocks stay PEFT's: HF-style saves except the norms, which are always
// Unsloth's. Attention: q/v adapters each keep an fp32 copy of X (4h) and
// their r-wide lora_A output in fp32 (4r), frozen 4-bit k/o keep nothing;
// SDPA-free flash core as above, o_proj without LoRA keeps nothing extra;
// MLP (frozen 4-bit): silu input, silu output and up output (6I).
TEST(UnslothKernels, BlocksWithoutLoraOnEveryLinearKeepPeftLayers) {
  const int64_t r = 16;
  const json res = testing::estimate_ok(
      qlora({{"lora", {{"rank", r}, {"dropout", 0.0}, {"targets", json::array({"q_proj", "v_proj"})}}}}));
  const int64_t layer =
      (2 * h + 4) + 2 * (4 * h + 4 * r) + (2 * h + 4 * hkv) + (2 * h + 4 * a) + (2 * h + 4) + 6 * inter;
  EXPECT_EQ(activations(res), 1024 * (L * layer + 2 * h + 4));
}

// LoRA dropout > 0: Unsloth does not patch any LoRA block.
TEST(UnslothKernels, DropoutTurnsTheFusedLoraFunctionsOff) {
  auto with_dropout = [](const char* kernels) {
    json t = qlora({{"kernels", kernels}});
    t["train"]["lora"]["dropout"] = 0.1;
    return activations(testing::estimate_ok(t));
  };
  // Only the norms differ: Fast_RMS_Layernorm keeps 2h (X) where HF's
  // RMSNorm keeps its 4h fp32 upcast input, at 2 sites per layer + the final norm.
  EXPECT_EQ(with_dropout("standard") - with_dropout("unsloth"), 1024 * (L * 2 + 1) * 2 * h);
}

// Fast_CrossEntropyLoss: bf16 logits (2 B) kept for backward + Accelerate's
// fp32 copy of the returned logits (4 B) in forward; backward writes into the
// logits. + fp32 loss and logsumexp (8 B) per token.
TEST(UnslothKernels, CrossEntropyKeepsTheLogitsAndWritesTheGradientInPlace) {
  const json r = testing::estimate_ok(qlora({}));
  const int64_t nv = int64_t{1024} * V;
  EXPECT_EQ(phase_part(r, "loss", "loss_buffers"), 6 * nv + 8 * 1024);
  EXPECT_EQ(phase_part(r, "backward_start", "loss_buffers"), 2 * nv + 8 * 1024);
}

// --framework unsloth applies the kernels and keeps the 16-bit weights 16-bit,
// and says so.
TEST(UnslothKernels, FrameworkUnslothAppliesAndListsTheKernels) {
  json req = qlora({});
  req["train"].erase("kernels");
  req["train"]["quant"].erase("prepare_kbit");
  req["train"]["framework"] = "unsloth";
  req["train"]["grad_checkpointing"] = "none";
  req["train"]["activation_offload"] = false;
  req["train"]["fused_loss"] = false;
  const json r = testing::estimate_ok(req);
  bool kernels = false, prepare = false;
  for (const auto& d : r["framework"]["defaults_applied"]) {
    if (d["path"] == "train.kernels" && d["value"] == "unsloth") kernels = true;
    if (d["path"] == "train.quant.prepare_kbit" && d["value"] == false) prepare = true;
  }
  EXPECT_TRUE(kernels);
  EXPECT_TRUE(prepare);
  EXPECT_EQ(activations(r), activations(testing::estimate_ok(qlora({}))));
}

TEST(UnslothKernels, UnknownKernelsValueNamesTheField) {
  json req = qlora({{"kernels", "liger"}});
  const json r = estimate(req);
  ASSERT_TRUE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["error"]["path"], "train.kernels");
  EXPECT_EQ(r["error"]["code"], "unknown_value");
}

}  // namespace
}  // namespace vram

// train.keeps_fused_qkv (LitGPT): CausalSelfAttention.forward
// (Lightning-AI/litgpt 43c44323, litgpt/model.py) splits q, k and v out of
// the fused projection output as views: qkv.view(B, T, groups, q_per_kv + 2,
// hs).permute(0, 2, 3, 1, 4).split((q_per_kv, 1, 1), dim=2). With multi-head
// attention (n_query_groups == n_head) the k/v expand is skipped and the
// reshape to (B, heads, T, hs) is a view as well; apply_rope's torch.cat
// gives q and k their own storage, but v reaches SDPA as the view, and SDPA
// saves its inputs as passed, so the whole qkv output (q, k and v widths)
// lives until backward. With grouped-query attention (Mistral-7B, 8 KV
// heads) the expanded k and v are reshaped into copies and nothing keeps the
// fused output. Bytes worked by hand: Llama-2-7B (32 heads x 128, 32 KV heads,
// 32 layers), bf16, micro-batch 2 x 512 tokens.
#include <gtest/gtest.h>

#include <string>

#include "estimate_helpers.h"
#include "fixtures.h"
#include "model_helpers.h"

namespace vram {
namespace {

constexpr int64_t kN = 2 * 512;  // tokens
constexpr int64_t kL = 32;       // layers
// q and k widths of the fused output (32 x 128 each), bf16, per token.
constexpr double kQkWidths = 2.0 * (32 * 128 + 32 * 128);
const std::string kItem = "fused qkv output (held by v's view)";

json request(const std::string& model, const json& extra) {
  json train = {{"method", "lora"},
                {"micro_batch", 2},
                {"seq_len", 512},
                {"precision", "bf16"},
                {"optimizer", "adamw_torch"},
                {"attention", "sdpa"},
                {"lora", {{"rank", 32}, {"targets", {"q_proj", "v_proj"}}, {"dropout", 0.05}}}};
  train.update(extra);
  return {{"model", {{"config", testing::model_config(model)}}}, {"task", "train"}, {"train", train}};
}

using testing::forward_allocated;

TEST(FusedQkvView, MultiHeadAttentionKeepsTheQAndKWidths) {
  const json on = request("meta-llama/Llama-2-7b-hf", {{"keeps_fused_qkv", true}});
  const json off = request("meta-llama/Llama-2-7b-hf", {{"keeps_fused_qkv", false}});
  EXPECT_DOUBLE_EQ(testing::saved_item(on, kItem), kQkWidths);
  EXPECT_EQ(testing::saved_item(off, kItem), -1);
  // q, k and v themselves are counted as before.
  EXPECT_DOUBLE_EQ(testing::saved_item(on, "q, k, v (after rotary)"),
                   testing::saved_item(off, "q, k, v (after rotary)"));
  // Every layer's saved tensors, held through the end of forward.
  EXPECT_EQ(forward_allocated(testing::estimate_ok(on)) - forward_allocated(testing::estimate_ok(off)),
            static_cast<int64_t>(kQkWidths) * kN * kL);
}

TEST(FusedQkvView, AutocastKeepsTheBf16Output) {
  // bf16-mixed (LitGPT's default without --quantize): the fused Linear's
  // output is bf16 under autocast, so the same bytes.
  const json on = request("meta-llama/Llama-2-7b-hf", {{"keeps_fused_qkv", true}, {"precision", "amp_bf16"}});
  EXPECT_DOUBLE_EQ(testing::saved_item(on, kItem), kQkWidths);
}

TEST(FusedQkvView, GroupedQueryAttentionCopiesKAndV) {
  // Mistral-7B: k.expand(...).reshape(...) copies, so v is no view.
  EXPECT_EQ(testing::saved_item(request("mistralai/Mistral-7B-v0.1", {{"keeps_fused_qkv", true}}), kItem), -1);
}

TEST(FusedQkvView, EagerAttentionDoesNotApply) {
  // Only the fused kernels save v as passed; the rule is scoped to them.
  EXPECT_EQ(testing::saved_item(
                request("meta-llama/Llama-2-7b-hf", {{"keeps_fused_qkv", true}, {"attention", "eager"}}), kItem),
            -1);
}

// LitGPT's LoRAQKVLinear.zero_pad (lit_gpt/lora.py at 8641822): LoRA on q and
// v only scatters lora_B's output into the fused width with index_copy, whose
// backward keeps `source`, the q and v widths in the adapter dtype, per token; with q, k
// and v all adapted zero_pad returns its input and keeps nothing.
TEST(FusedQkvView, PartialAdaptersKeepTheZeroPadSource) {
  const std::string zero_pad = "LoRA zero_pad source";
  const json qv =
      request("meta-llama/Llama-2-7b-hf",
              {{"lora", {{"rank", 32}, {"targets", {"q_proj", "v_proj"}}, {"dropout", 0.05}, {"fused_qkv", true}}}});
  const json qkv = request(
      "meta-llama/Llama-2-7b-hf",
      {{"lora", {{"rank", 32}, {"targets", {"q_proj", "k_proj", "v_proj"}}, {"dropout", 0.05}, {"fused_qkv", true}}}});
  const json peft =
      request("meta-llama/Llama-2-7b-hf",
              {{"lora", {{"rank", 32}, {"targets", {"q_proj", "v_proj"}}, {"dropout", 0.05}, {"fused_qkv", false}}}});
  // fp32 adapters (PEFT's autocast_adapter_dtype, the default without a
  // framework): lora_B's output, and so the source, is fp32.
  EXPECT_DOUBLE_EQ(testing::saved_item(qv, zero_pad), 4.0 * (32 * 128 + 32 * 128));
  EXPECT_EQ(testing::saved_item(qkv, zero_pad), -1);
  EXPECT_EQ(testing::saved_item(peft, zero_pad), -1);  // PEFT adds each adapter's output, no scatter
}

TEST(FusedQkvView, LitgptSetsItHfDoesNot) {
  json lit = request("meta-llama/Llama-2-7b-hf", {{"framework", "litgpt"}});
  json hf = request("meta-llama/Llama-2-7b-hf", {{"framework", "hf"}});
  EXPECT_DOUBLE_EQ(testing::saved_item(lit, kItem), kQkWidths);
  EXPECT_EQ(testing::saved_item(hf, kItem), -1);
  const json a = testing::estimate_ok(lit);
  EXPECT_NE(a["framework"]["defaults_applied"].dump().find("train.keeps_fused_qkv"), std::string::npos);
}

}  // namespace
}  // namespace vram

// train.keeps_previous_logits (issue 12, LitGPT): litgpt/finetune/lora.py
// fit() (Lightning-AI/litgpt 43c44323) assigns `logits = model(input_ids,
// lm_head_chunk_size=128)` each step, so the previous step's logits, and
// through their grad_fn its graph, live until this step's model() returns.
// Backward releases saved variables but not ctx attributes, so with
// bitsandbytes < 0.43.2 (train.quant.saves_input: MatMul4Bit.forward
// ctx.tensors = (A, B)) every 4-bit Linear's input stays too. Bytes worked by
// hand for Llama-2-7B (h 4096, MLP 11008, 32 layers, 32 heads x 128, vocab
// 32000), micro-batch 2 x 512 tokens, bf16.
#include <gtest/gtest.h>

#include <string>

#include "estimate_helpers.h"
#include "fixtures.h"

namespace vram {
namespace {

constexpr int64_t kN = 2 * 512;           // tokens
constexpr int64_t kH = 4096;              // hidden_size
constexpr int64_t kI = 11008;             // intermediate_size
constexpr int64_t kL = 32;                // layers
constexpr int64_t kV = 32000;             // vocab_size
constexpr int64_t kLogits = 2 * kN * kV;  // bf16 logits of one step
// Inputs of the fused-in-LitGPT q/k/v (the attention norm output), o_proj
// (the attention output, 32 x 128), gate/up (the MLP norm output) and
// down_proj (the product), bf16, every layer; plus the final norm output the
// lm_head chunks are views of.
constexpr int64_t kKept = 2 * kN * (kL * (kH + kH + kH + kI) + kH);
// Lightning's 4-bit lm_head dequantised by the last chunk: fp16 + bf16 copies.
constexpr int64_t kHeadDequant = (2 + 2) * kV * kH;

json request(bool keeps, bool saves_input) {
  json train = {{"method", "qlora"},
                {"micro_batch", 2},
                {"seq_len", 512},
                {"optimizer", "paged_adamw_32bit"},
                {"lora", {{"rank", 32}, {"targets", {"q_proj", "v_proj"}}, {"dropout", 0.05}}},
                {"quant",
                 {{"double_quant", false},
                  {"prepare_kbit", false},
                  {"saves_input", saves_input},
                  {"quantizer", "lightning_bitsandbytes"}}},
                {"keeps_previous_logits", keeps}};
  return {
      {"model", {{"config", testing::model_config("meta-llama/Llama-2-7b-hf")}}}, {"task", "train"}, {"train", train}};
}

using testing::forward_allocated;

TEST(PreviousLogits, KeepsLastStepsLogitsAndFourBitInputsThroughForward) {
  const json off = testing::estimate_ok(request(false, true));
  const json on = testing::estimate_ok(request(true, true));
  // End of forward as model() returns: the old logits and kept inputs, the
  // new logits and the dequantised head on top of the saved activations.
  EXPECT_EQ(forward_allocated(on) - forward_allocated(off), kLogits + kKept + kLogits + kHeadDequant);
  EXPECT_GE(on["peak_allocated_bytes"].get<int64_t>(), off["peak_allocated_bytes"].get<int64_t>());
}

TEST(PreviousLogits, CurrentBitsandbytesKeepsOnlyTheLogits) {
  // bitsandbytes >= 0.43.2 keeps no input in ctx: only the old logits stay.
  const json off = testing::estimate_ok(request(false, false));
  const json on = testing::estimate_ok(request(true, false));
  EXPECT_EQ(forward_allocated(on) - forward_allocated(off), kLogits + kLogits + kHeadDequant);
}

TEST(PreviousLogits, LitgptSetsItHfDoesNot) {
  json lit = request(false, true);
  lit["train"].erase("keeps_previous_logits");
  lit["train"]["framework"] = "litgpt";
  json hf = lit;
  hf["train"]["framework"] = "hf";
  const json a = testing::estimate_ok(lit);
  const json b = testing::estimate_ok(hf);
  EXPECT_NE(a["framework"]["defaults_applied"].dump().find("train.keeps_previous_logits"), std::string::npos);
  EXPECT_GT(forward_allocated(a), forward_allocated(b));
}

}  // namespace
}  // namespace vram

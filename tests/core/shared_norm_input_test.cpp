// A parallel block with one norm hands the attention and the MLP the same
// tensor (modeling_phi.py PhiDecoderLayer.forward: `hidden_states =
// self.input_layernorm(hidden_states)` feeds both self_attn and mlp; LitGPT's
// shared_attention_norm for phi-1.5 and phi-2). A 4-bit Linear of
// bitsandbytes < 0.43.2 keeps its input for backward (MatMul4Bit ctx.tensors =
// (A, B)); the q/k/v Linear and fc1 keeping that one tensor keep it once.
// GPT-NeoX's parallel residual has two norms (input_layernorm and
// post_attention_layernorm), so its MLP reads a tensor of its own. Bytes worked
// by hand: phi-1.5 (hidden 2048, intermediate 8192), bf16 compute.
#include <gtest/gtest.h>

#include <string>

#include "fixtures.h"
#include "model_helpers.h"

namespace vram {
namespace {

json qlora(const std::string& model, bool saves_input, const json& targets = {"q_proj", "v_proj"}) {
  return {{"model", {{"config", testing::model_config(model)}}},
          {"task", "train"},
          {"train",
           {{"method", "qlora"},
            {"micro_batch", 1},
            {"seq_len", 1024},
            {"attention", "sdpa"},
            {"lora", {{"rank", 8}, {"targets", targets}, {"dropout", 0.05}, {"adapter_fp32", false}}},
            {"quant", {{"saves_input", saves_input}, {"prepare_kbit", false}}}}}};
}

constexpr const char* kMlp = "MLP activations";
constexpr const char* kQkv = "q/k/v projection inputs";

TEST(SharedNormInput, PhiKeepsTheSharedNormOutputOnce) {
  const json on = qlora("microsoft/phi-1_5", true);
  const json off = qlora("microsoft/phi-1_5", false);
  // The q/k/v Linears keep the norm output (2 B x 2048; phi-1.5's HF config
  // has separate q_proj, k_proj and v_proj reading the one tensor).
  EXPECT_DOUBLE_EQ(testing::saved_item(on, kQkv) - testing::saved_item(off, kQkv), 2.0 * 2048);
  // fc1 reads that same tensor: only fc2's own input (2 B x 8192) is new.
  EXPECT_DOUBLE_EQ(testing::saved_item(on, kMlp) - testing::saved_item(off, kMlp), 2.0 * 8192);
}

TEST(SharedNormInput, GptNeoxParallelResidualHasTwoNormOutputs) {
  const json on = qlora("EleutherAI/pythia-410m", true, {"query_key_value"});
  const json off = qlora("EleutherAI/pythia-410m", false, {"query_key_value"});
  // hidden 1024, intermediate 4096: dense_h_to_4h reads post_attention_layernorm's
  // output (its own tensor), dense_4h_to_h the activation.
  EXPECT_DOUBLE_EQ(testing::saved_item(on, kMlp) - testing::saved_item(off, kMlp), 2.0 * 1024 + 2.0 * 4096);
}

}  // namespace
}  // namespace vram

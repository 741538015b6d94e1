// Issue 12: what a 4-bit Linear keeps for backward (bitsandbytes before and
// after 0.43.2), the fit verdict with a paged optimizer, and the 4-bit base
// under FSDP / ZeRO-3. Every expected number is worked by hand below.
#include <gtest/gtest.h>

#include <string>

#include "estimate_helpers.h"
#include "fixtures.h"
#include "vram/api.h"
#include "vram/gpus.h"

namespace vram {
namespace {

json llama2_7b(json train, json parallel = nullptr) {
  json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-2-7b-hf")}}},
            {"task", "train"},
            {"train", std::move(train)}};
  if (!parallel.is_null()) r["parallel"] = std::move(parallel);
  return r;
}

json run(const json& req) { return testing::estimate_ok(req); }
int64_t component(const json& r, const std::string& key) { return testing::component_bytes(r, key); }

bool has_warning(const json& r, const std::string& text) {
  for (const auto& w : r["warnings"]) {
    if (w.get<std::string>().find(text) != std::string::npos) return true;
  }
  return false;
}

// lit-gpt's QLoRA recipe (finetune/lora.py at 8641822): r 8 on q and v,
// dropout 0.05, adapters in bf16, no peft kbit preparation.
json litgpt_qlora(bool saves_input, bool prepare_kbit = false) {
  return {{"method", "qlora"},
          {"micro_batch", 1},
          {"seq_len", 1304},
          {"optimizer", "paged_adamw_32bit"},
          {"attention", "sdpa"},
          {"lora", {{"rank", 8}, {"targets", {"q_proj", "v_proj"}}, {"dropout", 0.05}, {"adapter_fp32", false}}},
          {"quant", {{"double_quant", false}, {"prepare_kbit", prepare_kbit}, {"saves_input", saves_input}}}};
}

// bitsandbytes 0.41.1 autograd/_functions.py MatMul4Bit.forward keeps
// ctx.tensors = (A, B) when A needs a gradient; 0.43.2 keeps (None, B). For
// Llama-2-7B (h 4096, intermediate 11008, 32 layers) at 1304 tokens, the
// inputs no other op saves are, per layer and token, in bf16:
//   the attention norm output read by q/k/v (one tensor shared by the three),
//   o_proj's input (SDPA's output made contiguous),
//   the MLP norm output read by gate/up (shared),
//   down_proj's input, act(gate) * up (intermediate wide):
//   2 x (3 x 4096 + 11008) = 46,592 B; x 32 layers x 1304 tokens.
TEST(QuantSavesInput, OldBitsandbytesKeepsEveryFourBitLinearInput) {
  const json now = run(llama2_7b(litgpt_qlora(false)));
  const json old = run(llama2_7b(litgpt_qlora(true)));
  const int64_t per_token_layer = 2 * (3 * 4096 + 11008);
  EXPECT_EQ(component(old, "activations") - component(now, "activations"), per_token_layer * 32 * 1304);
  EXPECT_EQ(per_token_layer * 32 * 1304, 1944190976);  // 1.81 GiB, the gap the LitGPT rows showed
  EXPECT_GT(old["peak_allocated_bytes"].get<int64_t>(), now["peak_allocated_bytes"].get<int64_t>());
}

// With prepare_model_for_kbit_training the norms are fp32, so the norm
// outputs are fp32 and each Linear4bit.forward casts its own bf16 copy
// (x.to(compute_dtype), bitsandbytes nn/modules.py): q, k, v, gate and up each
// keep one, 2 x 4096 B; o_proj and down read bf16 tensors:
//   2 x (5 x 4096 + 4096 + 11008) = 71,168 B per layer and token.
TEST(QuantSavesInput, FourBitLinearsKeepTheirOwnCastCopiesOfAnFp32Input) {
  const json now = run(llama2_7b(litgpt_qlora(false, true)));
  const json old = run(llama2_7b(litgpt_qlora(true, true)));
  const int64_t per_token_layer = 2 * (5 * 4096 + 4096 + 11008);
  EXPECT_EQ(component(old, "activations") - component(now, "activations"), per_token_layer * 32 * 1304);
}

// A paged optimizer's states (CUDA managed memory) page to host RAM when the
// card is full: the verdict distinguishes fitting, running with paging, and
// not fitting even without the states. Llama-2-7B QLoRA with paged 32-bit
// AdamW; full fine-tuning states would be larger, but the rule is the same.
class PagedVerdict : public ::testing::Test {
 protected:
  static json on_card(json train, double gib) {
    json req = llama2_7b(std::move(train));
    req["gpu"] = {{"memory_gib", gib}};
    return run(req);
  }
  // memory_gib whose usable capacity (total x (1 - driver reserve)) is `bytes`.
  static double gib_for_capacity(int64_t bytes) {
    return static_cast<double>(bytes) / (1.0 - kDriverReserveFraction) / 1073741824.0;
  }
};

TEST_F(PagedVerdict, FitsWithPagingWhenOnlyTheManagedStatesOverflow) {
  // Full fine-tuning with paged 8-bit AdamW: 2 states x ~1 B per parameter
  // in managed memory, ~12.6 GiB, next to the bf16 weights and gradients.
  const json train = {{"method", "full"}, {"precision", "bf16"}, {"optimizer", "paged_adamw_8bit"},
                      {"micro_batch", 1}, {"seq_len", 512},      {"grad_checkpointing", true}};
  const json free = run(llama2_7b(train));
  const int64_t peak = free["peak_bytes"].get<int64_t>();
  const int64_t managed = component(free, "optimizer_states");
  ASSERT_GT(managed, int64_t{10} << 30);
  // A card whose usable memory sits halfway into the managed states.
  const json r = on_card(train, gib_for_capacity(peak - managed / 2));
  const int64_t capacity = r["fit"]["capacity_bytes"].get<int64_t>();
  ASSERT_GT(peak, capacity);
  ASSERT_LE(peak - managed, capacity);
  EXPECT_EQ(r["fit"]["verdict"], "fits_with_paging");
  EXPECT_TRUE(r["fit"]["fits"].get<bool>());
  EXPECT_EQ(r["fit"]["paged_bytes"].get<int64_t>(), peak - capacity);
  // max_micro_batch counts no paging: micro-batch 1 already pages here.
  EXPECT_EQ(r["fit"]["max_micro_batch"].get<int64_t>(), 0);
  EXPECT_GE(r["fit"]["max_micro_batch_with_paging"].get<int64_t>(), 1);
  EXPECT_TRUE(has_warning(r, "runs with paging"));
  EXPECT_FALSE(has_warning(r, "does not fit"));
  // The catalog rows carry the same verdicts.
  for (const auto& g : r["gpus"]) {
    const std::string v = g["verdict"].get<std::string>();
    EXPECT_TRUE(v == "fits" || v == "fits_with_paging" || v == "does_not_fit");
    EXPECT_EQ(g["fits"].get<bool>(), v != "does_not_fit");
  }
}

TEST_F(PagedVerdict, FitsWithoutPagingOnALargeCard) {
  const json r = on_card(litgpt_qlora(true), 80);
  EXPECT_EQ(r["fit"]["verdict"], "fits");
  EXPECT_TRUE(r["fit"]["fits"].get<bool>());
  EXPECT_EQ(r["fit"]["paged_bytes"].get<int64_t>(), 0);
  EXPECT_GE(r["fit"]["max_micro_batch_with_paging"].get<int64_t>(), r["fit"]["max_micro_batch"].get<int64_t>());
  EXPECT_FALSE(has_warning(r, "runs with paging"));
}

TEST_F(PagedVerdict, DoesNotFitWhenEvenTheUnmanagedPartOverflows) {
  const json r = on_card(litgpt_qlora(true), 4);
  EXPECT_EQ(r["fit"]["verdict"], "does_not_fit");
  EXPECT_FALSE(r["fit"]["fits"].get<bool>());
  EXPECT_EQ(r["fit"]["max_micro_batch"].get<int64_t>(), 0);
  EXPECT_EQ(r["fit"]["max_micro_batch_with_paging"].get<int64_t>(), 0);
  EXPECT_TRUE(has_warning(r, "does not fit, even with paging"));
}

TEST_F(PagedVerdict, WithoutAPagedOptimizerTheVerdictIsTheOldFit) {
  json train = litgpt_qlora(false);
  train["optimizer"] = "adamw_torch";
  const json big = on_card(train, 80);
  EXPECT_EQ(big["fit"]["verdict"], "fits");
  EXPECT_FALSE(big["fit"].contains("max_micro_batch_with_paging"));
  const json small = on_card(train, 4);
  EXPECT_EQ(small["fit"]["verdict"], "does_not_fit");
  EXPECT_TRUE(has_warning(small, "does not fit: peak exceeds"));
}

// FSDP-QLoRA (bnb_4bit_quant_storage): the packed 4-bit codes shard with the
// other parameters; the absmax constants stay whole on every rank. Llama-2-7B,
// 4 GPUs full_shard, NF4 without double quantisation, bf16 everything else:
//   4-bit Linears per layer: 4 x 4096^2 + 3 x 4096 x 11008 = 202,375,168
//   values; x 32 = 6,476,005,376. Codes 1/2 B: 3,238,002,688 B; fp32 absmax
//   per 64 values: 404,750,336 B.
//   Other weights: embed + lm_head 2 x 32000 x 4096 + norms 65 x 4096 =
//   262,410,240 params x 2 B = 524,820,480 B.
//   Adapters: 32 x 2 x 8 x (4096 + 4096) = 4,194,304 params x 2 B.
// Per rank: 524,820,480 / 4 + 8,388,608 / 4 + 3,238,002,688 / 4 + 404,750,336.
TEST(FsdpQlora, PackedCodesShardAndAbsmaxStaysWhole) {
  json train = litgpt_qlora(false);
  train["optimizer"] = "adamw_torch";
  const json r = run(llama2_7b(train, {{"gpus", 4}, {"fsdp", "full_shard"}, {"fsdp_version", 1}}));  // FSDP1 named
  EXPECT_EQ(component(r, "weights"), 524820480 / 4 + 8388608 / 4 + 3238002688 / 4 + 404750336);
  // Gathered: the current and prefetched layer's 16-bit parameters (two
  // norms, 8,192) and the root unit (embeddings, lm_head, final norm,
  // 262,148,096), x 2 B; plus two layers of codes, 2 x 101,187,584 B.
  EXPECT_EQ(component(r, "gathered_params"), (2 * 8192 + 262148096) * 2 + 2 * 101187584);
  // Data parallel without sharding keeps the whole 4-bit base.
  const json ddp = run(llama2_7b(train, {{"gpus", 4}}));
  EXPECT_EQ(component(ddp, "weights"), 524820480 + 8388608 + 3238002688 + 404750336);
}

TEST(FsdpQlora, ZeroThreeShardsTheCodesToo) {
  json train = litgpt_qlora(false);
  train["optimizer"] = "adamw_torch";
  const json r = run(llama2_7b(train, {{"gpus", 4}, {"zero", 3}}));
  const int64_t w = component(r, "weights");
  // ZeRO-3 keeps tensors under stage3_param_persistence_threshold (1e5
  // elements: the norms, and the adapters' lora_A [8, 4096]) whole; the
  // codes are sharded, the absmax whole.
  EXPECT_LT(w, 524820480 / 4 + 8388608 + 3238002688 / 4 + 404750336 + 65 * 4096 * 2);
  EXPECT_GT(w, 3238002688 / 4 + 404750336);
}

// LitGPT's --quantize goes through Lightning's BitsandbytesPrecision, which
// replaces lm_head as well (module_init_context swaps every torch.nn.Linear)
// and quantises from an fp16 copy, so each dequantised weight is fp16 and
// then bf16 (4 B per value alive at once, 2 B under transformers). Llama-2-7B:
// lm_head 32000 x 4096 goes from 2 B to 0.5 B + 4 B per 64 values.
TEST(LightningQuantizer, QuantisesLmHeadFromFp16) {
  json lit = litgpt_qlora(false);
  lit["quant"]["quantizer"] = "lightning_bitsandbytes";
  const json bnb = run(llama2_7b(litgpt_qlora(false)));
  const json lightning = run(llama2_7b(lit));
  const int64_t head = int64_t{32000} * 4096;
  EXPECT_EQ(component(bnb, "weights") - component(lightning, "weights"), 2 * head - (head / 2 + head / 64 * 4));
  // lm_head is dequantised next to the logits (4 B per value), the layers'
  // largest weight (an MLP projection) inside their backward, also 4 B now.
  EXPECT_EQ(component(lightning, "dequant"), 4 * head);
  EXPECT_EQ(component(lightning, "layer_backward") - component(bnb, "layer_backward"), 2 * int64_t{4096} * 11008);
  // the LitGPT framework applies it and lists it
  const json fw = run(llama2_7b({{"framework", "litgpt"}, {"method", "qlora"}}));
  bool listed = false;
  for (const auto& d : fw["framework"]["defaults_applied"]) {
    if (d.value("path", "") == "train.quant.quantizer") listed = d["value"] == "lightning_bitsandbytes";
  }
  EXPECT_TRUE(listed) << fw["framework"].dump();
}

}  // namespace
}  // namespace vram

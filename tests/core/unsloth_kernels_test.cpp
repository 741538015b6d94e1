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
#include "memory/timeline.h"
#include "train/layout.h"
#include "train/step.h"
#include "vram/api.h"
#include "vram/request.h"

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

// Validation row 53: TinyLlama-1.1B QLoRA on a T4 (fp16, xformers), 2 x 4096
// packed tokens, LoRA on all seven linears. Each layer's forward is replayed
// tensor by tensor in Unsloth 2024.1's order (saved_activations.cpp
// unsloth_forward_ops). By hand, N = 8192 tokens, h 2048, 32 heads of 64, 4 KV
// heads (256 wide), I 5632, fp16:
//   X = N h 2 = 33,554,432 (a hidden-sized tensor), E = N I 2 = 92,274,688,
//   rstd N 4 = 32,768, lse 4 x 32 x N = 1,048,576, K and V at kv width
//   N 256 2 = 4,194,304; dequantised weights (fast_dequantize, fp16 [out, in]):
//   q, o 2048 x 2048 x 2 = 8,388,608; k, v 256 x 2048 x 2 = 1,048,576;
//   gate, up, down 5632 x 2048 x 2 = 23,068,672. Each matmul_lora is: the
//   weight, its output, the weight freed, the LoRA term (X @ A) @ (s B) of the
//   output's size, freed.
json row53() {
  json t = {{"framework", "unsloth"},
            {"method", "qlora"},
            {"micro_batch", 2},
            {"seq_len", 4096},
            {"grad_accum", 4},
            {"precision", "fp16"},
            {"optimizer", "adamw_bnb_8bit"},
            {"grad_checkpointing", "none"},
            {"activation_offload", false},
            {"attention", "xformers"},
            {"fused_loss", false},
            {"lora", {{"rank", 32}, {"alpha", 32}, {"dropout", 0.0}, {"targets", kAllLinear}, {"adapter_fp32", true}}}};
  return {{"model", {{"config", testing::model_config("TinyLlama/TinyLlama-1.1B-Chat-v1.0")}}},
          {"task", "train"},
          {"train", t},
          {"gpu", {{"name", "T4 16GB"}}}};
}

TEST(UnslothKernels, EachLayerAllocatesItsTensorsAndTemporariesInSourceOrder) {
  auto parsed = parse_request(row53());
  ASSERT_TRUE(parsed.ok());
  const Request& req = parsed.value();
  const auto basis = train::rank_basis(req, req, train::whole_model(req));
  const memory::Timeline tl = train::training_step(basis, train::step_terms(basis, 2));
  constexpr int64_t X = 33554432, E = 92274688, R = 32768, LSE = 1048576, KV = 4194304;
  constexpr int64_t Wqo = 8388608, Wkv = 1048576, Wi = 23068672;
  // (bytes, kept) of layer 5's allocations, in order.
  const std::vector<std::pair<int64_t, bool>> want = {
      {X, true},    {R, true},   {X, true},                 // layer input, rstd, normed X
      {Wqo, false}, {X, true},   {X, false},                // q: weight, Q, LoRA term
      {Wkv, false}, {KV, false}, {KV, false},               // k (kv width, until the reshape)
      {Wkv, false}, {KV, false}, {KV, false},               // v
      {X, true},    {X, true},   {X, true},   {LSE, true},  // K, V at 32 heads; output; lse
      {Wqo, false}, {X, false},  {X, false},                // o_proj: its output until the add
      {X, true},    {R, true},   {X, true},                 // residual, rstd, normed X
      {Wi, false},  {E, true},   {E, false},                // gate: e kept
      {Wi, false},  {E, true},   {E, false},                // up: g kept
      {E, false},                                           // h = swiglu(e, g)
      {Wi, false},  {X, false},  {X, false}};               // down: the MLP output
  std::vector<std::pair<int64_t, bool>> got;
  int64_t kept = 0;
  for (const memory::Event& e : tl.events()) {
    if (e.op != memory::Event::Op::kAlloc) continue;
    const auto& t = tl.tensors()[static_cast<size_t>(e.index)];
    if (std::string(t.component) != "activations" || t.layer != 5) continue;
    const bool keep = std::string(t.name) == "saved activations";
    got.emplace_back(t.bytes, keep);
    if (keep) kept += t.bytes;
  }
  EXPECT_EQ(got, want);
  // The kept tensors are the layer's 55,432 B per token.
  EXPECT_EQ(kept, 55432 * 8192);
}

// The allocated view does not change: 22 layers x 55,432 B x N plus the final
// norm's X and rstd (2h + 4) x N. What changes is what the caching allocator
// keeps: h's 88 MiB block, freed as LoRA_MLP returns, is split by the next
// layer's hidden-sized tensors, so the replay's cached free bytes at the peak
// sit mostly in segments made for those temporaries.
TEST(UnslothKernels, TheTemporariesStayOutOfTheAllocatedViewButFragmentTheCache) {
  const json r = testing::estimate_ok(row53());
  EXPECT_EQ(activations(r), int64_t{22} * 55432 * 8192 + (2 * 2048 + 4) * 8192);
  EXPECT_EQ(phase_part(r, "forward", "activations"), activations(r));
  std::string formula;
  for (const auto& c : r["components"]) {
    if (c["key"] == "allocator") formula = c["formula"];
  }
  EXPECT_NE(formula.find("made for forward temporaries (freed within the layer)"), std::string::npos) << formula;
  EXPECT_GT(r["peak_reserved_bytes"].get<int64_t>() - r["peak_allocated_bytes"].get<int64_t>(), int64_t{512} << 20);
}

// train.returns_kv_cache (Unsloth 2024.1: use_cache stays on in training, so
// LlamaAttention_fast_forward returns (K, V) after the rotary and
// LlamaModel_fast_forward returns them as past_key_values). By hand for row
// 53: K and V at kv-head width, N x 256 x 2 = 4,194,304 B each, are no longer
// freed after the xformers reshape but held by the cache: + 22 x 2 x
// 4,194,304 = 184,549,376 B of activations until the loss; the Trainer's
// Accelerate wrapper copies each to fp32 when model() returns: + 22 x 2 x
// 8,388,608 = 369,098,752 B next to the logits' copy. Both go when
// compute_loss returns, before backward.
TEST(UnslothKernels, ReturnedKeyValueCacheIsHeldToTheLossAndCopiedToFp32) {
  json with = row53();
  with["train"]["returns_kv_cache"] = true;
  const json r0 = testing::estimate_ok(row53());
  const json r1 = testing::estimate_ok(with);
  EXPECT_EQ(activations(r1) - activations(r0), int64_t{22} * 2 * 4194304);
  EXPECT_EQ(phase_part(r1, "loss", "loss_buffers") - phase_part(r0, "loss", "loss_buffers"), int64_t{22} * 2 * 8388608);
  EXPECT_EQ(r1["peak_allocated_bytes"].get<int64_t>() - r0["peak_allocated_bytes"].get<int64_t>(),
            int64_t{22} * 2 * (4194304 + 8388608));
  // Gone before backward.
  EXPECT_EQ(phase_part(r1, "backward_start", "activations"), phase_part(r0, "backward_start", "activations"));
  EXPECT_EQ(phase_part(r1, "backward_start", "loss_buffers"), phase_part(r0, "backward_start", "loss_buffers"));
  // Under gradient checkpointing Unsloth turns use_cache off.
  json ckpt = with;
  ckpt["train"]["grad_checkpointing"] = "full";
  json ckpt0 = row53();
  ckpt0["train"]["grad_checkpointing"] = "full";
  EXPECT_EQ(testing::estimate_ok(ckpt)["peak_allocated_bytes"], testing::estimate_ok(ckpt0)["peak_allocated_bytes"]);
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

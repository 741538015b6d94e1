// LoRA on the output layer (issue 12): PEFT target_modules "lm_head", LitGPT
// lora_head, torchtune apply_lora_to_output. Bytes worked by hand from peft
// tuners/lora/layer.py (LoraLayer.update_layer, Linear.forward) and torch
// autograd; torch.compile accepted and flagged as not modelled.
#include <gtest/gtest.h>

#include <string>

#include "estimate_helpers.h"
#include "fixtures.h"
#include "memory/loss.h"
#include "train/layout.h"
#include "train/step.h"
#include "vram/api.h"
#include "vram/request.h"

namespace vram {
namespace {

constexpr int64_t kLlama31Params = 8030261248;
constexpr int64_t kH = 4096;                                  // Llama-3.1-8B hidden_size
constexpr int64_t kV = 128256;                                // vocab_size
constexpr int64_t kR = 16;                                    // LoRA rank used below
constexpr int64_t kN = 1024;                                  // tokens: micro_batch 1 x seq_len 1024
constexpr int64_t kHead = kR * (kH + kV);                     // lora_A [r, h] + lora_B [V, r]
constexpr int64_t kQv = 32 * kR * ((kH + kH) + (kH + 1024));  // q_proj and v_proj on 32 layers

json request(const std::string& id, json train) {
  return {{"model", {{"config", testing::model_config(id)}}}, {"task", "train"}, {"train", std::move(train)}};
}

json lora(json targets, json extra = json::object()) {
  json t = {{"method", "lora"}, {"micro_batch", 1}, {"seq_len", kN}, {"lora", {{"rank", kR}, {"targets", targets}}}};
  for (auto& [k, v] : extra.items()) t[k] = v;
  return t;
}

json run(const json& req) { return testing::estimate_ok(req); }
int64_t component(const json& r, const std::string& key) { return testing::component_bytes(r, key); }

int64_t phase_part(const json& r, const std::string& key, const std::string& part) {
  for (const auto& p : r["phases"]) {
    if (p["key"] == key) return p["parts"].value(part, int64_t{0});
  }
  ADD_FAILURE() << "no phase " << key;
  return -1;
}

bool mentions(const json& list, const std::string& text) {
  for (const auto& s : list) {
    if (s.get<std::string>().find(text) != std::string::npos) return true;
  }
  return false;
}

Request parse(const json& req) {
  auto p = parse_request(req);
  EXPECT_TRUE(p.ok());
  return p.value();
}

// r (h + V) adapter parameters on Llama-3.1-8B's untied lm_head, in fp32
// (peft autocast_adapter_dtype): 4 B weights, 4 B grads, 2 x 4 B AdamW states.
TEST(HeadLora, AddsRTimesHiddenPlusVocabParamsWithGradsAndStates) {
  const json with = run(request("meta-llama/Llama-3.1-8B", lora({"q_proj", "v_proj", "lm_head"})));
  const json without = run(request("meta-llama/Llama-3.1-8B", lora({"q_proj", "v_proj"})));
  EXPECT_EQ(kHead, 2117632);
  EXPECT_EQ(with["model"]["params_trainable"].get<int64_t>(), kQv + kHead);
  EXPECT_EQ(without["model"]["params_trainable"].get<int64_t>(), kQv);
  EXPECT_EQ(component(with, "weights"), 2 * kLlama31Params + 4 * (kQv + kHead));
  EXPECT_EQ(component(with, "gradients"), 4 * (kQv + kHead));
  EXPECT_EQ(component(with, "optimizer_states"), 8 * (kQv + kHead));
  // lora_A saves its input cast to fp32 (4h) and lora_B saves A x (4r), per
  // token; the frozen head saved neither.
  EXPECT_EQ(component(with, "activations") - component(without, "activations"), kN * (4 * kH + 4 * kR));
  EXPECT_TRUE(mentions(with["assumptions"], "LoRA on the output layer lm_head"));
}

// The logits-sized tensors (peft Linear.forward: result + lora_B(lora_A(x)) *
// scaling, then .to(result dtype)). Pure bf16 with fp32 adapters: bf16 base
// logits (2) + the fp32 scaled B(A x) (4) + their fp32 sum (4) = 10 B per
// logit in forward; in backward the fp32 grad of the sum (4), MulBackward's
// fp32 output (4) and the bf16 copy for the base layer (2).
TEST(HeadLora, TheAdapterOutputIsALogitsSizedTransient) {
  const Request req = parse(request("meta-llama/Llama-3.1-8B", lora({"q_proj", "lm_head"})));
  const auto basis = train::rank_basis(req, req, train::whole_model(req));
  ASSERT_TRUE(basis.plan.head_lora.on);
  EXPECT_EQ(basis.plan.head_lora.in, kH);
  EXPECT_EQ(basis.plan.head_lora.out, kV);
  const memory::LossBuffers loss =
      memory::loss_buffers(req, basis.dt, 0, true, 1, req.train.seq_len, basis.plan.head_lora);
  EXPECT_EQ(loss.head_lora_forward, kN * kV * (2 + 4 + 4));
  EXPECT_EQ(loss.head_lora_backward, kN * kV * (4 + 4 + 2));
  ASSERT_EQ(loss.head_lora_forward_pieces.size(), 3u);
  // The step holds it between forward and the cross-entropy.
  const memory::Timeline tl = train::training_step(basis, train::step_terms(basis, 1));
  bool found = false;
  for (const auto& t : tl.tensors()) {
    if (std::string(t.name) == "lm_head LoRA forward (logits + B(A x))") {
      found = true;
      EXPECT_EQ(t.bytes, kN * kV * 10);
      EXPECT_EQ(std::string(t.component), "loss_buffers");
    }
  }
  EXPECT_TRUE(found);
}

// fp32 training: the logits are fp32 and the cross-entropy keeps only 8 B per
// logit in forward, so the head's 12 B (base + scaled + sum, all fp32) are the
// loss phase's largest moment.
TEST(HeadLora, Fp32LossPhaseRisesToTheHeadForward) {
  const json with = run(request("meta-llama/Llama-3.1-8B", lora({"q_proj", "lm_head"}, {{"precision", "fp32"}})));
  const json without = run(request("meta-llama/Llama-3.1-8B", lora({"q_proj"}, {{"precision", "fp32"}})));
  EXPECT_EQ(phase_part(without, "loss", "loss_buffers"), kN * kV * 8);
  EXPECT_EQ(phase_part(with, "loss", "loss_buffers"), kN * kV * 12);
}

// Llama-3.2-1B ties lm_head to embed_tokens: PEFT still wraps the lm_head
// Linear (hidden 2048 -> vocab 128256) and warns about tied targets.
TEST(HeadLora, TiedHeadStillTakesAnAdapter) {
  const json r = run(request("meta-llama/Llama-3.2-1B", lora({"lm_head"})));
  EXPECT_EQ(r["model"]["params_trainable"].get<int64_t>(), kR * (2048 + 128256));
  EXPECT_TRUE(mentions(r["warnings"], "tied to the input embeddings"));
  // torchtune refuses apply_lora_to_output on a tied projection.
  json tt = request("meta-llama/Llama-3.2-1B", lora({"lm_head"}));
  tt["train"]["framework"] = "torchtune";
  const json e = estimate(tt);
  ASSERT_TRUE(e.contains("error")) << e.dump();
  EXPECT_EQ(e["error"]["path"], "train.lora.targets[0]");
  EXPECT_EQ(e["error"]["code"], "unsupported");
}

// PEFT's all-linear removes the output layer (tuners_utils.py
// _maybe_include_all_linear_layers): 41,943,040 at r16, no head.
TEST(HeadLora, AllLinearLeavesTheHeadOut) {
  json t = lora("all-linear");
  const json r = run(request("meta-llama/Llama-3.1-8B", t));
  EXPECT_EQ(r["model"]["params_trainable"].get<int64_t>(), 41943040);
  EXPECT_FALSE(mentions(r["assumptions"], "LoRA on the output layer"));
}

// The fused linear cross-entropy reads lm_head.weight (the frozen base) and
// would bypass the adapter: an error naming the target and the field.
TEST(HeadLora, FusedLossWithAHeadAdapterIsAnError) {
  const json e = estimate(request("meta-llama/Llama-3.1-8B", lora({"q_proj", "lm_head"}, {{"fused_loss", true}})));
  ASSERT_TRUE(e.contains("error")) << e.dump();
  EXPECT_EQ(e["error"]["path"], "train.lora.targets[1]");
  EXPECT_EQ(e["error"]["code"], "inconsistent");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("train.fused_loss"), std::string::npos);
  // Unsloth's table turns the fused loss on; the message says where it came from.
  json u = request("meta-llama/Llama-3.1-8B", lora({"q_proj", "lm_head"}));
  u["train"]["framework"] = "unsloth";
  const json eu = estimate(u);
  ASSERT_TRUE(eu.contains("error")) << eu.dump();
  EXPECT_NE(eu["error"]["message"].get<std::string>().find("unsloth framework's default"), std::string::npos);
}

// GPT-NeoX's head is embed_out; "lm_head" there names nothing, and BERT has
// no LM head at all. The error lists the output layer's name.
TEST(HeadLora, TheHeadGoesByTheModelsOwnName) {
  const json neox = run(request("EleutherAI/pythia-160m", lora({"embed_out"})));
  EXPECT_EQ(neox["model"]["params_trainable"].get<int64_t>(), kR * (768 + 50304));
  const json wrong = estimate(request("EleutherAI/pythia-160m", lora({"lm_head"})));
  ASSERT_TRUE(wrong.contains("error")) << wrong.dump();
  EXPECT_EQ(wrong["error"]["path"], "train.lora.targets[0]");
  EXPECT_NE(wrong["error"]["message"].get<std::string>().find("output layer: embed_out"), std::string::npos);
  const json bert = estimate(request("google-bert/bert-base-uncased", lora({"lm_head"})));
  ASSERT_TRUE(bert.contains("error")) << bert.dump();
  EXPECT_EQ(bert["error"]["code"], "unknown_value");
}

// Pipeline parallel: the head and its adapter sit on the last stage only.
TEST(HeadLora, OnlyTheLastPipelineStageHoldsTheAdapter) {
  json req = request("meta-llama/Llama-3.1-8B", lora({"q_proj", "lm_head"}));
  req["parallel"] = {{"gpus", 2}, {"pp", 2}};
  const Request parsed = parse(req);
  const auto stages = train::pipeline_stages(parsed);
  ASSERT_EQ(stages.size(), 2u);
  const Request first = train::rank_request(parsed, stages[0]);
  const Request last = train::rank_request(parsed, stages[1]);
  EXPECT_FALSE(train::rank_basis(first, parsed, stages[0]).plan.head_lora.on);
  EXPECT_TRUE(train::rank_basis(last, parsed, stages[1]).plan.head_lora.on);
  const json r = run(req);
  EXPECT_EQ(r["model"]["params_trainable"].get<int64_t>(), 32 * kR * (kH + kH) + kHead);
  // Only the head trains: the first stage has nothing of its own, not an error.
  json head_only = request("meta-llama/Llama-3.1-8B", lora({"lm_head"}));
  head_only["parallel"] = {{"gpus", 2}, {"pp", 2}};
  EXPECT_EQ(run(head_only)["model"]["params_trainable"].get<int64_t>(), kHead);
}

// torch.compile is accepted and flagged: the estimate is eager mode's.
TEST(Compile, IsAcceptedAndWarnedAsNotModelled) {
  const json eager = run(request("meta-llama/Llama-3.1-8B", lora({"q_proj"})));
  const json compiled = run(request("meta-llama/Llama-3.1-8B", lora({"q_proj"}, {{"compile", true}})));
  EXPECT_EQ(compiled["peak_bytes"], eager["peak_bytes"]);
  EXPECT_TRUE(mentions(compiled["warnings"], "train.compile"));
  EXPECT_FALSE(mentions(eager["warnings"], "train.compile"));
  const json bad = estimate(request("meta-llama/Llama-3.1-8B", lora({"q_proj"}, {{"compile", "yes"}})));
  ASSERT_TRUE(bad.contains("error")) << bad.dump();
  EXPECT_EQ(bad["error"]["path"], "train.compile");
}

}  // namespace
}  // namespace vram

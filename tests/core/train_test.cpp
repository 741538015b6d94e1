// Training memory: hand-derived bytes for each rule (source named per test)
// and properties that must hold for any model.
#include <gtest/gtest.h>

#include <algorithm>

#include "estimate_helpers.h"
#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

class TrainTest : public ::testing::Test {
 protected:
  static json request(const std::string& id, json train) {
    return {{"model", {{"config", testing::model_config(id)}}}, {"task", "train"}, {"train", std::move(train)}};
  }
  static json run(const json& req) { return testing::estimate_ok(req); }
  static int64_t component(const json& r, const std::string& key) { return testing::component_bytes(r, key); }
  static int64_t phase(const json& r, const std::string& key, const std::string& part) {
    for (const auto& p : r["phases"]) {
      if (p["key"] == key) return p["parts"].value(part, int64_t{0});
    }
    ADD_FAILURE() << "no phase " << key;
    return -1;
  }
  static int64_t peak(const json& r) { return r["peak_bytes"].get<int64_t>(); }
};

constexpr int64_t kLlama31Params = 8030261248;

// research/memory-internals.md §3.4: pure bf16 = 2 + 2 + 4 B/param (torch
// optimizers create zeros_like(param) states in the parameter dtype).
TEST_F(TrainTest, PureBf16FullFineTuneIsTwoTwoFourBytesPerParam) {
  const json r = run(request("meta-llama/Llama-3.1-8B", {{"precision", "bf16"}, {"optimizer", "adamw_torch_fused"}}));
  EXPECT_EQ(component(r, "weights"), 2 * kLlama31Params);
  EXPECT_EQ(component(r, "gradients"), 2 * kLlama31Params);
  EXPECT_EQ(component(r, "optimizer_states"), 4 * kLlama31Params);
  EXPECT_EQ(component(r, "optimizer_temporaries"), 0);  // fused: no param-sized temporaries
  EXPECT_EQ(r["model"]["params_trainable"].get<int64_t>(), kLlama31Params);
}

// torch/optim/adam.py _multi_tensor_adam: exp_avg_sq_sqrt = _foreach_sqrt(...)
// allocates one state-sized tensor for the decay param group (all but norms).
TEST_F(TrainTest, ForeachAdamWAddsOneStateSizedTemporaryForTheDecayGroup) {
  const json r = run(request("meta-llama/Llama-3.1-8B", {{"precision", "bf16"}, {"optimizer", "adamw_torch"}}));
  // norms: 2 per layer x 32 layers x 4096 + final 4096
  const int64_t norm_params = (2 * 32 + 1) * 4096;
  EXPECT_EQ(component(r, "optimizer_temporaries"), 2 * (kLlama31Params - norm_params));
}

// fp32 weights + autocast: 4 + 4 + 8 B/param, plus the bf16 copy autocast
// caches for every Linear weight (aten autocast_mode.cpp cached_cast).
TEST_F(TrainTest, AmpKeepsFp32StateAndCachesBf16LinearWeights) {
  const json r =
      run(request("meta-llama/Llama-3.1-8B", {{"precision", "amp_bf16"}, {"optimizer", "adamw_torch_fused"}}));
  EXPECT_EQ(component(r, "weights"), 4 * kLlama31Params);
  EXPECT_EQ(component(r, "optimizer_states"), 8 * kLlama31Params);
  const int64_t embed = 128256 * 4096;
  const int64_t norms = (2 * 32 + 1) * 4096;
  EXPECT_EQ(component(r, "autocast_weight_cache"), 2 * (kLlama31Params - embed - norms));
}

// ZeRO paper §5 (K = 12): bf16 weights and grads + fp32 master + fp32 Adam.
TEST_F(TrainTest, MixedPrecisionWithMasterWeightsIsSixteenBytesPerParam) {
  const json r =
      run(request("meta-llama/Llama-3.1-8B", {{"precision", "mixed_bf16"}, {"optimizer", "adamw_torch_fused"}}));
  EXPECT_EQ(component(r, "weights") + component(r, "gradients") + component(r, "master_weights") +
                component(r, "optimizer_states"),
            16 * kLlama31Params);
}

// peft tuners/lora/layer.py: r x (in + out) per targeted Linear. Research §6.4:
// Llama-3-8B all-linear r16 = 1,310,720 per layer = 41,943,040.
TEST_F(TrainTest, LoraAllLinearRank16OnLlama3_8bTrains41_9MParams) {
  const json r = run(
      request("meta-llama/Llama-3.1-8B", {{"method", "lora"}, {"lora", {{"rank", 16}, {"targets", "all-linear"}}}}));
  EXPECT_EQ(r["model"]["params_trainable"].get<int64_t>(), 41943040);
  // peft upcasts adapters to fp32: 4 B weights + 4 B grads + 8 B Adam.
  EXPECT_EQ(component(r, "gradients"), 4 * 41943040);
}

TEST_F(TrainTest, LoraDefaultTargetsAreQAndVAsInPeft) {
  const json r = run(request("meta-llama/Llama-3.1-8B", {{"method", "lora"}}));
  // q: 8 x (4096 + 4096), v: 8 x (4096 + 1024), 32 layers
  EXPECT_EQ(r["model"]["params_trainable"].get<int64_t>(), 32 * (8 * 8192 + 8 * 5120));
}

// LitGPT's lora_query / lora_value (imported as q_proj / v_proj) on a model
// with one fused q/k/v projection: the adapter goes on that projection
// (GPT-NeoX's query_key_value). Pythia-160m: 12 layers of 768 -> 2,304,
// rank 8: 12 x 8 x (768 + 2304).
TEST_F(TrainTest, LoraQueryAndValueRolesFindTheFusedProjection) {
  const json r = run(request("EleutherAI/pythia-160m",
                             {{"method", "lora"}, {"lora", {{"rank", 8}, {"targets", {"q_proj", "v_proj"}}}}}));
  EXPECT_EQ(r["model"]["params_trainable"].get<int64_t>(), 12 * 8 * (768 + 2304));
}

TEST_F(TrainTest, LoraTargetThatMatchesNothingNamesTheField) {
  const json r =
      estimate(request("meta-llama/Llama-3.1-8B", {{"method", "lora"}, {"lora", {{"targets", {"q_proj", "wq"}}}}}));
  ASSERT_TRUE(r.contains("error"));
  EXPECT_EQ(r["error"]["path"], "train.lora.targets[1]");
  EXPECT_EQ(r["error"]["code"], "unknown_value");
}

// bitsandbytes quantize_4bit + QLoRA paper §3: packed 4-bit values, one 8-bit
// absmax per 64 values and one fp32 scale per 256 blocks (double quant).
TEST_F(TrainTest, QloraStoresLinearsAsNf4WithDoubleQuantisedAbsmax) {
  const json r = run(request("meta-llama/Llama-3.1-8B", {{"method", "qlora"}}));
  auto nf4 = [](int64_t n) {
    const int64_t blocks = (n + 63) / 64;
    return (n + 1) / 2 + blocks + 4 * ((blocks + 255) / 256);
  };
  const int64_t h = 4096, kv = 1024, inter = 14336;
  const int64_t per_layer = 2 * nf4(h * h) + 2 * nf4(h * kv) + 3 * nf4(h * inter);
  // prepare_model_for_kbit_training: embeddings, norms, lm_head in fp32.
  const int64_t fp32 = 4 * (2 * 128256 * h + (2 * 32 + 1) * h);
  // adapters q, v rank 8 in fp32
  const int64_t adapters = 4 * 32 * (8 * 8192 + 8 * 5120);
  EXPECT_EQ(component(r, "weights"), 32 * per_layer + fp32 + adapters);
}

// HF LlamaRMSNorm + FlashAttention-2 + SwiGLU (research §4.2): per token per
// layer 20h + 4h_kv + 8I + 4a bytes, plus 4 B of rsqrt per norm site.
TEST_F(TrainTest, LlamaLayerWithFlashAttentionSavesTwentyHPlusEightI) {
  const json r = run(
      request("meta-llama/Llama-3.1-8B", {{"attention", "flash_attention_2"}, {"micro_batch", 1}, {"seq_len", 1024}}));
  const int64_t h = 4096, hkv = 1024, inter = 14336, a = 32;
  const int64_t per_token_layer = 20 * h + 4 * hkv + 8 * inter + 4 * a + 8;
  // plus final norm (4h + 4) and lm_head input (2h) per token
  EXPECT_EQ(component(r, "activations"), 1024 * (32 * per_token_layer + 4 * h + 4 + 2 * h));
}

// transformers loss_utils.py ForCausalLMLoss (research §3.1): forward keeps
// bf16 logits + fp32 copy + log_softmax = 10 N V; backward 12 N V.
TEST_F(TrainTest, CrossEntropyBuffersAreTenThenTwelveBytesPerLogit) {
  const json r = run(request("meta-llama/Llama-3.1-8B", {{"micro_batch", 2}, {"seq_len", 512}}));
  const int64_t nv = int64_t{1024} * 128256;
  EXPECT_EQ(phase(r, "loss", "loss_buffers"), 10 * nv);
  EXPECT_EQ(phase(r, "backward_start", "loss_buffers"), 12 * nv);
}

// transformers < 4.46 (train.logits_upcast_in_model): the model returns fp32
// logits, its bf16 ones are gone by the loss; < 4.49 (train.loss_shift_copy):
// the loss copies them shifted by one. Forward 4 + 4 + 4 = 12 N V. A loop that
// holds the output through backward (train.keeps_logits, fsdp_qlora train.py
// `output = None` only after the step) keeps those fp32 logits: 12 + 4.
TEST_F(TrainTest, OldTransformersLossAndAHeldFp32OutputPerLogit) {
  auto with = [&](bool keeps) {
    return run(request("meta-llama/Llama-3.1-8B", {{"micro_batch", 2},
                                                   {"seq_len", 512},
                                                   {"logits_upcast_in_model", true},
                                                   {"loss_shift_copy", true},
                                                   {"keeps_logits", keeps}}));
  };
  const int64_t nv = int64_t{1024} * 128256;
  const json dropped = with(false);
  const json held = with(true);
  EXPECT_EQ(phase(dropped, "loss", "loss_buffers"), 12 * nv);
  EXPECT_EQ(phase(held, "loss", "loss_buffers"), 12 * nv);
  EXPECT_EQ(phase(dropped, "backward_start", "loss_buffers"), 12 * nv);
  EXPECT_EQ(phase(held, "backward_start", "loss_buffers"), 16 * nv);
}

// LitGPT's chunked loss under Lightning Fabric (train.outputs_fp32): the
// wrapper's convert_output turns each 128-token bf16 logits chunk into an fp32
// copy (lightning fabric/wrappers.py _FabricModule.forward, plugins/precision/
// half.py HalfPrecision.convert_output at 71aed751), so the held logits and the
// saved log-probabilities are 4 + 4 B per logit, not 2 + 2; backward adds two
// fp32 chunk gradients and one bf16 cast back per chunk.
TEST_F(TrainTest, FabricFp32OutputsDoubleTheChunkedLossBuffers) {
  auto with = [&](bool fp32) {
    return run(request("meta-llama/Llama-3.1-8B", {{"micro_batch", 1},
                                                   {"seq_len", 1024},
                                                   {"precision", "bf16"},
                                                   {"loss", "chunked"},
                                                   {"loss_chunk_size", 128},
                                                   {"loss_upcast", false},
                                                   {"keeps_logits", true},
                                                   {"outputs_fp32", fp32}}));
  };
  const int64_t nv = int64_t{1024} * 128256;
  const int64_t chunk = nv / 8;
  const json bf16 = with(false);
  const json fp32 = with(true);
  EXPECT_EQ(phase(bf16, "loss", "loss_buffers"), (2 + 2) * nv);
  EXPECT_EQ(phase(fp32, "loss", "loss_buffers"), (4 + 4) * nv);
  EXPECT_EQ(phase(bf16, "backward_start", "loss_buffers"), (2 + 2) * nv + 2 * 2 * chunk);
  EXPECT_EQ(phase(fp32, "backward_start", "loss_buffers"), (4 + 4) * nv + 2 * 4 * chunk + 2 * chunk);
}

TEST_F(TrainTest, GradientAccumulationKeepsGradientsAliveInForward) {
  const json r1 = run(request("meta-llama/Llama-3.2-1B", {{"grad_accum", 1}}));
  const json r4 = run(request("meta-llama/Llama-3.2-1B", {{"grad_accum", 4}}));
  EXPECT_EQ(phase(r1, "forward", "gradients"), 0);
  EXPECT_EQ(phase(r4, "forward", "gradients"), int64_t{2} * 1235814400);
}

// Optimizer in backward (torchtune training/memory.py
// register_optim_in_bwd_hooks): each parameter steps in its
// post-accumulate-grad hook and its gradient is freed at once, so no phase
// holds more than one parameter's gradient. Llama-3.1-8B's largest tensor is
// the untied lm_head / embedding, 128,256 x 4,096 = 525,336,576 params (2 B
// each in bf16; the head's gradients arrive with the final norm's 4,096);
// without the flag the step holds all 8,030,261,248.
TEST_F(TrainTest, OptimizerInBackwardHoldsOneParametersGradientAtATime) {
  const json train = {{"method", "full"}, {"precision", "bf16"}, {"optimizer", "adamw_torch"},
                      {"micro_batch", 1}, {"seq_len", 512},      {"grad_checkpointing", true}};
  json in_bwd = train;
  in_bwd["optimizer_in_backward"] = true;
  const json all = run(request("meta-llama/Llama-3.1-8B", train));
  const json one = run(request("meta-llama/Llama-3.1-8B", in_bwd));
  constexpr int64_t kHeadGrad = int64_t{2} * (128256 * 4096 + 4096);
  EXPECT_EQ(phase(all, "optimizer_step", "gradients"), 2 * kLlama31Params);
  for (const char* key : {"backward_start", "backward", "optimizer_step"}) {
    EXPECT_LE(phase(one, key, "gradients"), kHeadGrad) << key;
  }
  EXPECT_EQ(phase(one, "optimizer_step", "gradients"), 0);
  EXPECT_GT(phase(one, "backward", "gradients"), 0);
  EXPECT_LT(peak(one), peak(all));
  // Gradient accumulation cannot work when every parameter steps in backward.
  in_bwd["grad_accum"] = 4;
  const json err = estimate(request("meta-llama/Llama-3.1-8B", in_bwd));
  ASSERT_TRUE(err.contains("error")) << err.dump();
  EXPECT_EQ(err["error"]["path"], "train.optimizer_in_backward");
}

// 4-bit base quantised by torchao (torchtune's to_nf4) instead of bitsandbytes'
// kernel. Before torchao 0.2 (pytorch/ao PR #196) quantize_tensor_nearest
// held (value - nf4) and its abs(), two bf16 (n x 16) tensors, for a whole
// weight at load, and the caching allocator keeps their segments.
// Llama-2-7B's largest 4-bit weight is 11,008 x 4,096, so reserved memory
// holds at least 2 x 16 x 2 B x 45,088,768 = 2,885,681,152 B beyond the 4-bit
// weights themselves. Chunked (1024^2 values) torchao and bitsandbytes'
// kernel leave far less.
TEST_F(TrainTest, TorchaoQuantisationTemporariesStayReservedAfterLoad) {
  const json train = {{"method", "qlora"}, {"micro_batch", 1}, {"seq_len", 256}, {"grad_checkpointing", true}};
  auto with = [&](const char* quantizer) {
    json t = train;
    t["quant"] = {{"quantizer", quantizer}};
    return run(request("meta-llama/Llama-2-7b-hf", t));
  };
  const json bnb = with("bitsandbytes");
  const json chunked = with("torchao");
  const json whole = with("torchao_unchunked");
  constexpr int64_t kDiffs = int64_t{2} * 16 * 2 * 11008 * 4096;
  const auto reserved = [](const json& r) { return r["peak_reserved_bytes"].get<int64_t>(); };
  EXPECT_GE(reserved(whole), component(whole, "weights") + kDiffs);
  // Chunks of 1024^2 values: the whole-weight intermediates are gone.
  EXPECT_GE(reserved(whole) - reserved(chunked), kDiffs / 2);
  EXPECT_GE(reserved(whole) - reserved(bnb), kDiffs / 2);
  // The weights themselves are the same bytes whoever quantised them.
  EXPECT_EQ(component(whole, "weights"), component(bnb, "weights"));
  EXPECT_EQ(component(chunked, "weights"), component(bnb, "weights"));
  // Unknown quantisers are an error naming the field.
  json bad = train;
  bad["quant"] = {{"quantizer", "gptq"}};
  const json err = estimate(request("meta-llama/Llama-2-7b-hf", bad));
  ASSERT_TRUE(err.contains("error")) << err.dump();
  EXPECT_EQ(err["error"]["path"], "train.quant.quantizer");
}

// PyTorch < 2.0's zero_grad(set_to_none=False), which the HF Trainer's
// model.zero_grad() used (pytorch PR #92731 made True the default in 2.0):
// gradients are zeroed in place, so without accumulation they still sit in
// memory during the next forward. BERT-large: 335,141,888 params x 4 B.
TEST_F(TrainTest, ZeroGradWithoutSetToNoneKeepsGradientsAliveInForward) {
  const json base = {{"precision", "fp32"}, {"attention", "eager"}, {"micro_batch", 1}, {"seq_len", 128}};
  json kept = base;
  kept["zero_grad_set_to_none"] = false;
  const json r_none = run(request("google-bert/bert-large-uncased", base));
  const json r_kept = run(request("google-bert/bert-large-uncased", kept));
  EXPECT_EQ(phase(r_none, "forward", "gradients"), 0);
  EXPECT_EQ(phase(r_kept, "forward", "gradients"), int64_t{4} * 335141888);
  EXPECT_EQ(component(r_kept, "gradients"), component(r_none, "gradients"));
  // A step inside backward frees each gradient whatever zero_grad does.
  kept["optimizer_in_backward"] = true;
  EXPECT_EQ(phase(run(request("google-bert/bert-large-uncased", kept)), "forward", "gradients"), 0);
}

// BERT-large (h 1024, a 16, I 4096, s 512, dropout 0.1), fp32, eager
// attention, bytes per token per layer (modeling_bert.py BertLayer):
//   q/k/v Linear input 4h                        4,096
//   q, k, v copies saved by the two bmm's 12h   12,288 (matmul reshapes the
//                                                      permuted 4-D tensors)
//   softmax output 4as + dropout mask as
//     + dropout output 4as (saved by probs @ v) 73,728
//   context (attention dense input) 4h           4,096
//   two residual dropout masks 2h                2,048
//   two LayerNorm inputs 2 x (4h + 8)            8,208
//   intermediate dense input 4h                  4,096
//   GELU input 4I + output dense input 4I       32,768
//   total                                      141,328
// PyTorch <= 1.10's SoftmaxBackward also kept softmax's input, the masked
// fp32 scores (derivatives.yaml: _softmax_backward_data(grad, result, dim,
// self); 1.11 keeps self.scalar_type() only, PR #65242/#66018): + 4as =
// 32,768 -> 174,096. The stack adds the final-norm slot (4h + 4) per token.
TEST_F(TrainTest, OldSoftmaxKeepsItsInputOneFp32ScoreMatrixPerEagerLayer) {
  const int64_t h = 1024, a = 16, s = 512, L = 24, N = 2 * s;
  const json base = {{"precision", "fp32"}, {"attention", "eager"}, {"micro_batch", 2}, {"seq_len", s}};
  json old = base;
  old["softmax_saves_input"] = true;
  const json r_now = run(request("google-bert/bert-large-uncased", base));
  const json r_old = run(request("google-bert/bert-large-uncased", old));
  EXPECT_EQ(component(r_now, "activations"), N * (L * 141328 + 4 * h + 4));
  EXPECT_EQ(component(r_old, "activations"), N * (L * 174096 + 4 * h + 4));
  EXPECT_EQ(174096 - 141328, 4 * a * s);
  // Under fp16 autocast the fp16 scores plus BERT's fp32 additive mask
  // promote to fp32: the kept input is 4 B per element as well.
  json amp_now = base, amp_old = old;
  amp_now["precision"] = amp_old["precision"] = "amp_fp16";
  EXPECT_EQ(component(run(request("google-bert/bert-large-uncased", amp_old)), "activations") -
                component(run(request("google-bert/bert-large-uncased", amp_now)), "activations"),
            N * L * 4 * a * s);
  // SDPA / FlashAttention never call softmax's autograd: unchanged.
  for (const char* attn : {"sdpa", "flash_attention_2"}) {
    json k_now = base, k_old = old;
    k_now["attention"] = k_old["attention"] = attn;
    EXPECT_EQ(component(run(request("google-bert/bert-large-uncased", k_old)), "activations"),
              component(run(request("google-bert/bert-large-uncased", k_now)), "activations"))
        << attn;
  }
}

// The same PyTorch <= 1.10 rule for the loss: log_softmax keeps its fp32
// input until its backward, 12 -> 16 B per logit (see the 10/12 test above).
TEST_F(TrainTest, OldLogSoftmaxKeepsTheFp32LogitsUntilItsBackward) {
  const json r =
      run(request("meta-llama/Llama-3.1-8B", {{"micro_batch", 2}, {"seq_len", 512}, {"softmax_saves_input", true}}));
  const int64_t nv = int64_t{1024} * 128256;
  EXPECT_EQ(phase(r, "loss", "loss_buffers"), 10 * nv);
  EXPECT_EQ(phase(r, "backward_start", "loss_buffers"), 16 * nv);
}

// The peak is the largest device view; once the allocator's cache holds its
// size, several phases reach it, and the one named is where the live tensors
// (allocated bytes) peak among them.
TEST_F(TrainTest, PeakIsTheLargestPhaseAndNamesIt) {
  const json r = run(request("meta-llama/Llama-3.1-8B", {{"seq_len", 4096}}));
  int64_t mx = 0;
  int64_t alloc = 0;
  std::string key;
  for (const auto& p : r["phases"]) {
    const int64_t d = p["bytes"].get<int64_t>();
    const int64_t a = p["allocated_bytes"].get<int64_t>();
    if (d > mx || (d == mx && a > alloc)) {
      mx = d;
      alloc = a;
      key = p["key"];
    }
  }
  EXPECT_EQ(peak(r), mx);
  EXPECT_EQ(r["peak_phase"], key);
  EXPECT_EQ(alloc, r["peak_allocated_bytes"].get<int64_t>());
}

// torch/optim/_muon.py: one momentum_buffer per 2-D hidden weight; the
// embeddings (tied head) and norms go to AdamW (2 states), as Muon's
// docstring prescribes. Llama-3.2-1B: 262,668,288 embedding + 33 x 2,048
// norm values, the other 973,078,528 in the layers' Linears; pure bf16.
TEST_F(TrainTest, MuonKeepsOneStatePerHiddenMatrixAndAdamwStatesForTheRest) {
  const json r = run(request("meta-llama/Llama-3.2-1B", {{"method", "full"}, {"optimizer", "muon"}}));
  const int64_t rest = 262668288 + 33 * 2048;
  const int64_t matrices = 1235814400 - rest;
  EXPECT_EQ(component(r, "optimizer_states"), matrices * 2 + rest * 2 * 2);
  // AdamW's foreach temporary over the rest (525 MiB) outweighs Muon's
  // temporaries of the largest matrix (8,192 x 2,048 x (2 + 2 + 6) B).
  EXPECT_EQ(component(r, "optimizer_temporaries"), std::max<int64_t>(rest * 2, int64_t{8192} * 2048 * 10));
}

// ---- properties -----------------------------------------------------------

TEST_F(TrainTest, MoreBatchOrSequenceNeverNeedsLess) {
  for (const char* id : {"meta-llama/Llama-3.2-1B", "Qwen/Qwen3-30B-A3B", "google-bert/bert-large-uncased",
                         "deepseek-ai/DeepSeek-V2-Lite", "openai-community/gpt2"}) {
    for (const char* method : {"full", "lora"}) {
      int64_t prev = 0;
      for (int64_t b : {1, 2, 4, 8}) {
        const int64_t p = peak(run(request(id, {{"method", method}, {"micro_batch", b}, {"seq_len", 256}})));
        EXPECT_GE(p, prev) << id << " " << method << " b=" << b;
        prev = p;
      }
      prev = 0;
      for (int64_t s : {128, 256, 512, 1024}) {
        const int64_t p = peak(run(request(id, {{"method", method}, {"seq_len", s}})));
        EXPECT_GE(p, prev) << id << " " << method << " s=" << s;
        prev = p;
      }
    }
  }
}

TEST_F(TrainTest, CheckpointingNeverKeepsMoreActivations) {
  for (const char* id : {"meta-llama/Llama-3.1-8B", "mistralai/Mixtral-8x7B-v0.1", "microsoft/phi-2"}) {
    for (const char* attn : {"eager", "sdpa", "flash_attention_2"}) {
      const json base = {{"seq_len", 2048}, {"attention", attn}};
      json ck = base;
      ck["grad_checkpointing"] = true;
      json sel = base;
      sel["grad_checkpointing"] = "selective";
      const int64_t a0 = component(run(request(id, base)), "activations");
      EXPECT_LE(component(run(request(id, ck)), "activations"), a0) << id << " " << attn;
      EXPECT_LE(component(run(request(id, sel)), "activations"), a0) << id << " " << attn;
      EXPECT_LE(peak(run(request(id, ck))), peak(run(request(id, base)))) << id << " " << attn;
    }
  }
}

// torchtitan's op-level selective checkpointing (parallelize_llama.py
// _get_custom_policy): per layer and token Llama-3.1-8B keeps its input
// (2 x 4,096 B) and, of its seven matmuls, the 1st, 3rd, 5th and 7th outputs
// (wq 2 x 4,096, wv 2 x 1,024, w1 2 x 14,336, w2 2 x 4,096), and SDPA's output
// (2 x 4,096) and fp32 log-sum-exp (4 x 32 heads): 63,616 B, where full
// checkpointing keeps the 8,192 B input only.
TEST_F(TrainTest, OpLevelSelectiveCheckpointingKeepsEverySecondMatmul) {
  const json base = {{"method", "full"}, {"precision", "bf16"}, {"seq_len", 2048}};
  json full = base;
  full["grad_checkpointing"] = "full";
  json op = base;
  op["grad_checkpointing"] = "selective_op";
  const int64_t tokens = 2048;
  EXPECT_EQ(component(run(request("meta-llama/Llama-3.1-8B", op)), "activations") -
                component(run(request("meta-llama/Llama-3.1-8B", full)), "activations"),
            32 * tokens * (63616 - 8192));
  json none = base;
  none["grad_checkpointing"] = "none";
  EXPECT_LT(component(run(request("meta-llama/Llama-3.1-8B", op)), "activations"),
            component(run(request("meta-llama/Llama-3.1-8B", none)), "activations"));
  // Written for dense layers: a MoE model is refused, naming the field.
  const json moe = estimate(request("mistralai/Mixtral-8x7B-v0.1", op));
  ASSERT_TRUE(moe.contains("error")) << moe.dump();
  EXPECT_EQ(moe["error"]["path"], "train.grad_checkpointing");
  EXPECT_EQ(moe["error"]["code"], "unsupported");
}

// DoRA (peft tuners/lora/dora.py DoraLinearLayer.forward) keeps, per adapted
// Linear and token, the base layer's output (bf16, 2 B) and lora_B's output
// (fp32 adapters, 4 B) for the magnitude's gradient. Llama-3.2-1B, q_proj
// (2,048 out) and v_proj (512 out), 16 layers, 512 tokens.
TEST_F(TrainTest, DoraKeepsTheBaseAndAdapterOutputsOfEveryAdaptedLinear) {
  json lora = {{"method", "lora"},
               {"precision", "bf16"},
               {"seq_len", 512},
               {"lora", {{"rank", 16}, {"targets", {"q_proj", "v_proj"}}, {"adapter_fp32", true}}}};
  json dora = lora;
  dora["lora"]["use_dora"] = true;
  EXPECT_EQ(component(run(request("meta-llama/Llama-3.2-1B", dora)), "activations") -
                component(run(request("meta-llama/Llama-3.2-1B", lora)), "activations"),
            int64_t{16} * 512 * (2 + 4) * (2048 + 512));
}

// down_proj's input (the SwiGLU product) under an adapter with dropout: the
// dropout mask (1 B) and the dropout output (2 B) that lora_A keeps, where no
// dropout lets lora_A keep the product itself (2 B); a 4-bit down_proj of
// bitsandbytes < 0.43.2 (train.quant.saves_input) keeps the product as well
// (MatMul4Bit ctx.tensors = (A, B)). Llama-3.2-1B: 8,192 intermediate, 16
// layers, 512 tokens, bf16 adapters.
TEST_F(TrainTest, AnAdapterDropoutOnDownProjKeepsItsMaskAndOutput) {
  auto acts = [&](const std::string& method, double dropout) {
    json t = {{"method", method},
              {"precision", "bf16"},
              {"seq_len", 512},
              {"lora", {{"rank", 16}, {"targets", {"down_proj"}}, {"adapter_fp32", false}, {"dropout", dropout}}}};
    if (method == "qlora") t["quant"] = {{"saves_input", true}};
    return component(run(request("meta-llama/Llama-3.2-1B", t)), "activations");
  };
  const int64_t elems = int64_t{16} * 512 * 8192;
  EXPECT_EQ(acts("lora", 0.1) - acts("lora", 0.0), elems * 1);
  EXPECT_EQ(acts("qlora", 0.1) - acts("qlora", 0.0), elems * 3);
}

// LitGPT's LoRAQKVLinear (train.lora.fused_qkv, the litgpt default): one
// dropout mask and one dropout output over the q/k/v input instead of one per
// projection. Llama-3.2-1B: 2,048 hidden, 16 layers, 512 tokens.
TEST_F(TrainTest, FusedQkvAdaptersShareOneDropout) {
  json t = {{"method", "lora"},
            {"precision", "bf16"},
            {"seq_len", 512},
            {"lora",
             {{"rank", 16}, {"targets", {"q_proj", "k_proj", "v_proj"}}, {"adapter_fp32", false}, {"dropout", 0.05}}}};
  json fused = t;
  fused["lora"]["fused_qkv"] = true;
  EXPECT_EQ(component(run(request("meta-llama/Llama-3.2-1B", t)), "activations") -
                component(run(request("meta-llama/Llama-3.2-1B", fused)), "activations"),
            int64_t{16} * 512 * 2 * (1 + 2) * 2048);
}

// QLoRA says the compute dtype the run gave (fp16 on a T4), not always bf16.
TEST_F(TrainTest, QloraNamesItsHalfPrecision) {
  const json r = run(request("meta-llama/Llama-3.2-1B", {{"method", "qlora"}, {"precision", "fp16"}}));
  bool found = false;
  for (const auto& a : r["assumptions"]) found = found || a.get<std::string>().rfind("precision fp16 (QLoRA", 0) == 0;
  EXPECT_TRUE(found) << r["assumptions"].dump();
}

TEST_F(TrainTest, LoraNeedsLessThanFullFineTuning) {
  for (const char* id : {"meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-7B", "google/gemma-2-2b", "facebook/opt-125m"}) {
    const int64_t full = peak(run(request(id, {{"method", "full"}})));
    const int64_t lora = peak(run(request(id, {{"method", "lora"}})));
    const int64_t qlora = peak(run(request(id, {{"method", "qlora"}})));
    EXPECT_LT(lora, full) << id;
    EXPECT_LT(qlora, lora) << id;
  }
}

TEST_F(TrainTest, EightBitStatesAreSmallerThanThirtyTwoBit) {
  const json s8 = run(request("meta-llama/Llama-3.2-1B", {{"precision", "amp_bf16"}, {"optimizer", "adamw_bnb_8bit"}}));
  const json s32 =
      run(request("meta-llama/Llama-3.2-1B", {{"precision", "amp_bf16"}, {"optimizer", "adamw_torch_fused"}}));
  EXPECT_LT(component(s8, "optimizer_states"), component(s32, "optimizer_states"));
  EXPECT_LT(peak(s8), peak(s32));
}

TEST_F(TrainTest, FusedLossNeedsLessThanStandardCrossEntropy) {
  for (int64_t s : {512, 4096}) {
    const json std_loss = run(request("meta-llama/Llama-3.1-8B", {{"seq_len", s}}));
    const json fused = run(request("meta-llama/Llama-3.1-8B", {{"seq_len", s}, {"fused_loss", true}}));
    EXPECT_LT(component(fused, "loss_buffers"), component(std_loss, "loss_buffers")) << s;
    EXPECT_LE(peak(fused), peak(std_loss)) << s;
  }
}

TEST_F(TrainTest, FrozenLayersStillSaveActivationsAboveTheFirstTrainedLayer) {
  // seed 002: training only the top layer still passes activation grads through
  // it; training layer 0 forces every layer above to save for backward.
  const json top =
      run(request("meta-llama/Llama-3.2-1B", {{"method", "freeze"}, {"trainable_modules", {"layers.15"}}}));
  const json bottom =
      run(request("meta-llama/Llama-3.2-1B", {{"method", "freeze"}, {"trainable_modules", {"layers.0"}}}));
  EXPECT_LT(component(top, "activations"), component(bottom, "activations"));
  EXPECT_EQ(top["model"]["params_trainable"], bottom["model"]["params_trainable"]);
}

TEST_F(TrainTest, LargestMicroBatchThatFitsReallyFits) {
  json req = request("meta-llama/Llama-3.2-1B", {{"seq_len", 2048}});
  req["gpu"] = {{"name", "A100 40GB"}};
  const json r = run(req);
  const int64_t b = r["fit"]["max_micro_batch"].get<int64_t>();
  ASSERT_GT(b, 0);
  const int64_t cap = r["fit"]["capacity_bytes"].get<int64_t>();
  req["train"]["micro_batch"] = b;
  EXPECT_LE(peak(run(req)), cap);
  req["train"]["micro_batch"] = b + 1;
  EXPECT_GT(peak(run(req)), cap);
}

// The longest sequence that fits (issue 29 item 4): the answer fits and one
// token more does not, whatever makes the figure (a plain full fine-tune,
// LitGPT's 128-token loss chunks, torchtune's padded replay, context parallel).
TEST_F(TrainTest, LongestSequenceThatFitsReallyFits) {
  const std::vector<std::pair<std::string, json>> jobs = {
      {"full", {{"micro_batch", 2}}},
      {"litgpt lora", {{"framework", "litgpt"}, {"method", "lora"}, {"micro_batch", 1}}},
      {"torchtune padded", {{"framework", "torchtune"}, {"method", "lora"}, {"micro_batch", 2}}},
  };
  for (const auto& [name, train] : jobs) {
    json req = request("meta-llama/Llama-3.2-1B", train);
    req["train"]["seq_len"] = 2048;
    req["gpu"] = {{"name", "L4 24GB"}};
    const json r = run(req);
    const int64_t s = r["fit"]["max_seq_len"].get<int64_t>();
    ASSERT_GT(s, 2048) << name;
    ASSERT_LT(s, int64_t{1} << 20) << name;
    const int64_t cap = r["fit"]["capacity_bytes"].get<int64_t>();
    req["train"]["seq_len"] = s;
    const json at = run(req);
    EXPECT_LE(peak(at), cap) << name;
    EXPECT_EQ(at["fit"]["max_seq_len"], s) << name;  // the same answer from any start
    req["train"]["seq_len"] = s + 1;
    EXPECT_GT(peak(run(req)), cap) << name;
  }
}

// Worked by hand: with FlashAttention-style attention every term of a full
// fine-tune's step grows linearly in the sequence, so the peak is a + b s on
// the live tensors; a and b from the peaks at 1024 and 2048 tokens give the
// longest sequence (capacity - a) / b, which the search must match within
// the allocator's rounding (one 2 MiB block per tensor kind at most).
TEST_F(TrainTest, LongestSequenceMatchesTheLinearPeakWorkedByHand) {
  json req = request("Qwen/Qwen3-0.6B", {{"micro_batch", 1}, {"attention", "sdpa"}});
  req["overheads"] = {{"fragmentation", 1.0}};  // the live tensors: no allocator replay
  req["gpu"] = {{"name", "L4 24GB"}};
  req["train"]["seq_len"] = 1024;
  const json r1 = run(req);
  req["train"]["seq_len"] = 2048;
  const json r2 = run(req);
  const double b = static_cast<double>(peak(r2) - peak(r1)) / 1024.0;
  const double a = static_cast<double>(peak(r1)) - 1024.0 * b;
  const double cap = static_cast<double>(r1["fit"]["capacity_bytes"].get<int64_t>());
  const double by_hand = (cap - a) / b;
  const double searched = static_cast<double>(r1["fit"]["max_seq_len"].get<int64_t>());
  EXPECT_NEAR(searched, by_hand, by_hand * 0.01) << "a " << a << " b " << b;
}

// ---- bad input ---------------------------------------------------------------

TEST_F(TrainTest, BadTrainingFieldsNameTheirPath) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"seq_len", 0}}, "train.seq_len"},
      {{{"micro_batch", -1}}, "train.micro_batch"},
      {{{"micro_batch", "four"}}, "train.micro_batch"},
      {{{"precision", "bf17"}}, "train.precision"},
      {{{"optimizer", "adamw_quantum"}}, "train.optimizer"},
      {{{"attention", "magic"}}, "train.attention"},
      {{{"grad_accum", 1.5}}, "train.grad_accum"},
      {{{"seq_len", int64_t{1} << 40}}, "train.seq_len"},
      {{{"method", "freeze"}}, "train.trainable_modules"},
      {{{"method", "freeze"}, {"trainable_modules", {"layers.99"}}}, "train.trainable_modules[0]"},
  };
  for (const auto& [train, path] : cases) {
    const json r = estimate(request("meta-llama/Llama-3.2-1B", train));
    ASSERT_TRUE(r.contains("error")) << train.dump();
    EXPECT_EQ(r["error"]["path"], path) << train.dump();
    EXPECT_FALSE(r["error"]["message"].get<std::string>().empty());
  }
}

TEST_F(TrainTest, NanAndGarbageTextNeverCrash) {
  EXPECT_NE(estimate_json("{not json").find("bad_json"), std::string::npos);
  EXPECT_NE(estimate_json("[]").find("wrong_type"), std::string::npos);
  EXPECT_NE(estimate_json("{\"model\": {\"config\": {\"model_type\": \"llama\"}}, \"train\": {\"seq_len\": NaN}}")
                .find("bad_json"),
            std::string::npos);
  EXPECT_NE(estimate_json("{}").find("model.config"), std::string::npos);
}

TEST_F(TrainTest, UnknownGpuListsTheCatalog) {
  json req = request("meta-llama/Llama-3.2-1B", json::object());
  req["gpu"] = {{"name", "Voodoo 2"}};
  const json r = estimate(req);
  ASSERT_TRUE(r.contains("error"));
  EXPECT_EQ(r["error"]["path"], "gpu.name");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("H100 80GB"), std::string::npos);
}

}  // namespace
}  // namespace vram

namespace vram {
namespace {

// Every bundled preset (the page offers them all) estimates without error, and
// every byte figure is non-negative, for each method and for inference.
TEST(EveryPreset, EstimatesForEveryMethodAndInference) {
  const json rows = json::parse(testing::read_text("models.json"));
  for (const auto& row : rows) {
    const json cfg = json::parse(testing::read_text(row["config"].get<std::string>()));
    for (const char* method : {"full", "lora", "qlora"}) {
      const json r = estimate({{"model", {{"config", cfg}}}, {"train", {{"method", method}, {"seq_len", 1024}}}});
      ASSERT_FALSE(r.contains("error")) << row["id"] << " " << method << ": " << r.dump();
      EXPECT_GT(r["peak_bytes"].get<int64_t>(), 0) << row["id"];
      for (const auto& c : r["components"]) EXPECT_GE(c["bytes"].get<int64_t>(), 0) << row["id"] << " " << c["key"];
    }
    const json inf = estimate({{"model", {{"config", cfg}}}, {"task", "infer"}, {"infer", {{"context_len", 8192}}}});
    ASSERT_FALSE(inf.contains("error")) << row["id"] << ": " << inf.dump();
    EXPECT_GT(inf["peak_bytes"].get<int64_t>(), 0);
  }
}

// Gemma 2 soft-caps its attention scores and its logits (cap * tanh(x / cap);
// transformers modeling_gemma2.py eager_attention_forward and
// Gemma2ForCausalLM.forward at 006e8693; configuration_gemma2.py at 008e5743:
// attn_logit_softcapping 50.0, final_logit_softcapping 30.0, null = off).
// tanh keeps its output for backward (derivatives.yaml tanh: result); the
// division and the product by the scalar cap keep nothing. Gemma-2-2B (26
// layers, 8 heads, vocab 256,000, sliding window 4096 > 512), LoRA, 1 x 512,
// pure bf16, no checkpointing; against the same config with both caps null.
json gemma2_softcap_request(bool capped, json train) {
  json cfg = testing::model_config("google/gemma-2-2b");
  if (!capped) cfg["attn_logit_softcapping"] = cfg["final_logit_softcapping"] = nullptr;
  train["method"] = "lora";
  train["micro_batch"] = 1;
  train["seq_len"] = 512;
  train["precision"] = "bf16";
  train["grad_checkpointing"] = "none";
  return {{"model", {{"config", cfg}}}, {"task", "train"}, {"train", train}};
}

// Each layer keeps one more 8 x 512 x 512 bf16 tensor under eager attention
// (26 x 2 x 8 x 512^2 = 109,051,904 B), the loss one more 512 x 256,000 bf16
// logits tensor (262,144,000 B), whether the logits come whole or in LitGPT's
// chunks of 128 tokens (lm_head_chunk_size: clamp_head per chunk).
TEST_F(TrainTest, SoftcapTanhKeepsItsOutputForTheScoresAndTheLogits) {
  for (const json& loss :
       {json{{"attention", "eager"}}, json{{"attention", "eager"}, {"loss", "chunked"}, {"loss_chunk_size", 128}}}) {
    const json capped = run(gemma2_softcap_request(true, loss));
    const json plain = run(gemma2_softcap_request(false, loss));
    EXPECT_EQ(component(capped, "activations") - component(plain, "activations"), int64_t{26} * 2 * 8 * 512 * 512)
        << loss.dump();
    EXPECT_EQ(component(capped, "loss_buffers") - component(plain, "loss_buffers"), int64_t{512} * 256000 * 2)
        << loss.dump();
  }
}

// Kernels that cap inside themselves keep no score or logit tensor: SDPA and
// FlashAttention (flash_attention_forward's softcap argument; transformers'
// sdpa path drops the cap, so the scores are never materialised either way),
// Liger's fused linear cross-entropy (liger_kernel/transformers/model/gemma2.py
// lce_forward: LigerFusedLinearCrossEntropyLoss(softcap=...)) and Unsloth's
// cross-entropy kernel (unsloth/kernels/cross_entropy_loss.py at 015bdef0:
// logit_softcapping applied in the Triton kernel, DO_SOFTCAPPING).
TEST_F(TrainTest, SoftcapInsideAKernelKeepsNothing) {
  for (const char* attention : {"sdpa", "flash_attention_2"}) {
    const json train = {{"attention", attention}};
    EXPECT_EQ(component(run(gemma2_softcap_request(true, train)), "activations"),
              component(run(gemma2_softcap_request(false, train)), "activations"))
        << attention;
  }
  const json fused = {{"attention", "sdpa"}, {"loss", "fused"}};
  EXPECT_EQ(component(run(gemma2_softcap_request(true, fused)), "loss_buffers"),
            component(run(gemma2_softcap_request(false, fused)), "loss_buffers"));
}

// LitGPT computes soft-capped attention itself (litgpt/model.py
// CausalSelfAttention.scaled_dot_product_attention, from 916a84ca to 26857050:
// "with softcapping we cannot use SDPA"): its sdpa default becomes eager for
// Gemma 2 and the result says so; not for Gemma (no cap), not for a Gemma 2
// config whose cap is null, and not where the request names the attention.
TEST_F(TrainTest, LitgptRunsSoftcappedAttentionEagerly) {
  const auto result = [](json cfg, json train) {
    train["framework"] = "litgpt";
    train["method"] = "lora";
    return testing::estimate_ok({{"model", {{"config", cfg}}}, {"task", "train"}, {"train", train}});
  };
  const json gemma2 = testing::model_config("google/gemma-2-2b");
  const json eager = result(gemma2, json::object());
  EXPECT_EQ(eager["train"]["attention"], "eager");
  EXPECT_TRUE(std::any_of(eager["assumptions"].begin(), eager["assumptions"].end(), [](const json& a) {
    return a.get<std::string>().find("LitGPT computes soft-capped attention scores itself") != std::string::npos;
  })) << eager["assumptions"].dump(2);
  EXPECT_EQ(result(testing::model_config("google/gemma-2b"), json::object())["train"]["attention"], "sdpa");
  json uncapped = gemma2;
  uncapped["attn_logit_softcapping"] = nullptr;
  EXPECT_EQ(result(uncapped, json::object())["train"]["attention"], "sdpa");
  EXPECT_EQ(result(gemma2, {{"attention", "sdpa"}})["train"]["attention"], "sdpa");
  // Another framework keeps its own default.
  EXPECT_EQ(testing::estimate_ok({{"model", {{"config", gemma2}}},
                                  {"task", "train"},
                                  {"train", {{"framework", "torchtune"}, {"method", "lora"}}}})["train"]["attention"],
            "sdpa");
}

}  // namespace
}  // namespace vram

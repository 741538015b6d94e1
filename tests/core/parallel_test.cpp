// Multi-GPU layouts: what each one divides, what it adds, and layout errors.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

constexpr int64_t kLlama2_7b = 6738415616;

json train_request(json parallel, json train = json::object()) {
  json t = {{"seq_len", 1024}, {"precision", "mixed_bf16"}, {"optimizer", "adamw_torch_fused"}};
  for (auto& [k, v] : train.items()) t[k] = v;
  return {{"model", {{"config", testing::model_config("meta-llama/Llama-2-7b-hf")}}},
          {"train", t},
          {"parallel", std::move(parallel)}};
}

int64_t comp(const json& r, const std::string& key) {
  EXPECT_FALSE(r.contains("error")) << r.dump();
  for (const auto& c : r["components"]) {
    if (c["key"] == key) return c["bytes"].get<int64_t>();
  }
  return 0;
}

// weights + gradients + fp32 master + optimizer states (+ DeepSpeed's fp32
// gradient partitions): the ZeRO paper's "model states".
int64_t model_states(const json& r) {
  return comp(r, "weights") + comp(r, "gradients") + comp(r, "master_weights") + comp(r, "optimizer_states") +
         comp(r, "grad_partitions");
}

// ZeRO paper (arXiv:1910.02054) §5 with K = 12, and DeepSpeed's own
// estimators, which add fp32 gradient partitions (4 psi / N): stage_1_and_2.py
// estimate_zero2_model_states_mem_needs "2 + 18/N", stage3.py "18/N" plus
// gathered layers. We follow what DeepSpeed allocates.
TEST(ZeroStages, ModelStatesFollowDeepSpeedsAllocation) {
  const double psi = kLlama2_7b;
  const int64_t n = 8;
  auto states = [&](int zero) {
    return static_cast<double>(model_states(estimate(train_request({{"gpus", n}, {"zero", zero}}))));
  };
  const double slack = 64.0 * n;                                        // per-tensor rounding of the partitions
  EXPECT_NEAR(states(1), 4 * psi + 12 * psi / n + 4 * psi / n, slack);  // paper 4 + 12/N, DeepSpeed + 4/N
  EXPECT_NEAR(states(2), 2 * psi + 18 * psi / n, slack);                // DeepSpeed's 2 + 18/N (paper: 2 + 14/N)
  EXPECT_NEAR(states(3), 20 * psi / n, slack);                          // paper 16/N, DeepSpeed 18/N + fp32 grads
}

TEST(ZeroStages, DdpReplicatesEverythingAndAddsBucketCopy) {
  const json r = estimate(train_request({{"gpus", 8}}));
  EXPECT_EQ(model_states(r), int64_t{16} * kLlama2_7b);
  EXPECT_EQ(comp(r, "comm_buffers"), 2 * kLlama2_7b);  // gradient_as_bucket_view=False
  const json view = estimate(train_request({{"gpus", 8}, {"gradient_as_bucket_view", true}}));
  EXPECT_EQ(comp(view, "comm_buffers"), 0);
}

TEST(ZeroStages, HigherStagesNeverHoldMoreModelState) {
  int64_t prev = model_states(estimate(train_request({{"gpus", 8}})));
  for (int zero : {1, 2, 3}) {
    const int64_t s = model_states(estimate(train_request({{"gpus", 8}, {"zero", zero}})));
    EXPECT_LE(s, prev) << "zero " << zero;
    prev = s;
  }
}

TEST(ZeroStages, MoreGpusNeverMorePerGpuModelState) {
  for (const json& layout : {json{{"zero", 1}}, json{{"zero", 2}}, json{{"zero", 3}}, json{{"fsdp", "full_shard"}},
                             json{{"fsdp", "shard_grad_op"}}}) {
    int64_t prev = INT64_MAX;
    for (int64_t n : {2, 4, 8, 16, 64}) {
      json p = layout;
      p["gpus"] = n;
      const int64_t s = model_states(estimate(train_request(p)));
      EXPECT_LE(s, prev) << layout.dump() << " n=" << n;
      prev = s;
    }
  }
}

TEST(ZeroStages, OptimizerOffloadLeavesOnlyBf16StateOnTheGpu) {
  const json r = estimate(train_request({{"gpus", 8}, {"zero", 3}, {"offload_optimizer", true}}));
  EXPECT_EQ(comp(r, "optimizer_states"), 0);
  EXPECT_EQ(comp(r, "master_weights"), 0);
  EXPECT_EQ(comp(r, "grad_partitions"), 0);
  const json p =
      estimate(train_request({{"gpus", 8}, {"zero", 3}, {"offload_optimizer", true}, {"offload_params", true}}));
  EXPECT_EQ(comp(p, "weights"), 0);
  EXPECT_GT(comp(p, "gathered_params"), 0);
}

// FSDP FULL_SHARD ~ ZeRO-3 without DeepSpeed's fp32 gradient partitions;
// HYBRID_SHARD shards only within a node.
TEST(Fsdp, HybridShardsWithinTheNode) {
  const json full = estimate(train_request({{"gpus", 32}, {"fsdp", "full_shard"}}));
  const json hybrid = estimate(train_request({{"gpus", 32}, {"fsdp", "hybrid_shard"}, {"gpus_per_node", 8}}));
  EXPECT_EQ(full["parallel"]["shard_group"], 32);
  EXPECT_EQ(hybrid["parallel"]["shard_group"], 8);
  EXPECT_LT(model_states(full), model_states(hybrid));
}

// Tensor parallel splits linears and embeddings (Megatron column/row
// parallel, vocab-parallel embeddings); norms stay whole.
TEST(TensorParallelTraining, DividesWeightsAndActivations) {
  const json one = estimate(train_request(json::object(), {{"precision", "bf16"}}));
  const json two = estimate(train_request({{"gpus", 2}, {"tp", 2}}, {{"precision", "bf16"}}));
  const int64_t norms = 2 * (2 * 32 + 1) * 4096;
  EXPECT_EQ(comp(two, "weights"), (comp(one, "weights") - norms) / 2 + norms);
  EXPECT_LT(comp(two, "activations"), comp(one, "activations"));
  EXPECT_GT(comp(two, "activations"), comp(one, "activations") / 2);  // norms and residual stay whole without SP
  const json sp =
      estimate(train_request({{"gpus", 2}, {"tp", 2}, {"sequence_parallel", true}}, {{"precision", "bf16"}}));
  EXPECT_LT(comp(sp, "activations"), comp(two, "activations"));
}

// Pipeline 1F1B: the first stage holds min(pp, micro-batches) in flight
// (Korthikanti et al. 2022 §4.2.3), so its activations are about the whole
// model's; the last stage holds the loss.
TEST(PipelineParallel, FirstStageHoldsInFlightMicroBatches) {
  const json r = estimate(train_request({{"gpus", 4}, {"pp", 4}}, {{"grad_accum", 8}, {"precision", "bf16"}}));
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_GT(r["parallel"]["first_stage_peak_bytes"].get<int64_t>(), 0);
  EXPECT_GT(r["parallel"]["last_stage_peak_bytes"].get<int64_t>(), 0);
  const json one = estimate(train_request(json::object(), {{"grad_accum", 8}, {"precision", "bf16"}}));
  EXPECT_LT(comp(r, "weights"), comp(one, "weights") / 3);
}

TEST(Layouts, DeepSpeedConfigFillsTheRequest) {
  json req = train_request({{"gpus", 4}});
  req["train"].erase("precision");
  req["deepspeed"] = {
      {"train_micro_batch_size_per_gpu", 2},
      {"gradient_accumulation_steps", 16},
      {"bf16", {{"enabled", true}}},
      {"zero_optimization", {{"stage", 3}, {"offload_optimizer", {{"device", "cpu"}}}, {"overlap_comm", true}}}};
  const json r = estimate(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["train"]["micro_batch"], 2);
  EXPECT_EQ(r["train"]["grad_accum"], 16);
  EXPECT_EQ(r["train"]["precision"], "mixed_bf16");
  EXPECT_EQ(r["parallel"]["layout"], "ZeRO-3");
  EXPECT_EQ(comp(r, "optimizer_states"), 0);
}

TEST(Layouts, BadLayoutsNameTheField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"gpus", 8}, {"dp", 3}}, "parallel.gpus"},
      {{{"gpus", 3}, {"tp", 3}}, "parallel.tp"},
      {{{"gpus", 64}, {"pp", 64}}, "parallel.pp"},
      {{{"gpus", 8}, {"fsdp", "shard_everything"}}, "parallel.fsdp"},
      {{{"gpus", 8}, {"fsdp", "full_shard"}, {"zero", 2}}, "parallel.fsdp"},
      {{{"gpus", 8}, {"zero", 2}, {"offload_params", true}}, "parallel.offload_params"},
      {{{"gpus", 8}, {"offload_optimizer", true}}, "parallel.offload_optimizer"},
      {{{"gpus", 8}, {"zero", 4}}, "parallel.zero"},
  };
  for (const auto& [p, path] : cases) {
    const json r = estimate(train_request(p));
    ASSERT_TRUE(r.contains("error")) << p.dump();
    EXPECT_EQ(r["error"]["path"], path) << p.dump();
  }
}

// Seed 001's worked examples, with our model. Where the seed's figure is far
// from ours, the difference is its missing fp32 master weights and gradient
// partitions (DeepSpeed keeps both: stage_1_and_2.py estimator).
TEST(Seed001, Llama2_7bZero2OnEightGpusNeedsMoreThanTheSeedsFourteenGiB) {
  json req = train_request({{"gpus", 8}, {"zero", 2}}, {{"seq_len", 4096},
                                                        {"micro_batch", 2},
                                                        {"grad_accum", 128},
                                                        {"attention", "flash_attention_2"},
                                                        {"grad_checkpointing", true}});
  const json r = estimate(req);
  const double gib = r["peak_bytes"].get<double>() / (1 << 30);
  // 2 psi bf16 weights alone are 12.55 GiB; 18 psi / 8 of partitioned state add 14.1 GiB.
  EXPECT_GT(gib, 14.0 + 12.0);
  EXPECT_NEAR(static_cast<double>(model_states(r)) / (1 << 30), (2.0 + 18.0 / 8) * kLlama2_7b / (1 << 30), 0.01);
}

TEST(Seed001, Mistral7bQloraZero3Dp4Tp2ReplicatesTheFourBitBase) {
  json req = {{"model", {{"config", testing::model_config("mistralai/Mistral-7B-v0.1")}}},
              {"train",
               {{"method", "qlora"},
                {"lora", {{"rank", 8}}},
                {"seq_len", 4096},
                {"micro_batch", 1},
                {"grad_accum", 64},
                {"attention", "flash_attention_2"},
                {"grad_checkpointing", true}}},
              {"parallel", {{"gpus", 8}, {"dp", 4}, {"tp", 2}, {"zero", 3}}}};
  const json r = estimate(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  // Seed: "~8 GiB/GPU, fits an RTX 4090". Ours agrees within 10 %: the NF4
  // base split by tp 2 (1.8 GiB), checkpointed layer inputs of 4096 tokens,
  // one recomputed layer, DeepSpeed's two 500M-element buckets and NCCL.
  const double gib = r["peak_bytes"].get<double>() / (1 << 30);
  EXPECT_NEAR(gib, 8.0, 0.8);
}

TEST(Seed001, Llama2_70bLoraZero3Dp32Tp4FitsAnA100_40GB) {
  json cfg = {{"model_type", "llama"},   {"hidden_size", 8192},         {"intermediate_size", 28672},
              {"num_hidden_layers", 80}, {"num_attention_heads", 64},   {"num_key_value_heads", 8},
              {"vocab_size", 32000},     {"tie_word_embeddings", false}};
  json req = {{"model", {{"config", cfg}}},
              {"train",
               {{"method", "lora"},
                {"lora", {{"rank", 64}}},
                {"seq_len", 4096},
                {"micro_batch", 1},
                {"grad_accum", 512},
                {"attention", "flash_attention_2"},
                {"grad_checkpointing", true},
                {"precision", "bf16"}}},
              {"parallel", {{"gpus", 128}, {"dp", 32}, {"tp", 4}, {"zero", 3}}},
              {"gpu", {{"name", "A100 40GB"}}}};
  const json r = estimate(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  // Seed: "~18 GiB/GPU -> fits on A100 40GB". Same verdict; ours is ~11.4 GiB
  // because the seed adds 13.5 GiB of fixed cushions (CUDA 2.5 + misc 3 +
  // fragmentation 5 + DeepSpeed stage-3 3 GiB, seed 000 "Overheads") where we
  // count the buffers DeepSpeed allocates (buckets, gathered layers) and NCCL.
  EXPECT_TRUE(r["fit"]["fits"].get<bool>());
  const double gib = r["peak_bytes"].get<double>() / (1 << 30);
  EXPECT_LT(gib, 18.0);
  EXPECT_GT(gib, 18.0 - 13.5);
}

}  // namespace
}  // namespace vram

namespace vram {
namespace {

TEST(Layouts, FewestGpusForALayoutReallyFit) {
  json req = train_request({{"gpus", 8}, {"zero", 3}}, {{"precision", "mixed_bf16"}});
  req["model"]["config"] = testing::model_config("meta-llama/Llama-3.1-8B");
  req["gpu"] = {{"name", "A100 40GB"}};
  const json r = estimate(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const int64_t n = r["parallel"]["min_gpus_to_fit"].get<int64_t>();
  ASSERT_GT(n, 1);
  const int64_t cap = r["fit"]["capacity_bytes"].get<int64_t>();
  req["parallel"]["gpus"] = n;
  EXPECT_LE(estimate(req)["peak_bytes"].get<int64_t>(), cap);
  req["parallel"]["gpus"] = n / 2;
  EXPECT_GT(estimate(req)["peak_bytes"].get<int64_t>(), cap);
}

}  // namespace
}  // namespace vram

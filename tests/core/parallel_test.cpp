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
  // ZeRO-3 with every tensor partitioned (stage3_param_persistence_threshold 0):
  // paper 16/N, DeepSpeed 18/N + fp32 grads.
  EXPECT_NEAR(
      model_states(estimate(train_request({{"gpus", n}, {"zero", 3}, {"stage3_param_persistence_threshold", 0}}))),
      20 * psi / n, slack);
  // The default threshold (1e5 elements, deepspeed/runtime/zero/config.py)
  // keeps Llama-2's 65 RMSNorm weights of 4096 whole on every rank.
  const double norms = 65.0 * 4096 * 2;
  EXPECT_NEAR(states(3), 20 * psi / n + norms * (n - 1) / n, slack);
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
                             json{{"fsdp", "shard_grad_op"}}, json{{"distributed_optimizer", true}}}) {
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

// Megatron-LM distributed optimizer (docs api-guide/dist_optimizer.md):
// bf16 params + fp32 main grads 6 + 12/d bytes per parameter; bf16 grads
// 4 + 16/d (the fp32 main-grad shard sits with the optimizer state).
TEST(MegatronDistributedOptimizer, FollowsItsBytesPerParameterTable) {
  const double psi = kLlama2_7b;
  const int64_t d = 8;
  const double slack = 64.0 * d;
  const json fp32_grads = estimate(train_request({{"gpus", d}, {"distributed_optimizer", true}}));
  ASSERT_EQ(fp32_grads["parallel"]["layout"], "Megatron distributed optimizer") << fp32_grads.dump();
  EXPECT_NEAR(static_cast<double>(model_states(fp32_grads)), 6 * psi + 12 * psi / d, slack);
  const json bf16_grads =
      estimate(train_request({{"gpus", d}, {"distributed_optimizer", true}, {"main_grads_fp32", false}}));
  EXPECT_NEAR(static_cast<double>(model_states(bf16_grads)), 4 * psi + 16 * psi / d, slack);
  // The non-distributed row of the same table: 18 bytes with fp32 grads is
  // DDP's 16 + 2; the distributed optimizer is always smaller for d > 1.
  EXPECT_LT(model_states(fp32_grads), model_states(estimate(train_request({{"gpus", d}}))));
  EXPECT_EQ(comp(fp32_grads, "comm_buffers"), 0);  // reduce-scatter in place in the grad buffer
}

// Every pipeline rank is estimated. 1F1B holds min(pp - r, m) micro-batches
// on rank r (Megatron schedules.py warm-up pp - r - 1, plus one); the
// interleaved schedule holds L (1 + (pp - 1) / (pp vp)) layers' worth on rank
// 0 (Korthikanti et al. 2022 §4.2.3).
TEST(PipelineParallel, EveryStageReportsItsInFlightMicroBatches) {
  const json r = estimate(train_request({{"gpus", 4}, {"pp", 4}}, {{"grad_accum", 8}, {"precision", "bf16"}}));
  ASSERT_EQ(r["parallel"]["stages"].size(), 4u) << r.dump();
  std::vector<double> in_flight;
  int64_t layers = 0;
  for (const auto& st : r["parallel"]["stages"]) {
    in_flight.push_back(st["in_flight"].get<double>());
    layers += st["layers"].get<int64_t>();
  }
  EXPECT_EQ(in_flight, (std::vector<double>{4, 3, 2, 1}));
  EXPECT_EQ(layers, 32);
  EXPECT_TRUE(r["parallel"]["stages"][0]["embeddings"].get<bool>());
  EXPECT_TRUE(r["parallel"]["stages"][3]["head"].get<bool>());
  EXPECT_EQ(r["parallel"]["busiest_stage"], 0);
  // Fewer micro-batches than stages: nobody holds more than m.
  const json few = estimate(train_request({{"gpus", 4}, {"pp", 4}}, {{"grad_accum", 2}, {"precision", "bf16"}}));
  EXPECT_EQ(few["parallel"]["stages"][0]["in_flight"], 2);
  EXPECT_EQ(few["parallel"]["stages"][3]["in_flight"], 1);
  // Interleaved, vp = 2: rank 0 holds (pp vp + pp - 1) / vp = 5.5 micro-batches
  // of its layers, 1 + 3/8 times the plain schedule's 4.
  const json vp =
      estimate(train_request({{"gpus", 4}, {"pp", 4}, {"vp", 2}}, {{"grad_accum", 8}, {"precision", "bf16"}}));
  EXPECT_EQ(vp["parallel"]["stages"][0]["in_flight"], 5.5);
  EXPECT_EQ(vp["parallel"]["stages"][3]["in_flight"], 2.5);  // (vp - 1) pp + 1 chunks / vp
  EXPECT_NEAR(static_cast<double>(comp(vp, "activations")) / static_cast<double>(comp(r, "activations")), 5.5 / 4,
              0.01);
}

// Parameters are conserved across stages: the layers of a MoE model with
// dense first layers (DeepSeek first_k_dense_replace) are cut by layer, not
// piled onto the last stage.
TEST(PipelineParallel, StagesHoldEveryParameterOnceWithMixedDenseAndMoeLayers) {
  json req = {{"model", {{"config", testing::model_config("deepseek-ai/DeepSeek-V2-Lite")}}},
              {"train", {{"seq_len", 512}, {"precision", "bf16"}, {"grad_accum", 4}}},
              {"parallel", {{"gpus", 3}, {"pp", 3}}}};
  const json r = estimate(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  int64_t params = 0, moe = 0;
  for (const auto& st : r["parallel"]["stages"]) {
    params += st["params"].get<int64_t>();
    moe += st["moe_layers"].get<int64_t>();
  }
  EXPECT_EQ(params, r["model"]["params_total"].get<int64_t>());
  EXPECT_EQ(moe, 26);                                      // 27 layers, the first dense
  EXPECT_EQ(r["parallel"]["stages"][0]["moe_layers"], 8);  // layers 0-8, layer 0 dense
}

// Expert parallel keeps experts / ep routed experts per MoE layer; their
// state is sharded over the expert-data-parallel group dp / ep only.
TEST(ExpertParallel, SplitsRoutedExpertsAndShardsThemOverTheRest) {
  auto mixtral = [](json parallel) {
    return estimate({{"model", {{"config", testing::model_config("mistralai/Mixtral-8x7B-v0.1")}}},
                     {"train", {{"seq_len", 1024}, {"precision", "mixed_bf16"}}},
                     {"parallel", std::move(parallel)}});
  };
  const json r = mixtral({{"gpus", 8}, {"ep", 4}, {"zero", 1}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  const int64_t total = r["model"]["params_total"].get<int64_t>();
  const int64_t experts = 32LL * 8 * 3 * 4096 * 14336;  // layers x experts x (w1, w3, w2)
  EXPECT_EQ(r["parallel"]["experts_per_rank"], 2);
  EXPECT_EQ(r["parallel"]["params_per_gpu"].get<int64_t>(), total - experts + experts / 4);
  // fp32 master: dense / 8 ranks + local experts / (8 / 4) ranks.
  EXPECT_NEAR(static_cast<double>(comp(r, "master_weights")),
              4.0 * static_cast<double>(total - experts) / 8 + 4.0 * static_cast<double>(experts) / 4 / 2, 4096.0);
  EXPECT_GT(comp(r, "moe_dispatch"), 0);
  // More expert parallelism never holds more per GPU.
  EXPECT_LT(r["peak_bytes"].get<int64_t>(),
            mixtral({{"gpus", 8}, {"ep", 2}, {"zero", 1}})["peak_bytes"].get<int64_t>());
}

// NCCL (research §2.4): ring/tree communicators hold channels x 2 connections
// x 9.19 MiB (SIMPLE 4 MiB + LL 512 KiB + LL128 4.6875 MiB); NVLS adds 2 MiB x
// 16 channels per local rank on sm90 NVSwitch boards.
TEST(Nccl, ChannelsConnectionsAndNvls) {
  const int64_t conn = (4 << 20) + (512 << 10) + (4800 << 10);
  const json dp8 = estimate(train_request({{"gpus", 8}, {"zero", 1}}));
  EXPECT_EQ(comp(dp8, "nccl"), 32 * 2 * conn);
  const json dp8_16 = estimate(train_request({{"gpus", 8}, {"zero", 1}, {"nccl_channels", 16}}));
  EXPECT_EQ(comp(dp8_16, "nccl"), 16 * 2 * conn);
  json h100 = train_request({{"gpus", 8}, {"zero", 1}});
  h100["gpu"] = {{"name", "H100 80GB"}};
  EXPECT_EQ(comp(estimate(h100), "nccl"), 32 * 2 * conn + 16 * 2 * (1 << 20) * 8);
  h100["parallel"]["nvls"] = false;
  EXPECT_EQ(comp(estimate(h100), "nccl"), 32 * 2 * conn);
  h100["overheads"] = {{"nccl_bytes", int64_t{3} << 30}};  // a measured value wins
  EXPECT_EQ(comp(estimate(h100), "nccl"), int64_t{3} << 30);
}

// FSDP: the root unit (embeddings, final norm, lm_head) stays gathered from
// forward to backward; FSDP1 holds the current and the prefetched unit,
// FSDP2 one unsharded layer and the next layer's flat all-gather output
// (Fsdp2StreamsTest below); an fp32 reduce dtype adds the reduce-scatter copy.
// FSDP1 named: hf's newest release would build the Trainer's FSDP2.
TEST(Fsdp, RootUnitVersionAndReduceDtype) {
  const json v1 = estimate(train_request({{"gpus", 8}, {"fsdp", "full_shard"}, {"fsdp_version", 1}}));
  const int64_t layer = 4 * 4096 * 4096 + 3 * 4096 * 11008;  // q k v o + gate up down
  const int64_t root = 2 * 32000 * 4096;                     // embed_tokens + lm_head, plus the final norm below
  // FSDP has no persistence threshold: the norms are gathered with their unit.
  EXPECT_EQ(comp(v1, "gathered_params"), (2 * (layer + 2 * 4096) + root + 4096) * 2);
  const json v2 = estimate(train_request({{"gpus", 8}, {"fsdp", "full_shard"}, {"fsdp_version", 2}}));
  EXPECT_EQ(comp(v2, "gathered_params"), comp(v1, "gathered_params"));
  EXPECT_EQ(comp(v1, "comm_buffers"), (layer + 2 * 4096) * 2);
  const json fp32 = estimate(
      train_request({{"gpus", 8}, {"fsdp", "full_shard"}, {"fsdp_version", 1}, {"fsdp_reduce_dtype", "fp32"}}));
  EXPECT_EQ(comp(fp32, "comm_buffers"), (layer + 2 * 4096) * (2 + 4));
  // An fp32 model (amp_bf16) with MixedPrecision(param_dtype=bf16): fp32
  // shards, bf16 gathered copies.
  const json amp = estimate(
      train_request({{"gpus", 8}, {"fsdp", "full_shard"}, {"fsdp_param_dtype", "bf16"}}, {{"precision", "amp_bf16"}}));
  const json amp32 = estimate(train_request({{"gpus", 8}, {"fsdp", "full_shard"}}, {{"precision", "amp_bf16"}}));
  EXPECT_EQ(comp(amp, "gathered_params"), comp(v1, "gathered_params"));
  EXPECT_EQ(comp(amp32, "gathered_params"), 2 * comp(v1, "gathered_params"));
}

// FSDP MixedPrecision(param_dtype=bf16) over an fp32 model: the forward
// runs on bf16 parameters, so the residual stream and the checkpointed layer
// inputs are bf16 (2 B), not autocast's fp32 (4 B). Llama-2-7B, 32 layers,
// h 4,096, 1,024 tokens, full checkpointing: 32 x 1,024 x 4,096 x 2 B less.
TEST(Fsdp, BfloatParamsMakeTheResidualStreamBfloat) {
  const json p16 = estimate(train_request({{"gpus", 8}, {"fsdp", "full_shard"}, {"fsdp_param_dtype", "bf16"}},
                                          {{"precision", "amp_bf16"}, {"grad_checkpointing", true}}));
  const json p32 = estimate(train_request({{"gpus", 8}, {"fsdp", "full_shard"}, {"fsdp_param_dtype", "fp32"}},
                                          {{"precision", "amp_bf16"}, {"grad_checkpointing", true}}));
  EXPECT_EQ(comp(p32, "activations") - comp(p16, "activations"), int64_t{32} * 1024 * 4096 * (4 - 2));
}

// Context parallel divides the sequence; ring attention adds the local
// chunk's K and V twice in forward (send/receive) and dK/dV twice more in
// backward (TransformerEngine AttnFuncWithCPAndKVP2P).
TEST(ContextParallel, SplitsTheSequenceAndAddsKvExchangeBuffers) {
  const json one = estimate(train_request({{"gpus", 1}}, {{"seq_len", 8192}, {"precision", "bf16"}}));
  const json cp =
      estimate(train_request({{"gpus", 4}, {"cp", 4}, {"dp", 1}}, {{"seq_len", 8192}, {"precision", "bf16"}}));
  ASSERT_FALSE(cp.contains("error")) << cp.dump();
  const int64_t kv = 2048 * 32 * (128 + 128) * 2;  // local tokens x kv heads x (k + v dims) x bf16
  EXPECT_EQ(comp(cp, "cp_kv_exchange"), 4 * kv);
  for (const auto& ph : cp["phases"]) {
    if (ph["key"] == "forward") EXPECT_EQ(ph["parts"]["cp_kv_exchange"], 2 * kv);
  }
  EXPECT_NEAR(static_cast<double>(comp(cp, "activations")), static_cast<double>(comp(one, "activations")) / 4,
              static_cast<double>(comp(one, "activations")) * 0.01);
}

// parallel.sharding names the strategy in one field.
TEST(Layouts, ShardingFieldIsTheSameAsTheDedicatedFields) {
  for (const auto& [name, fields] :
       std::vector<std::pair<std::string, json>>{{"zero2", {{"zero", 2}}},
                                                 {"full_shard", {{"fsdp", "full_shard"}}},
                                                 {"distributed_optimizer", {{"distributed_optimizer", true}}}}) {
    json a = fields;
    a["gpus"] = 8;
    const json b = {{"gpus", 8}, {"sharding", name}};
    EXPECT_EQ(estimate(train_request(a))["peak_bytes"], estimate(train_request(b))["peak_bytes"]) << name;
  }
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
      {{{"gpus", 8}, {"dp", 3}}, "parallel.dp"},
      // issue 18: tp 3 on 8 GPUs is the tensor-parallel field's fault, with
      // or without the dp the page sends (8 / 3 = 2).
      {{{"gpus", 8}, {"tp", 3}}, "parallel.tp"},
      {{{"gpus", 8}, {"tp", 3}, {"dp", 2}}, "parallel.tp"},
      {{{"gpus", 8}, {"tp", 2}, {"pp", 3}}, "parallel.pp"},
      {{{"gpus", 3}, {"tp", 3}}, "parallel.tp"},
      {{{"gpus", 64}, {"pp", 64}}, "parallel.pp"},
      {{{"gpus", 8}, {"fsdp", "shard_everything"}}, "parallel.fsdp"},
      {{{"gpus", 8}, {"fsdp", "full_shard"}, {"zero", 2}}, "parallel.fsdp"},
      {{{"gpus", 8}, {"zero", 2}, {"offload_params", true}}, "parallel.offload_params"},
      {{{"gpus", 8}, {"offload_optimizer", true}}, "parallel.offload_optimizer"},
      {{{"gpus", 8}, {"zero", 4}}, "parallel.zero"},
      {{{"gpus", 8}, {"ep", 2}}, "parallel.ep"},             // Llama has no experts
      {{{"gpus", 8}, {"pp", 2}, {"vp", 3}}, "parallel.vp"},  // 32 layers into 6 chunks
      {{{"gpus", 8}, {"vp", 2}}, "parallel.vp"},             // needs pp
      {{{"gpus", 8}, {"pp", 2}, {"zero", 2}}, "parallel.zero"},
      {{{"gpus", 8}, {"zero", 1}, {"distributed_optimizer", true}}, "parallel.distributed_optimizer"},
      {{{"gpus", 8}, {"nodes", 3}}, "parallel.nodes"},
      {{{"gpus", 8}, {"nccl_channels", 65}}, "parallel.nccl_channels"},
      {{{"gpus", 8}, {"fsdp", "full_shard"}, {"fsdp_version", 3}}, "parallel.fsdp_version"},
      {{{"gpus", 8}, {"fsdp", "full_shard"}, {"fsdp_reduce_dtype", "int8"}}, "parallel.fsdp_reduce_dtype"},
      {{{"gpus", 8}, {"sharding", "zero4"}}, "parallel.sharding"},
      {{{"gpus", 8}, {"sharding", "zero2"}, {"zero", 2}}, "parallel.sharding"},
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

TEST(Seed001, Mistral7bQloraZero3Dp4Tp2ShardsTheFourBitBase) {
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
  // Seed: "~8 GiB/GPU, fits an RTX 4090", with the NF4 base replicated over
  // dp (seed 000: "ZeRO-3 (QLoRA): base weights replicated"). ZeRO-3 QLoRA
  // runs with bnb_4bit_quant_storage, which shards the packed codes like any
  // parameter (PEFT docs accelerate/deepspeed.md, "Use PEFT QLoRA and
  // DeepSpeed with ZeRO3"): 32 layers x 218,103,808 4-bit values / tp 2 /
  // 2 per byte = 1,744,830,464 B per tp rank, of which dp 4 keeps a quarter.
  // Ours agrees within 10 % with the seed less the 3/4 of the codes sharding
  // removes: checkpointed layer inputs of 4096 tokens, one recomputed layer,
  // DeepSpeed's two 500M-element buckets and NCCL. The live tensors plus
  // what sits outside the allocator (the seed counts no allocator cache):
  double live = 0;
  for (const auto& p : r["phases"]) {
    if (p["key"] == r["peak_phase"]) live = p["bytes"].get<double>() - p["parts"]["allocator"].get<double>();
  }
  const double codes_gib = 1744830464.0 / (1 << 30);
  EXPECT_NEAR(live / (1 << 30), 8.0 - 0.75 * codes_gib, 0.8);
  // The caching allocator keeps the freed logits' blocks cached at the
  // backward peak (allocator replay): what nvidia-smi shows is higher, and
  // still fits the seed's RTX 4090.
  const double gib = r["peak_bytes"].get<double>() / (1 << 30);
  EXPECT_GT(gib, live / (1 << 30));
  EXPECT_LT(r["peak_bytes"].get<int64_t>(), int64_t{24} << 30);
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

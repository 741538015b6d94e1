// The time model (issue 31, core/src/speed): each term worked by hand from
// its formula and its sourced constants, and the request fields it reads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "estimate_helpers.h"
#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

// A Llama-shaped decoder small enough to count by hand: per layer q, k, v, o
// (4 x 256 x 256) and gate, up, down (3 x 256 x 512): 655,360 Linear weights;
// two layers and an untied 256 x 1,000 head: 1,566,720.
constexpr double kLinear = 2 * 655360 + 256000;

json tiny(json train = json::object(), json extra = json::object()) {
  json req = {{"model",
               {{"custom",
                 {{"layers", 2},
                  {"hidden", 256},
                  {"heads", 4},
                  {"kv_heads", 4},
                  {"intermediate", 512},
                  {"vocab", 1000},
                  {"tie_word_embeddings", false}}}}},
              {"task", "train"},
              {"train", {{"micro_batch", 1}, {"seq_len", 128}, {"precision", "bf16"}}},
              {"gpu", {{"name", "H100 80GB"}}}};
  if (train.is_object()) req["train"].update(train);
  if (extra.is_object()) req.update(extra);
  return req;
}

json time_of(const json& req) {
  const json r = testing::estimate_ok(req);
  EXPECT_TRUE(r.contains("time")) << r.dump();
  return r["time"];
}

json term(const json& t, const std::string& key) {
  for (const auto& x : t["terms"]) {
    if (x["key"] == key) return x;
  }
  return nullptr;
}

double low(const json& t, const std::string& key) {
  const json x = term(t, key);
  EXPECT_FALSE(x.is_null()) << "no term " << key << " in " << t["terms"].dump();
  return x.is_null() ? -1 : x["seconds"]["low"].get<double>();
}

double high(const json& t, const std::string& key) {
  const json x = term(t, key);
  EXPECT_FALSE(x.is_null()) << "no term " << key;
  return x.is_null() ? -1 : x["seconds"]["high"].get<double>();
}

// Four significant digits in the JSON: compare to 1e-3.
void near(double got, double want) { EXPECT_NEAR(got / want, 1.0, 1e-3) << got << " vs " << want; }

// 6N FLOPs per token (Kaplan et al. 2020 §2.1): forward 2N, the input
// gradient 2N and the weight gradient 2N, at the H100's measured 794.5 TFLOPS
// (stas00/ml-engineering MAMF) for the fast end and x 0.75 for the slow one.
TEST(Speed, FullFineTuneMatmulsAreSixTimesTheLinearWeightsPerToken) {
  const json t = time_of(tiny());
  const double flops = 6 * kLinear * 128;
  near(low(t, "matmul"), flops / 794.5e12);
  near(high(t, "matmul"), flops / (794.5e12 * 0.75));
}

// LoRA freezes the base: no weight gradient for it (4N), and each adapter of
// rank r on a d_in x d_out Linear costs 6 r (d_in + d_out) FLOPs a token.
TEST(Speed, LoraSkipsTheBaseWeightGradient) {
  const json t = time_of(tiny({{"method", "lora"}, {"lora", {{"rank", 8}, {"targets", {"q_proj", "v_proj"}}}}}));
  const double adapters = 2 /* layers */ * 2 /* targets */ * 8.0 * (256 + 256);
  near(low(t, "matmul"), (4 * kLinear + 6 * adapters) * 128 / 794.5e12);
}

// Full recomputation runs every forward again: 8N instead of 6N.
TEST(Speed, FullCheckpointingRunsTheForwardAgain) {
  const json none = time_of(tiny());
  const json full = time_of(tiny({{"grad_checkpointing", "full"}}));
  near(low(full, "matmul") / low(none, "matmul"), 8.0 / 6.0);
}

// The attention core with a fused kernel: 2 x (head dim q/k + v) x heads FLOPs
// per key, half the sequence's keys under the causal mask, x 3.5 for forward
// and FlashAttention-2's backward (which recomputes the scores), at 0.84 of
// the measured matmul rate at the fast end (Dao 2023).
TEST(Speed, FusedAttentionCountsHalfTheSquare) {
  const json t = time_of(tiny({{"attention", "sdpa"}, {"seq_len", 1024}}));
  const double fwd = 2.0 * 4 * (64 + 64) * 512 * 1024 * 2 /* layers */;
  near(low(t, "attention"), 3.5 * fwd / (794.5e12 * 0.84));
}

// DDP all-reduces the gradients once per optimizer step: 2 (n - 1) / n of
// them through each GPU's link (nccl-tests PERFORMANCE.md) at NVLink SHARP's
// 473.1 GB/s measured on 8 H100-class GPUs, its 256 MiB share at the slow end,
// plus one call's latency; backward may hide it at the fast end.
TEST(Speed, DataParallelAllReduceUsesTheLinksMeasuredBusBandwidth) {
  const json r = testing::estimate_ok(tiny({}, {{"parallel", {{"gpus", 8}}}}));
  const json& t = r["time"];
  const double params = static_cast<double>(r["model"]["params_trainable"].get<int64_t>());
  const double slow_bus = 473.1 * 646.1 / 740.6;
  near(high(t, "data_parallel"), 1.75 * params * 2 / (slow_bus * 1e9) + 48e-6);
}

// 1F1B idles (pp - 1) / vp micro-steps (Narayanan et al. 2021 §2.2): with pp 2
// and 4 micro-steps, a quarter of the busiest rank's compute terms.
TEST(Speed, PipelineBubbleIsPpMinusOneMicroSteps) {
  const json t = time_of(tiny({{"grad_accum", 4}}, {{"parallel", {{"gpus", 2}, {"pp", 2}}}}));
  double micro = 0;
  for (const char* k : {"matmul", "attention", "memory_bound", "host_dispatch"}) {
    if (!term(t, k).is_null()) micro += low(t, k);
  }
  near(low(t, "pipeline_bubble") * 4, micro);
}

// transformers generate dispatches every kernel from Python: 43 a layer and
// 10 a step, at 17.7 us each at the fast end (h2oai/h2ogpt's RTX 4090 host),
// longer than an H100 reads Llama-3.2-1B's 2.5 GB.
TEST(Speed, EagerDecodeOfASmallModelWaitsForTheHost) {
  const json r = testing::estimate_ok({{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
                                       {"task", "infer"},
                                       {"infer", {{"engine", "hf"}, {"batch", 1}, {"context_len", 512}}},
                                       {"gpu", {{"name", "H100 80GB"}}}});
  const json& t = r["time"];
  near(t["decode_step_seconds"]["low"].get<double>(), (43.0 * 16 + 10) * 17.7e-6);
  EXPECT_FALSE(term(t, "decode_host").is_null());
}

// bitsandbytes 4-bit weights at batch 1: 1.65 more dispatches a Linear
// (h2ogpt's measured cost), and with double quantisation 2 more (gemv_4bit
// dequantises the 8-bit absmax and adds its offset first): Llama-3.2-1B
// passes 16 x 7 Linears a token (its head is the tied embedding). The step
// times carry four significant digits, so their differences match to 1 %.
TEST(Speed, DoubleQuantisedDecodeDispatchesTheAbsmaxToo) {
  auto host = [](const char* dtype) {
    const json r = testing::estimate_ok(
        {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
         {"task", "infer"},
         {"infer", {{"engine", "hf"}, {"batch", 1}, {"context_len", 512}, {"weights_dtype", dtype}}},
         {"gpu", {{"name", "H100 80GB"}}}});
    return r["time"]["decode_step_seconds"]["low"].get<double>();
  };
  const double linears = 16 * 7;
  EXPECT_NEAR((host("nf4") - host("bf16")) / (1.65 * linears * 17.7e-6), 1.0, 0.01);
  EXPECT_NEAR((host("nf4-dq") - host("nf4")) / (2 * linears * 17.7e-6), 1.0, 0.01);
}

// vLLM replays a CUDA graph: a decode step of Llama-3.1-8B at batch 1 reads
// its 16 GB of bf16 weights and the keys and values at 3,350 GB/s x 0.83
// (gpt-fast's best on A100) at the fast end.
TEST(Speed, GraphDecodeIsTheWeightsOverTheBandwidth) {
  const json r = testing::estimate_ok({{"model", {{"config", testing::model_config("meta-llama/Llama-3.1-8B")}}},
                                       {"task", "infer"},
                                       {"infer", {{"engine", "vllm"}, {"batch", 1}, {"context_len", 1024}}},
                                       {"gpu", {{"name", "H100 80GB"}}}});
  const double weights = static_cast<double>(testing::component_bytes(r, "weights"));
  const double kv = 131072.0 * 1024;  // 128 KiB a token: 32 layers x 8 KV heads x 128 x 2 x 2 B
  near(low(r["time"], "decode_memory"), (weights + kv) / (3350e9 * 1700.0 / 2039.0));
}

// llama.cpp (issue 31 item 2): a decode step reads every GPU's weights at the
// card's bandwidth and the layers -ngl leaves on the CPU at the host's (89.6
// GB/s, the desktop default), one after the other; the token embedding is
// never read whole (get_rows). On an Ampere or newer card llama.cpp replays a
// CUDA graph (ggml-cuda.cu ggml_cuda_graph_set_enabled), so no eager dispatch
// term; a V100 (compute capability 7.0) keeps it.
json llama_cpp(int ngl, const char* gpu) {
  return testing::estimate_ok(
      {{"model", {{"config", testing::model_config("meta-llama/Llama-3.1-8B")}}},
       {"task", "infer"},
       {"infer", {{"engine", "llama_cpp"}, {"weights_dtype", "Q4_K_M"}, {"ctx_size", 4096}, {"n_gpu_layers", ngl}}},
       {"gpu", {{"name", gpu}}}});
}

TEST(Speed, LlamaCppReadsTheCpuLayersAtTheHostsBandwidth) {
  const json r = llama_cpp(20, "RTX 4090");
  const json& i = r["infer"];
  const double gpu_w = i["decode_gpu_weights_bytes"].get<double>();
  const double host_w = i["decode_host_weights_bytes"].get<double>();
  // 20 layers' keys and values on the GPU, 12 on the host: 4096 B a layer
  // and token (8 KV heads x 128 x K and V x f16).
  EXPECT_EQ(i["kv_gpu_bytes_per_token"], 20 * 4096);
  EXPECT_EQ(i["kv_host_bytes_per_token"], 12 * 4096);
  const double share = 1700.0 / 2039.0;  // work.cpp kBandwidthShare, the fast end
  const double ctx = r["time"]["mean_context"].get<double>();
  near(low(r["time"], "decode_memory"), (gpu_w + 20 * 4096 * ctx) / (1008e9 * share));
  near(low(r["time"], "decode_host_memory"), (host_w + 12 * 4096 * ctx) / (89.6e9 * share));
  EXPECT_TRUE(term(r["time"], "decode_host").is_null()) << r["time"]["terms"].dump();

  // Every layer and the output on the GPU: nothing read from host memory,
  // and the same GPU weights the busiest GPU holds less the embedding.
  const json all = llama_cpp(99, "RTX 4090");
  EXPECT_EQ(all["infer"]["decode_host_weights_bytes"], 0);
  EXPECT_EQ(all["infer"]["kv_host_bytes_per_token"], 0);
  EXPECT_TRUE(term(all["time"], "decode_host_memory").is_null());
  EXPECT_GT(all["time"]["decode_tokens_per_second_per_sequence"]["low"].get<double>(),
            4 * r["time"]["decode_tokens_per_second_per_sequence"]["low"].get<double>());

  // No CUDA graphs before Ampere: each layer's node-by-node launches cost what
  // a token lost without graphs in llama.cpp PR #6766 / issue #6763 (0.419-0.872
  // ms for LLaMA-2-7B's 32 layers), not transformers' Python dispatch.
  const json v100 = llama_cpp(99, "V100 32GB");
  EXPECT_TRUE(term(all["time"], "decode_launch").is_null()) << all["time"]["terms"].dump();
  ASSERT_FALSE(term(v100["time"], "decode_launch").is_null()) << v100["time"]["terms"].dump();
  near(low(v100["time"], "decode_launch"), 0.419e-3);
  EXPECT_TRUE(term(v100["time"], "decode_host").is_null()) << v100["time"]["terms"].dump();
}

// A llama.cpp request states its context as --ctx-size (infer.context_len is
// refused), so the time model reads the cells the estimate resolved over its
// sequences, not context_len's default 4096; and it prefills in micro-batches
// of n_ubatch tokens, each reading every weight (llama-context.cpp
// llama_context::decode splits a batch by n_ubatch).
TEST(Speed, LlamaCppTimeReadsItsCtxSizeAndPrefillsInMicroBatches) {
  auto run = [](int64_t ctx, int64_t ubatch) {
    return testing::estimate_ok({{"model", {{"config", testing::model_config("meta-llama/Llama-3.1-8B")}}},
                                 {"task", "infer"},
                                 {"infer",
                                  {{"engine", "llama_cpp"},
                                   {"weights_dtype", "Q4_K_M"},
                                   {"ctx_size", ctx},
                                   {"batch", 1},
                                   {"n_ubatch", ubatch},
                                   {"n_gpu_layers", 99}}},
                                 {"gpu", {{"name", "RTX 4090"}}}});
  };
  const json r = run(8192, 512);
  EXPECT_EQ(r["time"]["prompt_len"], 8192);
  EXPECT_EQ(r["time"]["mean_context"], 8192);
  auto chunks = [](const json& t) {
    for (const auto& x : t["prefill_terms"]) {
      if (x["key"] == "prefill_weights") return x["formula"].get<std::string>();
    }
    return std::string();
  };
  EXPECT_EQ(chunks(r["time"]).rfind("16 chunk(s) of 512 tokens", 0), 0u) << chunks(r["time"]);
  const json big = run(8192, 2048);
  EXPECT_EQ(chunks(big["time"]).rfind("4 chunk(s) of 2048 tokens", 0), 0u) << chunks(big["time"]);
  // A shorter context reads less cache a step: faster decode.
  const json short_ctx = run(1024, 512);
  EXPECT_EQ(short_ctx["time"]["prompt_len"], 1024);
  EXPECT_GT(short_ctx["time"]["decode_tokens_per_second_per_sequence"]["low"].get<double>(),
            r["time"]["decode_tokens_per_second_per_sequence"]["low"].get<double>());
}

// vLLM prefills in chunks of max_num_batched_tokens; left out, the chunk is
// the engine's own default the memory estimate applied (8192 for the API
// server on an 80 GB card, infer/vllm.cpp scheduler_defaults), not zero
// (which made the chunk count infinite: UBSan in the request corpus).
TEST(Speed, VllmPrefillChunksAtTheEnginesDefaultBudget) {
  const json r = testing::estimate_ok({{"model", {{"config", testing::model_config("meta-llama/Llama-3.1-8B")}}},
                                       {"task", "infer"},
                                       {"infer", {{"engine", "vllm"}, {"batch", 4}, {"context_len", 4096}}},
                                       {"gpu", {{"name", "H100 80GB"}}}});
  const json& t = r["time"];
  ASSERT_TRUE(t["ttft_seconds"]["low"].is_number()) << t.dump();
  EXPECT_TRUE(std::isfinite(t["ttft_seconds"]["high"].get<double>()));
  EXPECT_GT(t["ttft_seconds"]["low"].get<double>(), 0.0);
  std::string formula;
  for (const auto& x : t["prefill_terms"]) {
    if (x["key"] == "prefill_weights") formula = x["formula"].get<std::string>();
  }
  EXPECT_EQ(formula.rfind("2 chunk(s) of 8192 tokens", 0), 0u) << formula;
}

// A batch of one picks k of E routed experts a layer: Mixtral reads 2 of 8.
TEST(Speed, MixtureOfExpertsDecodeReadsTheExpertsTheBatchPicks) {
  auto step = [](int64_t batch) {
    const json r = testing::estimate_ok({{"model", {{"config", testing::model_config("mistralai/Mixtral-8x7B-v0.1")}}},
                                         {"task", "infer"},
                                         {"infer", {{"engine", "vllm"}, {"batch", batch}, {"context_len", 128}}},
                                         {"gpu", {{"name", "B200 180GB"}}}});
    return term(r["time"], "decode_memory")["formula"].get<std::string>();
  };
  EXPECT_NE(step(1).find("(25 % of the routed experts)"), std::string::npos) << step(1);
  EXPECT_NE(step(64).find("(100"), std::string::npos) << step(64);
}

// The run: samples x seq_len (padded to max_length) x epochs, over the
// step's tokens; its cost: GPU-hours x the price.
TEST(Speed, RunHoursAndCostFollowTheSamplesAndThePrice) {
  const json t = time_of(tiny({}, {{"time", {{"samples", 1000}, {"epochs", 2}, {"gpu_hour_usd", 3.0}}}}));
  EXPECT_EQ(t["run"]["tokens"].get<double>(), 1000.0 * 128 * 2);
  EXPECT_EQ(t["price"]["source"], "time.gpu_hour_usd");
  const double hours = 1000.0 * 128 * 2 / t["tokens_per_second_per_gpu"]["high"].get<double>() / 3600;
  near(t["run_hours"]["low"].get<double>(), hours);
  near(t["usd"]["low"].get<double>(), hours * 3.0);
}

// time.prices replaces the default table's price for the cards it names.
TEST(Speed, PriceTableOverridesTheDefaults) {
  const json t = time_of(tiny({}, {{"time", {{"prices", {{"4090", 0.5}}}}}}));
  bool seen = false;
  for (const auto& c : t["cards"]) {
    if (c["name"] != "RTX 4090 24GB") continue;
    seen = true;
    EXPECT_EQ(c["price"]["usd_per_gpu_hour"].get<double>(), 0.5);
    EXPECT_EQ(c["price"]["source"], "time.prices");
  }
  EXPECT_TRUE(seen);
  EXPECT_NE(t["price"]["source"].get<std::string>().find("RunPod"), std::string::npos);
}

// A card bf16 cannot run on (T4) has no row; every other catalog card has one.
TEST(Speed, CardsCoverTheCatalogTheJobRunsOn) {
  const json t = time_of(tiny());
  bool t4 = false, h100 = false;
  for (const auto& c : t["cards"]) {
    t4 = t4 || c["name"] == "T4 16GB";
    h100 = h100 || c["name"] == "H100 80GB";
  }
  EXPECT_FALSE(t4);
  EXPECT_TRUE(h100);
}

TEST(Speed, ACustomCardNeedsItsRates) {
  const json none = time_of(tiny({}, {{"gpu", {{"memory_gib", 24}}}}));
  EXPECT_TRUE(none["gpu"].is_null());
  EXPECT_NE(none["unavailable"].get<std::string>().find("hardware.matmul_tflops"), std::string::npos);
  const json given =
      time_of(tiny({}, {{"gpu", {{"memory_gib", 24}}}, {"hardware", {{"matmul_tflops", 100}, {"memory_gbs", 900}}}}));
  EXPECT_GT(given["step_seconds"]["low"].get<double>(), 0);
}

TEST(Speed, DisabledLeavesTheTimeOut) {
  const json r = testing::estimate_ok(tiny({}, {{"time", {{"enabled", false}}}}));
  EXPECT_FALSE(r.contains("time"));
}

TEST(Speed, BadTimeAndHardwareFieldsAreNamed) {
  struct Case {
    json extra;
    const char* code;
    const char* path;
  };
  const Case cases[] = {
      {{{"time", {{"tokens", 10}, {"samples", 10}}}}, errc::kInconsistent, "time.samples"},
      {{{"time", {{"prices", {{"Warp Drive 9000", 1.0}}}}}}, errc::kUnknownValue, "time.prices.Warp Drive 9000"},
      {{{"time", {{"epochs", 0}}}}, errc::kOutOfRange, "time.epochs"},
      {{{"hardware", {{"link", "warp"}}}}, errc::kUnknownValue, "hardware.link"},
      {{{"hardware", {{"network_gbps", -1}}}}, errc::kOutOfRange, "hardware.network_gbps"},
      {{{"time", {{"tokenz", 1}}}}, errc::kUnknownField, "time.tokenz"},
  };
  for (const auto& c : cases) {
    const json r = estimate(tiny({}, c.extra));
    ASSERT_TRUE(r.contains("error")) << c.extra.dump() << " -> " << r.dump();
    EXPECT_EQ(r["error"]["code"], c.code) << c.extra.dump();
    EXPECT_EQ(r["error"]["path"], c.path) << c.extra.dump();
  }
}

}  // namespace
}  // namespace vram

namespace vram {
namespace {

// time() (the page's time lane) answers the estimate's own time object, for
// training and for serving, without the estimate's searches.
TEST(Speed, TimeCallAnswersTheEstimatesTimeObject) {
  const json train = tiny({{"grad_accum", 2}}, {{"time", {{"tokens", 1000000}}}});
  EXPECT_EQ(time(train)["time"], testing::estimate_ok(train)["time"]);
  const json infer = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
                      {"task", "infer"},
                      {"infer", {{"engine", "vllm"}, {"batch", 8}, {"context_len", 2048}, {"prompt_len", 1024}}},
                      {"gpu", {{"name", "L40S"}}}};
  EXPECT_EQ(time(infer)["time"], testing::estimate_ok(infer)["time"]);
  json off = train;
  off["time"] = {{"enabled", false}};
  EXPECT_EQ(time(off)["error"]["path"], "time.enabled");
}

}  // namespace
}  // namespace vram

namespace vram {
namespace {

// Each suggestion says what it costs in time (issue 31): the time model's
// step after the change, and full checkpointing's step over the job's as
// asked is the recomputed forward's share, more than 1.
TEST(Speed, SuggestionsCarryTheirStepTime) {
  json req = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.1-8B")}}},
              {"task", "train"},
              {"train", {{"method", "full"}, {"micro_batch", 4}, {"seq_len", 2048}, {"precision", "bf16"}}},
              {"gpu", {{"name", "H100 80GB"}}}};
  const json r = suggest(req);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_TRUE(r["base"]["time"].is_object()) << r["base"].dump();
  bool full = false;
  for (const auto& s : r["suggestions"]) {
    if (s["gpu"] != "H100 80GB") continue;
    ASSERT_TRUE(s["time"].is_object()) << s.dump();
    EXPECT_GT(s["time"]["step_seconds"]["low"].get<double>(), 0) << s["key"];
    if (s["key"] == "checkpointing_full") {
      full = true;
      EXPECT_GT(s["time"]["vs_base"].get<double>(), 1.1) << s.dump();
    }
  }
  EXPECT_TRUE(full) << r["suggestions"].dump();
}

}  // namespace
}  // namespace vram

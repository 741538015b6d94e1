// Speed of the core (issue 3: parse + count of a 70B config; issue 4: one full
// estimate). Run: build/bin/vram_bench. Results are reported in the README,
// not asserted in tests.
#include <benchmark/benchmark.h>

#include "vram/api.h"
#include "vram/estimate.h"
#include "vram/families.h"
#include "vram/request.h"

namespace {

// meta-llama/Llama-2-70b-hf config.json architecture fields.
const vram::json kLlama70b = {{"model_type", "llama"},      {"hidden_size", 8192},
                              {"intermediate_size", 28672}, {"num_hidden_layers", 80},
                              {"num_attention_heads", 64},  {"num_key_value_heads", 8},
                              {"vocab_size", 32000},        {"tie_word_embeddings", false},
                              {"rms_norm_eps", 1e-5},       {"max_position_embeddings", 4096}};

void BM_ParseAndCount70b(benchmark::State& state) {
  const std::string text = kLlama70b.dump();
  for (auto _ : state) {
    auto spec = vram::model_from_config(vram::json::parse(text), "model.config");
    benchmark::DoNotOptimize(spec.value().params_total());
  }
}
BENCHMARK(BM_ParseAndCount70b);

void BM_ModelInfoJson70b(benchmark::State& state) {
  const std::string text = vram::json({{"config", kLlama70b}}).dump();
  for (auto _ : state) benchmark::DoNotOptimize(vram::model_info_json(text));
}
BENCHMARK(BM_ModelInfoJson70b);

void BM_EstimateTrainJson70b(benchmark::State& state) {
  const std::string text =
      vram::json({{"model", {{"config", kLlama70b}}},
                  {"task", "train"},
                  {"train", {{"method", "lora"}, {"micro_batch", 1}, {"seq_len", 4096}, {"grad_checkpointing", true}}}})
          .dump();
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_json(text));
}
BENCHMARK(BM_EstimateTrainJson70b);

void BM_EstimateTrainWithFitSearch70b(benchmark::State& state) {
  const std::string text = vram::json({{"model", {{"config", kLlama70b}}},
                                       {"task", "train"},
                                       {"train", {{"method", "qlora"}, {"seq_len", 2048}}},
                                       {"gpu", {{"name", "H100 80GB"}}}})
                               .dump();
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_json(text));
}
BENCHMARK(BM_EstimateTrainWithFitSearch70b);

// Request object in, result object out: no text parsing or printing.
void BM_EstimateJsonObject70b(benchmark::State& state) {
  const vram::json req = {{"model", {{"config", kLlama70b}}},
                          {"task", "train"},
                          {"train", {{"method", "lora"}, {"seq_len", 4096}, {"grad_checkpointing", true}}}};
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate(req));
}
BENCHMARK(BM_EstimateJsonObject70b);

// The estimate itself, without JSON parsing or printing.
void BM_EstimateCore70b(benchmark::State& state) {
  const vram::json req = {{"model", {{"config", kLlama70b}}},
                          {"task", "train"},
                          {"train", {{"method", "lora"}, {"seq_len", 4096}, {"grad_checkpointing", true}}}};
  const auto parsed = vram::parse_request(req);
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_request(parsed.value()).value().peak_bytes);
}
BENCHMARK(BM_EstimateCore70b);

// A 64-GPU layout: tp 8 x pp 8 (every pipeline rank estimated) x dp 1,
// ZeRO-1, with the fewest-GPUs search on an H100.
void BM_EstimatePipeline70b(benchmark::State& state) {
  const vram::json req = {{"model", {{"config", kLlama70b}}},
                          {"task", "train"},
                          {"train", {{"seq_len", 4096}, {"grad_accum", 16}}},
                          {"parallel", {{"gpus", 64}, {"tp", 8}, {"pp", 8}, {"zero", 1}}},
                          {"gpu", {{"name", "H100 80GB"}}}};
  const auto parsed = vram::parse_request(req);
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_request(parsed.value()).value().peak_bytes);
}
BENCHMARK(BM_EstimatePipeline70b);

// The planner over 64 H100s for 70B full fine-tuning: every DeepSpeed layout,
// JSON in and out.
void BM_Plan70bOn64Gpus(benchmark::State& state) {
  const vram::json req = {{"model", {{"config", kLlama70b}}},
                          {"task", "train"},
                          {"train", {{"seq_len", 4096}, {"grad_accum", 16}}},
                          {"parallel", {{"gpus", 64}}},
                          {"gpu", {{"name", "H100 80GB"}}}};
  for (auto _ : state) benchmark::DoNotOptimize(vram::plan(req));
}
BENCHMARK(BM_Plan70bOn64Gpus)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

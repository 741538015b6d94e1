// Speed of the core (issue 3: parse + count of a 70B config; issue 4: one full
// estimate). Run: build/bin/vram_bench. Results are reported in the README,
// not asserted in tests.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "memory/caching_allocator.h"
#include "test_paths.h"
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

// The same with train.padding longest: 7 shorter steps replayed before the
// two full-length ones (estimate_train.cpp shorter_steps).
void BM_EstimateTrainJson70bPadded(benchmark::State& state) {
  const std::string text = vram::json({{"model", {{"config", kLlama70b}}},
                                       {"task", "train"},
                                       {"train",
                                        {{"method", "lora"},
                                         {"micro_batch", 1},
                                         {"seq_len", 4096},
                                         {"grad_checkpointing", true},
                                         {"padding", "longest"}}}})
                               .dump();
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_json(text));
}
BENCHMARK(BM_EstimateTrainJson70bPadded);

void BM_EstimateTrainWithFitSearch70b(benchmark::State& state) {
  const std::string text = vram::json({{"model", {{"config", kLlama70b}}},
                                       {"task", "train"},
                                       {"train", {{"method", "qlora"}, {"seq_len", 2048}}},
                                       {"gpu", {{"name", "H100 80GB"}}}})
                               .dump();
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_json(text));
}
BENCHMARK(BM_EstimateTrainWithFitSearch70b);

// wasm/bench/bench.mjs's request: full fine-tuning on an H100, so the answer
// also searches the largest micro-batch and the longest sequence that fit
// (neither does: every probe stops at the live tensors' lower bound). This
// one leaves time.enabled at its default (true): the answer also carries the
// time model's object, which bench.mjs's request (time.enabled false, as the
// page's first estimate) leaves out; BM_EstimateFullOnH100Json70bUntimed
// below is that request's bytes.
vram::json full_on_h100_request() {
  return {{"model",
           {{"config",
             {{"architectures", {"LlamaForCausalLM"}},
              {"model_type", "llama"},
              {"hidden_size", 8192},
              {"intermediate_size", 28672},
              {"num_hidden_layers", 80},
              {"num_attention_heads", 64},
              {"num_key_value_heads", 8},
              {"vocab_size", 32000},
              {"max_position_embeddings", 4096},
              {"rms_norm_eps", 1e-5},
              {"hidden_act", "silu"},
              {"tie_word_embeddings", false},
              {"torch_dtype", "float16"}}}}},
          {"task", "train"},
          {"train",
           {{"method", "full"},
            {"micro_batch", 1},
            {"seq_len", 2048},
            {"precision", "bf16"},
            {"optimizer", "adamw_torch_fused"},
            {"grad_checkpointing", false},
            {"attention", "sdpa"}}},
          {"gpu", {{"name", "H100 80GB"}}}};
}

void BM_EstimateFullOnH100Json70b(benchmark::State& state) {
  const std::string text = full_on_h100_request().dump();
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_json(text));
}
BENCHMARK(BM_EstimateFullOnH100Json70b);

// bench.mjs's request as it sends it, time.enabled false: what the page's
// estimates cost in WebAssembly, natively.
void BM_EstimateFullOnH100Json70bUntimed(benchmark::State& state) {
  vram::json request = full_on_h100_request();
  request["time"] = {{"enabled", false}};
  const std::string text = request.dump();
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_json(text));
}
BENCHMARK(BM_EstimateFullOnH100Json70bUntimed);

// torchtune QLoRA: the replay also loads 560 4-bit weights through torchao's
// quantisation temporaries, twice (model build and checkpoint copy-in).
void BM_EstimateTorchtuneQlora70b(benchmark::State& state) {
  const std::string text = vram::json({{"model", {{"config", kLlama70b}}},
                                       {"task", "train"},
                                       {"train", {{"framework", "torchtune"}, {"method", "qlora"}, {"seq_len", 2048}}}})
                               .dump();
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_json(text));
}
BENCHMARK(BM_EstimateTorchtuneQlora70b);

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

// The validation rows of vLLM issue #21348 (tests/fixtures/validation/
// requests.json): Qwen3-235B-A22B-FP8 on 4 x H100 at tensor parallel 4, each
// engine sizing itself to the chosen card and to every card of the GPU table
// (estimate.cpp catalog_row), its start-up replayed through the
// caching-allocator model. The core, without JSON.
vram::Request qwen3_235b_fp8_tp4(const vram::json& infer) {
  std::ifstream in(std::string(VRAM_FIXTURES_DIR) + "/validation/Qwen__Qwen3-235B-A22B-FP8.json");
  std::stringstream text;
  text << in.rdbuf();
  const vram::json req = {{"model", {{"config", vram::json::parse(text.str())}}},
                          {"task", "infer"},
                          {"gpu", {{"name", "H100 80GB"}}},
                          {"parallel", {{"gpus", 4}, {"tp", 4}}},
                          {"infer", infer}};
  return vram::parse_request(req).value();
}

void BM_EstimateVllmQwen3_235bTp4(benchmark::State& state) {
  const vram::Request req = qwen3_235b_fp8_tp4({{"engine", "vllm"}});
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_request(req).value().peak_bytes);
}
BENCHMARK(BM_EstimateVllmQwen3_235bTp4)->Unit(benchmark::kMillisecond);

void BM_EstimateSglangQwen3_235bTp4(benchmark::State& state) {
  const vram::Request req = qwen3_235b_fp8_tp4({{"engine", "sglang"}, {"mem_fraction_static", 0.93}});
  for (auto _ : state) benchmark::DoNotOptimize(vram::estimate_request(req).value().peak_bytes);
}
BENCHMARK(BM_EstimateSglangQwen3_235bTp4)->Unit(benchmark::kMillisecond);

}  // namespace

// ---- The caching allocator model (core/src/memory/caching_allocator.h) -------

namespace {

// One synthetic training step of an 80-layer model as the ordered tensor
// allocations and frees the estimator replays: weights once, then per layer
// a forward that keeps saved tensors (8 MiB, 28 MiB, 1.5 MiB, 200 KiB) and
// drops temporaries, the loss buffers, and a backward in reverse that frees
// the saved tensors while allocating activation gradients and keeping LoRA
// gradients until the optimizer step.
struct AllocEvent {
  bool alloc = true;
  int32_t tensor = 0;
  int64_t bytes = 0;
};

std::vector<AllocEvent> training_step_events(int layers) {
  using vram::memory::kKiB;
  using vram::memory::kMiB;
  std::vector<AllocEvent> ev;
  int32_t next = 0;
  auto alloc = [&](int64_t bytes) {
    ev.push_back({true, next, bytes});
    return next++;
  };
  auto release = [&](int32_t t) { ev.push_back({false, t, 0}); };
  // Weights of each layer: q, k, v, o, gate, up, down, two norms, four LoRA
  // adapters (A and B of two modules).
  for (int l = 0; l < layers; ++l) {
    for (int64_t b : {32 * kMiB, 4 * kMiB, 4 * kMiB, 32 * kMiB, 112 * kMiB, 112 * kMiB, 112 * kMiB, 16 * kKiB,
                      16 * kKiB, 128 * kKiB, 128 * kKiB, 128 * kKiB, 128 * kKiB}) {
      alloc(b);
    }
  }
  std::vector<std::vector<int32_t>> saved(static_cast<size_t>(layers));
  for (int l = 0; l < layers; ++l) {
    auto& s = saved[static_cast<size_t>(l)];
    for (int64_t b : {8 * kMiB, 200 * kKiB, 8 * kMiB, 8 * kMiB, 1536 * kKiB, 200 * kKiB, 8 * kMiB, 1536 * kKiB,
                      8 * kMiB, 200 * kKiB, 28 * kMiB, 28 * kMiB, 28 * kMiB, 200 * kKiB, 8 * kMiB}) {
      s.push_back(alloc(b));
    }
    const int32_t attn_tmp = alloc(24 * kMiB);  // temporaries of the layer
    const int32_t mlp_tmp = alloc(28 * kMiB);
    release(attn_tmp);
    release(mlp_tmp);
  }
  const int32_t logits = alloc(500 * kMiB);
  const int32_t logits_fp32 = alloc(1000 * kMiB);
  release(logits_fp32);
  int32_t grad_out = alloc(8 * kMiB);
  release(logits);
  std::vector<int32_t> lora_grads;
  for (int l = layers - 1; l >= 0; --l) {
    const int32_t grad_mlp = alloc(28 * kMiB);
    const int32_t grad_gate = alloc(28 * kMiB);
    for (int i = 0; i < 4; ++i) lora_grads.push_back(alloc(128 * kKiB));
    auto& s = saved[static_cast<size_t>(l)];
    for (auto it = s.rbegin(); it != s.rend(); ++it) release(*it);
    release(grad_gate);
    release(grad_mlp);
    const int32_t grad_in = alloc(8 * kMiB);
    release(grad_out);
    grad_out = grad_in;
  }
  release(grad_out);
  for (int32_t g : lora_grads) release(g);
  return ev;
}

int64_t replay(const std::vector<AllocEvent>& events, const vram::memory::AllocatorConfig& config,
               std::vector<vram::memory::Handle>& handles) {
  vram::memory::CachingAllocator a(config);
  for (const AllocEvent& e : events) {
    if (e.alloc) {
      handles[static_cast<size_t>(e.tensor)] = a.malloc(e.bytes);
    } else {
      a.free(handles[static_cast<size_t>(e.tensor)]);
    }
  }
  return a.stats().reserved_bytes.all.peak;
}

void run_replay(benchmark::State& state, const vram::memory::AllocatorConfig& config) {
  const auto events = training_step_events(80);
  std::vector<vram::memory::Handle> handles(events.size());
  for (auto _ : state) benchmark::DoNotOptimize(replay(events, config, handles));
  state.counters["events"] = static_cast<double>(events.size());
  state.counters["peak_reserved_MiB"] = static_cast<double>(replay(events, config, handles) / vram::memory::kMiB);
}

// The default allocator: one replay of ~5800 events, allocator built fresh.
void BM_AllocatorReplay80Layers(benchmark::State& state) { run_replay(state, {}); }
BENCHMARK(BM_AllocatorReplay80Layers)->Unit(benchmark::kMicrosecond);

// The same step with expandable_segments:True.
void BM_AllocatorReplay80LayersExpandable(benchmark::State& state) {
  vram::memory::AllocatorConfig config;
  config.expandable_segments = true;
  run_replay(state, config);
}
BENCHMARK(BM_AllocatorReplay80LayersExpandable)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

// llama.cpp as an engine (infer/llama_cpp.h): placement, the KV cache by
// release, Ollama's defaults, the fit searches.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

json request(const char* model, json infer, const char* gpu = "RTX 4090", int gpus = 1) {
  json r = {{"model", {{"config", testing::model_config(model)}}},
            {"task", "infer"},
            {"infer", std::move(infer)},
            {"parallel", {{"gpus", gpus}}}};
  if (gpu != nullptr) r["gpu"] = {{"name", gpu}};
  return r;
}

json estimate(const json& r) {
  const json out = json::parse(estimate_json(r.dump()));
  EXPECT_FALSE(out.contains("error")) << out.dump();
  return out;
}

json device(const json& out, const std::string& name) {
  for (const auto& d : out["infer"]["devices"]) {
    if (d["device"] == name) return d;
  }
  ADD_FAILURE() << "no device " << name;
  return json::object();
}

TEST(LlamaCpp, Llama31_8bQ4KMAllOnTheGpu) {
  const json out = estimate(
      request("meta-llama/Llama-3.1-8B",
              {{"engine", "llama_cpp"}, {"weights_dtype", "Q4_K_M"}, {"ctx_size", 8192}, {"flash_attn", "off"}}));
  const json gpu = device(out, "CUDA0"), host = device(out, "CPU");
  // 32 layers x 8192 cells x (1024 K + 1024 V) x 2 bytes (f16).
  EXPECT_EQ(gpu["kv_bytes"], 32 * 8192 * 2048 * 2);
  EXPECT_EQ(gpu["layers"], 32);
  EXPECT_TRUE(gpu["output_layer"].get<bool>());
  // The token embedding stays in host memory (llama-model.cpp: dev_input is the CPU).
  EXPECT_EQ(host["weights_bytes"], 128256 / 256 * 144 * 4096);
  // llama-server 2025-12 with --parallel left out: 4 slots, a row of logits each.
  EXPECT_EQ(host["output_bytes"], 4 * 128256 * 4);
  EXPECT_EQ(out["infer"]["gpu_layers"], 33);
  EXPECT_EQ(out["peak_bytes"], gpu["total_bytes"]);
  EXPECT_EQ(out["peak_phase"], "prefill");
  EXPECT_EQ(out["fit"]["verdict"], "fits");
  EXPECT_FALSE(out["fit"]["headroom_applies"].get<bool>());
}

TEST(LlamaCpp, PartialOffloadPutsTheLastBlocksOnTheGpu) {
  json r = request("meta-llama/Llama-3.1-8B",
                   {{"engine", "llama_cpp"}, {"weights_dtype", "Q4_K_M"}, {"ctx_size", 4096}, {"n_gpu_layers", 20}});
  json out = estimate(r);
  EXPECT_EQ(device(out, "CUDA0")["layers"], 20);
  EXPECT_EQ(device(out, "CPU")["layers"], 12);
  EXPECT_FALSE(device(out, "CUDA0")["output_layer"].get<bool>());
  EXPECT_EQ(device(out, "CPU")["kv_bytes"], 12 * 4096 * 2048 * 2);
  r["infer"]["n_gpu_layers"] = 32;  // every block, the output layer still on the CPU
  out = estimate(r);
  EXPECT_FALSE(device(out, "CUDA0")["output_layer"].get<bool>());
  r["infer"]["n_gpu_layers"] = 33;
  EXPECT_TRUE(device(estimate(r), "CUDA0")["output_layer"].get<bool>());
}

TEST(LlamaCpp, TheContextIsPaddedAndSplitAsTheReleaseDoes) {
  json r = request("meta-llama/Llama-3.2-1B",
                   {{"engine", "llama_cpp"}, {"weights_dtype", "Q8_0"}, {"ctx_size", 5000}, {"batch", 4}});
  json out = estimate(r);
  // 2025-12: n_ctx 5120, per sequence pad(5120 / 4, 256) = 1280, four streams.
  EXPECT_EQ(out["infer"]["ctx_size"], 5120);
  EXPECT_EQ(out["infer"]["n_ctx_seq"], 1280);
  EXPECT_EQ(out["infer"]["kv_cells"], 1280);
  r["infer"]["engine_version"] = "2025-05";
  r["infer"]["flash_attn"] = "off";
  out = estimate(r);
  // 2025-05: one cache of pad(5000, 32) = 5024 cells shared by the sequences.
  EXPECT_EQ(out["infer"]["kv_cells"], 5024);
  EXPECT_EQ(out["infer"]["ctx_size"], 5024);
}

TEST(LlamaCpp, SlidingWindowLayersKeepASmallerCache) {
  const json out = estimate(
      request("google/gemma-3-4b-it", {{"engine", "llama_cpp"}, {"weights_dtype", "Q4_K_M"}, {"ctx_size", 32768}}));
  // llama-kv-cache-iswa.cpp, unified (llama-server's 4 auto slots): pad(min(32768, 1024 x 4 + 512), 256).
  EXPECT_EQ(out["infer"]["kv_cells_swa"], 4608);
  EXPECT_EQ(out["infer"]["kv_cells"], 32768);
  // One sequence (llama-cli, or -np 1): pad(min(32768, 1024 + 512), 256) = 1536 cells.
  const json one =
      estimate(request("google/gemma-3-4b-it",
                       {{"engine", "llama_cpp"}, {"weights_dtype", "Q4_K_M"}, {"ctx_size", 32768}, {"batch", 1}}));
  EXPECT_EQ(one["infer"]["kv_cells_swa"], 1536);
}

TEST(LlamaCpp, AQuantizedVCacheNeedsFlashAttention) {
  json r =
      request("meta-llama/Llama-3.2-1B",
              {{"engine", "llama_cpp"}, {"cache_type_k", "q8_0"}, {"cache_type_v", "q8_0"}, {"flash_attn", "off"}});
  const json err = json::parse(estimate_json(r.dump()));
  EXPECT_EQ(err["error"]["path"], "infer.cache_type_v");
  r["infer"]["flash_attn"] = "on";
  const json out = estimate(r);
  // q8_0: 34 bytes per 32 values.
  EXPECT_EQ(out["infer"]["kv_bytes_per_token"], 16 * (512 + 512) / 32 * 34);
}

TEST(LlamaCpp, OllamaDefaultsFollowItsVersion) {
  json r = request("meta-llama/Llama-3.1-8B", {{"engine", "ollama"}, {"weights_dtype", "Q4_K_M"}});
  r["infer"]["engine_version"] = "0.5.7";  // num_ctx 2048, OLLAMA_NUM_PARALLEL auto 4
  EXPECT_EQ(estimate(r)["infer"]["ctx_size"], 2048 * 4);
  r["infer"]["engine_version"] = "0.6.8";  // 4096 x 2
  EXPECT_EQ(estimate(r)["infer"]["ctx_size"], 8192);
  r["infer"]["engine_version"] = "0.12.6";  // 4096 x 1
  EXPECT_EQ(estimate(r)["infer"]["ctx_size"], 4096);
  r["infer"]["engine_version"] = "0.15.5";  // a 24 GB card: 32768
  EXPECT_EQ(estimate(r)["infer"]["ctx_size"], 32768);
  r["infer"]["context_len"] = 16384;  // num_ctx
  r["infer"]["batch"] = 2;            // OLLAMA_NUM_PARALLEL
  EXPECT_EQ(estimate(r)["infer"]["ctx_size"], 32768);
  r["infer"]["ctx_size"] = 8192;  // llama.cpp's -c is not Ollama's setting
  EXPECT_EQ(json::parse(estimate_json(r.dump()))["error"]["path"], "infer.ctx_size");
}

TEST(LlamaCpp, FitSearchesTheLayersAndTheContextForTheCard) {
  json r = request("meta-llama/Llama-3.1-8B",
                   {{"engine", "llama_cpp"}, {"weights_dtype", "Q8_0"}, {"ctx_size", 32768}, {"fit", false}}, nullptr);
  r["gpu"] = {{"memory_gib", 8}};
  const json out = estimate(r);
  const int64_t layers = out["infer"]["max_gpu_layers"];
  EXPECT_GT(layers, 5);
  EXPECT_LT(layers, 33);
  EXPECT_EQ(out["fit"]["verdict"], "does_not_fit");
  // At that -ngl it fits, one more does not.
  r["infer"]["n_gpu_layers"] = layers;
  EXPECT_EQ(estimate(r)["fit"]["verdict"], "fits");
  r["infer"]["n_gpu_layers"] = layers + 1;
  EXPECT_EQ(estimate(r)["fit"]["verdict"], "does_not_fit");
}

// llama.cpp 2025-12's --fit (on by default): what the user left out shrinks
// until each GPU keeps 1 GiB free.
TEST(LlamaCpp, FitLowersTheLeftOutLayersAndContextToKeepAGibFree) {
  json r = request("meta-llama/Llama-3.1-8B", {{"engine", "llama_cpp"}, {"weights_dtype", "Q8_0"}, {"ctx_size", 32768}},
                   nullptr);
  r["gpu"] = {{"memory_gib", 8}};
  json out = estimate(r);
  EXPECT_EQ(out["fit"]["verdict"], "fits");
  const int64_t ngl = out["infer"]["gpu_layers"];
  EXPECT_LE(device(out, "CUDA0")["total_bytes"].get<int64_t>() + 1024 * kMiB, 8 * 1024 * kMiB);
  r["infer"]["n_gpu_layers"] = ngl + 1;  // one more layer leaves less than 1 GiB
  EXPECT_GT(device(estimate(r), "CUDA0")["total_bytes"].get<int64_t>() + 1024 * kMiB, 8 * 1024 * kMiB);
  // The context left out (0 = the model's 131072) shrinks first, not below 4096.
  r = request("meta-llama/Llama-3.1-8B", {{"engine", "llama_cpp"}, {"weights_dtype", "Q8_0"}}, "RTX 4090");
  out = estimate(r);
  const int64_t ctx = out["infer"]["ctx_size"];
  EXPECT_LT(ctx, 131072);
  EXPECT_GE(ctx, 4096);
  EXPECT_EQ(out["infer"]["gpu_layers"], 33);
  EXPECT_LE(device(out, "CUDA0")["total_bytes"].get<int64_t>() + 1024 * kMiB,
            out["fit"]["capacity_bytes"].get<int64_t>());
  r["infer"]["engine_version"] = "2025-10";
  r["infer"]["fit"] = true;
  EXPECT_EQ(json::parse(estimate_json(r.dump()))["error"]["path"], "infer.fit");
}

TEST(LlamaCpp, TwoGpusSplitTheLayersAndCopyInputsForPipelining) {
  const json out =
      estimate(request("meta-llama/Llama-3.1-8B",
                       {{"engine", "llama_cpp"}, {"weights_dtype", "Q4_K_M"}, {"ctx_size", 8192}}, "RTX 4090", 2));
  EXPECT_EQ(device(out, "CUDA0")["layers"], 17);
  EXPECT_EQ(device(out, "CUDA1")["layers"], 15);
  EXPECT_TRUE(device(out, "CUDA1")["output_layer"].get<bool>());
  EXPECT_GT(device(out, "CUDA1")["compute_bytes"], 100 * kMiB);
}

TEST(LlamaCpp, SettingsOfOtherEnginesAreErrorsNamingThem) {
  json r = request("meta-llama/Llama-3.2-1B", {{"engine", "llama_cpp"}, {"kv_dtype", "fp8"}});
  EXPECT_EQ(json::parse(estimate_json(r.dump()))["error"]["path"], "infer.kv_dtype");
  r = request("meta-llama/Llama-3.2-1B", {{"engine", "hf"}, {"n_gpu_layers", 10}});
  EXPECT_EQ(json::parse(estimate_json(r.dump()))["error"]["path"], "infer.n_gpu_layers");
  r = request("meta-llama/Llama-3.2-1B", {{"engine", "llama_cpp"}, {"weights_dtype", "gptq"}});
  EXPECT_EQ(json::parse(estimate_json(r.dump()))["error"]["path"], "infer.weights_dtype");
  r = request("meta-llama/Llama-3.2-1B", {{"engine", "llama_cpp"}, {"context_len", 8192}});
  EXPECT_EQ(json::parse(estimate_json(r.dump()))["error"]["path"], "infer.context_len");
}

}  // namespace
}  // namespace vram

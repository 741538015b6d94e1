// vLLM and SGLang as they size themselves (infer/vllm.cpp, infer/sglang.cpp):
// the defaults they take by GPU and release, the profile run's peak, the KV
// blocks and the lines they print, worked by hand from the rules each file
// cites.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

json serve(const std::string& id, json opts, json extra = json::object()) {
  json req = {{"model", {{"config", testing::model_config(id)}}}, {"task", "infer"}, {"infer", std::move(opts)}};
  if (!extra.contains("gpu")) req["gpu"] = {{"name", "H100 80GB"}};
  for (auto& [k, v] : extra.items()) req[k] = v;
  return estimate(req);
}

int64_t fact(const json& r, const std::string& key) {
  EXPECT_FALSE(r.contains("error")) << r.dump();
  return r["infer"].value(key, int64_t{-1});
}

json line(const json& r, const std::string& key) {
  for (const auto& l : r["infer"]["engine_log"]) {
    if (l["key"] == key) return l;
  }
  ADD_FAILURE() << "no engine_log line " << key;
  return json();
}

bool mentions(const json& list, const std::string& text) {
  for (const auto& s : list) {
    if (s.get<std::string>().find(text) != std::string::npos) return true;
  }
  return false;
}

// H100 80GB as CUDA reports it: nvidia-smi's 81,559 MiB less 0.6 %, in 2 MiB granules.
const int64_t kH100 = static_cast<int64_t>(std::floor(81559.0 * 1048576 * 0.994 / 2097152)) * 2097152;
const int64_t kSm90Cublas = (int64_t{32} << 20) + (int64_t{1} << 20);

// arg_utils.py _set_default_args: a card of 70 GiB or more other than an
// A100 takes 8192 tokens / 1024 sequences for vllm serve, 16384 / 1024 for
// the LLM class; others 2048 / 256 and 8192 / 256.
TEST(VllmDefaults, ByCardAndEntrypoint) {
  const json h100 = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"context_len", 8192}});
  EXPECT_EQ(fact(h100, "max_num_batched_tokens"), 8192);
  EXPECT_EQ(fact(h100, "max_num_seqs"), 1024);
  const json offline =
      serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"context_len", 8192}, {"entrypoint", "offline"}});
  EXPECT_EQ(fact(offline, "max_num_batched_tokens"), 16384);
  const json a100 =
      serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"context_len", 8192}}, {{"gpu", {{"name", "A100 80GB"}}}});
  EXPECT_EQ(fact(a100, "max_num_batched_tokens"), 2048);
  EXPECT_EQ(fact(a100, "max_num_seqs"), 256);
  // max_num_seqs never exceeds the token budget.
  const json small = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"max_num_batched_tokens", 100}});
  EXPECT_EQ(fact(small, "max_num_seqs"), 100);
  // Absent, max_model_len is the config's max_position_embeddings.
  EXPECT_EQ(fact(serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}}), "max_model_len"), 131072);
}

// The profile run's peak on the last stage: the forward's [8192, 4096]
// output, the 1024 sampled rows and their rand_like copy, 16-bit logits of
// the padded vocabulary, 36 B per logit in the PyTorch sort, cuBLAS.
TEST(VllmProfile, SamplerSortDominatesOnH100) {
  const json r = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"context_len", 16000}});
  const int64_t T = 8192, h = 4096, R = 1024, V = 128256;
  const int64_t expected = T * h * 2 + 2 * R * h * 2 + R * V * 2 + R * V * 36 + kSm90Cublas;
  EXPECT_EQ(fact(r, "activation_peak_bytes"), expected);
  // Fewer than 128 rows sort through segmented_sort_pairs_by_full_sort: 44 B.
  const json few =
      serve("meta-llama/Llama-3.1-8B",
            {{"engine", "vllm"}, {"context_len", 16000}, {"max_num_seqs", 64}, {"max_num_batched_tokens", 1024}});
  EXPECT_EQ(fact(few, "activation_peak_bytes"), 1024 * h * 2 + 2 * 64 * h * 2 + 64 * V * 2 + 64 * V * 44 + kSm90Cublas);
  // 0.11.0 sampled with FlashInfer's kernel: 12 B per logit.
  const json fi = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm@0.11.0"}, {"context_len", 16000}});
  EXPECT_EQ(fact(fi, "activation_peak_bytes"), T * h * 2 + 2 * R * h * 2 + R * V * 2 + R * V * 12 + kSm90Cublas);
}

// requested = total x util; available = requested - weights - peak -
// non-torch; blocks = available // (block_size x 4 KiB) // 32 layers;
// "Maximum concurrency" = blocks / cdiv(max_model_len, block_size).
TEST(VllmKv, BlocksTokensAndConcurrencyAsPrinted) {
  const json r = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"context_len", 16000}, {"block_size", 128}});
  const int64_t requested = static_cast<int64_t>(static_cast<double>(kH100) * 0.9);
  const int64_t available =
      requested - fact(r, "weights_bytes") - fact(r, "activation_peak_bytes") - fact(r, "non_torch_bytes");
  const int64_t blocks = available / (128 * 4096) / 32;
  EXPECT_EQ(fact(r, "kv_blocks"), blocks);
  EXPECT_EQ(fact(r, "kv_tokens"), blocks * 128);
  char conc[32];
  std::snprintf(conc, sizeof conc, "%.2f", static_cast<double>(blocks) / 125.0);
  EXPECT_EQ(line(r, "vllm.max_concurrency")["text"],
            "Maximum concurrency for 16,000 tokens per request: " + std::string(conc) + "x");
  EXPECT_EQ(line(r, "vllm.gpu_kv_cache_tokens")["value"], static_cast<double>(blocks * 128));
  // The weights vLLM loads: the model in bf16 and the rotary cache of
  // 131,072 positions x 128 in bf16.
  EXPECT_EQ(fact(r, "weights_bytes"), int64_t{8030261248} * 2 + 131072 * 128 * 2);
}

// gpt-oss: sliding and full layers make two KV cache groups sharing each
// block pool; a request takes cdiv(max_model_len, 16) full blocks and
// cdiv(min(127 + 8192, max_model_len), 16) + 1 sliding ones.
TEST(VllmKv, SlidingAndFullLayersMakeTwoGroups) {
  const json r = serve("openai/gpt-oss-120b", {{"engine", "vllm"}, {"context_len", 16000}});
  const int64_t blocks = fact(r, "kv_blocks");
  EXPECT_EQ(fact(r, "kv_tokens"), blocks / 2 * 16);
  const double per_request = 1000.0 + (520.0 + 1.0);
  EXPECT_NEAR(line(r, "vllm.max_concurrency")["value"].get<double>(), blocks / per_request, 0.006);
}

// get_pp_indices: 32 layers over 3 stages are [11, 11, 10]; the KV cache
// takes the stage with the fewest blocks.
TEST(VllmPipeline, StagesSplitTheLayersAndTheTightestStageSizesTheCache) {
  const json one = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"context_len", 8192}});
  const json pp = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"context_len", 8192}},
                        {{"parallel", {{"gpus", 3}, {"pp", 3}}}});
  EXPECT_LT(fact(pp, "weights_bytes"), fact(one, "weights_bytes") / 2);
  EXPECT_GT(fact(pp, "kv_blocks"), fact(one, "kv_blocks"));
  // SGLang is not modelled with pipeline stages.
  const json sgl = serve("meta-llama/Llama-3.1-8B", {{"engine", "sglang"}}, {{"parallel", {{"gpus", 2}, {"pp", 2}}}});
  ASSERT_TRUE(sgl.contains("error"));
  EXPECT_EQ(sgl["error"]["path"], "parallel");
}

TEST(VllmRelease, NamesTheFieldOutsideTheModelledReleases) {
  const json v0 = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm@0.7.3"}});
  ASSERT_TRUE(v0.contains("error"));
  EXPECT_EQ(v0["error"]["path"], "infer.engine_version");
  for (const char* bad : {"vllm@latest", "hf@4.44"}) {
    const json r = serve("meta-llama/Llama-3.1-8B", {{"engine", bad}});
    ASSERT_TRUE(r.contains("error")) << bad;
    EXPECT_EQ(r["error"]["path"], "infer.engine_version") << bad;
  }
  for (const char* bad : {"vllm@", "tgi@1.0"}) {
    const json r = serve("meta-llama/Llama-3.1-8B", {{"engine", bad}});
    ASSERT_TRUE(r.contains("error")) << bad;
    EXPECT_EQ(r["error"]["path"], "infer.engine") << bad;
  }
}

// An inference job runs no training framework's recipe: its assumptions name
// the engine's release, not train.framework's.
TEST(EngineVersion, InferenceListsNoTrainingFrameworkRelease) {
  for (const char* engine : {"hf", "vllm", "sglang"}) {
    const json r = serve("meta-llama/Llama-3.1-8B", {{"engine", engine}});
    ASSERT_FALSE(r.contains("error")) << engine << r.dump();
    EXPECT_FALSE(mentions(r["assumptions"], "framework release")) << engine << r["assumptions"].dump();
  }
  EXPECT_TRUE(
      mentions(serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}})["assumptions"], "infer.engine_version absent"));
}

// One field for an engine's release: infer.engine NAME@RELEASE is an alias of
// infer.engine_version, and the two naming different releases is an error.
TEST(EngineVersion, OneFieldAndItsAlias) {
  const json alias = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm@0.11.0"}});
  const json field = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"engine_version", "0.11.0"}});
  ASSERT_FALSE(field.contains("error")) << field.dump();
  EXPECT_EQ(field["infer"]["engine_release"], "0.11.0");
  EXPECT_EQ(alias.dump(), field.dump());
  const json same = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm@0.11.0"}, {"engine_version", "0.11.0"}});
  EXPECT_EQ(same.dump(), field.dump());
  const json both = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm@0.10.2"}, {"engine_version", "0.11.0"}});
  ASSERT_TRUE(both.contains("error"));
  EXPECT_EQ(both["error"]["path"], "infer.engine_version");
  const json hf = serve("meta-llama/Llama-3.1-8B", {{"engine", "hf"}, {"engine_version", "4.44"}});
  ASSERT_TRUE(hf.contains("error"));
  EXPECT_EQ(hf["error"]["path"], "infer.engine_version");
  const json sgl = serve("Qwen/Qwen3-0.6B", {{"engine", "sglang"}, {"engine_version", "0.4.9"}});
  ASSERT_FALSE(sgl.contains("error")) << sgl.dump();
  EXPECT_EQ(sgl["infer"]["engine_release"], "0.4.9");
  const json later = serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm@0.19.1+cu129"}});
  ASSERT_FALSE(later.contains("error"));
  EXPECT_TRUE(mentions(later["warnings"], "outside the releases modelled"));
  EXPECT_EQ(later["infer"]["engine_release"], "0.19.1+cu129");
  EXPECT_EQ(serve("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}})["infer"]["engine_release"], "0.11.1");
}

// A checkpoint whose config.json says compressed-tensors FP8 is served as
// stored; a named weights_dtype wins.
TEST(VllmQuantised, TheCheckpointsFormatUnlessOneIsNamed) {
  json cfg = testing::model_config("meta-llama/Llama-3.1-8B");
  cfg["quantization_config"] = {{"quant_method", "compressed-tensors"},
                                {"config_groups", {{"group_0", {{"weights", {{"num_bits", 8}, {"type", "float"}}}}}}}};
  json req = {{"model", {{"config", cfg}}},
              {"task", "infer"},
              {"gpu", {{"name", "H100 80GB"}}},
              {"infer", {{"engine", "vllm"}, {"context_len", 8192}}}};
  const json fp8 = estimate(req);
  req["infer"]["weights_dtype"] = "bf16";
  const json bf16 = estimate(req);
  EXPECT_LT(fact(fp8, "weights_bytes"), fact(bf16, "weights_bytes") * 6 / 10);
  EXPECT_TRUE(mentions(fp8["assumptions"], "quantization_config"));
  cfg["quantization_config"] = {{"quant_method", "exl9"}};
  req["model"]["config"] = cfg;
  req["infer"].erase("weights_dtype");
  const json unknown = estimate(req);
  ASSERT_TRUE(unknown.contains("error"));
  EXPECT_EQ(unknown["error"]["path"], "infer.weights_dtype");
}

// profile_max_num_token: (free x f - weights) // cell, the free memory
// being the card less the context before the weights, and the weights what
// the load took from it ("mem usage"): the load's reserved bytes after
// empty_cache(), which the weights-loaded phase reports; the K buffer holds
// tokens + 1 slots.
TEST(SglangPool, TokensFromTheFreeMemoryAndTheFraction) {
  const json r = serve("Qwen/Qwen3-0.6B", {{"engine", "sglang"}, {"mem_fraction_static", 0.8}});
  const double free0 = static_cast<double>(kH100 - (int64_t{512} << 20));
  const double cell = 8.0 * 128 * 28 * 2 * 2;
  const int64_t used = fact(r, "weights_mem_usage_bytes");
  EXPECT_GT(used, fact(r, "weights_bytes"));
  for (const auto& p : r["phases"]) {
    if (p["key"] == "weights_loaded") EXPECT_EQ(p["reserved_bytes"].get<int64_t>(), used);
  }
  const int64_t tokens = static_cast<int64_t>(std::floor((free0 * 0.8 - static_cast<double>(used)) / cell));
  EXPECT_EQ(fact(r, "kv_tokens"), tokens);
  char k[32];
  std::snprintf(k, sizeof k, "%.2f", cell * static_cast<double>(tokens + 1) / 2 / 1073741824.0);
  EXPECT_EQ(
      line(r, "sglang.max_total_num_tokens")["text"],
      "KV Cache is allocated. #tokens: " + std::to_string(tokens) + ", K size: " + k + " GB, V size: " + k + " GB");
  // The rotary cache stays fp32: 40,960 positions x 128 x 4 B.
  EXPECT_EQ(fact(r, "weights_bytes") % 2, 0);
}

// --mem-fraction-static by release on one H100 (81,559 MiB): 0.5.3+
// reserves 512 + 8192 x 1.5 + 256 x 2 + 1/8 x 1024 = 13,440 MB; 0.4.7-0.5.2
// 9.5 + 1/2 GB; before, 0.88 at TP 1.
TEST(SglangDefaults, MemFractionByRelease) {
  const auto fraction = [](const char* release) {
    const json r = serve("Qwen/Qwen3-0.6B", {{"engine", std::string("sglang@") + release}});
    for (const auto& a : r["assumptions"]) {
      const std::string s = a.get<std::string>();
      const auto at = s.find("mem_fraction_static ");
      if (at != std::string::npos) return s.substr(at + 20, 5);
    }
    return std::string();
  };
  EXPECT_EQ(fraction("0.5.4"), "0.835");
  EXPECT_EQ(fraction("0.4.8"), "0.874");
  EXPECT_EQ(fraction("0.4.6"), "0.880");
  const json fits = serve("Qwen/Qwen3-0.6B", {{"engine", "sglang"}, {"context_len", 4096}});
  EXPECT_TRUE(fits["fit"]["fits"].get<bool>());
  EXPECT_FALSE(fits["fit"]["headroom_applies"].get<bool>());
}

}  // namespace
}  // namespace vram

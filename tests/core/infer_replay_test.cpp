// transformers generate as a timeline replayed through the caching-allocator
// model (infer/replay.h): the allocated view is the closed form, the
// reserved view the allocator's.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

json generate(const std::string& id, json opts, json extra = json::object()) {
  json req = {{"model", {{"config", testing::model_config(id)}}}, {"task", "infer"}, {"infer", std::move(opts)}};
  for (auto& [k, v] : extra.items()) req[k] = v;
  json r = estimate(req);
  EXPECT_FALSE(r.contains("error")) << r.dump();
  return r;
}

const json& phase(const json& r, const std::string& key) {
  for (const auto& p : r["phases"]) {
    if (p["key"] == key) return p;
  }
  ADD_FAILURE() << "no phase " << key;
  return r;
}

bool has_component(const json& r, const std::string& key) {
  for (const auto& c : r["components"]) {
    if (c["key"] == key) return true;
  }
  return false;
}

// Llama-2-7B caches 32 layers x 2 x 32 heads x 128 x 2 B = 512 KiB a token;
// decoding at 4,096 tokens holds the cache (2 GiB) and one layer's
// concatenated K and V (2 GiB / 32 = 64 MiB).
TEST(InferReplay, TransformersAllocatedViewIsTheCacheAndOneLayersCopy) {
  const json r = generate("meta-llama/Llama-2-7b-hf", {{"context_len", 4096}});
  const json& d = phase(r, "decode");
  EXPECT_EQ(d["parts"]["kv_cache"].get<int64_t>(), 2 * kGiB + 64 * kMiB);
  EXPECT_EQ(d["parts"]["logits"].get<int64_t>(), int64_t{32000} * 6);
  EXPECT_GE(d["reserved_bytes"].get<int64_t>(), d["allocated_bytes"].get<int64_t>());
  EXPECT_EQ(d["parts"]["allocator"].get<int64_t>(),
            d["reserved_bytes"].get<int64_t>() - d["allocated_bytes"].get<int64_t>());
  EXPECT_EQ(r["peak_allocated_bytes"].get<int64_t>(), phase(r, "prefill")["allocated_bytes"].get<int64_t>());
  EXPECT_TRUE(has_component(r, "allocator"));
}

// DynamicLayer.update concatenates every decoding step, so each of the 64 K
// and V tensors is allocated anew a token larger and the old one freed; a
// freed block serves only requests no larger than itself, and the allocator
// sizes segments of 10 MiB and more in 2 MiB steps. Growing from 1,024
// tokens (8 MiB a tensor) to 4,096 (32 MiB) leaves each tensor a cached
// segment in every 2 MiB band it passed, at most 64 x (10 + 12 + ... + 32)
// MiB = 64 x 252 MiB = 15.75 GiB, far more than the 2 GiB the cache holds.
// A prompt of the whole context decodes no growing step: the cache's
// segments are its own and the prefill's.
TEST(InferReplay, ConcatenatingDecodeStepsCacheEverySegmentSizeTheCachePasses) {
  const json grown = generate("meta-llama/Llama-2-7b-hf", {{"context_len", 4096}, {"prompt_len", 1024}});
  const json whole = generate("meta-llama/Llama-2-7b-hf", {{"context_len", 4096}});
  const json& g = phase(grown, "decode");
  const json& w = phase(whole, "decode");
  EXPECT_EQ(g["allocated_bytes"], w["allocated_bytes"]);
  const int64_t cached = g["reserved_bytes"].get<int64_t>() - g["allocated_bytes"].get<int64_t>();
  EXPECT_GT(cached, 8 * kGiB);
  EXPECT_LT(cached, 64 * 252 * kMiB);
  // the prefill's freed activations stay cached: reserved at decoding is the prefill's peak and little more
  EXPECT_LT(w["reserved_bytes"].get<int64_t>() - whole["peak_allocated_bytes"].get<int64_t>(), 64 * kMiB);
  EXPECT_EQ(grown["peak_bytes"].get<int64_t>(),
            g["reserved_bytes"].get<int64_t>() + grown["phases"][0]["parts"]["cuda_context"].get<int64_t>());
}

// On a card the allocator frees its cache and retries where a new segment
// would not fit (CUDACachingAllocator.cpp malloc), so the same generation
// fits a 40 GB A100 with its reserved bytes under what the card leaves it.
TEST(InferReplay, OnACardTheCacheIsFreedAndRetriedInsteadOfGrowing) {
  const json r = generate("meta-llama/Llama-2-7b-hf", {{"context_len", 4096}, {"prompt_len", 1024}, {"batch", 4}},
                          {{"gpu", {{"name", "A100 40GB"}}}});
  const json free = generate("meta-llama/Llama-2-7b-hf", {{"context_len", 4096}, {"prompt_len", 1024}, {"batch", 4}});
  EXPECT_TRUE(r["fit"]["fits"].get<bool>());
  EXPECT_LE(r["peak_bytes"].get<int64_t>(), r["fit"]["capacity_bytes"].get<int64_t>());
  EXPECT_GT(free["peak_bytes"].get<int64_t>(), r["fit"]["capacity_bytes"].get<int64_t>());
  EXPECT_EQ(r["peak_allocated_bytes"], free["peak_allocated_bytes"]);
}

// transformers' caching_allocator_warmup reserves the parameters' bytes in
// one segment before the weights load, so Qwen1.5-MoE's 5.5 MiB expert
// Linears (1,408 x 2,048 x 2 B) split it; each in a 20 MiB segment of its
// own (three to a segment) would leave 3.5 MiB of every 20 cached, 17.5 %.
TEST(InferReplay, WeightsSplitTheWarmupSegment) {
  const json r = generate("Qwen/Qwen1.5-MoE-A2.7B", {{"context_len", 512}});
  const json& w = phase(r, "weights_loaded");
  const int64_t weights = w["parts"]["weights"].get<int64_t>();
  EXPECT_LT(w["parts"]["allocator"].get<int64_t>(), weights / 200);
}

// LitGPT preallocates its cache (set_kv_cache) and writes each token in
// place (index_copy_), so decoding allocates nothing that grows: the same
// 1,024-token prompt decoded to 4,096 that costs transformers 8 GiB or more
// of cached segments reserves the prefill's peak and little more.
TEST(InferReplay, LitgptPreallocatedCacheCachesNoGrowingSegments) {
  const json r =
      generate("meta-llama/Llama-2-7b-hf", {{"context_len", 4096}, {"prompt_len", 1024}, {"engine", "litgpt"}});
  const json& d = phase(r, "decode");
  EXPECT_LT(d["reserved_bytes"].get<int64_t>() - r["peak_allocated_bytes"].get<int64_t>(), 64 * kMiB);
  EXPECT_GE(d["reserved_bytes"].get<int64_t>(), r["peak_allocated_bytes"].get<int64_t>());
  EXPECT_TRUE(has_component(r, "allocator"));
}

// overheads.fragmentation replaces the replay: reserved = allocated x (1 + f).
TEST(InferReplay, GivenFragmentationReplacesTheReplay) {
  const json r =
      generate("meta-llama/Llama-2-7b-hf", {{"context_len", 4096}}, {{"overheads", {{"fragmentation", 0.25}}}});
  for (const auto& p : r["phases"]) {
    const int64_t a = p["allocated_bytes"].get<int64_t>();
    EXPECT_EQ(p["reserved_bytes"].get<int64_t>(), a + (a + 3) / 4) << p["key"];
  }
  EXPECT_FALSE(has_component(r, "allocator"));
}

// vLLM's start-up on the same timeline (infer/vllm.cpp): memory_profiling
// measures the torch peak increase of the profile run in allocated bytes
// (allocated_bytes.all.peak), so the profile phase's allocated view less the
// weights-loaded one is the activation figure vLLM prints; then
// torch.cuda.empty_cache() returns the profile's cached segments before the
// KV cache is allocated, so the serving phase keeps less allocator cache
// than the profile run left. The device view adds non-torch memory and CUDA
// graphs under their own keys.
TEST(InferReplay, VllmProfileIsTheAllocatedIncreaseAndEmptyCacheDropsItsCache) {
  const json r = generate("meta-llama/Llama-3.1-8B", {{"engine", "vllm"}, {"context_len", 16000}},
                          {{"gpu", {{"name", "H100 80GB"}}}});
  const json& loaded = phase(r, "weights_loaded");
  const json& profile = phase(r, "profile");
  const json& serving = phase(r, "serving");
  EXPECT_EQ(profile["allocated_bytes"].get<int64_t>() - loaded["allocated_bytes"].get<int64_t>(),
            r["infer"]["activation_peak_bytes"].get<int64_t>());
  for (const json* p : {&loaded, &profile, &serving}) {
    EXPECT_GE((*p)["reserved_bytes"].get<int64_t>(), (*p)["allocated_bytes"].get<int64_t>()) << (*p)["key"];
  }
  EXPECT_GT(profile["parts"]["allocator"].get<int64_t>(), serving["parts"]["allocator"].get<int64_t>());
  EXPECT_EQ(serving["parts"]["non_torch"].get<int64_t>(), r["infer"]["non_torch_bytes"].get<int64_t>());
  EXPECT_EQ(serving["parts"]["cuda_graphs"].get<int64_t>(), int64_t{256} << 20);
  EXPECT_EQ(serving["bytes"].get<int64_t>(),
            serving["reserved_bytes"].get<int64_t>() + serving["parts"]["cuda_context"].get<int64_t>() +
                serving["parts"]["non_torch"].get<int64_t>() + serving["parts"]["cuda_graphs"].get<int64_t>());
  EXPECT_TRUE(has_component(r, "allocator"));
}

// SGLang's start-up on the timeline (infer/sglang.cpp): the pool is sized
// from the load's reserved bytes ("mem usage"), the token pool's K and V
// buffers (one per layer each) follow, and with tensor parallelism the
// device view adds NCCL's buffers under their own key.
TEST(InferReplay, SglangPoolFollowsTheLoadsReservedBytes) {
  const json r = generate("meta-llama/Llama-3.1-8B", {{"engine", "sglang"}, {"context_len", 8192}},
                          {{"gpu", {{"name", "H100 80GB"}}}, {"parallel", {{"gpus", 2}, {"tp", 2}}}});
  const json& loaded = phase(r, "weights_loaded");
  const json& pool = phase(r, "kv_allocated");
  const json& serving = phase(r, "serving");
  EXPECT_EQ(loaded["reserved_bytes"].get<int64_t>(), r["infer"]["weights_mem_usage_bytes"].get<int64_t>());
  EXPECT_GE(pool["reserved_bytes"].get<int64_t>(),
            loaded["reserved_bytes"].get<int64_t>() + r["infer"]["kv_cache_bytes"].get<int64_t>());
  EXPECT_EQ(serving["parts"]["nccl"].get<int64_t>(), int64_t{3} << 29);
  EXPECT_EQ(serving["bytes"].get<int64_t>(),
            serving["reserved_bytes"].get<int64_t>() + serving["parts"]["cuda_context"].get<int64_t>() +
                serving["parts"]["nccl"].get<int64_t>() + serving["parts"]["cuda_graphs"].get<int64_t>());
  EXPECT_TRUE(has_component(r, "allocator"));
}

}  // namespace
}  // namespace vram

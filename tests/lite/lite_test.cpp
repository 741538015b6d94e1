// The first-visit WASM module's side of the seam (core/lite/reach.cpp),
// linked natively ahead of the core library exactly as into vram_core.wasm
// (tests/CMakeLists.txt): what it answers itself, and that everything else is
// errc::kNotInModule at the field that needs the full module, never another
// answer. That the answers it does give are the full build's, byte for byte,
// is checked in WebAssembly (site/tests/wasm/modules.test.js: vram_core
// against vram_plan).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fixtures.h"
#include "vram/api.h"
#include "vram/families.h"

namespace vram {
namespace {

// time.enabled false: the page's first estimate (the time model is the full
// module's, core/src/reach.h require_time_model).
json train_request(const json& model) {
  return {{"model", model},
          {"task", "train"},
          {"train", {{"method", "lora"}, {"micro_batch", 1}, {"seq_len", 1024}}},
          {"gpu", {{"name", "H100 80GB"}}},
          {"time", {{"enabled", false}}}};
}

json answer(const json& request) { return json::parse(estimate_json(request.dump())); }

TEST(Lite, EstimatesTheCommonFamilies) {
  for (const char* id :
       {"meta-llama/Llama-3.2-1B", "mistralai/Mistral-7B-v0.1", "Qwen/Qwen2.5-7B", "Qwen/Qwen3-0.6B"}) {
    const json out = answer(train_request({{"config", testing::model_config(id)}}));
    ASSERT_FALSE(out.contains("error")) << id << ": " << out.dump();
    EXPECT_GT(out["peak_bytes"].get<int64_t>(), 0) << id;
  }
  const json custom =
      answer(train_request({{"custom", {{"layers", 2}, {"hidden", 256}, {"heads", 4}, {"vocab", 1000}}}}));
  EXPECT_FALSE(custom.contains("error")) << custom.dump();
}

TEST(Lite, LeavesEverythingElseToTheFullModuleAtTheFieldThatNeedsIt) {
  const json llama = testing::model_config("meta-llama/Llama-3.2-1B");
  struct Case {
    const char* name;
    json request;
    const char* path;
  };
  json infer = train_request({{"config", llama}});
  infer["task"] = "infer";
  infer.erase("train");
  json infer_object = train_request({{"config", llama}});
  infer_object["infer"] = {{"batch", 2}};
  json alloc_conf = train_request({{"config", llama}});
  alloc_conf["allocator"] = {{"conf", "expandable_segments:True"}};
  json tensor = {{"name", "w"}, {"dtype", "BF16"}, {"shape", {4, 4}}};
  json tensors = {{"tensors", json::array({tensor})}};
  json ds = train_request({{"config", llama}});
  ds["deepspeed"] = {{"zero_optimization", {{"stage", 2}}}};
  json unsloth = train_request({{"config", llama}});
  unsloth["train"]["framework"] = "unsloth";
  json release = train_request({{"config", llama}});
  release["train"]["framework"] = "hf@4.44";
  json versions = train_request({{"config", llama}});
  versions["versions"] = {{"peft", "0.10.0"}};
  json fsdp1 = train_request({{"config", llama}});
  fsdp1["parallel"] = {{"gpus", 2}, {"fsdp", "full_shard"}};
  json sharding = train_request({{"config", llama}});
  sharding["parallel"] = {{"gpus", 2}, {"sharding", "hybrid_shard"}, {"fsdp_version", 1}};
  json timed = train_request({{"config", llama}});
  timed.erase("time");
  const Case cases[] = {
      {"gemma2", train_request({{"config", testing::model_config("google/gemma-2-2b")}}), "model.config.model_type"},
      {"mixtral", train_request({{"config", testing::model_config("mistralai/Mixtral-8x7B-v0.1")}}),
       "model.config.model_type"},
      {"llava", train_request({{"config", testing::model_config("llava-hf/llava-1.5-7b-hf")}}),
       "model.config.model_type"},
      {"quick size", train_request({{"size", "7B"}}), "model.size"},
      {"safetensors", train_request({{"safetensors", tensors}}), "model.safetensors"},
      {"gguf", train_request({{"gguf", {{"metadata", json::object()}}}}), "model.gguf"},
      {"inference", infer, "task"},
      {"an infer object in a training request", infer_object, "infer"},
      {"PYTORCH_CUDA_ALLOC_CONF text", alloc_conf, "allocator.conf"},
      {"deepspeed", ds, "deepspeed"},
      {"another framework", unsloth, "train.framework"},
      {"a release", release, "train.framework"},
      {"library versions", versions, "versions.peft"},
      {"FSDP1 (its construction replay and release rules)", fsdp1, "parallel.fsdp"},
      {"FSDP1 through parallel.sharding", sharding, "parallel.fsdp"},
      {"time", timed, "time"},
  };
  for (const auto& c : cases) {
    const json out = answer(c.request);
    ASSERT_TRUE(out.contains("error")) << c.name << ": " << out.dump();
    EXPECT_EQ(out["error"]["code"], errc::kNotInModule) << c.name;
    EXPECT_EQ(out["error"]["path"], c.path) << c.name;
    EXPECT_NE(out["error"]["message"].get<std::string>().find("vram_plan.wasm"), std::string::npos) << c.name;
  }
}

TEST(Lite, AnswersHfAtItsNewestReleaseItself) {
  for (const char* name : {"", "hf", "trl"}) {
    json req = train_request({{"config", testing::model_config("meta-llama/Llama-3.2-1B")}});
    if (*name != '\0') req["train"]["framework"] = name;
    const json out = answer(req);
    ASSERT_FALSE(out.contains("error")) << name << ": " << out.dump();
    EXPECT_EQ(out["framework"]["name"], "hf") << name;
    EXPECT_EQ(out["framework"]["release_given"], false) << name;
    EXPECT_FALSE(out["framework"]["versions"].empty()) << name;
    EXPECT_FALSE(out["framework"]["label"].get<std::string>().empty()) << name;
  }
  const json hf = json::parse(framework_defaults_json(R"({"framework": "hf", "method": "qlora"})"));
  ASSERT_FALSE(hf.contains("error")) << hf.dump();
  EXPECT_TRUE(hf["defaults"].empty());
  const json other = json::parse(framework_defaults_json(R"({"framework": "torchtune"})"));
  EXPECT_EQ(other["error"]["code"], errc::kNotInModule) << other.dump();
}

// FSDP2 (fully_shard) has no construction replay: this module answers it.
TEST(Lite, AnswersFsdp2Itself) {
  json req = train_request({{"config", testing::model_config("meta-llama/Llama-3.2-1B")}});
  req["parallel"] = {{"gpus", 2}, {"fsdp", "full_shard"}, {"fsdp_version", 2}};
  const json out = answer(req);
  EXPECT_FALSE(out.contains("error")) << out.dump();
}

TEST(Lite, AnswersABadRequestAndAnUnknownTypeAsTheFullBuildDoes) {
  json bad = train_request({{"config", testing::model_config("meta-llama/Llama-3.2-1B")}});
  bad["train"]["seq_len"] = 0;
  EXPECT_EQ(answer(bad)["error"]["path"], "train.seq_len");
  json unknown = testing::model_config("meta-llama/Llama-3.2-1B");
  unknown["model_type"] = "not_a_family";
  const json out = answer(train_request({{"config", unknown}}));
  EXPECT_EQ(out["error"]["code"], errc::kUnsupportedModel);
  // The list of supported types is every module's, not the four it carries.
  EXPECT_NE(out["error"]["message"].get<std::string>().find("gemma3n"), std::string::npos);
  json generic = train_request({{"config", unknown}, {"allow_generic", true}});
  EXPECT_FALSE(answer(generic).contains("error"));
  // The allocator's own fields (not the PYTORCH_CUDA_ALLOC_CONF text) it reads itself.
  json alloc = train_request({{"config", testing::model_config("meta-llama/Llama-3.2-1B")}});
  alloc["allocator"] = {{"expandable_segments", true}, {"max_split_size_mb", 20}};
  EXPECT_EQ(answer(alloc)["error"]["path"], "allocator.max_split_size_mb");
  alloc["allocator"]["max_split_size_mb"] = 512;
  EXPECT_FALSE(answer(alloc).contains("error")) << answer(alloc).dump();
}

TEST(Lite, ReportsEverySupportedModelType) {
  const auto types = supported_model_types();
  EXPECT_EQ(types.size(), 55u);
  for (const char* t : {"llama", "gemma3n", "deepseek_v3", "whisper"}) {
    EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << t;
  }
}

}  // namespace
}  // namespace vram

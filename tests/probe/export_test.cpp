// vram-probe export: for every format, the exported file imported again
// (`estimate --from`) gives the same estimate as the request it came from
// (issue 15's round trip). Each case's request holds the fields its format
// can say; the rest (the model, fields no such file carries) stay in a base
// request both sides share.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "probe/probe_run.h"
#include "test_paths.h"
#include "vram/json_reader.h"

#if defined(VRAM_PROBE_BIN)

namespace {

using vram::json;
using vram::testing::run_binary;

json Llama32() {
  std::ifstream in(std::string(VRAM_FIXTURES_DIR) + "/models/meta-llama__Llama-3.2-1B.json");
  return json::parse(in);
}

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

json Run(const std::vector<std::string>& args) {
  const auto run = run_binary(VRAM_PROBE_BIN, args, false);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  return json::parse(run.out, nullptr, false);
}

struct Case {
  std::string format;
  json base;    // model and what the format does not carry
  json fields;  // what the exported file says
};

void ExpectRoundTrip(const Case& c) {
  json full = c.base;
  full.merge_patch(c.fields);
  const std::string full_file = Write("full_" + c.format + ".json", full.dump());
  const std::string base_file = Write("base_" + c.format + ".json", c.base.dump());
  const json exported =
      Run({"export", "--format", c.format, "--request", full_file, "--model-id", "meta-llama/Llama-3.2-1B", "--json"});
  ASSERT_TRUE(exported.contains("text")) << exported.dump(2);
  const std::string file = Write(exported["file"].get<std::string>(), exported["text"].get<std::string>());
  // The file alone says its fields.
  const json imported = Run({"import", file, "--json"});
  ASSERT_TRUE(imported.contains("request")) << imported.dump(2);
  for (const auto& f : imported["files"]) {
    for (const auto& n : f["not_understood"]) ADD_FAILURE() << c.format << " exported a key it cannot read: " << n;
  }
  const json direct = Run({"estimate", "--request", full_file, "--json"});
  const json round = Run({"estimate", "--request", base_file, "--from", file, "--json"});
  ASSERT_TRUE(direct.contains("peak_bytes")) << direct.dump(2);
  ASSERT_TRUE(round.contains("peak_bytes")) << round.dump(2) << "\n" << exported["text"].get<std::string>();
  EXPECT_EQ(round["peak_bytes"], direct["peak_bytes"]) << c.format << "\n" << exported["text"].get<std::string>();
  EXPECT_EQ(round["components"], direct["components"]) << c.format;
  EXPECT_EQ(round["phases"], direct["phases"]) << c.format;
}

json Base(json train) {
  return {{"model", {{"config", Llama32()}}},
          {"task", "train"},
          {"train", std::move(train)},
          {"gpu", {{"name", "H100 80GB"}}}};
}

TEST(ExportRoundTrip, DeepSpeed) {
  ExpectRoundTrip({"deepspeed", Base({{"method", "full"}, {"seq_len", 1024}}),
                   json::parse(R"({"train": {"micro_batch": 2, "grad_accum": 4},
                                   "parallel": {"gpus": 4, "zero": 3, "offload_optimizer": true}})")});
}

TEST(ExportRoundTrip, Accelerate) {
  ExpectRoundTrip({"accelerate", Base({{"method", "full"}, {"seq_len", 1024}, {"micro_batch", 2}}),
                   json::parse(R"({"train": {"grad_checkpointing": "full"},
                                   "parallel": {"gpus": 4, "fsdp": "full_shard"}})")});
}

TEST(ExportRoundTrip, Trainer) {
  ExpectRoundTrip({"trainer", Base({{"method", "full"}}),
                   json::parse(R"({"train": {"micro_batch": 2, "grad_accum": 8, "seq_len": 1024,
                                             "optimizer": "adamw_bnb_8bit", "grad_checkpointing": "full"},
                                   "parallel": {"gpus": 2, "zero": 2}})")});
}

TEST(ExportRoundTrip, Axolotl) {
  ExpectRoundTrip({"axolotl", Base(json::object()),
                   json::parse(R"({"train": {"framework": "axolotl", "method": "lora", "micro_batch": 2,
                                             "grad_accum": 4, "seq_len": 1024, "optimizer": "adamw_torch_fused",
                                             "grad_checkpointing": "full", "attention": "sdpa",
                                             "lora": {"rank": 16, "alpha": 32, "dropout": 0.05,
                                                      "targets": ["q_proj", "v_proj"]}}})")});
}

TEST(ExportRoundTrip, LlamaFactory) {
  ExpectRoundTrip({"llama_factory", Base(json::object()),
                   json::parse(R"({"train": {"framework": "llama_factory", "method": "qlora", "micro_batch": 1,
                                             "grad_accum": 8, "seq_len": 2048, "optimizer": "adamw_torch",
                                             "grad_checkpointing": "full", "attention": "sdpa",
                                             "lora": {"rank": 8, "alpha": 16, "dropout": 0, "targets": "all-linear"}}})")});
}

TEST(ExportRoundTrip, Torchtune) {
  ExpectRoundTrip({"torchtune", Base(json::object()),
                   json::parse(R"({"train": {"framework": "torchtune", "method": "lora", "micro_batch": 2,
                                             "grad_accum": 8, "seq_len": 2048, "optimizer": "adamw_torch_fused",
                                             "precision": "bf16", "grad_checkpointing": "full",
                                             "lora": {"rank": 8, "alpha": 16, "dropout": 0,
                                                      "targets": ["q_proj", "k_proj", "v_proj", "o_proj",
                                                                  "gate_proj", "up_proj", "down_proj"]}}})")});
}

TEST(ExportErrors, UnknownFormatNamesTheField) {
  const std::string req = Write("req_bad.json", Base({{"method", "full"}}).dump());
  const auto run = run_binary(VRAM_PROBE_BIN, {"export", "--format", "megatron", "--request", req, "--json"}, false);
  EXPECT_EQ(run.exit_code, 1);
  const json e = json::parse(run.out);
  EXPECT_EQ(e["error"]["path"], "export.format");
}

}  // namespace

#endif

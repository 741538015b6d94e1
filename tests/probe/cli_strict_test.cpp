// Issue 17's failures through the built vram-probe: the shared table
// (tests/fixtures/strict/failures.json, which site/tests/wasm/strict.test.js
// runs through the WASM module), the CLI's own numeric flags, and
// `vram-probe validate`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "probe/probe_run.h"
#include "test_paths.h"

#if defined(VRAM_PROBE_BIN)

namespace {

using nlohmann::json;
using vram::testing::ProbeRun;

ProbeRun RunProbe(const std::vector<std::string>& args) {
  return vram::testing::run_binary(VRAM_PROBE_BIN, args, /*with_stderr=*/false);
}

std::string Fixture(const std::string& relative) { return std::string(VRAM_FIXTURES_DIR) + "/" + relative; }

json FailureTable() {
  std::ifstream in(Fixture("strict/failures.json"));
  return json::parse(in);
}

// A case's input as text: its request as JSON, its text, or generated.
std::string CaseText(const json& c) {
  if (c.contains("request")) return c["request"].dump();
  if (c.contains("text")) return c["text"].get<std::string>();
  const std::string g = c["generate"];
  if (g == "oversize") {
    // A valid request padded with spaces past the 16 MiB limit.
    return R"({"model": {"custom": {"layers": 2, "hidden": 64, "heads": 2, "vocab": 100}}})" +
           std::string((16 << 20) + 1, ' ');
  }
  if (g == "deep") return std::string(100000, '[') + std::string(100000, ']');
  ADD_FAILURE() << "unknown generator " << g;
  return "";
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(CliStrict, EveryFailureOfTheTableThroughVramProbe) {
  const json table = FailureTable();
  ASSERT_GE(table["cases"].size(), 10u);
  int i = 0;
  for (const json& c : table["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string file = WriteTemp("strict_case_" + std::to_string(i++) + ".json", CaseText(c));
    const ProbeRun run = RunProbe({"estimate", "--request", file, "--json"});
    const json out = json::parse(run.out, nullptr, false);
    ASSERT_FALSE(out.is_discarded()) << run.out.substr(0, 300);
    if (c.contains("error")) {
      EXPECT_EQ(run.exit_code, 1);
      ASSERT_TRUE(out.contains("error")) << out.dump().substr(0, 300);
      EXPECT_EQ(out["error"]["code"], c["error"]["code"]) << out["error"];
      EXPECT_EQ(out["error"]["path"], c["error"]["path"]) << out["error"];
      EXPECT_NE(out["error"]["message"].get<std::string>().find(c["error"]["message"].get<std::string>()),
                std::string::npos)
          << out["error"];
      continue;
    }
    EXPECT_EQ(run.exit_code, 0);
    ASSERT_FALSE(out.contains("error")) << out["error"];
    if (c.contains("component")) {
      bool found = false;
      for (const auto& comp : out["components"]) {
        if (comp["key"] != c["component"]["key"]) continue;
        found = true;
        EXPECT_EQ(comp["bytes"], c["component"]["bytes"]);
      }
      EXPECT_TRUE(found);
    }
  }
}

// ---- numeric flags parse like the request fields they set -------------------

const std::string kConfig = std::string(VRAM_FIXTURES_DIR) + "/models/meta-llama__Llama-2-7b-hf.json";

json EstimateWithFlags(const std::vector<std::string>& flags, int expected_exit) {
  std::vector<std::string> args = {"estimate", "--model-config", kConfig};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--json");
  const ProbeRun run = RunProbe(args);
  EXPECT_EQ(run.exit_code, expected_exit) << run.out.substr(0, 300);
  json out = json::parse(run.out, nullptr, false);
  EXPECT_FALSE(out.is_discarded()) << run.out.substr(0, 300);
  return out;
}

struct FlagCase {
  std::vector<std::string> flags;
  const char* code;
  const char* path;
};

TEST(CliStrict, NumericFlagsAreNeverClampedHexOrTrailingJunk) {
  const std::vector<FlagCase> cases = {
      {{"--seq-len", "99999999999999999999"}, "out_of_range", "train.seq_len"},  // was clamped to 2^63 - 1
      {{"--seq-len", "0x10"}, "wrong_type", "train.seq_len"},                    // was 16
      {{"--seq-len", "16abc"}, "wrong_type", "train.seq_len"},
      {{"--seq-len", " 16"}, "wrong_type", "train.seq_len"},
      {{"--seq-len", "16777217"}, "out_of_range", "train.seq_len"},  // the table's limit, 2^24
      {{"--seq-len", "2048.5"}, "wrong_type", "train.seq_len"},
      {{"--per-device-batch", "0"}, "out_of_range", "train.micro_batch"},
      {{"--per-device-batch", "-1"}, "out_of_range", "train.micro_batch"},
      {{"--cuda-context-gib", "1e300"}, "out_of_range", "overheads.cuda_context_bytes"},  // was a negative count
      {{"--cuda-context-gib", "65"}, "out_of_range", "overheads.cuda_context_bytes"},     // 64 GiB limit
      {{"--cuda-context-gib", "-1"}, "out_of_range", "overheads.cuda_context_bytes"},
      {{"--cuda-context-gib", "nan"}, "wrong_type", "overheads.cuda_context_bytes"},
      {{"--lora-dropout", "inf"}, "wrong_type", "train.lora.dropout"},
      {{"--lora-dropout", "0x1p-1"}, "wrong_type", "train.lora.dropout"},
  };
  for (const FlagCase& c : cases) {
    SCOPED_TRACE(c.flags[0] + " " + c.flags[1]);
    const json out = EstimateWithFlags(c.flags, 1);
    ASSERT_TRUE(out.contains("error")) << out.dump().substr(0, 200);
    EXPECT_EQ(out["error"]["code"], c.code) << out["error"];
    EXPECT_EQ(out["error"]["path"], c.path) << out["error"];
  }
}

TEST(CliStrict, NumericFlagsInRangeStillWork) {
  const json out = EstimateWithFlags({"--seq-len", "4096", "--cuda-context-gib", "0.5", "--lora-dropout", "0.05"}, 0);
  ASSERT_FALSE(out.contains("error")) << out["error"];
  EXPECT_EQ(out["tokens_per_micro_batch"], 4096);
}

TEST(CliStrict, ARequestFileOverTheLimitIsRefusedBeforeItIsRead) {
  // A sparse 1 GiB file: reading it whole would take a second and a GiB.
  const std::string file = ::testing::TempDir() + "/strict_sparse.json";
  {
    std::ofstream out(file, std::ios::binary);
    out.seekp((int64_t{1} << 30) - 1);
    out.put(' ');
  }
  const ProbeRun run = RunProbe({"estimate", "--request", file, "--json"});
  EXPECT_EQ(run.exit_code, 1);
  const json out = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(out.contains("error")) << run.out;
  EXPECT_EQ(out["error"]["code"], "out_of_range");
  EXPECT_NE(out["error"]["message"].get<std::string>().find("1073741824 bytes"), std::string::npos) << out;
  std::remove(file.c_str());
}

// `vram-probe run --request` read its request whole with a lenient parser: an
// endless stream hung it, and a duplicated key was taken silently. It now
// reads it as `estimate` does (cli_input.h).
TEST(CliStrict, RunReadsItsRequestUnderTheLimitAndStrictly) {
  const std::string script = ::testing::TempDir() + "/strict_run.py";
  const ProbeRun endless = RunProbe({"run", "--request", "/dev/zero", "--script-only", "--script", script});
  EXPECT_EQ(endless.exit_code, 1) << endless.out.substr(0, 300);
  const json e = json::parse(endless.out, nullptr, false);
  ASSERT_TRUE(e.contains("error")) << endless.out.substr(0, 300);
  EXPECT_EQ(e["error"]["code"], "out_of_range");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("/dev/zero: "), std::string::npos) << e;

  const std::string dup = WriteTemp("strict_run_dup.json", R"({"model": {"custom": {"layers": 2, "hidden": 64,
      "heads": 2, "vocab": 100}}, "train": {"micro_batch": 1, "micro_batch": 2}})");
  const ProbeRun duplicated = RunProbe({"run", "--request", dup, "--script-only", "--script", script});
  EXPECT_EQ(duplicated.exit_code, 1) << duplicated.out.substr(0, 300);
  const json d = json::parse(duplicated.out, nullptr, false);
  ASSERT_TRUE(d.contains("error")) << duplicated.out.substr(0, 300);
  EXPECT_EQ(d["error"]["path"], "train.micro_batch") << d;
  EXPECT_NE(d["error"]["message"].get<std::string>().find("duplicate key"), std::string::npos) << d;
  std::remove(script.c_str());
}

// ---- vram-probe validate ------------------------------------------------------

TEST(CliValidate, AGoodRequestConfigAndReportAreOk) {
  const std::string request =
      WriteTemp("validate_ok_request.json",
                R"({"model": {"custom": {"layers": 2, "hidden": 64, "heads": 2, "vocab": 100, "params": "1M"}},
                    "gpu": {"memory_gib": "80GB"}})");
  const std::string probe = Fixture("../../site/tests/unit/fixtures/probe/");
  const ProbeRun run =
      RunProbe({"validate", request, kConfig, probe + "watch-llama-3.2-1b-lora-h100.json",
                probe + "run-cpu-tiny-llama-lora.json", Fixture("strict/seed004-request.json"), "--json"});
  const json out = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << run.out;
  EXPECT_EQ(run.exit_code, 0) << out.dump(2);
  ASSERT_EQ(out["files"].size(), 5u);
  EXPECT_EQ(out["files"][0]["kind"], "request");
  EXPECT_EQ(out["files"][1]["kind"], "model config");
  EXPECT_EQ(out["files"][2]["kind"], "probe report");
  EXPECT_EQ(out["files"][3]["kind"], "probe report");  // a vram-probe run on the CPU: no GPUs
  EXPECT_EQ(out["files"][4]["kind"], "request");       // seed 004's example: "7B", "80GB"
}

TEST(CliValidate, ListsEveryProblemOfARequestWithItsPath) {
  const std::string file = WriteTemp("validate_bad_request.json", R"({
    "model": {"custom": {"layers": 2, "hidden": 64, "heads": 2, "vocab": 100}},
    "train": {"seq_length": 4096, "micro_batch": 0, "lora": {"rnak": 8}, "attention": "fast"},
    "gpu": {"memory_gib": "80G"}
  })");
  const ProbeRun run = RunProbe({"validate", file, "--json"});
  EXPECT_EQ(run.exit_code, 1);
  const json out = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << run.out;
  std::vector<std::string> paths;
  for (const auto& p : out["files"][0]["problems"]) paths.push_back(p["path"]);
  for (const char* want :
       {"train.seq_length", "train.lora.rnak", "train.micro_batch", "train.attention", "gpu.memory_gib"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), want), paths.end()) << want << " in " << out.dump(2);
  }
}

TEST(CliValidate, ReportsProblemsOfAReportAndSyntaxErrorsWithTheirPosition) {
  const std::string report =
      WriteTemp("validate_bad_report.json",
                R"({"schema": "vram-planner-probe/1", "gpus": [{"index": 0, "name": "X", "memory.total": -1}],
          "command": [], "device": 3, "exit": {"code": 0, "signal": null},
          "peak": {"process_used_bytes": "12", "device_used_bytes": null, "accounting_max_bytes": null},
          "baseline": {"device_used_bytes": 0}, "sampling": {"interval_ms": 20, "samples": 1, "duration_ms": 5},
          "timeline": []})");
  const std::string broken = WriteTemp("validate_broken.json", "{\n  \"model\": [1, 2,\n}");
  const ProbeRun run = RunProbe({"validate", report, broken, "--json"});
  EXPECT_EQ(run.exit_code, 1);
  const json out = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << run.out;
  std::vector<std::string> paths;
  for (const auto& p : out["files"][0]["problems"]) paths.push_back(p["path"]);
  for (const char* want : {"gpus[0].memory.total", "command", "device", "peak.process_used_bytes"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), want), paths.end()) << want << " in " << out.dump(2);
  }
  const auto& syntax = out["files"][1]["problems"][0];
  EXPECT_EQ(syntax["code"], "bad_json");
  EXPECT_NE(syntax["message"].get<std::string>().find("line 3, column 1"), std::string::npos) << syntax;
}

TEST(CliValidate, FrameworkFilesAreCheckedByTheImporter) {
  // Issue 16: validate checks imported framework files too. Real recipes from
  // tests/fixtures/import are ok; their keys the estimate cannot follow are
  // warnings, not problems.
  const ProbeRun run =
      RunProbe({"validate", Fixture("import/axolotl_qlora-1b.yml"), Fixture("import/transformers_ds_config_zero3.json"),
                Fixture("import/peft_adapter_config.json"), Fixture("import/accelerate_fsdp.yaml"), "--json"});
  const json out = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << run.out;
  EXPECT_EQ(run.exit_code, 0) << out.dump(2);
  ASSERT_EQ(out["files"].size(), 4u);
  for (const auto& f : out["files"]) {
    EXPECT_NE(f["kind"].get<std::string>().find("(framework file)"), std::string::npos) << f;
    EXPECT_TRUE(f["ok"].get<bool>()) << f;
    EXPECT_TRUE(f["warnings"].is_array()) << f;
  }

  // A wrong value names its key; a value the importer takes but the request
  // refuses is found in the request the file gives (the recipe's model is a
  // bundled preset, so the request is checked whole); YAML that is not a
  // known kind and broken YAML are problems too.
  const std::string bad_type = WriteTemp("validate_bad.yml", "base_model: x/y\nmicro_batch_size: two\n");
  const std::string bad_value =
      WriteTemp("validate_bad_value.yml", "base_model: HuggingFaceTB/SmolLM2-135M\nsequence_len: 0\n");
  const std::string unknown = WriteTemp("validate_unknown.yaml", "hello: 1\n");
  const std::string broken = WriteTemp("validate_broken.yml", "a: 1\nb: [1, 2\n");
  const ProbeRun bad = RunProbe({"validate", bad_type, bad_value, unknown, broken, "--json"});
  EXPECT_EQ(bad.exit_code, 1);
  const json b = json::parse(bad.out, nullptr, false);
  ASSERT_FALSE(b.is_discarded()) << bad.out;
  ASSERT_EQ(b["files"].size(), 4u);
  ASSERT_FALSE(b["files"][0]["problems"].empty()) << b.dump(2);
  EXPECT_EQ(b["files"][0]["problems"][0]["path"], "micro_batch_size") << b.dump(2);
  EXPECT_EQ(b["files"][0]["problems"][0]["code"], "wrong_type") << b.dump(2);
  ASSERT_FALSE(b["files"][1]["problems"].empty()) << b.dump(2);
  EXPECT_NE(b["files"][1]["problems"][0]["path"].get<std::string>().find("seq"), std::string::npos) << b.dump(2);
  EXPECT_FALSE(b["files"][2]["ok"].get<bool>()) << b.dump(2);
  EXPECT_FALSE(b["files"][3]["ok"].get<bool>()) << b.dump(2);
  EXPECT_NE(b["files"][3]["problems"][0]["message"].get<std::string>().find("line"), std::string::npos) << b.dump(2);
}

TEST(CliValidate, NoFilesIsAUsageError) { EXPECT_EQ(RunProbe({"validate"}).exit_code, 2); }

}  // namespace

#endif  // VRAM_PROBE_BIN

// params takes the config under estimate's flag name too: the same file, the
// same count (Llama-2-7B: 6,738,415,616).
TEST(CliParams, ModelConfigIsTheSameFlagAsConfig) {
  const ProbeRun a = RunProbe({"params", "--config", kConfig, "--json"});
  const ProbeRun b = RunProbe({"params", "--model-config", kConfig, "--json"});
  EXPECT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("6738415616"), std::string::npos) << a.out;
}

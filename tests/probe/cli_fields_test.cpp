// vram-probe's request flags against the core's table of fields
// (vram/fields.h): every flag that sets a request field names a declared
// path, every declared flag is a flag the binary takes and its help lists,
// and `vram-probe fields --json` prints the core's table byte for byte.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "commands.h"
#include "probe/probe_run.h"
#include "test_paths.h"
#include "vram/api.h"
#include "vram/fields.h"

#if defined(VRAM_PROBE_BIN)

namespace {

using vram::FieldSpec;
using vram::FieldType;

const std::string kLlama = std::string(VRAM_FIXTURES_DIR) + "/models/meta-llama__Llama-3.2-1B.json";

using vram::testing::ProbeRun;

ProbeRun Probe(const std::vector<std::string>& args) {
  return vram::testing::run_binary(VRAM_PROBE_BIN, args, /*with_stderr=*/true);
}

// A value of the field's type for its flag.
std::string SampleValue(const FieldSpec& f, const std::string& empty_json_file) {
  switch (f.type) {
    case FieldType::kBool:
      return "true";
    case FieldType::kInt:
    case FieldType::kNumber:
      return f.default_value.is_number() ? f.default_value.dump() : "1";
    case FieldType::kEnum:
      return f.values.back();
    case FieldType::kList:
      return "q_proj,v_proj";
    case FieldType::kObject:
      return f.path == "model.config" ? kLlama : empty_json_file;
    case FieldType::kString:
      return "H100 80GB";
  }
  return "";
}

TEST(CliFields, EveryRequestFlagNamesADeclaredField) {
  for (const auto& [flag, path] : vram::cli::request_flags()) {
    EXPECT_NE(vram::find_field(path), nullptr) << flag << " sets " << path << ", which core/src/fields.cpp lacks";
  }
}

TEST(CliFields, EveryDeclaredFlagIsTakenAndDocumented) {
  const std::string empty = testing::TempDir() + "/empty_object.json";
  std::ofstream(empty) << "{}";
  const std::string help = vram::cli::estimate_help();
  for (const auto& f : vram::request_fields()) {
    if (f.cli.empty()) continue;
    EXPECT_NE(help.find(f.cli + " "), std::string::npos) << f.cli << " is missing from estimate --help";
    std::vector<std::string> args = {"estimate", "--model-config", kLlama, f.cli};
    if (f.path != "model.allow_generic") args.push_back(SampleValue(f, empty));
    args.push_back("--json");
    const ProbeRun run = Probe(args);
    // 0 or the core's error (1) for a value the layout cannot take; never a usage error.
    EXPECT_NE(run.exit_code, 2) << f.cli << ": " << run.out;
    EXPECT_EQ(run.out.find("unknown argument"), std::string::npos) << f.cli << ": " << run.out;
  }
}

TEST(CliFields, FieldsJsonIsTheCoreTable) {
  const ProbeRun run = Probe({"fields", "--json"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, vram::fields_json() + "\n");
}

// `vram-probe version` is the core's version object (what every WASM module's
// version() gives) plus every framework's releases with their libraries and
// sources (issue 29), which the first-visit module does not carry; the
// fields table's train.framework gives the same versions and dates.
TEST(CliVersion, IsTheCoreVersionWithEveryFrameworksReleases) {
  const ProbeRun run = Probe({"version"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  auto doc = vram::json::parse(run.out);
  const vram::json releases = doc["framework_releases"];
  doc.erase("framework_releases");
  EXPECT_EQ(doc.dump(2), vram::version_json());
  vram::json table;
  const vram::json fields = vram::json::parse(vram::fields_json());
  for (const auto& f : fields["fields"]) {
    if (f["path"] == "train.framework") table = f;
  }
  ASSERT_EQ(releases.size(), doc["frameworks"].size());
  for (const auto& name : doc["frameworks"]) {
    const auto& list = releases[name.get<std::string>()];
    ASSERT_FALSE(list.empty()) << name;
    ASSERT_EQ(list.size(), table["releases"][name.get<std::string>()].size()) << name;
    for (size_t i = 0; i < list.size(); ++i) {
      EXPECT_FALSE(list[i]["source"].get<std::string>().empty()) << name << " " << list[i]["version"];
      EXPECT_TRUE(list[i]["libraries"].is_object()) << name;
      const auto& row = table["releases"][name.get<std::string>()][i];
      EXPECT_EQ(row, (vram::json{{"version", list[i]["version"]}, {"date", list[i]["date"]}})) << name;
    }
    EXPECT_FALSE(table["labels"][name.get<std::string>()].get<std::string>().empty()) << name;
  }
}

TEST(CliFrameworks, JsonIsTheCoreTableForTheMethod) {
  const ProbeRun run = Probe({"frameworks", "--framework", "torchtune", "--method", "full", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.out, vram::framework_defaults_json(R"({"framework": "torchtune", "method": "full"})") + "\n");
  const auto doc = vram::json::parse(run.out);
  bool in_backward = false;
  for (const auto& d : doc["defaults"]) {
    EXPECT_FALSE(d["source"].get<std::string>().empty()) << d.dump();
    EXPECT_NE(d["path"], "train.lora.rank") << "a LoRA default in the full recipe";
    in_backward |= d["path"] == "train.optimizer_in_backward";
  }
  EXPECT_TRUE(in_backward);
}

TEST(CliFrameworks, ListsEveryFrameworkAndRejectsAnUnknownOne) {
  const ProbeRun all = Probe({"frameworks"});
  ASSERT_EQ(all.exit_code, 0);
  for (const char* name : {"torchtune", "LitGPT", "Unsloth", "Axolotl", "LLaMA-Factory", "Megatron-LM"}) {
    EXPECT_NE(all.out.find(name), std::string::npos) << name;
  }
  const ProbeRun bad = Probe({"frameworks", "--framework", "jax", "--json"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("\"path\": \"framework\""), std::string::npos) << bad.out;
}

TEST(CliFields, AFlagInGibSetsBytes) {
  const ProbeRun run = Probe({"estimate", "--model-config", kLlama, "--cuda-context-gib", "1", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("1073741824"), std::string::npos);  // 1 GiB, not the 512 MiB prior
}

// The serving engines' own flag names set the same fields: vllm serve's
// --max-model-len / --tensor-parallel-size / --enforce-eager (a bare
// switch), SGLang's --context-length / --disable-cuda-graph false; with
// inference, the tensor parallel size alone takes that many GPUs.
TEST(CliFields, TheEnginesOwnFlagNamesSetTheSameFields) {
  const auto infer = [](const ProbeRun& run) {
    EXPECT_EQ(run.exit_code, 0) << run.out;
    return vram::json::parse(run.out);
  };
  const vram::json v =
      infer(Probe({"estimate", "--model-config", kLlama, "--task", "infer", "--engine", "vllm", "--gpu", "H100 80GB",
                   "--max-model-len", "8192", "--tensor-parallel-size", "2", "--enforce-eager", "--json"}));
  EXPECT_EQ(v["infer"]["max_model_len"], 8192);
  EXPECT_EQ(v["infer"]["tp"], 2);
  bool graphs = false;
  for (const auto& c : v["components"]) graphs = graphs || c["key"] == "cuda_graphs";
  EXPECT_FALSE(graphs) << "--enforce-eager captures no CUDA graphs";
  bool gpus = false;
  for (const auto& a : v["assumptions"]) gpus = gpus || a.get<std::string>().find("parallel.gpus 2") == 0;
  EXPECT_TRUE(gpus);
  const vram::json s =
      infer(Probe({"estimate", "--model-config", kLlama, "--task", "infer", "--engine", "sglang", "--gpu", "H100 80GB",
                   "--context-length", "4096", "--disable-cuda-graph", "false", "--json"}));
  EXPECT_EQ(s["infer"]["max_model_len"], 4096);
  graphs = false;
  for (const auto& c : s["components"]) graphs = graphs || c["key"] == "cuda_graphs";
  EXPECT_TRUE(graphs) << "--disable-cuda-graph false keeps the graphs";
}

}  // namespace

#endif  // VRAM_PROBE_BIN

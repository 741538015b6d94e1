// vram-probe quick SIZE (issue 16 part 2, seed 004's `gpu-mem-calc quick 7
// --gpus 8 --engine deepspeed`), end to end through the built binary: the size
// becomes model.size, the engine its request fields, and the answer is the
// same bytes as `estimate` with those fields.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
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

TEST(CliQuick, SeedCommandGivesAnApproximateDeepSpeedEstimate) {
  const ProbeRun run = RunProbe({"quick", "7", "--gpus", "8", "--engine", "deepspeed", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const json r = json::parse(run.out);
  EXPECT_FALSE(r["model"]["exact"].get<bool>());
  EXPECT_EQ(r["model"]["family"], "quick_size");
  EXPECT_NEAR(r["model"]["params_total"].get<double>(), 7e9, 0.05 * 7e9);
  EXPECT_EQ(r["task"], "train");
  EXPECT_EQ(r["parallel"]["gpus"], 8);
  // Same bytes as estimate with the fields quick sets.
  const ProbeRun same = RunProbe({"estimate", "--model-size", "7B", "--task", "train", "--framework", "deepspeed",
                                  "--zero", "3", "--gpus", "8", "--json"});
  EXPECT_EQ(run.out, same.out);
}

TEST(CliQuick, EachEngineRunsAndUserFlagsWin) {
  for (const char* engine : {"ddp", "fsdp", "megatron", "deepspeed"}) {
    const ProbeRun run = RunProbe({"quick", "70B", "--gpus", "64", "--gpu-mem", "80", "--engine", engine, "--json"});
    EXPECT_EQ(run.exit_code, 0) << engine << ": " << run.out;
  }
  const ProbeRun lora = RunProbe({"quick", "8B", "--method", "lora", "--json"});
  ASSERT_EQ(lora.exit_code, 0) << lora.out;
  EXPECT_LT(json::parse(lora.out)["model"]["params_trainable"].get<int64_t>(), 100000000);
}

TEST(CliQuick, BadEngineOrSizeIsAnError) {
  EXPECT_EQ(RunProbe({"quick", "7B", "--engine", "horovod"}).exit_code, 2);
  EXPECT_EQ(RunProbe({"quick", "--gpus", "8"}).exit_code, 2);
  const ProbeRun bad = RunProbe({"quick", "7X", "--json"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_EQ(json::parse(bad.out)["error"]["path"], "model.size");
}

}  // namespace

#endif

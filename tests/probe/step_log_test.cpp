// The step times frameworks print, read from their published logs
// (tests/fixtures/step_logs/README.md), and `watch` reading them from a job's
// output through its pipes.
#include "measure/step_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "measure/watch.h"
#include "probe/fake_source.h"
#include "test_paths.h"

namespace vram::probe {
namespace {

std::string LogPath(const std::string& name) { return std::string(VRAM_FIXTURES_DIR) + "/step_logs/" + name; }

StepTiming Read(const std::string& name) {
  std::ifstream in(LogPath(name));
  EXPECT_TRUE(in) << name;
  StepLog log;
  std::string line;
  while (std::getline(in, line)) log.Line(line);
  return log.Timing();
}

TEST(StepLog, TheTrainersEndOfTrainingDictGivesItsRunFigures) {
  const StepTiming t = Read("hf_trainer_ipex_llm_qlora.log");
  EXPECT_EQ(t.format, "hf_trainer");
  ASSERT_TRUE(t.train_runtime && t.train_steps_per_second && t.train_samples_per_second);
  EXPECT_DOUBLE_EQ(*t.train_runtime, 116.1914);
  EXPECT_DOUBLE_EQ(*t.train_samples_per_second, 6.885);
  EXPECT_DOUBLE_EQ(*t.train_steps_per_second, 1.721);
  EXPECT_FALSE(t.train_tokens_per_second);
  // Per-step logs carry no time: no step list, the run's mean in the JSON.
  EXPECT_TRUE(t.step_seconds.empty());
  const nlohmann::json j = StepTimingJson(t);
  EXPECT_TRUE(j["step_seconds"].is_null());
  EXPECT_DOUBLE_EQ(j["trainer"]["mean_step_seconds"].get<double>(), 1 / 1.721);
}

TEST(StepLog, NewerTrainersQuotedValuesReadTheSame) {
  StepLog log;
  log.Line("{'train_runtime': '36.27', 'train_samples_per_second': '0.414', 'train_loss': '2.46', 'epoch': '3'}");
  const StepTiming t = log.Timing();
  ASSERT_TRUE(t.train_runtime);
  EXPECT_DOUBLE_EQ(*t.train_runtime, 36.27);
  EXPECT_DOUBLE_EQ(*t.train_samples_per_second, 0.414);
  EXPECT_FALSE(t.train_steps_per_second);
}

TEST(StepLog, TorchtuneStepsGiveTokensPerSecondAfterTheWarmup) {
  const StepTiming t = Read("torchtune_pr1358_codellama_7b.log");
  EXPECT_EQ(t.format, "torchtune");
  EXPECT_EQ(t.steps_logged, 12u);
  EXPECT_EQ(t.warmup_skipped, 1u);
  ASSERT_EQ(t.tokens_per_second_per_gpu.size(), 11u);
  EXPECT_DOUBLE_EQ(t.tokens_per_second_per_gpu.front(), 405.044978758513);
  const nlohmann::json j = StepTimingJson(t);
  // Steps 2-12 sorted, the sixth of eleven is step 4's:
  // 345.4 402.3 405.0 408.7 414.7 417.5 477.9 543.0 655.9 698.9 962.2.
  EXPECT_DOUBLE_EQ(j["tokens_per_second_per_gpu"]["median"].get<double>(), 417.49818620797487);
  EXPECT_DOUBLE_EQ(j["tokens_per_second_per_gpu"]["min"].get<double>(), 345.44944748351764);
  EXPECT_DOUBLE_EQ(j["tokens_per_second_per_gpu"]["max"].get<double>(), 962.2259327743811);
  EXPECT_TRUE(j["step_seconds"].is_null());
}

TEST(StepLog, LitgptIterationsWithoutAClosedStepGiveIterationTimesOnly) {
  const StepTiming t = Read("litgpt_issue1224_lora.log");
  EXPECT_EQ(t.format, "litgpt");
  // Iterations 46-62 of one accumulating step: no step closed in view.
  EXPECT_TRUE(t.step_seconds.empty());
  ASSERT_EQ(t.iteration_seconds.size(), 17u);
  EXPECT_DOUBLE_EQ(t.iteration_seconds.front(), 0.04573);
  // Sorted, the ninth of 17 (ms): 39.92 40.02 40.06 40.78 40.90 44.78 45.53
  // 45.73 46.00 46.47 46.56 46.68 46.98 47.63 48.79 48.80 51.27.
  EXPECT_DOUBLE_EQ(StepTimingJson(t)["iteration_seconds"]["median"].get<double>(), 0.046);
}

TEST(StepLog, LitgptStepsSumTheirIterationsWhenEveryOneWasLogged) {
  // The format of litgpt/finetune/lora.py at 26857050, two iterations a step.
  StepLog log;
  log.Line("Epoch 1 | iter 1 step 0 | loss train: 1.657, val: n/a | iter time: 298.27 ms");
  log.Line("Epoch 1 | iter 2 step 1 | loss train: 1.506, val: n/a | iter time: 174.64 ms (step)");
  log.Line("Epoch 1 | iter 3 step 1 | loss train: 1.610, val: n/a | iter time: 106.92 ms");
  log.Line("Epoch 1 | iter 4 step 2 | loss train: 1.585, val: n/a | iter time: 181.34 ms (step)");
  log.Line("Epoch 1 | iter 6 step 2 | loss train: 1.577, val: n/a | iter time: 154.41 ms");
  log.Line("Epoch 1 | iter 7 step 3 | loss train: 1.737, val: n/a | iter time: 102.00 ms (step)");
  log.Line("Epoch 1 | iter 8 step 3 | loss train: 1.671, val: n/a | iter time: 156.28 ms");
  log.Line("Epoch 1 | iter 9 step 4 | loss train: 1.761, val: n/a | iter time: 121.17 ms (step)");
  const StepTiming t = log.Timing();
  // Steps 1, 2 and 4 were logged whole (iteration 5 of step 3 is missing);
  // step 1 is the warm-up.
  EXPECT_EQ(t.steps_logged, 3u);
  ASSERT_EQ(t.step_seconds.size(), 2u);
  EXPECT_NEAR(t.step_seconds[0], 0.10692 + 0.18134, 1e-12);
  EXPECT_NEAR(t.step_seconds[1], 0.15628 + 0.12117, 1e-12);
}

TEST(StepLog, TheRunScriptsLinesGiveStepTimeAndTokens) {
  StepLog log;
  log.Line("vram-probe-step {\"step\": 1, \"seconds\": 2.5, \"tokens\": 4096}");
  log.Line("vram-probe-step {\"step\": 2, \"seconds\": 0.5, \"tokens\": 4096}");
  log.Line("vram-probe-step {\"step\": 3, \"seconds\": 0.25, \"tokens\": 4096}");
  log.Line("vram-probe-step {not json}");
  log.Line("vram-probe-step {\"step\": 4, \"seconds\": -1, \"tokens\": 4096}");    // not a time: skipped
  log.Line("vram-probe-step {\"step\": 5, \"seconds\": 0.5, \"tokens\": -4096}");  // a time, no tokens/s
  const StepTiming t = log.Timing();
  EXPECT_EQ(t.format, "vram_probe_run");
  EXPECT_EQ(t.warmup_skipped, 1u);
  EXPECT_EQ(t.step_seconds, (std::vector<double>{0.5, 0.25, 0.5}));
  EXPECT_EQ(t.tokens_per_second_per_gpu, (std::vector<double>{8192, 16384}));
  EXPECT_DOUBLE_EQ(StepTimingJson(t)["step_seconds"]["median"].get<double>(), 0.5);
}

TEST(StepLog, OtherOutputIsNoTiming) {
  StepLog log;
  log.Line("Step 3 | loss:1.0");                                      // no tokens/s
  log.Line("{'loss': 2.5744, 'learning_rate': 0.0, 'epoch': 0.15}");  // a per-step dict
  log.Line("Epoch 1 | iter x step 1 | loss train: 1");
  log.Line("Step 2 | loss:1.0 tokens_per_second_per_gpu:-5");  // not a rate
  log.Line("{'train_runtime': -3, 'train_steps_per_second': nan}");
  EXPECT_TRUE(log.Timing().format.empty());
  EXPECT_TRUE(StepTimingJson(log.Timing()).is_null());
}

TEST(WatchStepTime, TheJobsPrintedStepTimesReachTheReport) {
  FakeSource source;
  GpuFacts gpu;
  gpu.index = 0;
  gpu.name = "Fake GPU";
  gpu.memory.total = 1ull << 30;
  source.set_gpus({gpu});
  WatchOptions options;
  // torchtune prints on stdout; the Trainer's dict goes to stderr here.
  options.command = {"/bin/sh", "-c",
                     "cat '" + LogPath("torchtune_pr1358_codellama_7b.log") + "'; printf \"%s\" \"" +
                         "{'train_runtime': 116.1914, 'train_steps_per_second': 1.721}\" >&2"};
  options.interval = std::chrono::milliseconds(5);
  options.guard_job = false;
  Result<WatchResult> result = Watch(source, options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  const StepTiming& t = result.value().timing;
  EXPECT_EQ(t.format, "torchtune");
  EXPECT_EQ(t.steps_logged, 12u);
  // The last line had no newline: read at the end all the same.
  ASSERT_TRUE(t.train_runtime);
  EXPECT_DOUBLE_EQ(*t.train_runtime, 116.1914);
}

TEST(WatchStepTime, WithoutReadingTheOutputThereIsNoTiming) {
  FakeSource source;
  GpuFacts gpu;
  gpu.index = 0;
  gpu.memory.total = 1ull << 30;
  source.set_gpus({gpu});
  WatchOptions options;
  options.command = {"/bin/sh", "-c", "echo 'Step 1 | loss:1 tokens_per_second_per_gpu:5'"};
  options.interval = std::chrono::milliseconds(5);
  options.read_output = false;
  Result<WatchResult> result = Watch(source, options);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result.value().timing.format.empty());
}

}  // namespace
}  // namespace vram::probe

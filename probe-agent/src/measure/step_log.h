// The step time a training job prints (issue 31): `watch` and `run` read the
// job's output line by line and keep what a framework's log says about the
// speed of its steps. Read, never guessed: a job that prints none of these
// formats has no timing (null in the report).
//
// Formats, each as its framework writes it:
// - `vram-probe run`'s script (probe-agent/src/run/train_script.py): one
//   `vram-probe-step {json}` line per optimizer step, timed between
//   torch.cuda.synchronize() calls;
// - the Hugging Face Trainer (also Axolotl and LLaMA-Factory, which train
//   with it): the end-of-training dict ProgressCallback.on_log prints with
//   str(logs), `{'train_runtime': 116.1914, 'train_samples_per_second': 6.885,
//   'train_steps_per_second': 1.721, ...}` (keys and rounding:
//   transformers src/transformers/trainer_utils.py speed_metrics at c599e989;
//   `train_tokens_per_second` when include_tokens_per_second is set);
// - torchtune's StdoutLogger.log_dict: `Step 3 | loss:1.17 lr:2e-05
//   tokens_per_second_per_gpu:655.9` (torchtune/training/metric_logging.py and
//   recipes/full_finetune_single_device.py at bd2a0fc7: tokens of the step /
//   its perf_counter time, logged every log_every_n_steps);
// - LitGPT's finetune scripts: `Epoch 1 | iter 46 step 1 | loss train:
//   3.724, val: n/a | iter time: 45.73 ms` with ` (step)` on the iteration
//   that ran optimizer.step() (litgpt/finetune/lora.py at 26857050: iter time
//   is one micro-batch's forward and backward, and the optimizer on a step).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vram::probe {

// What the job's output said about its speed.
struct StepTiming {
  // The format the step figures came from: "vram_probe_run", "litgpt",
  // "torchtune" or "hf_trainer"; empty when no line was recognised.
  std::string format;
  // Seconds of each optimizer step after the warm-up, in order.
  std::vector<double> step_seconds;
  // Tokens per second per GPU of each step after the warm-up.
  std::vector<double> tokens_per_second_per_gpu;
  // Steps logged, and how many of the first were left out as warm-up.
  std::size_t steps_logged = 0;
  std::size_t warmup_skipped = 0;
  // LitGPT: each logged iteration's time (a micro-batch; the step's closing
  // one includes the optimizer), for runs whose steps never closed in view.
  std::vector<double> iteration_seconds;
  // The Hugging Face Trainer's end-of-training figures, as printed.
  std::optional<double> train_runtime;
  std::optional<double> train_samples_per_second;
  std::optional<double> train_steps_per_second;
  std::optional<double> train_tokens_per_second;
};

// Reads a job's output one line at a time (a line ends at '\n' or '\r', as
// tqdm redraws with '\r').
class StepLog {
 public:
  void Line(std::string_view line);
  // The timing so far: the warm-up is the first logged step of each format
  // (CUDA context, kernel selection and the allocator's first growth happen
  // there: torchtune's published log at PR #1358 reads 58 tokens/s at step 1
  // and 345-962 after), kept only when it is the only step.
  StepTiming Timing() const;

 private:
  bool ProbeRunLine(std::string_view line);
  bool HfTrainerLine(std::string_view line);
  bool TorchtuneLine(std::string_view line);
  bool LitgptLine(std::string_view line);

  std::vector<double> run_seconds_;
  std::vector<double> run_tokens_per_second_;
  std::vector<double> torchtune_tokens_per_second_;
  std::vector<double> litgpt_step_seconds_;
  std::vector<double> litgpt_iterations_;
  double litgpt_open_ = 0;  // the iterations of the step still accumulating
  long litgpt_last_iter_ = -1;
  bool litgpt_contiguous_ = false;
  StepTiming hf_;
};

// The report's `timing` object (README "vram-probe", docs/schema.md), or null
// without a recognised line.
nlohmann::json StepTimingJson(const StepTiming& timing);

}  // namespace vram::probe

// `vram-probe watch -- <command>`: run a command and sample the memory it
// and the device use until it ends.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "measure/child_process.h"
#include "measure/memory_source.h"
#include "measure/sampler.h"
#include "measure/status.h"
#include "measure/step_log.h"

namespace vram::probe {

struct WatchOptions {
  std::vector<std::string> command;
  unsigned device = 0;
  // 20 ms: allocator peaks last microseconds to milliseconds, so any polling
  // under-reads them (research §8.3) and the interval should be short; each
  // sample costs one memory and one process-list NVML call. The exact peak,
  // when the driver keeps accounting, comes from accounting_max_bytes.
  std::chrono::milliseconds interval{20};
  // 2048 points: a pretty-printed point is about 100 bytes of JSON, so a
  // report stays near 200 KB however long the job runs.
  std::size_t timeline_capacity = 2048;
  // Adopt orphaned grandchildren (prctl PR_SET_CHILD_SUBREAPER) so their
  // memory still counts. Only the CLI turns this on: it changes the process
  // for good.
  bool become_subreaper = false;
  // A JobGuard process ends the job's process group if the probe dies first
  // (child_process.h).
  bool guard_job = true;
  // Pass the job's stdout and stderr through the probe (output_tee.h) and
  // read the step times a framework prints (step_log.h).
  bool read_output = true;
};

struct WatchResult {
  ExitInfo exit;
  std::vector<int> signals_received;  // SIGINT etc. that reached the probe
  DeviceMemory baseline;              // device reading just before the command started
  Peak peak;
  // Sum over the job's processes of NVML accounting maxMemoryUsage; null when
  // accounting is off.
  std::optional<std::uint64_t> accounting_max_bytes;
  bool process_seen = false;  // NVML listed at least one of the job's pids
  std::vector<Sample> timeline;
  std::size_t timeline_stride = 1;
  std::size_t samples = 0;
  std::size_t failed_samples = 0;
  // From the start to the end of the job's whole process tree.
  std::int64_t duration_ms = 0;
  // From the start to the exit of the command itself; less than duration_ms
  // when processes it started outlived it.
  std::int64_t command_exit_ms = 0;
  std::chrono::milliseconds interval{0};
  std::vector<Status> errors;  // problems that did not stop the measurement
  // The step times the job printed (format empty when none).
  StepTiming timing;
};

// The command runs in a process group of its own; every signal the probe can
// catch is passed on to that group (SignalForwarder), and the measurement goes
// on until the whole group - and, as a subreaper, every orphan - has ended.
// Fails, without running the command, when the source cannot read the device;
// fails with kExecFailed when the command cannot start; fails after the run
// when not one sample succeeded. A command that crashes or is interrupted is a
// success: its end is in `exit`.
Result<WatchResult> Watch(MemorySource& source, const WatchOptions& options);

}  // namespace vram::probe

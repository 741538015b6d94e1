// The measuring subcommands of vram-probe: device, watch, overheads, nccl.
//
// Each Run*Command takes its arguments (after the subcommand name) and a
// MeasureEnv, and returns the process exit code (commands.h):
// 0 success, 1 measurement or I/O failure, 2 usage error, 3 no GPU or driver;
// `watch` returns the command's own exit code (128 + signal when a signal
// ended it) and 127 when the command cannot start.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "measure/collectives.h"
#include "measure/memory_source.h"
#include "measure/status.h"

namespace vram::probe {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoGpu = 3;
// The shell's "command not found" status, used when exec fails.
inline constexpr int kExitCannotRun = 127;

using SourceOpener = std::function<Result<std::unique_ptr<MemorySource>>()>;
using CollectivesOpener = std::function<Result<std::unique_ptr<Collectives>>()>;

// Everything a subcommand touches outside itself, so tests can swap it.
struct MeasureEnv {
  SourceOpener open_nvml;
  SourceOpener open_cuda;       // empty when vram-probe was built without CUDA
  CollectivesOpener open_nccl;  // NCCL for `vram-probe nccl`; empty means not available
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool become_subreaper = false;  // see WatchOptions
};

// The real sources (NVML, CUDA, NCCL), std::cout and std::cerr.
MeasureEnv DefaultMeasureEnv();

int RunDeviceCommand(const std::vector<std::string>& args, const MeasureEnv& env);
int RunWatchCommand(const std::vector<std::string>& args, const MeasureEnv& env);
int RunOverheadsCommand(const std::vector<std::string>& args, const MeasureEnv& env);
int RunNcclCommand(const std::vector<std::string>& args, const MeasureEnv& env);

}  // namespace vram::probe

// Running the watched command: fork/exec, exit status, signal forwarding.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "measure/status.h"

namespace vram::probe {

// How the command ended: exactly one of `code` and `signal` is set.
struct ExitInfo {
  std::optional<int> code;
  std::optional<int> signal;
  bool core_dumped = false;
};

// "SIGINT" for 2; "SIG<n>" for numbers it does not name.
std::string SignalName(int signal);

// The shell convention for a wrapper's own exit code: the code, or 128 + the
// signal number.
int ShellExitCode(const ExitInfo& exit);

// While alive, SIGINT, SIGTERM and SIGHUP no longer stop the probe: they are
// recorded so the caller can pass them on to the command. Signals the probe
// was started with ignored (nohup, `&` in a non-interactive shell) stay
// ignored. Restores the previous dispositions when destroyed. One instance at
// a time per process (a signal handler has nowhere else to write).
class SignalForwarder {
 public:
  SignalForwarder();
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

  // Sends every signal received since the last call to `pid`, except those
  // the terminal raised: those reached the command already because it shares
  // the probe's process group. Returns the signals received, forwarded or not.
  std::vector<int> Forward(pid_t pid);
};

// Starts `argv` (looked up in PATH) with the probe's stdin/stdout/stderr.
// Returns kExecFailed, with errno's text, when the program cannot run.
Result<pid_t> Spawn(const std::vector<std::string>& argv);

// The exit of `pid` if it has ended (waitpid WNOHANG); nullopt while it runs.
// A waitpid failure other than EINTR is reported as exit code 255 in `status`.
std::optional<ExitInfo> TryReap(pid_t pid, Status* status);

// Reaps orphans re-parented to the probe (it is a child subreaper).
void ReapOrphans();

}  // namespace vram::probe

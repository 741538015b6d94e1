// Running the watched command: fork/exec, exit status, signal forwarding.
#pragma once

#include <signal.h>
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

// Every signal the probe catches while it watches: the ones whose default
// action ends a process (signal(7): SIGHUP, SIGINT, SIGQUIT, SIGUSR1/2,
// SIGALRM, SIGTERM, SIGXCPU, ... and the real-time signals) plus the job
// control signals it passes on (SIGTSTP, SIGCONT, SIGWINCH). Not caught:
// SIGKILL and SIGSTOP (they cannot be), and the faults of the probe's own code
// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS) - for those, and
// for SIGKILL, the JobGuard ends the job.
std::vector<int> WatchedSignals();

// True for the signals WatchedSignals() lists that would end the probe by
// default (everything but SIGTSTP, SIGCONT, SIGWINCH).
bool EndsProcess(int signal);

// While alive, no WatchedSignals() signal stops the probe: each is recorded
// so the caller can pass it on to the job's process group. Signals the probe
// was started with ignored (nohup, `&` in a non-interactive shell) stay
// ignored. Restores the previous dispositions when destroyed. One instance at
// a time per process (a signal handler has nowhere else to write).
class SignalForwarder {
 public:
  SignalForwarder();
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

  // Sends every signal received since the last call to the process group
  // `pgid` (the job runs in a group of its own, so the terminal's Ctrl-C
  // reaches only the probe). SIGPIPE is not passed on: it is about the probe's
  // own output. SIGTSTP (Ctrl-Z) stops the job's group and then the probe;
  // SIGCONT continues both. Returns the signals received that would have
  // ended the probe, forwarded or not.
  std::vector<int> Forward(pid_t pgid);
};

struct SpawnOptions {
  // setpgid(0, 0) in the child: the job and everything it starts form one
  // process group that signals are forwarded to and that JobGuard can end.
  bool own_process_group = true;
  // prctl(PR_SET_PDEATHSIG) in the child: the kernel sends it this signal if
  // the probe dies first, even by SIGKILL; 0 for none.
  int parent_death_signal = SIGTERM;
  // When >= 0, the child writes its pid (a pid_t) here once it leads its
  // group, before exec: JobGuard::announce_fd(), so the guard knows the
  // group even if the probe dies the next instant.
  int announce_fd = -1;
  // When >= 0, the child's stdout / stderr become these descriptors (the
  // pipes of an OutputTee); otherwise it shares the probe's.
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// Starts `argv` (looked up in PATH) with the probe's stdin and, unless
// `options` redirect them, its stdout and stderr.
// Returns kExecFailed, with errno's text, when the program cannot run.
Result<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// The exit of `pid` if it has ended (waitpid WNOHANG); nullopt while it runs.
// A waitpid failure other than EINTR is reported as exit code 255 in `status`.
std::optional<ExitInfo> TryReap(pid_t pid, Status* status);

// Reaps every child that has ended (orphans re-parented to the probe when it
// is a child subreaper). Returns true when the probe has no child left.
bool ReapOrphans();

// Reaps the probe's children in the process group `pgid` that have ended.
void ReapGroup(pid_t pgid);

// True while some process of the group `pgid` exists (kill(-pgid, 0)); a
// zombie counts, so reap first.
bool GroupAlive(pid_t pgid);

// Ends the job if the probe dies without saying goodbye (SIGKILL, a crash, an
// OOM kill): a process of its own (forked, in a session of its own so group
// and terminal signals do not reach it) that waits on a pipe. When the probe
// ends without calling Release(), the pipe closes; the guard then sends
// SIGTERM to the job's process group and, if some of it is still alive after
// `grace`, SIGKILL. PR_SET_PDEATHSIG alone reaches only the job's first
// process; this reaches its whole group.
class JobGuard {
 public:
  // 10 s: `docker stop`'s default grace period between SIGTERM and SIGKILL
  // (docs.docker.com/reference/cli/docker/container/stop, --time).
  static constexpr int kGraceSeconds = 10;

  JobGuard() = default;
  ~JobGuard() { Release(); }
  JobGuard(const JobGuard&) = delete;
  JobGuard& operator=(const JobGuard&) = delete;

  // Starts the guard process, before the job: Spawn (SpawnOptions::
  // announce_fd) tells it the job's group. On failure the job runs unguarded
  // (PR_SET_PDEATHSIG still ends its first process).
  Status Start(int grace_seconds = kGraceSeconds);
  int announce_fd() const { return write_fd_; }
  // The job is over (or the probe hands it back): the guard exits quietly.
  void Release();
  pid_t pid() const { return pid_; }

 private:
  int write_fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace vram::probe

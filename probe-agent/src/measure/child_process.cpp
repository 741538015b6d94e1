#include "measure/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace vram::probe {
namespace {

// The signals a user or a scheduler (SLURM, Kubernetes) sends to stop a job.
constexpr std::array<int, 3> kForwardedSignals = {SIGINT, SIGTERM, SIGHUP};

// Bit n: signal n arrived. Lock-free atomics are async-signal-safe.
std::atomic<unsigned> g_received{0};
// Bit n: signal n came from kill()/raise() rather than from the terminal.
std::atomic<unsigned> g_to_forward{0};
static_assert(std::atomic<unsigned>::is_always_lock_free);

struct sigaction g_previous[kForwardedSignals.size()];
bool g_installed[kForwardedSignals.size()];

void OnSignal(int signal, siginfo_t* info, void* /*context*/) {
  g_received.fetch_or(1u << signal);
  // SI_KERNEL: raised by the kernel, e.g. Ctrl-C on the terminal, which
  // delivers SIGINT to the whole foreground process group, command included.
  if (info == nullptr || info->si_code != SI_KERNEL) g_to_forward.fetch_or(1u << signal);
}

}  // namespace

std::string SignalName(int signal) {
  switch (signal) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    default:
      return "SIG" + std::to_string(signal);
  }
}

int ShellExitCode(const ExitInfo& exit) {
  // 128 + n: the POSIX shell convention for "killed by signal n".
  constexpr int kSignalBase = 128;
  if (exit.code) return *exit.code;
  if (exit.signal) return kSignalBase + *exit.signal;
  return 1;
}

SignalForwarder::SignalForwarder() {
  g_received.store(0);
  g_to_forward.store(0);
  for (std::size_t i = 0; i < kForwardedSignals.size(); ++i) {
    g_installed[i] = false;
    if (sigaction(kForwardedSignals[i], nullptr, &g_previous[i]) != 0) continue;
    if (g_previous[i].sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_sigaction = OnSignal;
    action.sa_flags = SA_SIGINFO;  // no SA_RESTART: sleeps wake up to forward at once
    sigemptyset(&action.sa_mask);
    g_installed[i] = sigaction(kForwardedSignals[i], &action, nullptr) == 0;
  }
}

SignalForwarder::~SignalForwarder() {
  for (std::size_t i = 0; i < kForwardedSignals.size(); ++i) {
    if (g_installed[i]) sigaction(kForwardedSignals[i], &g_previous[i], nullptr);
  }
}

std::vector<int> SignalForwarder::Forward(pid_t pid) {
  const unsigned received = g_received.exchange(0);
  const unsigned to_forward = g_to_forward.exchange(0);
  std::vector<int> signals;
  for (int signal : kForwardedSignals) {
    if ((received & (1u << signal)) == 0) continue;
    signals.push_back(signal);
    if ((to_forward & (1u << signal)) != 0 && pid > 0) kill(pid, signal);
  }
  return signals;
}

Result<pid_t> Spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) return Status(StatusCode::kInvalidArgument, "no command to run after --");
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // The child writes errno here if exec fails; a successful exec closes it.
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Status(StatusCode::kIoError, std::string("pipe2: ") + std::strerror(errno));
  }
  // Block the forwarded signals across fork so the child cannot run the
  // probe's handler before it resets the dispositions.
  sigset_t block;
  sigset_t previous;
  sigemptyset(&block);
  for (int signal : kForwardedSignals) sigaddset(&block, signal);
  sigprocmask(SIG_BLOCK, &block, &previous);

  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    for (std::size_t i = 0; i < kForwardedSignals.size(); ++i) {
      if (g_installed[i]) signal(kForwardedSignals[i], SIG_DFL);
    }
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    close(pipe_fds[0]);
    execvp(args[0], args.data());
    const int error = errno;
    ssize_t ignored = write(pipe_fds[1], &error, sizeof(error));
    (void)ignored;
    // 127: the shell's "command not found" status.
    _exit(127);
  }
  const int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  close(pipe_fds[1]);
  if (pid < 0) {
    close(pipe_fds[0]);
    return Status(StatusCode::kExecFailed, std::string("fork: ") + std::strerror(fork_errno));
  }
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(pipe_fds[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(pipe_fds[0]);
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    int ignored_status = 0;
    while (waitpid(pid, &ignored_status, 0) < 0 && errno == EINTR) {
    }
    return Status(StatusCode::kExecFailed, "cannot run '" + argv[0] + "': " + std::strerror(exec_errno));
  }
  return pid;
}

std::optional<ExitInfo> TryReap(pid_t pid, Status* status) {
  int wait_status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &wait_status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  ExitInfo exit;
  if (r < 0) {
    if (status != nullptr) *status = Status(StatusCode::kInternal, std::string("waitpid: ") + std::strerror(errno));
    exit.code = 255;
    return exit;
  }
  if (WIFEXITED(wait_status)) {
    exit.code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    exit.signal = WTERMSIG(wait_status);
    exit.core_dumped = WCOREDUMP(wait_status);
  } else {
    return std::nullopt;  // stopped or continued: still running
  }
  return exit;
}

void ReapOrphans() {
  int status = 0;
  while (waitpid(-1, &status, WNOHANG) > 0) {
  }
}

}  // namespace vram::probe

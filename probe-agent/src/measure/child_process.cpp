#include "measure/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace vram::probe {
namespace {

// Signal numbers go up to SIGRTMAX, 64 on Linux (signal(7)).
constexpr int kMaxSignal = 64;

// Bit n-1: signal n arrived. Lock-free atomics are async-signal-safe.
std::atomic<std::uint64_t> g_received{0};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

std::uint64_t Bit(int signal) { return std::uint64_t{1} << (signal - 1); }

struct sigaction g_previous[kMaxSignal + 1];
bool g_installed[kMaxSignal + 1];

void OnSignal(int signal) { g_received.fetch_or(Bit(signal)); }

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

std::vector<int> WatchedSignals() {
  // signal(7), "Standard signals": default action Term or Core, minus the
  // hardware faults; then the job control signals the probe passes on.
  std::vector<int> signals = {SIGHUP,  SIGINT,  SIGQUIT,   SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGSTKFLT,
                              SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,   SIGPWR,  SIGTSTP, SIGCONT, SIGWINCH};
  // glibc keeps the first real-time signals for itself; SIGRTMIN is the first
  // one a program may use.
  for (int s = SIGRTMIN; s <= SIGRTMAX && s <= kMaxSignal; ++s) signals.push_back(s);
  return signals;
}

bool EndsProcess(int signal) { return signal != SIGTSTP && signal != SIGCONT && signal != SIGWINCH; }

SignalForwarder::SignalForwarder() {
  g_received.store(0);
  for (int signal : WatchedSignals()) {
    g_installed[signal] = false;
    if (sigaction(signal, nullptr, &g_previous[signal]) != 0) continue;
    if (g_previous[signal].sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = OnSignal;
    action.sa_flags = 0;  // no SA_RESTART: sleeps wake up to forward at once
    sigemptyset(&action.sa_mask);
    g_installed[signal] = sigaction(signal, &action, nullptr) == 0;
  }
}

SignalForwarder::~SignalForwarder() {
  for (int signal : WatchedSignals()) {
    if (g_installed[signal]) sigaction(signal, &g_previous[signal], nullptr);
    g_installed[signal] = false;
  }
}

std::vector<int> SignalForwarder::Forward(pid_t pgid) {
  const std::uint64_t received = g_received.exchange(0);
  std::vector<int> ending;
  for (int signal : WatchedSignals()) {
    if ((received & Bit(signal)) == 0) continue;
    if (EndsProcess(signal)) ending.push_back(signal);
    if (signal == SIGPIPE || pgid <= 0) continue;
    kill(-pgid, signal);
    // Ctrl-Z: the job stops, then the probe, so the shell sees it stopped and
    // `fg` (SIGCONT to the probe, forwarded above) resumes both.
    if (signal == SIGTSTP) kill(getpid(), SIGSTOP);
  }
  return ending;
}

Result<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
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
  const std::vector<int> watched = WatchedSignals();
  sigset_t block;
  sigset_t previous;
  sigemptyset(&block);
  for (int signal : watched) sigaddset(&block, signal);
  sigprocmask(SIG_BLOCK, &block, &previous);
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    for (int signal : watched) {
      if (g_installed[signal]) sigaction(signal, &g_previous[signal], nullptr);
    }
    if (options.own_process_group) setpgid(0, 0);
    if (options.announce_fd >= 0) {
      const pid_t self = getpid();
      ssize_t ignored = write(options.announce_fd, &self, sizeof(self));
      (void)ignored;
    }
    if (options.parent_death_signal != 0) {
      prctl(PR_SET_PDEATHSIG, options.parent_death_signal, 0, 0, 0);
      // The probe died before prctl took effect: nothing would send it now.
      if (getppid() != parent) _exit(127);
    }
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (options.stdout_fd >= 0) dup2(options.stdout_fd, STDOUT_FILENO);
    if (options.stderr_fd >= 0) dup2(options.stderr_fd, STDERR_FILENO);
    close(pipe_fds[0]);
    execvp(args[0], args.data());
    const int error = errno;
    ssize_t ignored = write(pipe_fds[1], &error, sizeof(error));
    (void)ignored;
    // 127: the shell's "command not found" status.
    _exit(127);
  }
  const int fork_errno = errno;
  // Also in the parent: whichever runs first, the group exists before the
  // probe forwards anything to it (the race glibc's posix_spawn and shells
  // avoid the same way). EACCES after the child's exec is fine: it did it.
  if (pid > 0 && options.own_process_group) setpgid(pid, pid);
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

bool ReapOrphans() {
  int status = 0;
  pid_t r;
  while ((r = waitpid(-1, &status, WNOHANG)) > 0 || (r < 0 && errno == EINTR)) {
  }
  return r < 0 && errno == ECHILD;
}

void ReapGroup(pid_t pgid) {
  if (pgid <= 0) return;
  int status = 0;
  pid_t r;
  while ((r = waitpid(-pgid, &status, WNOHANG)) > 0 || (r < 0 && errno == EINTR)) {
  }
}

bool GroupAlive(pid_t pgid) {
  if (pgid <= 0) return false;
  // EPERM: a member exists that the probe may not signal (it changed user).
  return kill(-pgid, 0) == 0 || errno == EPERM;
}

Status JobGuard::Start(int grace_seconds) {
  Release();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Status(StatusCode::kIoError, std::string("job guard: pipe2: ") + std::strerror(errno));
  }
  const std::vector<int> watched = WatchedSignals();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here (the probe may have threads).
    setsid();  // out of the probe's group and terminal: `kill -9 -<pgid>` of the probe spares it
    for (int signal : watched) {
      struct sigaction action {};
      action.sa_handler = SIG_DFL;
      sigemptyset(&action.sa_mask);
      sigaction(signal, &action, nullptr);
    }
    for (int signal : {SIGINT, SIGQUIT, SIGHUP, SIGTSTP, SIGPIPE}) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      sigaction(signal, &ignore, nullptr);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Hold nothing of the probe's: a reader of the probe's stdout must see
    // EOF when the probe ends, not when the guard does.
    const int null_fd = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) {
      if (null_fd >= 0) dup2(null_fd, fd);
    }
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != fds[0]) close(fd);
    }
    // First the job's pid (its group), from the job itself before exec.
    pid_t pgid = 0;
    std::size_t got = 0;
    while (got < sizeof(pgid)) {
      const ssize_t r = read(fds[0], reinterpret_cast<char*>(&pgid) + got, sizeof(pgid) - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) _exit(0);  // no job was started
      got += static_cast<std::size_t>(r);
    }
    if (pgid <= 1) _exit(0);
    char byte = 0;
    ssize_t n;
    do {
      n = read(fds[0], &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n == 1) _exit(0);  // released: the job ended under the probe's eyes
    // The probe is gone: end the job's group, politely first.
    kill(-pgid, SIGTERM);
    const timespec tick{0, 100'000'000};
    for (int i = 0; i < grace_seconds * 10; ++i) {
      if (kill(-pgid, 0) != 0 && errno == ESRCH) _exit(0);
      nanosleep(&tick, nullptr);
    }
    kill(-pgid, SIGKILL);
    _exit(0);
  }
  const int fork_errno = errno;
  close(fds[0]);
  if (pid < 0) {
    close(fds[1]);
    return Status(StatusCode::kIoError, std::string("job guard: fork: ") + std::strerror(fork_errno));
  }
  write_fd_ = fds[1];
  pid_ = pid;
  return Status::Ok();
}

void JobGuard::Release() {
  if (write_fd_ < 0) return;
  const char byte = 1;
  ssize_t ignored;
  do {
    ignored = write(write_fd_, &byte, 1);
  } while (ignored < 0 && errno == EINTR);
  close(write_fd_);
  write_fd_ = -1;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace vram::probe

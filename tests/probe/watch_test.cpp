// `watch` on real child processes, measured through a FakeSource.
#include "measure/watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "measure/child_process.h"
#include "measure/process_tree.h"
#include "probe/fake_source.h"

namespace vram::probe {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuFacts gpu;
    gpu.index = 0;
    gpu.name = "Fake GPU";
    gpu.memory.total = 1024 * kMiB;
    source_.set_gpus({gpu});
  }

  static FakeSource::Step Reading(std::uint64_t device_used, std::vector<ProcessMemory> processes = {}) {
    FakeSource::Step step;
    step.memory.total = 1024 * kMiB;
    step.memory.used = device_used;
    step.memory.free = 1024 * kMiB - device_used;
    step.processes = std::move(processes);
    return step;
  }

  WatchOptions Options(std::vector<std::string> command) {
    WatchOptions options;
    options.command = std::move(command);
    options.interval = std::chrono::milliseconds(5);
    return options;
  }

  FakeSource source_;
};

TEST_F(WatchTest, ExitCodeOfTheCommandIsRecorded) {
  Result<WatchResult> r = Watch(source_, Options({"/bin/sh", "-c", "exit 3"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().exit.code, 3);
  EXPECT_FALSE(r.value().exit.signal.has_value());
  EXPECT_GE(r.value().samples, 1u);
  EXPECT_EQ(ShellExitCode(r.value().exit), 3);
}

TEST_F(WatchTest, CommandKilledBySignalIsRecordedAndStillReported) {
  Result<WatchResult> r = Watch(source_, Options({"/bin/sh", "-c", "kill -KILL $$"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r.value().exit.code.has_value());
  EXPECT_EQ(r.value().exit.signal, SIGKILL);
  EXPECT_EQ(ShellExitCode(r.value().exit), 128 + SIGKILL);
}

TEST_F(WatchTest, SigintToTheProbeIsForwardedToTheCommand) {
  // The third reading sends SIGINT to this process, as `kill -INT` would.
  source_.set_on_memory([](int call) {
    if (call == 3) kill(getpid(), SIGINT);
  });
  const auto start = std::chrono::steady_clock::now();
  Result<WatchResult> r = Watch(source_, Options({"sleep", "30"}));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().exit.signal, SIGINT);
  ASSERT_EQ(r.value().signals_received.size(), 1u);
  EXPECT_EQ(r.value().signals_received[0], SIGINT);
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST_F(WatchTest, PeakCountsOnlyTheCommandsProcesses) {
  const std::uint32_t stranger = 0x7FFFFFF0u;  // no such pid: never part of the job
  source_.set_steps({
      Reading(100 * kMiB),  // baseline, before the command starts
      Reading(150 * kMiB, {{FakeSource::kChildrenOfCaller, 40 * kMiB}, {stranger, 900 * kMiB}}),
      Reading(400 * kMiB, {{FakeSource::kChildrenOfCaller, 300 * kMiB}, {stranger, 900 * kMiB}}),
      Reading(250 * kMiB, {{FakeSource::kChildrenOfCaller, 120 * kMiB}, {stranger, 900 * kMiB}}),
  });
  Result<WatchResult> r = Watch(source_, Options({"sleep", "0.3"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const WatchResult& w = r.value();
  EXPECT_EQ(w.baseline.used, 100 * kMiB);
  EXPECT_TRUE(w.process_seen);
  EXPECT_EQ(w.peak.process_used_bytes, 300 * kMiB);
  EXPECT_EQ(w.peak.device_used_bytes, 400 * kMiB);
  EXPECT_FALSE(w.timeline.empty());
  EXPECT_LE(w.timeline.size(), WatchOptions().timeline_capacity + 1);
}

TEST_F(WatchTest, AccountingHighWaterMarkIsReported) {
  source_.set_steps({Reading(0), Reading(10 * kMiB, {{FakeSource::kChildrenOfCaller, 10 * kMiB}})});
  source_.set_accounting_max(64 * kMiB);
  Result<WatchResult> r = Watch(source_, Options({"sleep", "0.1"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().accounting_max_bytes, 64 * kMiB);
}

TEST_F(WatchTest, ProcessNeverListedLeavesThePeakNullWithANote) {
  source_.set_steps({Reading(0), Reading(200 * kMiB)});
  Result<WatchResult> r = Watch(source_, Options({"/bin/sh", "-c", "exit 0"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r.value().process_seen);
  EXPECT_FALSE(r.value().peak.process_used_bytes.has_value());
  EXPECT_EQ(r.value().peak.device_used_bytes, 200 * kMiB);
  ASSERT_FALSE(r.value().errors.empty());
  EXPECT_EQ(r.value().errors.back().code(), StatusCode::kProcessNotSeen);
}

TEST_F(WatchTest, FailedSamplesAreCountedOnceWithTheirMessage) {
  FakeSource::Step lost;
  lost.error = Status(StatusCode::kNvmlError, "NVML error 15 NVML_ERROR_GPU_IS_LOST");
  source_.set_steps({Reading(0), Reading(5 * kMiB), lost});
  Result<WatchResult> r = Watch(source_, Options({"sleep", "0.1"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(r.value().failed_samples, 1u);
  int mentions = 0;
  for (const Status& e : r.value().errors) mentions += e.message().find("GPU_IS_LOST") != std::string::npos;
  EXPECT_EQ(mentions, 1);
}

TEST_F(WatchTest, UnreadableDeviceRunsNothing) {
  FakeSource::Step broken;
  broken.error = Status(StatusCode::kNoGpu, "no NVIDIA driver");
  source_.set_steps({broken});
  const std::string marker = ::testing::TempDir() + "/vram_watch_should_not_exist";
  std::remove(marker.c_str());
  Result<WatchResult> r = Watch(source_, Options({"touch", marker}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNoGpu);
  struct stat st {};
  EXPECT_NE(stat(marker.c_str(), &st), 0) << "the command ran although nothing could be measured";
}

TEST_F(WatchTest, CommandThatCannotStartIsExecFailed) {
  Result<WatchResult> r = Watch(source_, Options({"/nonexistent/vram-probe-test-command"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kExecFailed);
  EXPECT_NE(r.status().message().find("No such file"), std::string::npos) << r.status().message();
}

// The job's own pid and process group, as the job itself sees them.
std::pair<long, long> PidAndGroupOfJob(const std::string& file) {
  std::ifstream in(file);
  long pid = -1;
  long pgid = -1;
  in >> pid >> pgid;
  return {pid, pgid};
}

TEST_F(WatchTest, TheCommandRunsInAProcessGroupOfItsOwn) {
  const std::string file = ::testing::TempDir() + "/vram_watch_pgid_" + std::to_string(getpid());
  // Field 5 of /proc/<pid>/stat is the process group (proc(5)).
  Result<WatchResult> r =
      Watch(source_, Options({"/bin/sh", "-c", "echo $$ $(cut -d' ' -f5 /proc/$$/stat) > " + file}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto [pid, pgid] = PidAndGroupOfJob(file);
  std::remove(file.c_str());
  ASSERT_GT(pid, 0);
  EXPECT_EQ(pgid, pid) << "the command leads its own group";
  EXPECT_NE(pgid, static_cast<long>(getpgrp())) << "not the probe's group";
}

// Whether a child of a child of this process (the watched shell's command)
// has exec'd `name`: /proc/<pid>/comm is the shell's until the exec.
bool AGrandchildRuns(const std::string& name) {
  for (std::uint32_t child : ChildPids(static_cast<std::uint32_t>(getpid()))) {
    for (std::uint32_t grandchild : ChildPids(child)) {
      std::ifstream comm("/proc/" + std::to_string(grandchild) + "/comm");
      std::string command;
      if (std::getline(comm, command) && command == name) return true;
    }
  }
  return false;
}

// Every signal the probe catches reaches the job's whole group - here a shell
// and the `sleep 30` it waits for - and the watch still ends with a result.
class WatchSignalTest : public WatchTest, public ::testing::WithParamInterface<int> {};

TEST_P(WatchSignalTest, ReachesTheWholeJobAndTheWatchStillEnds) {
  const int sig = GetParam();
  // The signal goes out once the shell's `sleep` runs, not at a fixed
  // reading. Earlier, Debian's /bin/sh (dash 0.5.12) can lose a SIGINT: it
  // starts a command with vfork and all signals blocked, and a SIGINT the
  // child gets before its exec reaches dash's own handler, which returns at
  // once in a vforked child. The sleep then never sees it and runs its 30 s
  // (seen under load: the watch took 30 s, not < 10).
  bool sent = false;
  source_.set_on_memory([sig, &sent](int call) {
    if (sent || call < 3 || !AGrandchildRuns("sleep")) return;
    sent = true;
    kill(getpid(), sig);
  });
  const auto start = std::chrono::steady_clock::now();
  // The shell waits for its foreground `sleep`; `; true` keeps it from
  // exec'ing the sleep in its place.
  Result<WatchResult> r = Watch(source_, Options({"/bin/sh", "-c", "sleep 30; true"}));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(sent) << "the shell's sleep was never seen running";
  EXPECT_EQ(r.value().exit.signal, sig) << SignalName(sig);
  ASSERT_EQ(r.value().signals_received.size(), 1u);
  EXPECT_EQ(r.value().signals_received[0], sig);
  // The sleep got it too: otherwise the watch would wait the 30 s for it.
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

INSTANTIATE_TEST_SUITE_P(CatchableSignals, WatchSignalTest,
                         ::testing::Values(SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU,
                                           SIGVTALRM, SIGPROF, SIGRTMIN, SIGRTMAX),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param >= SIGRTMIN ? "SIGRT" + std::to_string(info.param)
                                                         : SignalName(info.param);
                         });

TEST_F(WatchTest, EveryTerminatingSignalIsWatched) {
  const std::vector<int> watched = WatchedSignals();
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU, SIGXFSZ, SIGVTALRM,
                  SIGPROF, SIGIO, SIGPWR, SIGSTKFLT, SIGTSTP, SIGCONT, SIGWINCH}) {
    EXPECT_NE(std::find(watched.begin(), watched.end(), sig), watched.end()) << SignalName(sig);
  }
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) {
    EXPECT_NE(std::find(watched.begin(), watched.end(), sig), watched.end()) << sig;
  }
}

// A background process of the job that runs until the watched shell has
// ended, whatever the load: it waits for a file that the readings' hook
// creates two readings after the shell left this process's children (the
// watch reaped it). The shell is the child that leads its own group in this
// process's session (Spawn's setpgid); a setsid'd orphan leads its own session.
class AfterTheShell {
 public:
  explicit AfterTheShell(const std::string& name)
      : file_(::testing::TempDir() + "/" + name + "_" + std::to_string(getpid())) {
    std::remove(file_.c_str());
  }
  ~AfterTheShell() { std::remove(file_.c_str()); }

  // Shell words that wait for the file, at most about 30 s (a test that
  // never creates it fails instead of hanging).
  std::string Wait() const {
    return "i=0; while [ ! -e " + file_ + " ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done";
  }

  // For FakeSource::set_on_memory: call 1 is the baseline, before the spawn.
  void OnReading(int call) {
    if (call < 2 || released_) return;
    if (ShellRuns()) return;
    if (++readings_since_ == 2) {
      std::ofstream(file_) << "go\n";
      released_ = true;
    }
  }
  bool released() const { return released_; }

 private:
  static bool ShellRuns() {
    for (std::uint32_t child : ChildPids(static_cast<std::uint32_t>(getpid()))) {
      const pid_t pid = static_cast<pid_t>(child);
      std::ifstream comm("/proc/" + std::to_string(child) + "/comm");
      std::string command;
      if (std::getline(comm, command) && command == "sh" && getpgid(pid) == pid && getsid(pid) != pid) return true;
    }
    return false;
  }

  std::string file_;
  int readings_since_ = 0;
  bool released_ = false;
};

TEST_F(WatchTest, ABackgroundProcessThatOutlivesTheCommandIsMeasuredUntilItEnds) {
  // The shell exits at once; the loop it left in the job's group runs on
  // until the shell is gone.
  AfterTheShell after("vram_watch_background");
  source_.set_on_memory([&after](int call) { after.OnReading(call); });
  Result<WatchResult> r = Watch(source_, Options({"/bin/sh", "-c", "(" + after.Wait() + ") & exit 0"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().exit.code, 0);
  ASSERT_TRUE(after.released()) << "the shell was never seen to end";
  EXPECT_GT(r.value().duration_ms, r.value().command_exit_ms) << "measured only while the command itself ran";
}

TEST_F(WatchTest, AnOrphanThatLeftTheGroupIsMeasuredAsTheSubreapersChild) {
  // setsid: the grandchild leaves the job's group and session; as a child
  // subreaper the probe adopts it when the shell exits and counts its memory.
  // The fake lists every child of this process as the job's: other tests
  // run in the same process (gtest without ctest) may have left some.
  if (!ChildPids(static_cast<std::uint32_t>(getpid())).empty()) GTEST_SKIP() << "this process has other children";
  source_.set_steps({Reading(0), Reading(10 * kMiB, {{FakeSource::kChildrenOfCaller, 700 * kMiB}})});
  AfterTheShell after("vram_watch_orphan");
  source_.set_on_memory([&after](int call) { after.OnReading(call); });
  WatchOptions options = Options({"/bin/sh", "-c", "setsid /bin/sh -c '" + after.Wait() + "' & exit 0"});
  options.become_subreaper = true;
  Result<WatchResult> r = Watch(source_, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(after.released()) << "the shell was never seen to end";
  EXPECT_GT(r.value().duration_ms, r.value().command_exit_ms) << "measured only while the command itself ran";
  EXPECT_EQ(r.value().peak.process_used_bytes, 700 * kMiB) << "one process at a time, the guard not counted";
}

TEST(JobMembership, GrandchildrenBelongToTheJobAndStrangersDoNot) {
  Result<pid_t> child = Spawn({"/bin/sh", "-c", "sleep 5 & wait"});
  ASSERT_TRUE(child.ok()) << child.status().message();
  std::vector<std::uint32_t> grandchildren;
  for (int i = 0; i < 200 && grandchildren.empty(); ++i) {
    grandchildren = ChildPids(static_cast<std::uint32_t>(child.value()));
    if (grandchildren.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  JobMembership job(static_cast<std::uint32_t>(child.value()), static_cast<std::uint32_t>(getpid()));
  EXPECT_TRUE(job.Contains(static_cast<std::uint32_t>(child.value())));
  ASSERT_FALSE(grandchildren.empty());
  EXPECT_TRUE(job.Contains(grandchildren.front()));
  EXPECT_FALSE(job.Contains(static_cast<std::uint32_t>(getppid())));
  EXPECT_FALSE(job.Contains(static_cast<std::uint32_t>(getpid())));
  for (std::uint32_t g : grandchildren) kill(static_cast<pid_t>(g), SIGKILL);
  Status status;
  std::optional<ExitInfo> exit;
  for (int i = 0; i < 500 && !exit; ++i) {
    exit = TryReap(child.value(), &status);
    if (!exit) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(exit.has_value());
}

}  // namespace
}  // namespace vram::probe

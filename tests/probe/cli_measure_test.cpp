// The device / watch / overheads / nccl subcommands: exit codes, error JSON, report
// files. Real sources on this GPU-less machine; FakeSource where a GPU is
// needed.
#include "cli_measure.h"

#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "measure/child_process.h"
#include "measure/nvml_source.h"
#include "probe/fake_collectives.h"
#include "probe/fake_source.h"

namespace vram::probe {
namespace {

using nlohmann::json;

bool RealNvmlPresent() {
  void* handle = dlopen(kNvmlLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

std::vector<std::string> DirectoryEntries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

class CliMeasureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/vram_probe_cli_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const std::string& name : DirectoryEntries(dir_)) std::remove((dir_ + "/" + name).c_str());
    rmdir(dir_.c_str());
  }

  // The real sources, with output captured.
  MeasureEnv RealEnv() {
    MeasureEnv env = DefaultMeasureEnv();
    env.out = &out_;
    env.err = &err_;
    env.become_subreaper = false;
    return env;
  }

  // One fake GPU seen through "NVML".
  MeasureEnv FakeEnv() {
    MeasureEnv env;
    env.open_nvml = []() -> Result<std::unique_ptr<MemorySource>> {
      auto fake = std::make_unique<FakeSource>();
      GpuFacts gpu;
      gpu.index = 0;
      gpu.name = "Fake GPU";
      gpu.uuid = "GPU-00000000-0000-0000-0000-000000000000";
      gpu.memory.total = 1ull << 34;
      gpu.memory.used = 1ull << 20;
      gpu.memory.free = (1ull << 34) - (1ull << 20);
      fake->set_gpus({gpu});
      return std::unique_ptr<MemorySource>(std::move(fake));
    };
    env.out = &out_;
    env.err = &err_;
    return env;
  }

  // Two fake GPUs seen through "NVML" and "CUDA" (same UUIDs), and a fake
  // NCCL that adds `init` and `first` bytes to each NVML reading.
  MeasureEnv TwoGpuEnv(std::uint64_t init, std::uint64_t first) {
    auto gpus = []() {
      std::vector<GpuFacts> gpus;
      for (unsigned i = 0; i < 2; ++i) {
        GpuFacts gpu;
        gpu.index = i;
        gpu.name = "Fake GPU";
        gpu.uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i);
        gpu.memory.total = 1ull << 34;
        gpu.memory.used = 1ull << 20;
        gpu.memory.free = (1ull << 34) - (1ull << 20);
        gpus.push_back(gpu);
      }
      return gpus;
    };
    MeasureEnv env;
    env.open_nvml = [this, gpus]() -> Result<std::unique_ptr<MemorySource>> {
      auto fake = std::make_unique<FakeSource>();
      fake->set_gpus(gpus());
      nvml_ = fake.get();
      return std::unique_ptr<MemorySource>(std::move(fake));
    };
    env.open_cuda = [gpus]() -> Result<std::unique_ptr<MemorySource>> {
      auto fake = std::make_unique<FakeSource>();
      fake->set_gpus(gpus());
      return std::unique_ptr<MemorySource>(std::move(fake));
    };
    // The command opens NVML before NCCL, so nvml_ is set by then.
    env.open_nccl = [this, init, first]() -> Result<std::unique_ptr<Collectives>> {
      auto nccl = std::make_unique<FakeCollectives>(nvml_);
      nccl->set_init_bytes({init, init});
      nccl->set_first_collective_bytes({first, first});
      return std::unique_ptr<Collectives>(std::move(nccl));
    };
    env.out = &out_;
    env.err = &err_;
    return env;
  }

  std::string dir_;
  FakeSource* nvml_ = nullptr;  // the NVML fake TwoGpuEnv opened last
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(CliMeasureTest, DeviceWithoutGpuExitsThreeWithTheNoGpuErrorJson) {
  if (RealNvmlPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  const int code = RunDeviceCommand({"--json"}, RealEnv());
  EXPECT_EQ(code, kExitNoGpu);
  const json doc = json::parse(out_.str());
  EXPECT_EQ(doc["error"]["code"], "no_gpu");
  EXPECT_EQ(doc["error"]["path"], "");
  const std::string message = doc["error"]["message"];
  EXPECT_NE(message.find("no NVIDIA driver: libnvidia-ml.so.1 not found"), std::string::npos) << message;
#if defined(VRAM_PROBE_HAVE_CUDA)
  EXPECT_NE(message.find("cudaError"), std::string::npos) << message;
#endif
  EXPECT_NE(err_.str().find("no NVIDIA driver"), std::string::npos);
}

TEST_F(CliMeasureTest, DeviceWithoutGpuInTextModePrintsOnlyToStderr) {
  if (RealNvmlPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  EXPECT_EQ(RunDeviceCommand({}, RealEnv()), kExitNoGpu);
  EXPECT_TRUE(out_.str().empty());
  EXPECT_NE(err_.str().find("vram-probe: no NVIDIA driver: libnvidia-ml.so.1 not found"), std::string::npos)
      << err_.str();
}

TEST_F(CliMeasureTest, WatchWithoutGpuExitsThreeRunsNothingAndWritesNothing) {
  if (RealNvmlPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  const std::string report = dir_ + "/report.json";
  const std::string marker = dir_ + "/ran";
  const int code = RunWatchCommand({"--json", "--out", report, "--", "touch", marker}, RealEnv());
  EXPECT_EQ(code, kExitNoGpu);
  EXPECT_EQ(json::parse(out_.str())["error"]["code"], "no_gpu");
  EXPECT_FALSE(Exists(marker));
  EXPECT_TRUE(DirectoryEntries(dir_).empty()) << "no report and no temporary file";
}

TEST_F(CliMeasureTest, OverheadsWithoutGpuExitsThree) {
  if (RealNvmlPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  EXPECT_EQ(RunOverheadsCommand({"--json"}, RealEnv()), kExitNoGpu);
  EXPECT_EQ(json::parse(out_.str())["error"]["code"], "no_gpu");
}

TEST_F(CliMeasureTest, NcclWithoutGpuExitsThreeWithOverheadsMessage) {
  if (RealNvmlPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  EXPECT_EQ(RunNcclCommand({"--json"}, RealEnv()), kExitNoGpu);
  const json nccl = json::parse(out_.str());
  out_.str("");
  EXPECT_EQ(nccl["error"]["code"], "no_gpu");
  ASSERT_EQ(RunOverheadsCommand({"--json"}, RealEnv()), kExitNoGpu);
  EXPECT_EQ(nccl["error"]["message"], json::parse(out_.str())["error"]["message"]);
}

TEST_F(CliMeasureTest, NcclWithoutGpuInTextModePrintsOnlyToStderr) {
  if (RealNvmlPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  EXPECT_EQ(RunNcclCommand({}, RealEnv()), kExitNoGpu);
  EXPECT_TRUE(out_.str().empty());
  EXPECT_NE(err_.str().find("vram-probe: no NVIDIA driver: libnvidia-ml.so.1 not found"), std::string::npos)
      << err_.str();
}

TEST_F(CliMeasureTest, NcclFlagErrorsNameTheFlagAndExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--devices"}, "--devices needs a value"},
      {{"--devices", "0,,1"}, "--devices wants GPU indices separated by commas (0,1), got '0,,1'"},
      {{"--devices", "0,x"}, "--devices wants GPU indices"},
      {{"--devices", "1"}, "--devices needs at least 2 GPUs"},
      {{"--devices", "0,1,0"}, "--devices lists GPU 0 twice"},
      {{"--bytes", "6"}, "--bytes wants a positive multiple of 4"},
      {{"--bytes", "0"}, "--bytes wants a positive multiple of 4"},
      {{"--bogus"}, "unknown option '--bogus'"},
  };
  for (const auto& [args, expected] : cases) {
    out_.str("");
    err_.str("");
    // --json first: parsing stops at the bad flag.
    std::vector<std::string> with_json = {"--json"};
    with_json.insert(with_json.end(), args.begin(), args.end());
    EXPECT_EQ(RunNcclCommand(with_json, TwoGpuEnv(0, 0)), kExitUsage) << expected;
    const json doc = json::parse(out_.str());
    EXPECT_EQ(doc["error"]["code"], "bad_argument");
    const std::string message = doc["error"]["message"];
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_NE(err_.str().find("usage: vram-probe nccl"), std::string::npos);
  }
}

TEST_F(CliMeasureTest, NcclDevicesBeyondTheGpusExitTwo) {
  EXPECT_EQ(RunNcclCommand({"--devices", "0,7"}, TwoGpuEnv(0, 0)), kExitUsage);
  EXPECT_NE(err_.str().find("--devices lists GPU 7: only 2 GPU(s)"), std::string::npos) << err_.str();
}

TEST_F(CliMeasureTest, NcclOnOneGpuSaysItNeedsTwo) {
  MeasureEnv env = FakeEnv();
  env.open_cuda = env.open_nvml;
  EXPECT_EQ(RunNcclCommand({}, env), kExitFailure);
  EXPECT_NE(err_.str().find("vram-probe nccl needs at least 2 GPUs; NVML sees 1"), std::string::npos) << err_.str();
}

TEST_F(CliMeasureTest, NcclPrintsTheTableAndTheRequestSnippet) {
  constexpr std::uint64_t kMiB = 1ull << 20;
  EXPECT_EQ(RunNcclCommand({}, TwoGpuEnv(12 * kMiB, 532 * kMiB)), kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_NE(text.find("NCCL 2.21.5: one in-place all-reduce of 32.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("measured by device_used_delta"), std::string::npos) << text;
  EXPECT_NE(text.find("first all-reduce MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("12.00                 532.00       544.00"), std::string::npos) << text;
  EXPECT_NE(text.find("put \"overheads\": {\"nccl_bytes\": 570425344} into the estimator request"), std::string::npos)
      << text;
}

TEST_F(CliMeasureTest, NcclJsonCarriesTheAnswerPerGpuRowsAndTheEnvironment) {
  constexpr std::uint64_t kMiB = 1ull << 20;
  EXPECT_EQ(RunNcclCommand({"--json", "--devices", "1,0", "--bytes", "4096"}, TwoGpuEnv(0, 100 * kMiB)), kExitOk)
      << err_.str();
  const json doc = json::parse(out_.str());
  EXPECT_EQ(doc["schema"], "vram-planner-probe/1");
  EXPECT_EQ(doc["gpus"].size(), 2u);
  EXPECT_EQ(doc["nccl_version"], "2.21.5");
  EXPECT_EQ(doc["overheads"]["nccl_bytes"], 100 * kMiB);
  EXPECT_EQ(doc["measurement"]["method"], "device_used_delta");
  EXPECT_EQ(doc["measurement"]["all_reduce_bytes"], 4096);
  EXPECT_TRUE(doc["measurement"]["env"].contains("NCCL_RUNTIME_CONNECT"));
  ASSERT_EQ(doc["devices"].size(), 2u);
  EXPECT_EQ(doc["devices"][0]["index"], 1);
  EXPECT_EQ(doc["devices"][0]["cuda_index"], 1);
  EXPECT_EQ(doc["devices"][0]["init_bytes"], 0);
  EXPECT_EQ(doc["devices"][0]["first_collective_bytes"], 100 * kMiB);
  EXPECT_TRUE(doc["devices"][0]["base"]["process_used_bytes"].is_null());
  EXPECT_TRUE(doc["errors"].empty());
}

TEST_F(CliMeasureTest, DeviceListsTheFakeGpu) {
  EXPECT_EQ(RunDeviceCommand({"--json"}, FakeEnv()), kExitOk);
  const json doc = json::parse(out_.str());
  EXPECT_EQ(doc["schema"], "vram-planner-probe/1");
  EXPECT_EQ(doc["source"], "fake");
  ASSERT_EQ(doc["gpus"].size(), 1u);
  EXPECT_EQ(doc["gpus"][0]["name"], "Fake GPU");
  EXPECT_EQ(doc["gpus"][0]["memory.total"], 1ull << 34);
}

TEST_F(CliMeasureTest, WatchWritesTheReportAndReturnsTheCommandsExitCode) {
  const std::string report = dir_ + "/report.json";
  const int code = RunWatchCommand({"--interval-ms", "5", "--out", report, "--", "/bin/sh", "-c", "exit 3"}, FakeEnv());
  EXPECT_EQ(code, 3);
  ASSERT_TRUE(Exists(report)) << err_.str();
  EXPECT_EQ(DirectoryEntries(dir_).size(), 1u) << "the temporary file was renamed, not left behind";
  std::ifstream in(report);
  const json doc = json::parse(in);
  EXPECT_EQ(doc["tool"], "vram-probe");
  EXPECT_EQ(doc["exit"]["code"], 3);
  EXPECT_EQ(doc["command"], json::array({"/bin/sh", "-c", "exit 3"}));
  EXPECT_EQ(doc["sampling"]["interval_ms"], 5);
  EXPECT_GE(doc["timeline"].size(), 1u);
  EXPECT_NE(err_.str().find("report written to"), std::string::npos);
}

TEST_F(CliMeasureTest, WatchOfACrashingCommandStillWritesTheReport) {
  const std::string report = dir_ + "/crash.json";
  const int code = RunWatchCommand({"--out", report, "/bin/sh", "-c", "kill -SEGV $$"}, FakeEnv());
  EXPECT_EQ(code, 128 + SIGSEGV);
  std::ifstream in(report);
  ASSERT_TRUE(in.good());
  const json doc = json::parse(in);
  EXPECT_EQ(doc["exit"]["signal_name"], "SIGSEGV");
  EXPECT_TRUE(doc["exit"]["code"].is_null());
}

TEST_F(CliMeasureTest, WatchOfAMissingProgramExits127WithoutAReport) {
  const std::string report = dir_ + "/report.json";
  EXPECT_EQ(RunWatchCommand({"--out", report, "--", "/nonexistent/program"}, FakeEnv()), kExitCannotRun);
  EXPECT_FALSE(Exists(report));
  EXPECT_NE(err_.str().find("cannot run '/nonexistent/program'"), std::string::npos) << err_.str();
}

TEST_F(CliMeasureTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunWatchCommand({"--interval-ms", "fast", "--", "true"}, FakeEnv()), kExitUsage);
  EXPECT_EQ(RunWatchCommand({"--interval-ms", "0", "--", "true"}, FakeEnv()), kExitUsage);
  EXPECT_EQ(RunWatchCommand({"--out"}, FakeEnv()), kExitUsage);
  EXPECT_EQ(RunWatchCommand({}, FakeEnv()), kExitUsage);
  EXPECT_EQ(RunWatchCommand({"--device", "4", "--", "true"}, FakeEnv()), kExitUsage);
  EXPECT_EQ(RunDeviceCommand({"--bogus"}, FakeEnv()), kExitUsage);
}

TEST_F(CliMeasureTest, WatchWithAnUnwritableOutRunsNothingAndNamesOut) {
  const std::string marker = dir_ + "/ran";
  const int code =
      RunWatchCommand({"--out", dir_ + "/missing/report.json", "--", "/bin/sh", "-c", "touch " + marker}, FakeEnv());
  EXPECT_EQ(code, kExitUsage);
  EXPECT_FALSE(Exists(marker)) << "the command ran although its report could not be written";
  EXPECT_NE(err_.str().find("--out"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("missing/report.json"), std::string::npos) << err_.str();
  EXPECT_EQ(RunWatchCommand({"--out", dir_, "--", "true"}, FakeEnv()), kExitUsage) << "a directory is not a file";
}

// Sets an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_F(CliMeasureTest, WatchWhoseOutVanishedWritesTheReportToTheFallbackPath) {
  const std::string sub = dir_ + "/sub";
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  ScopedEnv tmpdir("TMPDIR", dir_);
  // The job removes --out's directory: the check before it passed, the
  // write after it fails.
  const int code = RunWatchCommand({"--out", sub + "/report.json", "--", "rmdir", sub}, FakeEnv());
  EXPECT_EQ(code, 0);
  const std::string fallback = dir_ + "/vram-probe-report-" + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(Exists(fallback)) << err_.str();
  EXPECT_EQ(json::parse(std::ifstream(fallback))["exit"]["code"], 0);
  EXPECT_NE(err_.str().find("report written to " + fallback), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("cannot write the report to --out"), std::string::npos) << err_.str();
}

TEST_F(CliMeasureTest, WatchWithNowhereToWriteItPrintsTheReportOnStdout) {
  const std::string sub = dir_ + "/sub";
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  ScopedEnv tmpdir("TMPDIR", dir_ + "/no-such-dir");
  const int code = RunWatchCommand({"--out", sub + "/report.json", "--", "rmdir", sub}, FakeEnv());
  EXPECT_EQ(code, 0);
  const json doc = json::parse(out_.str());
  EXPECT_EQ(doc["schema"], "vram-planner-probe/1");
  EXPECT_EQ(doc["command"], json::array({"rmdir", sub}));
  EXPECT_NE(err_.str().find("the report is on standard output"), std::string::npos) << err_.str();
}

#if defined(VRAM_PROBE_BIN) && defined(VRAM_FAKE_NVML)
// vram-probe as its own process, on the fake NVML (fake_nvml.cpp, found as
// libnvidia-ml.so.1 through LD_LIBRARY_PATH), with real signals.
class ProbeProcessTest : public CliMeasureTest {
 protected:
  void SetUp() override {
    CliMeasureTest::SetUp();
    ASSERT_EQ(symlink(VRAM_FAKE_NVML, (dir_ + "/libnvidia-ml.so.1").c_str()), 0);
  }
  void TearDown() override {
    if (probe_ > 0) {
      kill(probe_, SIGKILL);
      waitpid(probe_, nullptr, 0);
    }
    CliMeasureTest::TearDown();
  }

  // Starts `vram-probe watch --interval-ms 5 --out <dir>/report.json -- sh -c <script>`.
  void StartWatch(const std::string& script) {
    const std::string probe = VRAM_PROBE_BIN;
    const std::string report = dir_ + "/report.json";
    const std::string out = dir_ + "/stdout";
    const std::string err = dir_ + "/stderr";
    probe_ = fork();
    ASSERT_GE(probe_, 0);
    if (probe_ == 0) {
      setenv("LD_LIBRARY_PATH", dir_.c_str(), 1);
      freopen(out.c_str(), "w", stdout);
      freopen(err.c_str(), "w", stderr);
      execl(probe.c_str(), probe.c_str(), "watch", "--interval-ms", "5", "--out", report.c_str(), "--", "/bin/sh", "-c",
            script.c_str(), static_cast<char*>(nullptr));
      _exit(126);
    }
  }

  // The probe's wait status, or -1 if it did not end within `seconds`.
  int WaitProbe(int seconds) {
    for (int i = 0; i < seconds * 100; ++i) {
      int status = 0;
      if (waitpid(probe_, &status, WNOHANG) == probe_) {
        probe_ = -1;
        return status;
      }
      usleep(10'000);
    }
    return -1;
  }

  // The pid the job wrote to <dir>/<name>, once it has.
  pid_t PidFromFile(const std::string& name) {
    for (int i = 0; i < 1000; ++i) {
      std::ifstream in(dir_ + "/" + name);
      long pid = 0;
      if (in >> pid && pid > 0) return static_cast<pid_t>(pid);
      usleep(10'000);
    }
    return -1;
  }

  // Gone, or a zombie nobody reaped yet (a container's PID 1 may not reap).
  static bool Ended(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const std::size_t close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
  }

  static bool EndsWithin(pid_t pid, int seconds) {
    for (int i = 0; i < seconds * 100; ++i) {
      if (Ended(pid)) return true;
      usleep(10'000);
    }
    return false;
  }

  std::string ReadFile(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  pid_t probe_ = -1;
};

class ProbeSignalTest : public ProbeProcessTest, public ::testing::WithParamInterface<int> {};

TEST_P(ProbeSignalTest, ReachesTheJobAndTheReportIsWritten) {
  const int sig = GetParam();
  // A shell running a foreground child (an asynchronous `sleep &` would
  // ignore SIGINT and SIGQUIT, as POSIX sh wants without job control).
  StartWatch("sh -c 'echo $$ > " + dir_ + "/sleep; exec sleep 30'; true");
  const pid_t sleeper = PidFromFile("sleep");
  ASSERT_GT(sleeper, 0) << ReadFile("stderr");
  ASSERT_EQ(kill(probe_, sig), 0);
  const int status = WaitProbe(20);
  ASSERT_NE(status, -1) << "the probe did not end: " << ReadFile("stderr");
  ASSERT_TRUE(WIFEXITED(status)) << "the probe itself was ended by the signal";
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << ReadFile("stderr");
  EXPECT_TRUE(Ended(sleeper)) << "the job's background sleep got the signal too";
  const json report = json::parse(ReadFile("report.json"));
  EXPECT_EQ(report["exit"]["signal_name"], SignalName(sig));
  EXPECT_GE(report["timeline"].size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Signals, ProbeSignalTest,
                         ::testing::Values(SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2),
                         [](const ::testing::TestParamInfo<int>& info) { return SignalName(info.param); });

TEST_F(ProbeProcessTest, AJobIsEndedWhenTheProbeIsKilled) {
  StartWatch("sleep 30 & echo $! > " + dir_ + "/sleep; echo $$ > " + dir_ + "/shell; wait");
  const pid_t sleeper = PidFromFile("sleep");
  const pid_t shell = PidFromFile("shell");
  ASSERT_GT(sleeper, 0) << ReadFile("stderr");
  ASSERT_GT(shell, 0);
  ASSERT_EQ(kill(probe_, SIGKILL), 0);
  const int status = WaitProbe(5);
  ASSERT_TRUE(WIFSIGNALED(status));
  // PR_SET_PDEATHSIG ends the shell; the guard ends the rest of its group.
  EXPECT_TRUE(EndsWithin(shell, 5)) << "the job's shell outlived the probe";
  EXPECT_TRUE(EndsWithin(sleeper, 5)) << "the job's background process outlived the probe";
}

TEST_F(ProbeProcessTest, ABackgroundServerIsMeasuredUntilItEnds) {
  // The command starts a "server" that leaves the job's group and session
  // (setsid) and exits at once; the server lives 1 s.
  StartWatch("setsid sleep 1 & exit 0");
  const int status = WaitProbe(20);
  ASSERT_TRUE(WIFEXITED(status)) << ReadFile("stderr");
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const json report = json::parse(ReadFile("report.json"));
  EXPECT_GE(report["sampling"]["duration_ms"].get<int>(), 950);
  EXPECT_LT(report["sampling"]["command_exit_ms"].get<int>(), 500);
}
#endif

#if defined(VRAM_PROBE_BIN)
// The installed binary, end to end: `vram-probe <command> --json` without a
// driver exits 3 with the no_gpu error object.
void ExpectNoGpuJson(const std::string& command_name) {
  const std::string command = std::string(VRAM_PROBE_BIN) + " " + command_name + " --json 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kExitNoGpu);
  EXPECT_EQ(json::parse(output)["error"]["code"], "no_gpu");
}

TEST(VramProbeBinary, DeviceJsonWithoutGpuExitsThree) {
  if (RealNvmlPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  ExpectNoGpuJson("device");
}

TEST(VramProbeBinary, NcclJsonWithoutGpuExitsThree) {
  if (RealNvmlPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  ExpectNoGpuJson("nccl");
}
#endif

}  // namespace
}  // namespace vram::probe

#include "measure/watch.h"

#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "measure/output_tee.h"
#include "measure/process_tree.h"

namespace vram::probe {
namespace {

using Clock = std::chrono::steady_clock;

// Failed samples are reported once per distinct message, with a count, so a
// GPU that falls off the bus does not fill the report with copies.
class ErrorTally {
 public:
  void Add(const Status& status) {
    auto [it, inserted] = counts_.emplace(status.message(), std::make_pair(status.code(), 0));
    ++it->second.second;
  }
  void AppendTo(std::vector<Status>* errors) const {
    for (const auto& [message, entry] : counts_) {
      const std::string suffix = entry.second > 1 ? " (" + std::to_string(entry.second) + " samples)" : "";
      errors->push_back(Status(entry.first, message + suffix));
    }
  }

 private:
  std::map<std::string, std::pair<StatusCode, int>> counts_;
};

timespec ToTimespec(Clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  return ts;
}

// One watched run, in the order it decides things: start the job, sample it
// until its whole process tree has ended, then settle the peaks.
class WatchRun {
 public:
  WatchRun(MemorySource& source, const WatchOptions& options)
      : source_(source), options_(options), sampler_(options.timeline_capacity) {}

  // Spawns the job (its guard first, then the pipes of its output).
  Status Start() {
    if (options_.become_subreaper) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    SpawnOptions spawn;
    if (options_.guard_job) {
      if (Status guarded = guard_.Start(); guarded.ok()) {
        spawn.announce_fd = guard_.announce_fd();
      } else {
        result_.errors.push_back(guarded);
      }
    }
    if (options_.read_output) {
      if (Status piped = tee_.Open(); piped.ok()) {
        tee_.Attach(spawn);
      } else {
        result_.errors.push_back(piped);
      }
    }
    Result<pid_t> spawned = Spawn(options_.command, spawn);
    tee_.Spawned();
    if (!spawned.ok()) return spawned.status();
    pid_ = spawned.value();
    start_ = Clock::now();
    job_.emplace(static_cast<std::uint32_t>(pid_), static_cast<std::uint32_t>(getpid()));
    if (guard_.pid() > 0) job_->Exclude(static_cast<std::uint32_t>(guard_.pid()));
    return Status();
  }

  // Samples every interval, passing signals on, until the job's tree is over.
  void SampleUntilOver() {
    const pid_t pgid = pid_;  // Spawn put the job in a group of its own
    Clock::time_point deadline = start_;
    while (true) {
      for (int signal : forwarder_.Forward(pgid)) result_.signals_received.push_back(signal);
      if (!exit_) {
        exit_ = TryReap(pid_, &reap_status_);
        if (exit_) {
          result_.exit = *exit_;
          result_.command_exit_ms = Elapsed();
        }
      }
      TakeSample(Clock::now());
      tee_.Pump();
      if (exit_ && !TreeAlive(pgid)) break;
      const Clock::time_point now = Clock::now();
      deadline += options_.interval;
      if (deadline <= now) deadline = now + options_.interval;  // fell behind: skip, do not burst
      const timespec wake = ToTimespec(deadline);
      // steady_clock is CLOCK_MONOTONIC on Linux (libstdc++ and libc++).
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr) == EINTR) {
        for (int signal : forwarder_.Forward(pgid)) result_.signals_received.push_back(signal);
      }
    }
    result_.duration_ms = Elapsed();
    guard_.Release();
    if (options_.become_subreaper) ReapOrphans();
    if (!reap_status_.ok()) result_.errors.push_back(reap_status_);
    tee_.Finish();
    result_.timing = tee_.log().Timing();
  }

  // The peaks, what the driver never listed, and its accounting maxima.
  Result<WatchResult> Finish() {
    result_.samples = sampler_.samples();
    result_.peak = sampler_.peak();
    result_.timeline = sampler_.timeline().Points();
    result_.timeline_stride = sampler_.timeline().stride();
    result_.process_seen = !job_pids_seen_.empty();
    tally_.AppendTo(&result_.errors);
    if (result_.samples == 0) {
      std::string why = result_.errors.empty() ? "no sample was taken" : result_.errors.front().message();
      return Status(StatusCode::kNvmlError, "every memory sample failed: " + why);
    }
    if (!result_.process_seen) {
      // Either the command never touched this GPU, or it runs in another PID
      // namespace: the driver reports host PIDs (research §8.2).
      result_.peak.process_used_bytes.reset();
      result_.peak.process_t_ms.reset();
      result_.errors.push_back(
          Status(StatusCode::kProcessNotSeen,
                 "the driver never listed the command's processes on device " + std::to_string(options_.device) +
                     " (no GPU use, another GPU, or a container PID namespace); compare device_used_bytes with "
                     "the baseline instead"));
    }
    Accounting();
    return std::move(result_);
  }

  WatchResult& result() { return result_; }

 private:
  std::int64_t Elapsed() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
  }

  void TakeSample(Clock::time_point now) {
    Sample sample;
    sample.t_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_).count();
    Result<DeviceMemory> memory = source_.Memory(options_.device);
    if (!memory.ok()) {
      tally_.Add(memory.status());
      ++result_.failed_samples;
      return;
    }
    sample.device_used_bytes = memory.value().used;
    Result<std::vector<ProcessMemory>> processes = source_.Processes(options_.device);
    if (processes.ok()) {
      // NVML lists every process with a context, so a job pid that is absent
      // holds nothing: the sum starts at 0, not null.
      std::uint64_t sum = 0;
      bool unknown = false;
      for (const ProcessMemory& p : processes.value()) {
        if (!job_->Contains(p.pid)) continue;
        job_pids_seen_.insert(p.pid);
        if (p.used_bytes) {
          sum += *p.used_bytes;
        } else {
          unknown = true;
        }
      }
      if (!unknown) sample.process_used_bytes = sum;
    } else {
      tally_.Add(processes.status());
    }
    sampler_.Add(sample);
  }

  // The job is over when its whole tree is: the command, every process left
  // in its process group, and (as a subreaper) every orphan re-parented to
  // the probe - a command that starts a server in the background and exits
  // is measured until the server ends.
  bool TreeAlive(pid_t pgid) {
    // Reap first: a member that ended as the probe's child (adopted, or in
    // the group) stays a zombie, and a zombie still counts as alive.
    ReapGroup(pgid);
    const bool no_child = options_.become_subreaper && ReapOrphans();
    if (GroupAlive(pgid)) return true;
    if (!options_.become_subreaper || no_child) return false;
    for (std::uint32_t child : ChildPids(static_cast<std::uint32_t>(getpid()))) {
      if (static_cast<pid_t>(child) != guard_.pid()) return true;
    }
    return false;
  }

  // The driver's own high-water marks survive the process (research §8.3).
  void Accounting() {
    std::uint64_t sum = 0;
    bool any = false;
    for (std::uint32_t p : job_pids_seen_) {
      Result<std::optional<std::uint64_t>> max = source_.AccountingMaxBytes(options_.device, p);
      if (!max.ok()) {
        result_.errors.push_back(max.status());
      } else if (max.value()) {
        sum += *max.value();
        any = true;
      }
    }
    if (any) result_.accounting_max_bytes = sum;
  }

  MemorySource& source_;
  const WatchOptions& options_;
  WatchResult result_;
  SignalForwarder forwarder_;
  // The guard starts first and learns the job's group from the job itself,
  // so there is no moment when the job runs and the probe could die unseen.
  JobGuard guard_;
  OutputTee tee_;
  pid_t pid_ = -1;
  Clock::time_point start_;
  std::optional<JobMembership> job_;
  std::set<std::uint32_t> job_pids_seen_;
  Sampler sampler_;
  ErrorTally tally_;
  Status reap_status_;
  std::optional<ExitInfo> exit_;
};

}  // namespace

Result<WatchResult> Watch(MemorySource& source, const WatchOptions& options) {
  if (options.command.empty()) return Status(StatusCode::kInvalidArgument, "no command to run after --");
  if (options.interval.count() <= 0) return Status(StatusCode::kInvalidArgument, "--interval-ms must be positive");
  Result<DeviceMemory> baseline = source.Memory(options.device);
  if (!baseline.ok()) return baseline.status();

  WatchRun run(source, options);
  run.result().interval = options.interval;
  run.result().baseline = baseline.value();
  if (Status started = run.Start(); !started.ok()) return started;
  run.SampleUntilOver();
  return run.Finish();
}

}  // namespace vram::probe

#include "measure/watch.h"

#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>
#include <string>
#include <utility>

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

}  // namespace

Result<WatchResult> Watch(MemorySource& source, const WatchOptions& options) {
  if (options.command.empty()) return Status(StatusCode::kInvalidArgument, "no command to run after --");
  if (options.interval.count() <= 0) return Status(StatusCode::kInvalidArgument, "--interval-ms must be positive");

  WatchResult result;
  result.interval = options.interval;
  Result<DeviceMemory> baseline = source.Memory(options.device);
  if (!baseline.ok()) return baseline.status();
  result.baseline = baseline.value();

  if (options.become_subreaper) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

  SignalForwarder forwarder;
  // The guard starts first and learns the job's group from the job itself,
  // so there is no moment when the job runs and the probe could die unseen.
  JobGuard guard;
  SpawnOptions spawn;
  if (options.guard_job) {
    if (Status guarded = guard.Start(); guarded.ok()) {
      spawn.announce_fd = guard.announce_fd();
    } else {
      result.errors.push_back(guarded);
    }
  }
  Result<pid_t> spawned = Spawn(options.command, spawn);
  if (!spawned.ok()) return spawned.status();
  const pid_t pid = spawned.value();
  const pid_t pgid = pid;  // Spawn put the job in a group of its own
  const Clock::time_point start = Clock::now();

  JobMembership job(static_cast<std::uint32_t>(pid), static_cast<std::uint32_t>(getpid()));
  if (guard.pid() > 0) job.Exclude(static_cast<std::uint32_t>(guard.pid()));
  std::set<std::uint32_t> job_pids_seen;
  Sampler sampler(options.timeline_capacity);
  ErrorTally tally;
  Status reap_status;
  Clock::time_point deadline = start;

  auto take_sample = [&](Clock::time_point now) {
    Sample sample;
    sample.t_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
    Result<DeviceMemory> memory = source.Memory(options.device);
    if (!memory.ok()) {
      tally.Add(memory.status());
      ++result.failed_samples;
      return;
    }
    sample.device_used_bytes = memory.value().used;
    Result<std::vector<ProcessMemory>> processes = source.Processes(options.device);
    if (processes.ok()) {
      // NVML lists every process with a context, so a job pid that is absent
      // holds nothing: the sum starts at 0, not null.
      std::uint64_t sum = 0;
      bool unknown = false;
      for (const ProcessMemory& p : processes.value()) {
        if (!job.Contains(p.pid)) continue;
        job_pids_seen.insert(p.pid);
        if (p.used_bytes) {
          sum += *p.used_bytes;
        } else {
          unknown = true;
        }
      }
      if (!unknown) sample.process_used_bytes = sum;
    } else {
      tally.Add(processes.status());
    }
    sampler.Add(sample);
  };

  // The job is over when its whole tree is: the command, every process left
  // in its process group, and (as a subreaper) every orphan re-parented to
  // the probe - a command that starts a server in the background and exits
  // is measured until the server ends.
  std::optional<ExitInfo> exit;
  auto tree_alive = [&]() {
    // Reap first: a member that ended as the probe's child (adopted, or in
    // the group) stays a zombie, and a zombie still counts as alive.
    ReapGroup(pgid);
    const bool no_child = options.become_subreaper && ReapOrphans();
    if (GroupAlive(pgid)) return true;
    if (!options.become_subreaper || no_child) return false;
    for (std::uint32_t child : ChildPids(static_cast<std::uint32_t>(getpid()))) {
      if (static_cast<pid_t>(child) != guard.pid()) return true;
    }
    return false;
  };
  while (true) {
    for (int signal : forwarder.Forward(pgid)) result.signals_received.push_back(signal);
    if (!exit) {
      exit = TryReap(pid, &reap_status);
      if (exit) {
        result.exit = *exit;
        result.command_exit_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      }
    }
    take_sample(Clock::now());
    if (exit && !tree_alive()) break;
    const Clock::time_point now = Clock::now();
    deadline += options.interval;
    if (deadline <= now) deadline = now + options.interval;  // fell behind: skip, do not burst
    const timespec wake = ToTimespec(deadline);
    // steady_clock is CLOCK_MONOTONIC on Linux (libstdc++ and libc++).
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr) == EINTR) {
      for (int signal : forwarder.Forward(pgid)) result.signals_received.push_back(signal);
    }
  }
  result.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  guard.Release();
  if (options.become_subreaper) ReapOrphans();
  if (!reap_status.ok()) result.errors.push_back(reap_status);

  result.samples = sampler.samples();
  result.peak = sampler.peak();
  result.timeline = sampler.timeline().Points();
  result.timeline_stride = sampler.timeline().stride();
  result.process_seen = !job_pids_seen.empty();
  tally.AppendTo(&result.errors);
  if (result.samples == 0) {
    std::string why = result.errors.empty() ? "no sample was taken" : result.errors.front().message();
    return Status(StatusCode::kNvmlError, "every memory sample failed: " + why);
  }

  if (!result.process_seen) {
    // Either the command never touched this GPU, or it runs in another PID
    // namespace: the driver reports host PIDs (research §8.2).
    result.peak.process_used_bytes.reset();
    result.peak.process_t_ms.reset();
    result.errors.push_back(
        Status(StatusCode::kProcessNotSeen,
               "the driver never listed the command's processes on device " + std::to_string(options.device) +
                   " (no GPU use, another GPU, or a container PID namespace); compare device_used_bytes with "
                   "the baseline instead"));
  }

  // The driver's own high-water marks survive the process (research §8.3).
  std::uint64_t accounting_sum = 0;
  bool accounting_any = false;
  for (std::uint32_t p : job_pids_seen) {
    Result<std::optional<std::uint64_t>> max = source.AccountingMaxBytes(options.device, p);
    if (!max.ok()) {
      result.errors.push_back(max.status());
    } else if (max.value()) {
      accounting_sum += *max.value();
      accounting_any = true;
    }
  }
  if (accounting_any) result.accounting_max_bytes = accounting_sum;
  return result;
}

}  // namespace vram::probe

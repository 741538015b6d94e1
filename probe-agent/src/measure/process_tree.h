// Which processes belong to the watched job, read from /proc.
//
// NVML lists processes by host PID (research/memory-internals.md §8.2); the
// job is the spawned command and every process below it. An orphaned
// grandchild is re-parented to the probe when the probe is a child subreaper
// (prctl PR_SET_CHILD_SUBREAPER), so reaching the probe's own PID also counts.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace vram::probe {

// The parent of `pid` from field 4 of /proc/<pid>/stat; nullopt when the
// process is gone.
std::optional<std::uint32_t> ParentPid(std::uint32_t pid);

// Direct children of `parent`, by scanning /proc.
std::vector<std::uint32_t> ChildPids(std::uint32_t parent);

class JobMembership {
 public:
  // `root`: the spawned command; `reaper`: the probe itself.
  JobMembership(std::uint32_t root, std::uint32_t reaper) : root_(root), reaper_(reaper) {}

  // True when `pid` is the root, is in the root's process group, or descends
  // from the root or the reaper.
  // Answers are cached: ancestry of a live process only changes by
  // re-parenting to the reaper, which still counts.
  bool Contains(std::uint32_t pid);

  // A child of the reaper that is not the job's (the probe's JobGuard).
  void Exclude(std::uint32_t pid) { excluded_ = pid; }

 private:
  std::uint32_t excluded_ = 0;
  std::uint32_t root_;
  std::uint32_t reaper_;
  std::unordered_map<std::uint32_t, bool> cache_;
};

}  // namespace vram::probe

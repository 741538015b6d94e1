#include "measure/process_tree.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace vram::probe {
namespace {

// Deeper chains than this are not process trees a training job builds; the
// bound also stops a walk over a corrupted /proc read.
constexpr int kMaxAncestry = 64;
// The cache only ever grows with distinct GPU pids; clear it now and then so
// that a recycled pid is looked up afresh.
constexpr std::size_t kMaxCacheEntries = 4096;

}  // namespace

std::optional<std::uint32_t> ParentPid(std::uint32_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return std::nullopt;
  std::string line;
  std::getline(stat, line);
  // proc(5): "pid (comm) state ppid ..."; comm may hold spaces and ')', so
  // parse after the last ')'.
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::string state;
  long long ppid = -1;
  if (!(rest >> state >> ppid) || ppid < 0) return std::nullopt;
  return static_cast<std::uint32_t>(ppid);
}

std::vector<std::uint32_t> ChildPids(std::uint32_t parent) {
  std::vector<std::uint32_t> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const unsigned long pid = std::strtoul(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    const std::optional<std::uint32_t> ppid = ParentPid(static_cast<std::uint32_t>(pid));
    if (ppid && *ppid == parent) children.push_back(static_cast<std::uint32_t>(pid));
  }
  closedir(proc);
  return children;
}

bool JobMembership::Contains(std::uint32_t pid) {
  if (pid == root_) return true;
  if (pid == reaper_ || pid <= 1 || pid == excluded_) return false;
  if (auto it = cache_.find(pid); it != cache_.end()) return it->second;
  // The job's process group is the root's pid (Spawn): a member that lost
  // its parent without a subreaper to adopt it still belongs.
  if (getpgid(static_cast<pid_t>(pid)) == static_cast<pid_t>(root_)) return cache_[pid] = true;
  if (cache_.size() > kMaxCacheEntries) cache_.clear();
  bool member = false;
  std::uint32_t current = pid;
  for (int depth = 0; depth < kMaxAncestry; ++depth) {
    const std::optional<std::uint32_t> parent = ParentPid(current);
    if (!parent || *parent <= 1) break;
    if (*parent == root_ || *parent == reaper_) {
      member = true;
      break;
    }
    current = *parent;
  }
  cache_[pid] = member;
  return member;
}

}  // namespace vram::probe

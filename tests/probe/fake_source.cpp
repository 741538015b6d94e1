#include "probe/fake_source.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "measure/process_tree.h"

namespace vram::probe {

namespace {

// A zombie (exited, not yet reaped) has released its GPU memory, and NVML
// lists no process for it: proc(5) state 'Z' after the last ')' of stat.
bool IsZombie(std::uint32_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return true;  // gone already
  const std::size_t close = line.rfind(')');
  return close != std::string::npos && line.find_first_not_of(' ', close + 1) != std::string::npos &&
         line[line.find_first_not_of(' ', close + 1)] == 'Z';
}

}  // namespace

Result<GpuFacts> FakeSource::Device(unsigned index) {
  if (index >= gpus_.size()) {
    return Status(StatusCode::kInvalidArgument, "no fake GPU " + std::to_string(index));
  }
  return gpus_[index];
}

const FakeSource::Step* FakeSource::Current() const {
  if (steps_.empty() || memory_calls_ == 0) return steps_.empty() ? nullptr : &steps_.front();
  const std::size_t i = static_cast<std::size_t>(memory_calls_ - 1);
  return &steps_[i < steps_.size() ? i : steps_.size() - 1];
}

std::uint64_t FakeSource::Added(unsigned index) const {
  const auto it = added_.find(index);
  return it != added_.end() ? it->second : 0;
}

DeviceMemory FakeSource::WithContext(unsigned index, DeviceMemory memory) const {
  const std::uint64_t extra = (context_created_ ? context_bytes_ : 0) + Added(index);
  if (memory.used) *memory.used += extra;
  if (memory.free && *memory.free >= extra) *memory.free -= extra;
  return memory;
}

Result<DeviceMemory> FakeSource::Memory(unsigned index) {
  if (on_memory_) on_memory_(memory_calls_);
  ++memory_calls_;
  if (index >= gpus_.size()) {
    return Status(StatusCode::kInvalidArgument, "no fake GPU " + std::to_string(index));
  }
  const Step* step = Current();
  if (step == nullptr) return WithContext(index, gpus_[index].memory);
  if (!step->error.ok()) return step->error;
  return WithContext(index, step->memory);
}

Result<std::vector<ProcessMemory>> FakeSource::Processes(unsigned index) {
  if (index >= gpus_.size()) {
    return Status(StatusCode::kInvalidArgument, "no fake GPU " + std::to_string(index));
  }
  std::vector<ProcessMemory> processes;
  if (const Step* step = Current()) {
    for (const ProcessMemory& p : step->processes) {
      if (p.pid != kChildrenOfCaller) {
        processes.push_back(p);
        continue;
      }
      for (std::uint32_t child : ChildPids(static_cast<std::uint32_t>(getpid()))) {
        if (!IsZombie(child)) processes.push_back(ProcessMemory{child, p.used_bytes});
      }
    }
  }
  if (context_created_) {
    processes.push_back(ProcessMemory{static_cast<std::uint32_t>(getpid()), context_bytes_ + Added(index)});
  }
  return processes;
}

Result<std::optional<std::uint64_t>> FakeSource::AccountingMaxBytes(unsigned /*index*/, std::uint32_t /*pid*/) {
  return accounting_max_;
}

Status FakeSource::CreateContext(unsigned index) {
  if (index >= gpus_.size()) {
    return Status(StatusCode::kInvalidArgument, "no fake GPU " + std::to_string(index));
  }
  context_created_ = true;
  return Status::Ok();
}

}  // namespace vram::probe

// A scripted MemorySource for tests: no driver, no GPU, deterministic values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "measure/memory_source.h"

namespace vram::probe {

class FakeSource final : public MemorySource {
 public:
  // One scripted reading. The n-th Memory() call returns step n (the last
  // step once the script runs out); Processes() returns the processes of the
  // step most recently returned by Memory().
  struct Step {
    DeviceMemory memory;
    std::vector<ProcessMemory> processes;
    Status error;  // when not OK, Memory() returns it instead
  };

  // A special pid in Step::processes: stands for every direct child of
  // the calling process, i.e. the command a test is watching.
  static constexpr std::uint32_t kChildrenOfCaller = 0xFFFFFFFFu;

  FakeSource() = default;

  void set_system(SystemFacts system) { system_ = std::move(system); }
  void set_gpus(std::vector<GpuFacts> gpus) { gpus_ = std::move(gpus); }
  void set_steps(std::vector<Step> steps) { steps_ = std::move(steps); }
  void set_accounting_max(std::optional<std::uint64_t> bytes) { accounting_max_ = bytes; }
  // Runs at the start of every Memory() call with the call's index.
  void set_on_memory(std::function<void(int)> hook) { on_memory_ = std::move(hook); }
  // CreateContext() adds a process entry for the caller holding `bytes` and
  // raises `used` (and lowers `free`) of every later reading by as much.
  void set_context_bytes(std::uint64_t bytes) { context_bytes_ = bytes; }
  // Raises `used` (and lowers `free`) of every later reading of device
  // `index` by `bytes`, and this process's entry on it once CreateContext()
  // ran: what an allocation in this process looks like (FakeCollectives).
  void AddBytes(unsigned index, std::uint64_t bytes) { added_[index] += bytes; }

  int memory_calls() const { return memory_calls_; }
  bool context_created() const { return context_created_; }

  std::string_view name() const override { return "fake"; }
  Result<SystemFacts> System() override { return system_; }
  Result<unsigned> DeviceCount() override { return static_cast<unsigned>(gpus_.size()); }
  Result<GpuFacts> Device(unsigned index) override;
  Result<DeviceMemory> Memory(unsigned index) override;
  Result<std::vector<ProcessMemory>> Processes(unsigned index) override;
  Result<std::optional<std::uint64_t>> AccountingMaxBytes(unsigned index, std::uint32_t pid) override;
  Status CreateContext(unsigned index) override;

 private:
  const Step* Current() const;
  DeviceMemory WithContext(unsigned index, DeviceMemory memory) const;
  std::uint64_t Added(unsigned index) const;

  SystemFacts system_;
  std::vector<GpuFacts> gpus_;
  std::vector<Step> steps_;
  std::optional<std::uint64_t> accounting_max_;
  std::function<void(int)> on_memory_;
  std::uint64_t context_bytes_ = 0;
  std::map<unsigned, std::uint64_t> added_;  // AddBytes() per device
  bool context_created_ = false;
  int memory_calls_ = 0;
};

}  // namespace vram::probe

#include "measure/nccl_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "measure/error_handling.h"

namespace vram::probe {
namespace {

// later - earlier, or nullopt when either is missing or memory went down.
std::optional<std::uint64_t> Delta(const std::optional<std::uint64_t>& later,
                                   const std::optional<std::uint64_t>& earlier) {
  if (!later || !earlier || *later < *earlier) return std::nullopt;
  return *later - *earlier;
}

// Reads device `index`; a failed process list is a note, not a failure.
// At the base reading `busy_notes` also names the other processes on the
// device, whose allocations would pollute a device delta (as overheads.cpp).
Result<NcclReading> Read(MemorySource& meter, unsigned index, std::uint32_t self, const char* when,
                         std::vector<Status>* errors, bool busy_notes) {
  NcclReading reading;
  Result<DeviceMemory> memory = meter.Memory(index);
  if (!memory.ok()) return memory.status();
  reading.memory = memory.value();
  Result<std::vector<ProcessMemory>> processes = meter.Processes(index);
  if (!processes.ok()) {
    errors->push_back(Status(
        processes.status().code(),
        "device " + std::to_string(index) + " " + when + ": cannot list processes: " + processes.status().message()));
    return reading;
  }
  for (const ProcessMemory& p : processes.value()) {
    if (p.pid == self) {
      reading.process_used_bytes = p.used_bytes;
    } else if (busy_notes) {
      errors->push_back(Status(StatusCode::kDeviceBusy, "process " + std::to_string(p.pid) +
                                                            " holds memory on device " + std::to_string(index) +
                                                            "; the device delta may include its changes"));
    }
  }
  return reading;
}

// Reads every device into `slot` of its result.
Status ReadAll(MemorySource& meter, std::uint32_t self, const char* when, NcclReading NcclDeviceResult::*slot,
               NcclMeasurement* m, bool busy_notes) {
  for (NcclDeviceResult& d : m->devices) {
    Result<NcclReading> reading = Read(meter, d.device, self, when, &m->errors, busy_notes);
    if (!reading.ok()) return reading.status();
    d.*slot = reading.value();
  }
  return Status::Ok();
}

// Releases NCCL after `failure` and returns it, naming a failed release too.
Status ReleaseAfter(Collectives& nccl, const Status& failure) {
  Status released = nccl.Release();
  if (released.ok()) return failure;
  return Status(failure.code(), failure.message() + "; releasing NCCL afterwards failed too: " + released.message());
}

bool AllProcessReadings(const NcclDeviceResult& d) {
  return d.base.process_used_bytes && d.after_init.process_used_bytes && d.after_first_collective.process_used_bytes;
}

bool AllDeviceReadings(const NcclDeviceResult& d) {
  return d.base.memory.used && d.after_init.memory.used && d.after_first_collective.memory.used;
}

}  // namespace

Result<NcclMeasurement> MeasureNccl(MemorySource& meter, const std::vector<unsigned>& meter_indices,
                                    MemorySource& runtime, const std::vector<unsigned>& runtime_indices,
                                    Collectives& nccl, std::size_t bytes) {
  if (meter_indices.size() != runtime_indices.size()) {
    return Status(StatusCode::kInvalidArgument, "the meter lists " + std::to_string(meter_indices.size()) +
                                                    " GPU(s) and the runtime " +
                                                    std::to_string(runtime_indices.size()) + "; they must match");
  }
  if (meter_indices.size() < 2) {
    return Status(StatusCode::kInvalidArgument,
                  "the NCCL measurement needs at least 2 GPUs, got " + std::to_string(meter_indices.size()) +
                      ": a communicator of one rank opens no connection and allocates no buffer");
  }
  for (std::size_t i = 0; i < meter_indices.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (meter_indices[i] == meter_indices[j] || runtime_indices[i] == runtime_indices[j]) {
        return Status(StatusCode::kInvalidArgument,
                      "GPU " + std::to_string(meter_indices[i]) + " is listed twice; NCCL needs distinct devices");
      }
    }
  }
  if (bytes < sizeof(float) || bytes % sizeof(float) != 0) {
    return Status(StatusCode::kInvalidArgument,
                  "the all-reduce buffer must be a positive multiple of 4 bytes (float32 elements), got " +
                      std::to_string(bytes));
  }

  NcclMeasurement m;
  m.all_reduce_bytes = bytes;
  for (const char* name : kNcclMemoryVariables) {
    const char* value = std::getenv(name);
    m.environment.emplace_back(name, value != nullptr ? std::optional<std::string>(value) : std::nullopt);
  }
  Result<std::string> version = nccl.Version();
  if (version.ok()) {
    m.nccl_version = version.value();
  } else {
    m.errors.push_back(version.status());
  }
  for (std::size_t i = 0; i < meter_indices.size(); ++i) {
    NcclDeviceResult d;
    d.device = meter_indices[i];
    d.cuda_device = runtime_indices[i];
    m.devices.push_back(d);
  }
  const auto self = static_cast<std::uint32_t>(getpid());

  // Contexts first: their size is `vram-probe overheads`' business, not NCCL's.
  for (unsigned index : runtime_indices) VRAM_RETURN_IF_ERROR(runtime.CreateContext(index));

  Status prepared = nccl.Prepare(runtime_indices, bytes);
  if (!prepared.ok()) return ReleaseAfter(nccl, prepared);
  Status read = ReadAll(meter, self, "before ncclCommInitAll", &NcclDeviceResult::base, &m, /*busy_notes=*/true);
  if (!read.ok()) return ReleaseAfter(nccl, read);

  Status initialized = nccl.InitCommunicators();
  if (!initialized.ok()) return ReleaseAfter(nccl, initialized);
  read = ReadAll(meter, self, "after ncclCommInitAll", &NcclDeviceResult::after_init, &m, /*busy_notes=*/false);
  if (!read.ok()) return ReleaseAfter(nccl, read);

  Status reduced = nccl.AllReduceOnce();
  if (!reduced.ok()) return ReleaseAfter(nccl, reduced);
  read = ReadAll(meter, self, "after the first all-reduce", &NcclDeviceResult::after_first_collective, &m,
                 /*busy_notes=*/false);
  if (!read.ok()) return ReleaseAfter(nccl, read);

  if (Status released = nccl.Release(); !released.ok()) m.errors.push_back(released);

  // One method for every device, so that their figures compare.
  const bool by_process = std::all_of(m.devices.begin(), m.devices.end(), AllProcessReadings);
  const bool by_device = std::all_of(m.devices.begin(), m.devices.end(), AllDeviceReadings);
  if (!by_process && !by_device) {
    m.method = "none";
    m.errors.push_back(Status(StatusCode::kNotSupported,
                              "neither the process list nor the device readings measured NCCL on every GPU"));
    return m;
  }
  m.method = by_process ? "nvml_process_used" : "device_used_delta";
  auto value = [by_process](const NcclReading& r) { return by_process ? r.process_used_bytes : r.memory.used; };
  bool complete = true;
  std::uint64_t largest = 0;
  for (NcclDeviceResult& d : m.devices) {
    d.init_bytes = Delta(value(d.after_init), value(d.base));
    d.first_collective_bytes = Delta(value(d.after_first_collective), value(d.after_init));
    d.nccl_bytes = Delta(value(d.after_first_collective), value(d.base));
    if (!d.nccl_bytes) {
      complete = false;
      m.errors.push_back(Status(StatusCode::kDeviceBusy, "device " + std::to_string(d.device) + ": the " + m.method +
                                                             " reading went down during the measurement (memory "
                                                             "was freed meanwhile), so it has no figure"));
      continue;
    }
    largest = std::max(largest, *d.nccl_bytes);
  }
  if (complete) m.nccl_bytes = largest;
  return m;
}

}  // namespace vram::probe

#include "measure/report.h"

#include <unistd.h>

#include <array>
#include <ctime>
#include <utility>

#ifndef VRAM_PROBE_VERSION
#define VRAM_PROBE_VERSION "0.0.0"
#endif

namespace vram::probe {

std::string ProbeVersion() { return VRAM_PROBE_VERSION; }

std::string HostName() {
  // HOST_NAME_MAX is 64 on Linux; 256 covers every POSIX system.
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) return "";
  return std::string(buffer.data());
}

std::string IsoTimeUtc() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::array<char, 32> buffer{};
  std::strftime(buffer.data(), buffer.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(buffer.data());
}

Result<ReportHeader> MakeHeader(MemorySource& source, std::vector<Status>* errors) {
  ReportHeader header;
  header.version = ProbeVersion();
  header.host = HostName();
  header.time = IsoTimeUtc();
  header.source = std::string(source.name());
  Result<SystemFacts> system = source.System();
  if (system.ok()) {
    header.system = system.value();
  } else if (errors != nullptr) {
    errors->push_back(system.status());
  }
  Result<std::vector<GpuFacts>> gpus = AllDevices(source, errors);
  if (!gpus.ok()) return gpus.status();
  if (gpus.value().empty()) {
    return Status(StatusCode::kNoGpu, "no GPU: the " + header.source + " source found no device");
  }
  header.gpus = std::move(gpus.value());
  return header;
}

}  // namespace vram::probe

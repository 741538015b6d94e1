// What vram-probe reports: the shared header (tool, host, time, driver, GPUs)
// and one body per subcommand. Writers (report_writer.h) turn these into JSON
// or text; nothing here prints.
#pragma once

#include <string>
#include <vector>

#include "measure/memory_source.h"
#include "measure/nccl_memory.h"
#include "measure/overheads.h"
#include "measure/status.h"
#include "measure/watch.h"

namespace vram::probe {

// The "schema" of every probe JSON document; bump on incompatible changes.
inline constexpr const char* kProbeSchema = "vram-planner-probe/1";
inline constexpr const char* kToolName = "vram-probe";

struct ReportHeader {
  std::string version;  // vram-probe's version
  std::string host;
  std::string time;    // ISO 8601 UTC, "2026-11-21T22:35:35Z"
  std::string source;  // the MemorySource's name()
  SystemFacts system;
  std::vector<GpuFacts> gpus;
};

struct DeviceReport {
  ReportHeader header;
  std::vector<Status> errors;
};

struct WatchReport {
  ReportHeader header;
  std::vector<std::string> command;
  unsigned device = 0;
  WatchResult result;
  std::vector<Status> errors;  // header errors followed by result.errors
};

struct OverheadsReport {
  ReportHeader header;
  OverheadsResult result;
  std::vector<Status> errors;
};

struct NcclReport {
  ReportHeader header;
  NcclMeasurement result;
  std::vector<Status> errors;  // header errors followed by result.errors
};

// The probe's version string, from the build (PROJECT_VERSION).
std::string ProbeVersion();
// gethostname(), or "" when it fails.
std::string HostName();
// Now as "YYYY-MM-DDTHH:MM:SSZ".
std::string IsoTimeUtc();

// Header for `source`: system facts and every device's facts. Fails when the
// device count cannot be read; other failures land in `errors`. A source
// reporting no GPU at all is a kNoGpu failure.
Result<ReportHeader> MakeHeader(MemorySource& source, std::vector<Status>* errors);

}  // namespace vram::probe

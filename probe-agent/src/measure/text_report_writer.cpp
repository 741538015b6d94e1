#include <cstdio>
#include <optional>
#include <string>

#include "measure/report_writer.h"

namespace vram::probe {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "12.34 GiB" or "n/a".
std::string Bytes(const std::optional<std::uint64_t>& bytes) {
  if (!bytes) return "n/a";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f GiB", static_cast<double>(*bytes) / kGiB);
  return buffer;
}

std::string Text(const std::optional<std::string>& value) { return value ? *value : "n/a"; }

void WriteHeader(const ReportHeader& h, std::ostream& out) {
  out << "vram-probe " << h.version << " on " << (h.host.empty() ? "unknown host" : h.host) << " at " << h.time
      << " (source: " << h.source << ")\n";
  out << "driver " << Text(h.system.driver_version) << ", CUDA driver " << Text(h.system.cuda_driver_version);
  if (h.system.cuda_runtime_version) out << ", CUDA runtime " << *h.system.cuda_runtime_version;
  out << '\n';
  for (const GpuFacts& g : h.gpus) {
    out << "GPU " << g.index << ": " << Text(g.name) << "  " << Text(g.uuid) << "  compute "
        << Text(g.compute_capability) << "  MIG " << (g.mig_enabled ? (*g.mig_enabled ? "enabled" : "disabled") : "n/a")
        << '\n';
    out << "  memory total " << Bytes(g.memory.total) << ", reserved " << Bytes(g.memory.reserved) << ", used "
        << Bytes(g.memory.used) << ", free " << Bytes(g.memory.free) << '\n';
  }
}

void WriteErrors(const std::vector<Status>& errors, std::ostream& out) {
  for (const Status& e : errors) out << "note [" << e.code_name() << "] " << e.message() << '\n';
}

}  // namespace

void TextReportWriter::WriteDevice(const DeviceReport& report, std::ostream& out) const {
  WriteHeader(report.header, out);
  WriteErrors(report.errors, out);
}

void TextReportWriter::WriteWatch(const WatchReport& report, std::ostream& out) const {
  const WatchResult& r = report.result;
  out << "command:";
  for (const std::string& arg : report.command) out << ' ' << arg;
  out << '\n';
  if (r.exit.signal) {
    out << "ended by " << SignalName(*r.exit.signal) << (r.exit.core_dumped ? " (core dumped)" : "") << '\n';
  } else {
    out << "exit code " << (r.exit.code ? *r.exit.code : -1) << '\n';
  }
  out << "device " << report.device << ": baseline used " << Bytes(r.baseline.used) << ", peak used "
      << Bytes(r.peak.device_used_bytes) << '\n';
  out << "command's peak " << Bytes(r.peak.process_used_bytes);
  if (r.peak.process_t_ms) out << " at " << *r.peak.process_t_ms << " ms";
  out << ", driver high-water mark " << Bytes(r.accounting_max_bytes) << '\n';
  out << r.samples << " samples every " << r.interval.count() << " ms over " << r.duration_ms << " ms";
  if (r.failed_samples > 0) out << ", " << r.failed_samples << " failed";
  out << '\n';
  WriteErrors(report.errors, out);
}

void TextReportWriter::WriteOverheads(const OverheadsReport& report, std::ostream& out) const {
  const OverheadsResult& r = report.result;
  WriteHeader(report.header, out);
  out << "device " << r.device << ": CUDA context " << Bytes(r.cuda_context_bytes);
  if (r.cuda_context_bytes) out << " (" << *r.cuda_context_bytes << " B)";
  out << " by " << r.method << ", CUDA_MODULE_LOADING=" << Text(r.cuda_module_loading) << '\n';
  WriteErrors(report.errors, out);
}

void TextReportWriter::WriteError(const Status& status, std::ostream& out) const {
  out << "vram-probe: " << status.message() << '\n';
}

}  // namespace vram::probe

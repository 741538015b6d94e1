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

// "556.00" (MiB) or "n/a".
std::string Mebibytes(const std::optional<std::uint64_t>& bytes) {
  if (!bytes) return "n/a";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", static_cast<double>(*bytes) / (1024.0 * 1024.0));
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

// "step time 0.581 s (median of 11 steps after 1 warm-up, hf_trainer)".
void WriteTiming(const StepTiming& t, std::ostream& out) {
  if (t.format.empty()) {
    out << "step time: not printed by the job (no line of a known format)\n";
    return;
  }
  const nlohmann::json j = StepTimingJson(t);
  out << "step time (" << t.format << "):";
  if (j["step_seconds"].is_object()) {
    out << " median " << j["step_seconds"]["median"].get<double>() << " s over " << t.step_seconds.size() << " steps";
  }
  if (j["tokens_per_second_per_gpu"].is_object()) {
    out << " " << j["tokens_per_second_per_gpu"]["median"].get<double>() << " tokens/s per GPU (median of "
        << t.tokens_per_second_per_gpu.size() << ")";
  }
  if (t.warmup_skipped) out << ", first step left out as warm-up";
  if (t.train_runtime) out << "; Trainer: train_runtime " << *t.train_runtime << " s";
  if (t.train_steps_per_second) out << ", " << *t.train_steps_per_second << " steps/s";
  if (t.train_tokens_per_second) out << ", " << *t.train_tokens_per_second << " tokens/s";
  out << '\n';
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
  if (r.duration_ms - r.command_exit_ms > 2 * r.interval.count()) {
    out << " (the command exited at " << r.command_exit_ms << " ms; processes it started ran on)";
  }
  out << '\n';
  WriteTiming(r.timing, out);
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

void TextReportWriter::WriteNccl(const NcclReport& report, std::ostream& out) const {
  const NcclMeasurement& r = report.result;
  WriteHeader(report.header, out);
  out << "NCCL " << Text(r.nccl_version) << ": one in-place all-reduce of " << Mebibytes(r.all_reduce_bytes)
      << " MiB (float32, sum) per GPU over GPUs";
  for (std::size_t i = 0; i < r.devices.size(); ++i) out << (i == 0 ? " " : ",") << r.devices[i].device;
  out << ", measured by " << r.method << '\n';
  std::string set;
  for (const auto& [name, value] : r.environment) {
    if (value) set += (set.empty() ? "" : " ") + name + "=" + *value;
  }
  out << "NCCL environment: " << (set.empty() ? "defaults (none of the variables that change the answer is set)" : set)
      << '\n';
  char row[128];
  std::snprintf(row, sizeof(row), "%5s %5s %12s %22s %12s\n", "GPU", "CUDA", "init MiB", "first all-reduce MiB",
                "total MiB");
  out << row;
  for (const NcclDeviceResult& d : r.devices) {
    std::snprintf(row, sizeof(row), "%5u %5u %12s %22s %12s\n", d.device, d.cuda_device,
                  Mebibytes(d.init_bytes).c_str(), Mebibytes(d.first_collective_bytes).c_str(),
                  Mebibytes(d.nccl_bytes).c_str());
    out << row;
  }
  WriteErrors(report.errors, out);
  if (r.nccl_bytes) {
    out << "NCCL takes " << Mebibytes(r.nccl_bytes)
        << " MiB on the busiest GPU: put \"overheads\": {\"nccl_bytes\": " << *r.nccl_bytes
        << "} into the estimator request (vram-probe estimate --request FILE) to replace the modelled NCCL buffers\n";
  } else {
    out << "no NCCL figure was measured (see the notes); the estimator keeps its modelled NCCL buffers\n";
  }
}

void TextReportWriter::WriteError(const Status& status, std::ostream& out) const {
  out << "vram-probe: " << status.message() << '\n';
}

}  // namespace vram::probe

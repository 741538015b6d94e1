#include <optional>
#include <string>

#include "measure/report_writer.h"

namespace vram::probe {
namespace {

// ordered_json keeps keys in the documented order (schema, tool, version, ...).
using json = nlohmann::ordered_json;

// An absent value is JSON null, never 0 (STYLE.md "Probe agent").
template <typename T>
json Nullable(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

json GpuJson(const GpuFacts& gpu) {
  // Keys follow `nvidia-smi --query-gpu` names (index, name, uuid,
  // memory.total, memory.reserved, memory.used, memory.free).
  json mig = nullptr;
  if (gpu.mig_enabled) mig = *gpu.mig_enabled ? "enabled" : "disabled";
  return json{{"index", gpu.index},
              {"name", Nullable(gpu.name)},
              {"uuid", Nullable(gpu.uuid)},
              {"memory.total", Nullable(gpu.memory.total)},
              {"memory.reserved", Nullable(gpu.memory.reserved)},
              {"memory.used", Nullable(gpu.memory.used)},
              {"memory.free", Nullable(gpu.memory.free)},
              {"compute_capability", Nullable(gpu.compute_capability)},
              {"mig_mode", mig}};
}

json MemoryJson(const DeviceMemory& memory) {
  return json{{"memory.total", Nullable(memory.total)},
              {"memory.reserved", Nullable(memory.reserved)},
              {"memory.used", Nullable(memory.used)},
              {"memory.free", Nullable(memory.free)}};
}

json ErrorsJson(const std::vector<Status>& errors) {
  json out = json::array();
  for (const Status& e : errors) out.push_back(json{{"code", e.code_name()}, {"message", e.message()}});
  return out;
}

json HeaderJson(const ReportHeader& header) {
  json gpus = json::array();
  for (const GpuFacts& gpu : header.gpus) gpus.push_back(GpuJson(gpu));
  return json{{"schema", kProbeSchema},
              {"tool", kToolName},
              {"version", header.version},
              {"host", header.host},
              {"time", header.time},
              {"source", header.source},
              {"driver_version", Nullable(header.system.driver_version)},
              {"cuda_driver_version", Nullable(header.system.cuda_driver_version)},
              {"cuda_runtime_version", Nullable(header.system.cuda_runtime_version)},
              {"gpus", gpus}};
}

json ExitJson(const WatchResult& result) {
  json signals = json::array();
  for (int s : result.signals_received) signals.push_back(SignalName(s));
  return json{{"code", Nullable(result.exit.code)},
              {"signal", Nullable(result.exit.signal)},
              {"signal_name", result.exit.signal ? json(SignalName(*result.exit.signal)) : json(nullptr)},
              {"core_dumped", result.exit.core_dumped},
              {"signals_received", signals}};
}

}  // namespace

json JsonReportWriter::DeviceJson(const DeviceReport& report) {
  json doc = HeaderJson(report.header);
  doc["errors"] = ErrorsJson(report.errors);
  return doc;
}

json JsonReportWriter::WatchJson(const WatchReport& report) {
  const WatchResult& r = report.result;
  json doc = HeaderJson(report.header);
  doc["command"] = report.command;
  doc["device"] = report.device;
  doc["exit"] = ExitJson(r);
  // "phase" is for the page: the probe cannot tell forward from optimizer
  // step, so it is null until something that can (a framework hook) fills it.
  doc["peak"] = json{{"process_used_bytes", Nullable(r.peak.process_used_bytes)},
                     {"device_used_bytes", Nullable(r.peak.device_used_bytes)},
                     {"phase", nullptr},
                     {"process_t_ms", Nullable(r.peak.process_t_ms)},
                     {"device_t_ms", Nullable(r.peak.device_t_ms)},
                     {"accounting_max_bytes", Nullable(r.accounting_max_bytes)}};
  doc["baseline"] = json{{"process_used_bytes", 0},
                         {"device_used_bytes", Nullable(r.baseline.used)},
                         {"device_free_bytes", Nullable(r.baseline.free)}};
  doc["sampling"] = json{{"interval_ms", r.interval.count()},    {"samples", r.samples},
                         {"failed_samples", r.failed_samples},   {"duration_ms", r.duration_ms},
                         {"command_exit_ms", r.command_exit_ms}, {"timeline_stride", r.timeline_stride}};
  json timeline = json::array();
  for (const Sample& s : r.timeline) {
    timeline.push_back(json{{"t_ms", s.t_ms},
                            {"process_used_bytes", Nullable(s.process_used_bytes)},
                            {"device_used_bytes", Nullable(s.device_used_bytes)}});
  }
  doc["timeline"] = timeline;
  // The step times the job printed (step_log.h); `time` above is when the
  // report was written.
  doc["timing"] = StepTimingJson(r.timing);
  doc["errors"] = ErrorsJson(report.errors);
  return doc;
}

json JsonReportWriter::OverheadsJson(const OverheadsReport& report) {
  const OverheadsResult& r = report.result;
  json doc = HeaderJson(report.header);
  doc["device"] = r.device;
  // Shaped like the estimator request's `overheads` object so that it can be
  // pasted into a request as is.
  doc["overheads"] = json{{"cuda_context_bytes", Nullable(r.cuda_context_bytes)}};
  doc["measurement"] = json{{"method", r.method},
                            {"before", MemoryJson(r.before)},
                            {"after", MemoryJson(r.after)},
                            {"process_used_bytes", Nullable(r.process_used_bytes)},
                            {"cuda_mem_get_info", json{{"total", Nullable(r.cuda_mem_get_info.total)},
                                                       {"free", Nullable(r.cuda_mem_get_info.free)}}},
                            {"cuda_module_loading", Nullable(r.cuda_module_loading)}};
  doc["errors"] = ErrorsJson(report.errors);
  return doc;
}

json JsonReportWriter::NcclJson(const NcclReport& report) {
  const NcclMeasurement& r = report.result;
  json doc = HeaderJson(report.header);
  doc["nccl_version"] = Nullable(r.nccl_version);
  // Shaped like the estimator request's `overheads` object (per GPU), so that
  // it can be pasted into a request as is.
  doc["overheads"] = json{{"nccl_bytes", Nullable(r.nccl_bytes)}};
  json environment = json::object();
  for (const auto& [name, value] : r.environment) environment[name] = Nullable(value);
  auto reading = [](const NcclReading& reading) {
    json out = MemoryJson(reading.memory);
    out["process_used_bytes"] = Nullable(reading.process_used_bytes);
    return out;
  };
  json devices = json::array();
  for (const NcclDeviceResult& d : r.devices) {
    devices.push_back(json{{"index", d.device},
                           {"cuda_index", d.cuda_device},
                           {"init_bytes", Nullable(d.init_bytes)},
                           {"first_collective_bytes", Nullable(d.first_collective_bytes)},
                           {"nccl_bytes", Nullable(d.nccl_bytes)},
                           {"base", reading(d.base)},
                           {"after_init", reading(d.after_init)},
                           {"after_first_collective", reading(d.after_first_collective)}});
  }
  doc["measurement"] = json{{"method", r.method},
                            {"collective", "all_reduce"},
                            {"datatype", "float32"},
                            {"all_reduce_bytes", r.all_reduce_bytes},
                            {"env", environment}};
  doc["devices"] = devices;
  doc["errors"] = ErrorsJson(report.errors);
  return doc;
}

json JsonReportWriter::ErrorJson(const Status& status) {
  return json{{"error", json{{"code", status.code_name()}, {"message", status.message()}, {"path", ""}}}};
}

void JsonReportWriter::WriteDevice(const DeviceReport& report, std::ostream& out) const {
  out << DeviceJson(report).dump(2) << '\n';
}

void JsonReportWriter::WriteWatch(const WatchReport& report, std::ostream& out) const {
  out << WatchJson(report).dump(2) << '\n';
}

void JsonReportWriter::WriteOverheads(const OverheadsReport& report, std::ostream& out) const {
  out << OverheadsJson(report).dump(2) << '\n';
}

void JsonReportWriter::WriteNccl(const NcclReport& report, std::ostream& out) const {
  out << NcclJson(report).dump(2) << '\n';
}

void JsonReportWriter::WriteError(const Status& status, std::ostream& out) const {
  out << ErrorJson(status).dump(2) << '\n';
}

}  // namespace vram::probe

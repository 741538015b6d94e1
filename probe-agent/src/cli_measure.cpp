#include "cli_measure.h"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "commands.h"
#include "measure/atomic_file.h"
#include "measure/error_handling.h"
#include "measure/nccl_collectives.h"
#include "measure/nccl_memory.h"
#include "measure/nvml_source.h"
#include "measure/overheads.h"
#include "measure/report.h"
#include "measure/report_writer.h"
#include "measure/watch.h"
#if defined(VRAM_PROBE_HAVE_CUDA)
#include "measure/cuda_source.h"
#endif

namespace vram::probe {
namespace {

// The file `watch` writes when --out is not given.
constexpr const char* kDefaultReportPath = "vram-probe-report.json";

constexpr const char* kDeviceUsage =
    "usage: vram-probe device [--json]\n"
    "  Facts of every NVIDIA GPU: name, UUID, memory total/reserved/used/free,\n"
    "  driver and CUDA versions, compute capability, MIG mode.\n";
constexpr const char* kWatchUsage =
    "usage: vram-probe watch [--interval-ms N] [--out FILE] [--device I] [--json] -- <command> [args...]\n"
    "  Runs the command and samples its GPU memory and the device's every N ms\n"
    "  (default 20). Writes the report to FILE (default vram-probe-report.json)\n"
    "  once the command and every process it started have ended, even if it\n"
    "  crashed or was interrupted; --json also prints it on stdout. FILE is\n"
    "  checked before the command starts; if it cannot be written at the end,\n"
    "  the report goes to $TMPDIR/vram-probe-report-<pid>.json, else stdout.\n"
    "  The command runs in its own process group; signals to the probe (Ctrl-C,\n"
    "  SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, ...) are passed on to it, and it is\n"
    "  ended if the probe is killed. Its output passes through the probe, which\n"
    "  reads the step times a training framework prints (HF Trainer, torchtune,\n"
    "  LitGPT, vram-probe run) into the report's timing. Exits with the\n"
    "  command's exit code.\n";
constexpr const char* kOverheadsUsage =
    "usage: vram-probe overheads [--json] [--device I]\n"
    "  Measures the memory a CUDA context takes on GPU I (default 0) and prints\n"
    "  it as overheads.cuda_context_bytes for the estimator's request.\n";

std::string NcclUsage() {
  return "usage: vram-probe nccl [--json] [--devices 0,1,...] [--bytes N]\n"
         "  Measures the GPU memory NCCL takes per GPU: ncclCommInitAll over the\n"
         "  GPUs (default: all, as nvidia-smi numbers them), then one all-reduce of N\n"
         "  bytes (default " +
         std::to_string(kDefaultNcclBytes) +
         "). Prints it as overheads.nccl_bytes for the estimator's\n"
         "  request. NCCL_* variables apply as in a real run; NCCL_LIBRARY picks\n"
         "  the libnccl.so.2 to load.\n";
}

// Where `watch` writes the report when --out cannot be written after the run:
// $TMPDIR (else /tmp) / vram-probe-report-<pid>.json.
std::string FallbackReportPath() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  return dir + "/vram-probe-report-" + std::to_string(getpid()) + ".json";
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kNoGpu:
      return kExitNoGpu;
    case StatusCode::kInvalidArgument:
      return kExitUsage;
    case StatusCode::kExecFailed:
      return kExitCannotRun;
    default:
      return kExitFailure;
  }
}

// Prints the failure on stderr, and as the error object on stdout for --json.
int Fail(const MeasureEnv& env, const Status& status, bool json) {
  TextReportWriter().WriteError(status, *env.err);
  if (json) JsonReportWriter().WriteError(status, *env.out);
  return ExitCodeFor(status);
}

std::optional<unsigned> ParseUnsigned(const std::string& text) {
  unsigned value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// Reads the value after a flag: "--device 1". Leaves `i` on the value.
Status FlagValue(const std::vector<std::string>& args, std::size_t* i, std::string* value) {
  if (*i + 1 >= args.size()) return Status(StatusCode::kInvalidArgument, args[*i] + " needs a value");
  *value = args[++*i];
  return Status::Ok();
}

Status UnsignedFlag(const std::vector<std::string>& args, std::size_t* i, unsigned* value) {
  std::string text;
  VRAM_RETURN_IF_ERROR(FlagValue(args, i, &text));
  std::optional<unsigned> parsed = ParseUnsigned(text);
  if (!parsed)
    return Status(StatusCode::kInvalidArgument, args[*i - 1] + " wants a non-negative integer, got '" + text + "'");
  *value = *parsed;
  return Status::Ok();
}

std::optional<std::uint64_t> ParseUnsigned64(const std::string& text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// "--devices 0,1,3": distinct GPU indices, at least two of them.
Status DeviceListFlag(const std::vector<std::string>& args, std::size_t* i, std::vector<unsigned>* devices) {
  std::string text;
  VRAM_RETURN_IF_ERROR(FlagValue(args, i, &text));
  const std::string flag = args[*i - 1];
  devices->clear();
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::optional<unsigned> index = ParseUnsigned(item);
    if (!index) {
      return Status(StatusCode::kInvalidArgument,
                    flag + " wants GPU indices separated by commas (0,1), got '" + text + "'");
    }
    for (unsigned seen : *devices) {
      if (seen == *index) {
        return Status(StatusCode::kInvalidArgument, flag + " lists GPU " + item + " twice in '" + text + "'");
      }
    }
    devices->push_back(*index);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (devices->size() < 2) {
    return Status(StatusCode::kInvalidArgument,
                  flag + " needs at least 2 GPUs (a communicator of one rank allocates nothing), got '" + text + "'");
  }
  return Status::Ok();
}

// "--bytes 33554432": the float32 all-reduce buffer per GPU.
Status BytesFlag(const std::vector<std::string>& args, std::size_t* i, std::size_t* bytes) {
  std::string text;
  VRAM_RETURN_IF_ERROR(FlagValue(args, i, &text));
  const std::string flag = args[*i - 1];
  std::optional<std::uint64_t> parsed = ParseUnsigned64(text);
  if (!parsed || *parsed == 0 || *parsed % sizeof(float) != 0) {
    return Status(StatusCode::kInvalidArgument,
                  flag + " wants a positive multiple of 4 (bytes of float32 elements), got '" + text + "'");
  }
  *bytes = static_cast<std::size_t>(*parsed);
  return Status::Ok();
}

// NVML first (it needs no context); CUDA only when `cuda_fallback` and NVML
// is missing. Both failing with "no driver" is kNoGpu with both reasons.
struct OpenedSource {
  std::unique_ptr<MemorySource> source;
  std::vector<Status> notes;  // why NVML was skipped, when CUDA stood in
};

Result<OpenedSource> OpenSource(const MeasureEnv& env, bool cuda_fallback) {
  Result<std::unique_ptr<MemorySource>> nvml = env.open_nvml();
  if (nvml.ok()) return OpenedSource{std::move(nvml.value()), {}};
  if (!env.open_cuda) {
    return Status(nvml.status().code(), nvml.status().message() + "; vram-probe was built without the CUDA runtime");
  }
  Result<std::unique_ptr<MemorySource>> cuda = env.open_cuda();
  if (cuda.ok() && cuda_fallback) return OpenedSource{std::move(cuda.value()), {nvml.status()}};
  if (cuda.ok()) return nvml.status();
  const StatusCode code = nvml.status().code() == StatusCode::kNoGpu ? cuda.status().code() : nvml.status().code();
  return Status(code, nvml.status().message() + "; " + cuda.status().message());
}

// NVML reads memory without a context of its own; CUDA creates the contexts
// being measured. `overheads` and `nccl` need both.
struct MeterAndRuntime {
  std::unique_ptr<MemorySource> nvml;
  std::unique_ptr<MemorySource> cuda;
};

Result<MeterAndRuntime> OpenMeterAndRuntime(const MeasureEnv& env) {
  Result<std::unique_ptr<MemorySource>> nvml = env.open_nvml();
  Result<std::unique_ptr<MemorySource>> cuda =
      env.open_cuda ? env.open_cuda()
                    : Result<std::unique_ptr<MemorySource>>(
                          Status(StatusCode::kNotSupported, "vram-probe was built without the CUDA runtime"));
  if (nvml.ok() && cuda.ok()) return MeterAndRuntime{std::move(nvml.value()), std::move(cuda.value())};
  std::string message;
  StatusCode code = StatusCode::kNoGpu;
  for (const Result<std::unique_ptr<MemorySource>>* r : {&nvml, &cuda}) {
    if (r->ok()) continue;
    if (r->status().code() != StatusCode::kNoGpu) code = r->status().code();
    message += (message.empty() ? "" : "; ") + r->status().message();
  }
  // A missing driver explains everything else.
  if ((!nvml.ok() && nvml.status().code() == StatusCode::kNoGpu) ||
      (!cuda.ok() && cuda.status().code() == StatusCode::kNoGpu)) {
    code = StatusCode::kNoGpu;
  }
  return Status(code, message);
}

// CUDA numbers devices fastest-first and honours CUDA_VISIBLE_DEVICES; NVML
// numbers them like nvidia-smi. Match by UUID.
Result<unsigned> CudaIndexFor(MemorySource& cuda, const GpuFacts& gpu) {
  if (Result<unsigned> count = cuda.DeviceCount(); count.ok() && gpu.uuid) {
    for (unsigned c = 0; c < count.value(); ++c) {
      Result<GpuFacts> facts = cuda.Device(c);
      if (facts.ok() && facts.value().uuid == gpu.uuid) return c;
    }
  }
  return Status(StatusCode::kInvalidArgument,
                "GPU " + std::to_string(gpu.index) + " is not visible to CUDA (check CUDA_VISIBLE_DEVICES)");
}

}  // namespace

MeasureEnv DefaultMeasureEnv() {
  MeasureEnv env;
  env.open_nvml = []() -> Result<std::unique_ptr<MemorySource>> {
    Result<std::unique_ptr<NvmlSource>> source = NvmlSource::Open();
    if (!source.ok()) return source.status();
    return std::unique_ptr<MemorySource>(std::move(source.value()));
  };
#if defined(VRAM_PROBE_HAVE_CUDA)
  env.open_cuda = []() -> Result<std::unique_ptr<MemorySource>> {
    Result<std::unique_ptr<CudaSource>> source = CudaSource::Open();
    if (!source.ok()) return source.status();
    return std::unique_ptr<MemorySource>(std::move(source.value()));
  };
#endif
  // Without the CUDA runtime OpenNccl() itself says so (nccl_collectives.h).
  env.open_nccl = OpenNccl;
  env.out = &std::cout;
  env.err = &std::cerr;
  env.become_subreaper = true;
  return env;
}

int RunDeviceCommand(const std::vector<std::string>& args, const MeasureEnv& env) {
  bool json = false;
  for (const std::string& arg : args) {
    if (arg == "--json") {
      json = true;
    } else if (arg == "--help" || arg == "-h") {
      *env.out << kDeviceUsage;
      return kExitOk;
    } else {
      *env.err << kDeviceUsage;
      return Fail(env, Status(StatusCode::kInvalidArgument, "unknown option '" + arg + "'"), json);
    }
  }
  Result<OpenedSource> opened = OpenSource(env, /*cuda_fallback=*/true);
  if (!opened.ok()) return Fail(env, opened.status(), json);
  DeviceReport report;
  report.errors = opened.value().notes;
  Result<ReportHeader> header = MakeHeader(*opened.value().source, &report.errors);
  if (!header.ok()) return Fail(env, header.status(), json);
  report.header = std::move(header.value());
  if (json) {
    JsonReportWriter().WriteDevice(report, *env.out);
  } else {
    TextReportWriter().WriteDevice(report, *env.out);
  }
  return kExitOk;
}

int RunWatchCommand(const std::vector<std::string>& args, const MeasureEnv& env) {
  WatchOptions options;
  std::string out_path = kDefaultReportPath;
  bool json = false;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    Status status;
    if (arg == "--") {
      ++i;
      break;
    } else if (arg == "--help" || arg == "-h") {
      *env.out << kWatchUsage;
      return kExitOk;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--interval-ms") {
      unsigned ms = 0;
      status = UnsignedFlag(args, &i, &ms);
      if (status.ok() && ms == 0) status = Status(StatusCode::kInvalidArgument, "--interval-ms must be at least 1");
      options.interval = std::chrono::milliseconds(ms);
    } else if (arg == "--device") {
      status = UnsignedFlag(args, &i, &options.device);
    } else if (arg == "--out") {
      status = FlagValue(args, &i, &out_path);
    } else if (arg.rfind("-", 0) == 0) {
      status = Status(StatusCode::kInvalidArgument, "unknown option '" + arg + "'");
    } else {
      break;  // the command starts here even without "--"
    }
    if (!status.ok()) {
      *env.err << kWatchUsage;
      return Fail(env, status, json);
    }
  }
  options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  options.become_subreaper = env.become_subreaper;
  if (options.command.empty()) {
    *env.err << kWatchUsage;
    return Fail(env, Status(StatusCode::kInvalidArgument, "no command to watch: put it after --"), json);
  }

  // Only NVML sees other processes' memory: no CUDA fallback here.
  Result<std::unique_ptr<MemorySource>> nvml = env.open_nvml();
  if (!nvml.ok()) return Fail(env, nvml.status(), json);
  MemorySource& source = *nvml.value();

  WatchReport report;
  Result<ReportHeader> header = MakeHeader(source, &report.errors);
  if (!header.ok()) return Fail(env, header.status(), json);
  report.header = std::move(header.value());
  if (options.device >= report.header.gpus.size()) {
    return Fail(env,
                Status(StatusCode::kInvalidArgument, "--device " + std::to_string(options.device) + ": only " +
                                                         std::to_string(report.header.gpus.size()) + " GPU(s)"),
                json);
  }
  report.command = options.command;
  report.device = options.device;
  // A report that cannot be written is found out now, before the job runs,
  // not after hours of training.
  if (Status writable = CheckWritable(out_path); !writable.ok()) {
    return Fail(env, Status(StatusCode::kInvalidArgument, "--out: " + writable.message()), json);
  }

  Result<WatchResult> watched = Watch(source, options);
  if (!watched.ok()) return Fail(env, watched.status(), json);
  report.result = std::move(watched.value());
  report.errors.insert(report.errors.end(), report.result.errors.begin(), report.result.errors.end());

  const std::string document = JsonReportWriter::WatchJson(report).dump(2) + "\n";
  TextReportWriter().WriteWatch(report, *env.err);
  std::string written_to = out_path;
  Status written = WriteFileAtomically(out_path, document);
  if (!written.ok()) {
    // --out went away during the run (directory removed, disk full): the
    // measurement is not dropped. Next to the temporary directory, else on
    // standard output.
    *env.err << "vram-probe: cannot write the report to --out " << out_path << ": " << written.message() << '\n';
    const std::string fallback = FallbackReportPath();
    if (WriteFileAtomically(fallback, document).ok()) {
      written_to = fallback;
    } else {
      written_to.clear();
      if (!json) *env.out << document;
      *env.err << "vram-probe: cannot write " << fallback << " either; the report is on standard output\n";
    }
  }
  if (!written_to.empty()) *env.err << "report written to " << written_to << '\n';
  if (json) *env.out << document;
  return ShellExitCode(report.result.exit);
}

namespace {

// The flag loop of the commands that create CUDA contexts: --json, --help,
// and `own` for the rest (nullopt: not one of the command's flags). Returns
// the exit code when the command stops here (help, bad flag), else nullopt.
std::optional<int> ParseFlags(const std::vector<std::string>& args, const MeasureEnv& env, const std::string& usage,
                              bool* json, const std::function<std::optional<Status>(std::size_t*)>& own) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    Status status;
    if (args[i] == "--json") {
      *json = true;
    } else if (args[i] == "--help" || args[i] == "-h") {
      *env.out << usage;
      return kExitOk;
    } else if (std::optional<Status> handled = own(&i)) {
      status = *handled;
    } else {
      status = Status(StatusCode::kInvalidArgument, "unknown option '" + args[i] + "'");
    }
    if (!status.ok()) {
      *env.err << usage;
      return Fail(env, status, *json);
    }
  }
  return std::nullopt;
}

// NVML to read, CUDA to create contexts, and the report header from NVML
// with the CUDA runtime's version.
struct Opened {
  MeterAndRuntime sources;
  ReportHeader header;
};

Result<Opened> OpenWithHeader(const MeasureEnv& env, std::vector<Status>* errors) {
  Result<MeterAndRuntime> sources = OpenMeterAndRuntime(env);
  if (!sources.ok()) return sources.status();
  Result<ReportHeader> header = MakeHeader(*sources.value().nvml, errors);
  if (!header.ok()) return header.status();
  if (Result<SystemFacts> runtime = sources.value().cuda->System(); runtime.ok()) {
    header.value().system.cuda_runtime_version = runtime.value().cuda_runtime_version;
  }
  return Opened{std::move(sources.value()), std::move(header.value())};
}

}  // namespace

int RunOverheadsCommand(const std::vector<std::string>& args, const MeasureEnv& env) {
  bool json = false;
  unsigned device = 0;
  const std::optional<int> stop =
      ParseFlags(args, env, kOverheadsUsage, &json, [&](std::size_t* i) -> std::optional<Status> {
        if (args[*i] == "--device") return UnsignedFlag(args, i, &device);
        return std::nullopt;
      });
  if (stop) return *stop;

  OverheadsReport report;
  Result<Opened> opened = OpenWithHeader(env, &report.errors);
  if (!opened.ok()) return Fail(env, opened.status(), json);
  MemorySource& nvml = *opened.value().sources.nvml;
  MemorySource& cuda = *opened.value().sources.cuda;
  report.header = std::move(opened.value().header);
  if (device >= report.header.gpus.size()) {
    return Fail(env,
                Status(StatusCode::kInvalidArgument, "--device " + std::to_string(device) + ": only " +
                                                         std::to_string(report.header.gpus.size()) + " GPU(s)"),
                json);
  }
  Result<unsigned> cuda_index = CudaIndexFor(cuda, report.header.gpus[device]);
  if (!cuda_index.ok()) return Fail(env, cuda_index.status(), json);

  Result<OverheadsResult> measured = MeasureOverheads(nvml, device, cuda, cuda_index.value());
  if (!measured.ok()) return Fail(env, measured.status(), json);
  report.result = std::move(measured.value());
  report.errors.insert(report.errors.end(), report.result.errors.begin(), report.result.errors.end());
  if (json) {
    JsonReportWriter().WriteOverheads(report, *env.out);
  } else {
    TextReportWriter().WriteOverheads(report, *env.out);
  }
  return kExitOk;
}

int RunNcclCommand(const std::vector<std::string>& args, const MeasureEnv& env) {
  bool json = false;
  std::vector<unsigned> devices;  // empty: every GPU
  std::size_t bytes = kDefaultNcclBytes;
  const std::optional<int> stop =
      ParseFlags(args, env, NcclUsage(), &json, [&](std::size_t* i) -> std::optional<Status> {
        if (args[*i] == "--devices") return DeviceListFlag(args, i, &devices);
        if (args[*i] == "--bytes") return BytesFlag(args, i, &bytes);
        return std::nullopt;
      });
  if (stop) return *stop;

  NcclReport report;
  Result<Opened> opened = OpenWithHeader(env, &report.errors);
  if (!opened.ok()) return Fail(env, opened.status(), json);
  MemorySource& nvml = *opened.value().sources.nvml;
  MemorySource& cuda = *opened.value().sources.cuda;
  report.header = std::move(opened.value().header);
  const std::size_t gpu_count = report.header.gpus.size();
  if (devices.empty()) {
    if (gpu_count < 2) {
      return Fail(env,
                  Status(StatusCode::kNotSupported, "vram-probe nccl needs at least 2 GPUs; NVML sees " +
                                                        std::to_string(gpu_count) +
                                                        " (a communicator of one rank allocates nothing)"),
                  json);
    }
    for (unsigned d = 0; d < gpu_count; ++d) devices.push_back(d);
  }
  std::vector<unsigned> cuda_devices;
  for (unsigned d : devices) {
    if (d >= gpu_count) {
      return Fail(env,
                  Status(StatusCode::kInvalidArgument, "--devices lists GPU " + std::to_string(d) + ": only " +
                                                           std::to_string(gpu_count) + " GPU(s)"),
                  json);
    }
    Result<unsigned> cuda_index = CudaIndexFor(cuda, report.header.gpus[d]);
    if (!cuda_index.ok()) return Fail(env, cuda_index.status(), json);
    cuda_devices.push_back(cuda_index.value());
  }

  Result<std::unique_ptr<Collectives>> nccl =
      env.open_nccl ? env.open_nccl()
                    : Result<std::unique_ptr<Collectives>>(
                          Status(StatusCode::kNotSupported, "vram-probe was built without NCCL support"));
  if (!nccl.ok()) return Fail(env, nccl.status(), json);

  Result<NcclMeasurement> measured = MeasureNccl(nvml, devices, cuda, cuda_devices, *nccl.value(), bytes);
  if (!measured.ok()) return Fail(env, measured.status(), json);
  report.result = std::move(measured.value());
  report.errors.insert(report.errors.end(), report.result.errors.begin(), report.result.errors.end());
  if (json) {
    JsonReportWriter().WriteNccl(report, *env.out);
  } else {
    TextReportWriter().WriteNccl(report, *env.out);
  }
  return kExitOk;
}

}  // namespace vram::probe

namespace vram::cli {

int run_device(const std::vector<std::string>& args) {
  return probe::RunDeviceCommand(args, probe::DefaultMeasureEnv());
}

int run_watch(const std::vector<std::string>& args) { return probe::RunWatchCommand(args, probe::DefaultMeasureEnv()); }

int run_overheads(const std::vector<std::string>& args) {
  return probe::RunOverheadsCommand(args, probe::DefaultMeasureEnv());
}

int run_nccl(const std::vector<std::string>& args) { return probe::RunNcclCommand(args, probe::DefaultMeasureEnv()); }

}  // namespace vram::cli

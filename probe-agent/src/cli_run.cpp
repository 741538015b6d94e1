// vram-probe run --request FILE: writes the training script for the request
// (run_script.h), runs it under `watch` on the GPU, and writes one report with
// the watch measurement, the script's per-phase allocator statistics and the
// request with its estimate, which the page's compare card reads phase by
// phase. Without a GPU (or with --cpu) the script runs on the CPU: the phases
// then carry timings and the tensors' bytes, and no allocator statistics.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli_input.h"
#include "cli_measure.h"
#include "commands.h"
#include "measure/atomic_file.h"
#include "measure/child_process.h"
#include "measure/output_tee.h"
#include "measure/report.h"
#include "run_script.h"
#include "vram/api.h"

namespace vram::cli {

namespace {

using probe::kExitFailure;
using probe::kExitOk;
using probe::kExitUsage;

const char* kRunHelp =
    R"(usage: vram-probe run --request FILE [--steps N] [--out FILE] [--script FILE] [--python EXE]
                      [--device I] [--interval-ms N] [--cpu] [--script-only] [--json]

Writes a self-contained PyTorch script that trains the request's job for a few steps (the model from
model.config with random weights, LoRA / QLoRA, precision, optimizer, checkpointing, attention and
synthetic tokens of micro_batch x seq_len), runs it under `vram-probe watch`, and records
torch.cuda.memory_allocated / max_memory_allocated / memory_reserved / max_memory_reserved at the end of
each phase the estimator models (load, forward, loss, backward, optimizer step), with the peak reset
before each, and the time of each optimizer step (the report's timing: median, fastest and slowest after
the first, and tokens/s). The report carries the request and its estimate: drop it on the page's compare
card.

  --request FILE   the request JSON (as for `vram-probe estimate --request`); task train, one GPU
  --steps N        optimizer steps to run (default 2: the second step finds the optimizer states)
  --out FILE       the report (default vram-run.json)
  --script FILE    where the script goes (default: --out with .py for .json)
  --python EXE     the interpreter that runs it (default python3)
  --device I       the GPU to watch (default 0)
  --interval-ms N  NVML sampling interval (default 20)
  --cpu            run on the CPU without NVML (what this does on a machine without a GPU anyway):
                   checks the script end to end; no allocator statistics
  --script-only    write the script and stop
  --json           also print the report on stdout
Exit: the script's code (0 trained; 2 the request cannot run here, the reason is in the report),
1 bad request or I/O failure (the error JSON on stdout), 2 usage.
)";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "vram-probe run: %s\n\n%s", message.c_str(), kRunHelp);
  return kExitUsage;
}

int request_error(const json& err) {
  const auto& e = err["error"];
  std::fprintf(stderr, "vram-probe run: error [%s] %s%s\n", e.value("code", "").c_str(), e.value("message", "").c_str(),
               e.value("path", "").empty() ? "" : (" (at " + e.value("path", "") + ")").c_str());
  std::printf("%s\n", err.dump(2).c_str());
  return kExitFailure;
}

// A file the run itself wrote (the watch report, the script's phases): read
// under the 16 MiB limit of every input (cli_input.h), never whole first.
bool read_text(const std::string& path, std::string& out) {
  json error;
  return read_text_file(path, "", out, error);
}

// Runs argv to its end on the CPU path (no NVML), forwarding SIGINT/SIGTERM;
// its output passes through the probe and its step lines become `timing`.
probe::Result<probe::ExitInfo> run_child(const std::vector<std::string>& argv, probe::StepTiming* timing) {
  probe::OutputTee tee;
  probe::SpawnOptions spawn;
  if (tee.Open().ok()) tee.Attach(spawn);
  probe::Result<pid_t> pid = probe::Spawn(argv, spawn);
  tee.Spawned();
  if (!pid.ok()) return pid.status();
  probe::SignalForwarder forwarder;
  for (;;) {
    forwarder.Forward(pid.value());
    probe::Status status;
    std::optional<probe::ExitInfo> done = probe::TryReap(pid.value(), &status);
    if (!status.ok()) return status;
    if (done) {
      tee.Finish();
      *timing = tee.log().Timing();
      return *done;
    }
    tee.Pump();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string gib(const json& v) {
  if (!v.is_number()) return "        -";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%9.3f", v.get<double>() / 1073741824.0);
  return buf;
}

// The estimate's phases next to the script's (the largest value over steps
// and micro-steps of each phase), in GiB.
void print_phases(const json& run) {
  const json& phases = run.value("phases", json::array());
  const json& est = run["estimate"];
  std::fprintf(stderr, "\n%-16s %12s %12s %12s %12s %9s\n", "phase", "est alloc", "max alloc", "est reserved",
               "max reserved", "seconds");
  for (const char* key : {"load", "forward", "loss", "backward", "optimizer_step"}) {
    json m_alloc, m_res;
    double seconds = 0;
    for (const auto& p : phases) {
      if (p.value("phase", "") != key) continue;
      seconds = std::max(seconds, p.value("seconds", 0.0));
      if (p["max_allocated_bytes"].is_number() &&
          (!m_alloc.is_number() || p["max_allocated_bytes"].get<int64_t>() > m_alloc.get<int64_t>()))
        m_alloc = p["max_allocated_bytes"];
      if (p["max_reserved_bytes"].is_number() &&
          (!m_res.is_number() || p["max_reserved_bytes"].get<int64_t>() > m_res.get<int64_t>()))
        m_res = p["max_reserved_bytes"];
    }
    json e_alloc, e_res;
    for (const auto& p : est.value("phases", json::array())) {
      const std::string k = p.value("key", "");
      const bool match = k == key || (std::string(key) == "backward" && k == "backward_start");
      if (!match) continue;
      if (!e_alloc.is_number() || p["allocated_bytes"].get<int64_t>() > e_alloc.get<int64_t>())
        e_alloc = p["allocated_bytes"];
      if (!e_res.is_number() || p["reserved_bytes"].get<int64_t>() > e_res.get<int64_t>()) e_res = p["reserved_bytes"];
    }
    std::fprintf(stderr, "%-16s %8s GiB %8s GiB %8s GiB %8s GiB %9.3f\n", key, gib(e_alloc).c_str(),
                 gib(m_alloc).c_str(), gib(e_res).c_str(), gib(m_res).c_str(), seconds);
  }
  if (run.contains("tensor_bytes")) {
    std::fprintf(stderr, "\ntensors at the end (bytes): ");
    for (const auto& [k, v] : run["tensor_bytes"].items()) std::fprintf(stderr, "%s %s  ", k.c_str(), v.dump().c_str());
    std::fprintf(stderr, "\n");
  }
  for (const auto& n : run.value("plan", json::object()).value("notes", json::array()))
    std::fprintf(stderr, "note: %s\n", n.get<std::string>().c_str());
}

// The step time the script printed (step_log.h), after the phases.
void print_timing(const json& timing) {
  if (!timing.is_object() || !timing["step_seconds"].is_object()) return;
  const json& s = timing["step_seconds"];
  std::fprintf(stderr, "\nstep time: median %.4f s (%.4f-%.4f) over %d steps, the first left out as warm-up",
               s["median"].get<double>(), s["min"].get<double>(), s["max"].get<double>(), s["count"].get<int>());
  if (timing["tokens_per_second_per_gpu"].is_object())
    std::fprintf(stderr, "; %.1f tokens/s", timing["tokens_per_second_per_gpu"]["median"].get<double>());
  std::fprintf(stderr, "\n");
}

// What the report keeps of the estimate: enough for the compare card to line
// the phases up without re-estimating (the page re-estimates the request too).
json estimate_summary(const json& est) {
  json phases = json::array();
  for (const auto& p : est["phases"]) {
    phases.push_back({{"key", p["key"]},
                      {"label", p.value("label", "")},
                      {"bytes", p["bytes"]},
                      {"allocated_bytes", p["allocated_bytes"]},
                      {"reserved_bytes", p["reserved_bytes"]}});
  }
  json parts = json::object();
  for (const auto& c : est["components"]) parts[c["key"].get<std::string>()] = c["bytes"];
  // The time model's step on the request's card (null without its figures),
  // for the compare card's measured step time.
  json time = nullptr;
  if (est.contains("time") && est["time"].is_object() && !est["time"]["gpu"].is_null()) {
    const json& t = est["time"];
    time = {{"gpu", t["gpu"]},
            {"gpus", t["gpus"]},
            {"step_seconds", t["step_seconds"]},
            {"tokens_per_second_per_gpu", t["tokens_per_second_per_gpu"]}};
  }
  return {{"version", est["version"]},
          {"time", time},
          {"peak_bytes", est["peak_bytes"]},
          {"peak_phase", est["peak_phase"]},
          {"peak_allocated_bytes", est["peak_allocated_bytes"]},
          {"peak_reserved_bytes", est["peak_reserved_bytes"]},
          {"model",
           {{"params_total", est["model"]["params_total"]}, {"params_trainable", est["model"]["params_trainable"]}}},
          {"components", parts},
          {"phases", phases}};
}

struct RunArgs {
  std::string request_file, out = "vram-run.json", script, python = "python3", device = "0", interval = "20";
  int steps = 2;
  bool cpu = false, script_only = false, as_json = false;
};

// The flags; returns an exit code to stop with (help, a usage error), or -1.
int parse_run_args(const std::vector<std::string>& args, RunArgs& a) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& f = args[i];
    if (f == "--help" || f == "-h") {
      std::printf("%s", kRunHelp);
      return kExitOk;
    } else if (f == "--cpu") {
      a.cpu = true;
    } else if (f == "--script-only") {
      a.script_only = true;
    } else if (f == "--json") {
      a.as_json = true;
    } else if (f == "--request" || f == "--out" || f == "--script" || f == "--python" || f == "--device" ||
               f == "--interval-ms" || f == "--steps") {
      if (i + 1 >= args.size()) return usage_error(f + " needs a value");
      const std::string& v = args[++i];
      if (f == "--request") a.request_file = v;
      if (f == "--out") a.out = v;
      if (f == "--script") a.script = v;
      if (f == "--python") a.python = v;
      if (f == "--device") a.device = v;
      if (f == "--interval-ms") a.interval = v;
      if (f == "--steps") {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        // 1000 steps is far past what a memory measurement needs (the
        // allocator is in steady state from step 2).
        if (end == v.c_str() || *end != '\0' || n < 1 || n > 1000)
          return usage_error("--steps must be a whole number from 1 to 1000, got '" + v + "'");
        a.steps = static_cast<int>(n);
      }
    } else {
      return usage_error("unknown argument '" + f + "'");
    }
  }
  if (a.request_file.empty()) return usage_error("--request FILE is required");
  if (a.script.empty()) {
    const std::string& o = a.out;
    a.script = o.size() > 5 && o.compare(o.size() - 5, 5, ".json") == 0 ? o.substr(0, o.size() - 5) + ".py" : o + ".py";
  }
  return -1;
}

// The script under `watch` (the GPU path): the watch report, timing
// included, is the run's report. Returns the exit code; false in `ok` when
// there is no report to add the run to (watch said why on stderr).
int run_under_watch(const RunArgs& a, const std::vector<std::string>& command, probe::MeasureEnv& env,
                    nlohmann::ordered_json& report, bool& ok) {
  std::vector<std::string> watch_args = {"--out", a.out, "--device", a.device, "--interval-ms", a.interval, "--"};
  watch_args.insert(watch_args.end(), command.begin(), command.end());
  const int code = probe::RunWatchCommand(watch_args, env);
  std::string doc;
  ok = read_text(a.out, doc);
  if (ok) report = nlohmann::ordered_json::parse(doc, nullptr, false);
  ok = ok && !report.is_discarded() && !report.contains("error");
  return code;
}

// The script on the CPU: a report of the probe's own, without NVML. Returns
// the exit code, or -1 when the interpreter cannot start.
int run_on_cpu(const RunArgs& a, const std::string& no_gpu, const std::vector<std::string>& command,
               nlohmann::ordered_json& report) {
  std::fprintf(stderr, "running on the CPU%s\n", a.cpu ? " (--cpu)" : (": no GPU (" + no_gpu + ")").c_str());
  const auto t0 = std::chrono::steady_clock::now();
  probe::StepTiming timing;
  probe::Result<probe::ExitInfo> exit = run_child(command, &timing);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  if (!exit.ok()) {
    std::fprintf(stderr, "vram-probe run: cannot start %s: %s\n", a.python.c_str(), exit.status().message().c_str());
    return -1;
  }
  report["schema"] = probe::kProbeSchema;
  report["tool"] = probe::kToolName;
  report["version"] = probe::ProbeVersion();
  report["host"] = probe::HostName();
  report["time"] = probe::IsoTimeUtc();
  report["source"] = "cpu";
  report["gpus"] = json::array();
  report["command"] = command;
  report["exit"] = {{"code", exit.value().code ? json(*exit.value().code) : json(nullptr)},
                    {"signal", exit.value().signal ? json(*exit.value().signal) : json(nullptr)}};
  report["sampling"] = {{"duration_ms", ms.count()}};
  report["timing"] = probe::StepTimingJson(timing);
  report["errors"] = json::array();
  report["errors"].push_back(
      {{"code", "no_gpu"},
       {"message", a.cpu ? "--cpu: the script ran on the CPU; no GPU memory was measured"
                         : "no GPU (" + no_gpu + "): the script ran on the CPU; no GPU memory was measured"}});
  return probe::ShellExitCode(exit.value());
}

// The report's `run`: the request, its estimate and the script's phases (or
// why it could not run).
nlohmann::ordered_json run_object(const json& request, const json& estimate, const RunArgs& a, bool on_gpu,
                                  const std::string& phases_file, int code) {
  nlohmann::ordered_json run;
  run["request"] = request;
  run["estimate"] = estimate_summary(estimate);
  run["script"] = a.script;
  run["steps"] = a.steps;
  run["device"] = on_gpu ? "cuda" : "cpu";
  std::string phases_text;
  if (read_text(phases_file, phases_text)) {
    const json phases = json::parse(phases_text, nullptr, false);
    if (phases.is_object()) {
      for (const char* k : {"environment", "plan", "params", "tensor_bytes", "phases", "seconds", "error"}) {
        if (phases.contains(k)) run[k] = phases[k];
      }
    }
    std::remove(phases_file.c_str());
  }
  if (!run.contains("phases")) run["phases"] = json::array();
  if (!run.contains("error") && run["phases"].empty()) {
    run["error"] = {{"code", "no_phases"},
                    {"message", "the script ended (exit " + std::to_string(code) + ") before recording any phase"},
                    {"path", ""}};
  }
  return run;
}

}  // namespace

int run_run(const std::vector<std::string>& args) {
  RunArgs a;
  if (const int stop = parse_run_args(args, a); stop >= 0) return stop;
  // The request as `estimate` reads it: the size limit during the read, then
  // parse_json_text (line and column, duplicate keys, nesting depth).
  json read_error;
  const std::optional<json> parsed = read_json_file(a.request_file, "", read_error);
  if (!parsed) return request_error(read_error);
  const json& request = *parsed;
  if (!request.is_object())
    return request_error(error_json({errc::kWrongType, "the request must be a JSON object", ""}));

  json estimate;
  const json spec = run_spec(request, a.steps, &estimate);
  if (spec.contains("error")) return request_error(spec);
  probe::Status written = probe::WriteFileAtomically(a.script, run_script(spec));
  if (!written.ok()) return request_error(error_json({errc::kInternal, written.message(), "--script"}));
  chmod(a.script.c_str(), 0755);
  std::fprintf(stderr, "script written to %s\n", a.script.c_str());
  if (a.script_only) return kExitOk;

  const std::string phases_file = a.out + ".phases.json";
  std::remove(phases_file.c_str());
  std::vector<std::string> command = {a.python,    a.script,  "--phases-out",
                                      phases_file, "--steps", std::to_string(a.steps)};
  probe::MeasureEnv env = probe::DefaultMeasureEnv();
  std::string no_gpu;
  if (!a.cpu) {
    auto nvml = env.open_nvml();
    if (!nvml.ok()) no_gpu = nvml.status().message();
  }
  const bool on_gpu = !a.cpu && no_gpu.empty();
  command.push_back("--device");
  command.push_back(on_gpu ? "cuda" : "cpu");

  nlohmann::ordered_json report;
  int code = kExitOk;
  if (on_gpu) {
    bool ok = false;
    code = run_under_watch(a, command, env, report, ok);
    if (!ok) return code == kExitOk ? kExitFailure : code;
  } else {
    code = run_on_cpu(a, no_gpu, command, report);
    if (code < 0) return probe::kExitCannotRun;
  }
  const nlohmann::ordered_json run = run_object(request, estimate, a, on_gpu, phases_file, code);
  report["run"] = run;
  const std::string document = report.dump(2) + "\n";
  probe::Status saved = probe::WriteFileAtomically(a.out, document);
  if (!saved.ok()) {
    std::fprintf(stderr, "vram-probe run: %s\n", saved.message().c_str());
    return kExitFailure;
  }
  print_phases(json::parse(run.dump()));
  print_timing(json::parse(report.value("timing", nlohmann::ordered_json()).dump()));
  if (run.contains("error"))
    std::fprintf(stderr, "\nthe script did not train: %s\n", run["error"].value("message", "").c_str());
  std::fprintf(stderr, "report written to %s\n", a.out.c_str());
  if (a.as_json) std::printf("%s", document.c_str());
  return code;
}

}  // namespace vram::cli

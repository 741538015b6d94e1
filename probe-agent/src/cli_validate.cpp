// vram-probe validate FILE...: check requests, model configs, probe reports
// and the framework files `vram-probe import` reads, without estimating by
// hand (seed 004's `gpu-mem-calc validate`).
//
// Each file's kind comes from its content: a probe report carries `schema:
// "vram-planner-probe/1"`, a model config `model_type`, a request `model`
// (or `task` / `train` / `infer`). Every problem is printed with its field
// path. The checks are the core's own (parse_json_text, the request's unknown
// keys, parse_request and the estimate, model_info); where the core stops at
// its first error, the field it named is taken out and the file checked
// again, so each value error of a file is listed, until an error that is not
// about one field's own value (fields that disagree, a missing field).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_input.h"
#include "commands.h"
#include "vram/api.h"
#include "vram/request.h"

namespace vram::cli {

namespace {

constexpr const char* kProbeSchema = "vram-planner-probe/1";  // measure/report.h kProbeSchema

struct FileReport {
  std::string file;
  std::string kind;
  std::vector<Error> problems;
  // Keys of an imported framework file that change memory in a way no request
  // field says (the importer's not_understood): the estimate cannot follow
  // them, but the file is not wrong, so they do not fail the check.
  std::vector<Error> warnings;
};

// ---- probe reports: the writer's shape (measure/json_report_writer.cpp), the
// same rules as the page's reader (site/src/lib/probe-report.js) ------------

class ReportChecker {
 public:
  std::vector<Error> problems;

  void check(const json& doc) {
    if (!doc.is_object()) return add("", "the report must be a JSON object");
    if (!doc.contains("schema") && doc.contains("error")) {
      return add("error", "this is vram-probe's error output, not a report");
    }
    if (!need(doc, "schema", "")) return;
    if (doc["schema"] != kProbeSchema) {
      add("schema", "schema is " + doc["schema"].dump() + ", not \"" + kProbeSchema + "\"");
    }
    if (doc.contains("tool") && doc["tool"] != "vram-probe") add("tool", "tool is " + doc["tool"].dump());
    for (const char* k : {"version", "host", "time", "source", "driver_version", "cuda_driver_version"}) {
      if (doc.contains(k)) text(doc[k], k, true);
    }
    std::vector<int64_t> indices;
    // `vram-probe run` on a machine without a GPU ran on the CPU and saw none.
    const bool run = doc.contains("run");
    if (need(doc, "gpus", "") && array(doc["gpus"], "gpus")) {
      if (doc["gpus"].empty() && !run) add("gpus", "gpus is empty: a probe report lists the GPUs it saw");
      for (size_t i = 0; i < doc["gpus"].size(); ++i) {
        const std::string p = "gpus[" + std::to_string(i) + "]";
        const json& g = doc["gpus"][i];
        if (!object(g, p)) continue;
        if (need(g, "index", p) && whole(g["index"], p + ".index", false)) indices.push_back(g["index"].get<int64_t>());
        if (need(g, "name", p)) text(g["name"], p + ".name", false);
        if (need(g, "memory.total", p)) whole(g["memory.total"], p + ".memory.total", true);
        for (const char* k : {"memory.reserved", "memory.used", "memory.free"}) {
          if (g.contains(k)) whole(g[k], p + "." + k, true);
        }
      }
    }
    if (doc.contains("errors") && array(doc["errors"], "errors")) {
      for (size_t i = 0; i < doc["errors"].size(); ++i) {
        const std::string p = "errors[" + std::to_string(i) + "]";
        if (!object(doc["errors"][i], p)) continue;
        for (const char* k : {"code", "message"}) {
          if (need(doc["errors"][i], k, p)) text(doc["errors"][i][k], p + "." + k, false);
        }
      }
    }
    auto device = [&](const json& v, const std::string& p) {
      if (!whole(v, p, false)) return;
      if (std::find(indices.begin(), indices.end(), v.get<int64_t>()) == indices.end()) {
        add(p, p + " is " + v.dump() + ", but gpus lists no GPU with that index");
      }
    };
    if (run) {
      run_object(doc["run"]);
      if (doc.contains("peak")) watch(doc, device);
    } else if (doc.contains("command") || doc.contains("peak") || doc.contains("timeline")) {
      watch(doc, device);
    } else if (doc.contains("overheads")) {
      if (!object(doc["overheads"], "overheads")) return;
      const json& o = doc["overheads"];
      if (o.contains("nccl_bytes")) {
        whole(o["nccl_bytes"], "overheads.nccl_bytes", true);
        if (need(doc, "devices", "") && array(doc["devices"], "devices")) {
          for (size_t i = 0; i < doc["devices"].size(); ++i) {
            const std::string p = "devices[" + std::to_string(i) + "]";
            const json& d = doc["devices"][i];
            if (!object(d, p)) continue;
            if (need(d, "index", p)) device(d["index"], p + ".index");
            for (const char* k : {"init_bytes", "first_collective_bytes", "nccl_bytes"}) {
              if (need(d, k, p)) whole(d[k], p + "." + k, true);
            }
          }
        }
      } else if (o.contains("cuda_context_bytes")) {
        whole(o["cuda_context_bytes"], "overheads.cuda_context_bytes", true);
        if (need(doc, "device", "")) device(doc["device"], "device");
      } else {
        add("overheads",
            "overheads has neither cuda_context_bytes (vram-probe overheads) nor nccl_bytes (vram-probe "
            "nccl)");
      }
      if (need(doc, "measurement", "") && object(doc["measurement"], "measurement")) {
        if (need(doc["measurement"], "method", "measurement")) {
          text(doc["measurement"]["method"], "measurement.method", false);
        }
      }
    }
  }

 private:
  void add(const std::string& path, const std::string& message) {
    problems.push_back({errc::kWrongType, message, path});
  }
  static std::string at(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  bool need(const json& o, const std::string& key, const std::string& path) {
    if (o.contains(key)) return true;
    problems.push_back({errc::kMissingField, at(path, key) + " is missing", at(path, key)});
    return false;
  }
  bool object(const json& v, const std::string& path) {
    if (v.is_object()) return true;
    add(path, path + " must be an object, not " + std::string(v.type_name()));
    return false;
  }
  bool array(const json& v, const std::string& path) {
    if (v.is_array()) return true;
    add(path, path + " must be a list, not " + std::string(v.type_name()));
    return false;
  }
  bool text(const json& v, const std::string& path, bool nullable) {
    if (v.is_string() || (nullable && v.is_null())) return true;
    add(path, path + " must be a string" + (nullable ? " or null" : "") + ", not " + v.dump());
    return false;
  }
  // A non-negative integer exact in a double (bytes, ms, counts); null where
  // the writer writes "not reported".
  bool whole(const json& v, const std::string& path, bool nullable) {
    if (nullable && v.is_null()) return true;
    if (!v.is_number_integer() || (v.is_number_integer() && v.get<int64_t>() < 0) ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(int64_t{1} << 53))) {
      problems.push_back(
          {errc::kOutOfRange,
           path + " must be a whole number" + (nullable ? " or null" : "") + " below 2^53, not " + v.dump(), path});
      return false;
    }
    return true;
  }
  // A `vram-probe run` report's run object (probe-report.js readRun).
  void run_object(const json& r) {
    if (!object(r, "run")) return;
    if (need(r, "request", "run")) object(r["request"], "run.request");
    if (need(r, "device", "run")) text(r["device"], "run.device", false);
    if (need(r, "steps", "run")) whole(r["steps"], "run.steps", false);
    if (r.contains("script")) text(r["script"], "run.script", true);
    if (need(r, "estimate", "run") && object(r["estimate"], "run.estimate")) {
      const json& e = r["estimate"];
      if (need(e, "peak_bytes", "run.estimate")) whole(e["peak_bytes"], "run.estimate.peak_bytes", false);
      if (need(e, "peak_phase", "run.estimate")) text(e["peak_phase"], "run.estimate.peak_phase", false);
      if (need(e, "phases", "run.estimate") && array(e["phases"], "run.estimate.phases")) {
        for (size_t i = 0; i < e["phases"].size(); ++i) {
          const std::string p = "run.estimate.phases[" + std::to_string(i) + "]";
          const json& ph = e["phases"][i];
          if (!object(ph, p)) continue;
          if (need(ph, "key", p)) text(ph["key"], p + ".key", false);
          for (const char* k : {"allocated_bytes", "reserved_bytes"}) {
            if (need(ph, k, p)) whole(ph[k], at(p, k), true);
          }
        }
      }
    }
    // probe-agent/src/run/train_script.py PHASES.
    static const std::vector<std::string> kRunPhases = {"load", "forward", "loss", "backward", "optimizer_step"};
    if (need(r, "phases", "run") && array(r["phases"], "run.phases")) {
      for (size_t i = 0; i < r["phases"].size(); ++i) {
        const std::string p = "run.phases[" + std::to_string(i) + "]";
        const json& ph = r["phases"][i];
        if (!object(ph, p)) continue;
        if (need(ph, "phase", p) && text(ph["phase"], p + ".phase", false) &&
            std::find(kRunPhases.begin(), kRunPhases.end(), ph["phase"].get<std::string>()) == kRunPhases.end()) {
          add(p + ".phase", p + ".phase is " + ph["phase"].dump() + ", not a phase vram-probe run records");
        }
        for (const char* k : {"step", "micro_step"}) {
          if (need(ph, k, p)) whole(ph[k], at(p, k), false);
        }
        for (const char* k : {"allocated_bytes", "max_allocated_bytes", "reserved_bytes", "max_reserved_bytes"}) {
          if (need(ph, k, p)) whole(ph[k], at(p, k), true);
        }
        if (need(ph, "seconds", p) && !(ph["seconds"].is_number() && ph["seconds"].get<double>() >= 0)) {
          add(p + ".seconds", p + ".seconds must be a number of seconds, not " + ph["seconds"].dump());
        }
      }
    }
    if (r.contains("error") && object(r["error"], "run.error")) {
      for (const char* k : {"code", "message"}) {
        if (need(r["error"], k, "run.error")) text(r["error"][k], at("run.error", k), false);
      }
    }
  }

  template <typename Device>
  void watch(const json& doc, Device&& device) {
    if (need(doc, "command", "") && array(doc["command"], "command")) {
      if (doc["command"].empty()) add("command", "command is empty: vram-probe watch always records one");
      for (size_t i = 0; i < doc["command"].size(); ++i) {
        text(doc["command"][i], "command[" + std::to_string(i) + "]", false);
      }
    }
    if (need(doc, "device", "")) device(doc["device"], "device");
    const std::pair<const char*, std::vector<const char*>> sections[] = {
        {"exit", {"code", "signal"}},
        {"peak", {"process_used_bytes", "device_used_bytes", "accounting_max_bytes"}},
        {"baseline", {"device_used_bytes"}},
        {"sampling", {"interval_ms", "samples", "duration_ms"}},
    };
    for (const auto& [section, keys] : sections) {
      if (!need(doc, section, "") || !object(doc[section], section)) continue;
      const bool nullable = std::string(section) != "sampling";
      for (const char* k : keys) {
        if (need(doc[section], k, section)) whole(doc[section][k], at(section, k), nullable);
      }
    }
    if (need(doc, "timeline", "") && array(doc["timeline"], "timeline")) {
      for (size_t i = 0; i < doc["timeline"].size(); ++i) {
        const std::string p = "timeline[" + std::to_string(i) + "]";
        const json& s = doc["timeline"][i];
        if (!object(s, p)) continue;
        if (need(s, "t_ms", p)) whole(s["t_ms"], p + ".t_ms", false);
        for (const char* k : {"process_used_bytes", "device_used_bytes"}) {
          if (need(s, k, p)) whole(s[k], at(p, k), true);
        }
      }
    }
  }
};

// ---- requests and model configs: the core's checks, repeated -------------

// Errors about one field's own value: taking that field out and checking
// again finds the next problem. Others (fields that disagree, a missing
// field, an unknown model) end the list.
bool value_error(const Error& e) {
  return e.code == errc::kWrongType || e.code == errc::kOutOfRange || e.code == errc::kUnknownValue ||
         e.code == errc::kUnknownField;
}

// Removes the key `path` ("train.lora.rank", relative to `doc`); false when
// there is no such key (then checking again would find the same error).
bool remove_path(json& doc, const std::string& path) {
  json* cur = &doc;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return false;
    if (dot == std::string::npos) {
      cur->erase(key);
      return true;
    }
    cur = &(*cur)[key];
    start = dot + 1;
  }
}

// Runs `check` (the core's error for `doc`, or none) until it passes or
// stops at an error that is not one field's value, taking out each field it
// names. `prefix` is the part of the core's paths `doc` itself sits at
// ("config." for a model config checked as {"config": doc}).
template <typename Check>
void repeat_check(json doc, const std::string& prefix, std::vector<Error>& out, Check&& check) {
  for (int round = 0; round < 100; ++round) {
    const json r = check(doc);
    if (!r.contains("error")) return;
    Error e{r["error"].value("code", ""), r["error"].value("message", ""), r["error"].value("path", "")};
    out.push_back(e);
    std::string rel = e.path;
    if (!prefix.empty() && rel.rfind(prefix, 0) == 0) rel = rel.substr(prefix.size());
    if (!value_error(e) || !remove_path(doc, rel)) return;
  }
}

void check_request(const json& doc, std::vector<Error>& out) {
  json rest = doc;
  for (Error& e : unknown_request_keys(doc)) {
    remove_path(rest, e.path);
    out.push_back(std::move(e));
  }
  repeat_check(rest, "", out, [](const json& d) { return estimate(d); });
}

void check_config(const json& doc, std::vector<Error>& out) {
  repeat_check(doc, "config.", out, [](const json& d) { return model_info(json{{"config", d}}); });
}

bool yaml_name(const std::string& file) {
  auto ends = [&file](const std::string& e) {
    return file.size() >= e.size() && file.compare(file.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".yaml") || ends(".yml") || ends(".YAML") || ends(".YML");
}

// A framework file (Axolotl, LLaMA-Factory, torchtune or LitGPT YAML, a
// DeepSpeed, TrainingArguments, PEFT or bitsandbytes JSON, an accelerate
// config): `vram-probe import FILE` (the core's importer, with the bundled
// preset of the model it names), then the request it gives checked as a
// request when it has a model. False when the importer does not know the
// file's kind either.
bool check_framework_file(const std::string& file, FileReport& r) {
  const json imported = import_config_files({file});
  if (imported.contains("error")) {
    Error e{imported["error"].value("code", ""), imported["error"].value("message", ""),
            imported["error"].value("path", "")};
    if (e.code == errc::kUnknownValue && e.path == file) return false;  // not a kind the importer knows
    // The importer's paths are "FILE:key"; the file is named already.
    if (e.path.rfind(file + ":", 0) == 0) e.path = e.path.substr(file.size() + 1);
    if (e.path == file) e.path = "";
    r.kind = "framework file";
    r.problems.push_back(std::move(e));
    return true;
  }
  const json& report = imported["files"][0];
  r.kind = report.value("kind", "framework") + " (framework file)";
  for (const auto& n : report["not_understood"]) {
    r.warnings.push_back({"not_understood", n.value("key", "") + ": " + n.value("why", ""), n.value("key", "")});
  }
  const json& request = imported["request"];
  if (request.contains("model")) {
    std::vector<Error> found;
    check_request(request, found);
    for (Error& e : found) {
      e.message = "the request this file gives: " + e.message;
      e.path = "request." + e.path;
      r.problems.push_back(std::move(e));
    }
  }
  return true;
}

FileReport validate_file(const std::string& file) {
  FileReport r{file, "unknown", {}, {}};
  // YAML is only ever a framework file; its reading (size limit, YAML
  // errors with their line) is the importer's.
  if (yaml_name(file)) {
    if (!check_framework_file(file, r)) {
      r.problems.push_back({errc::kUnknownValue,
                            "not a kind of YAML file vram-probe knows (Axolotl, LLaMA-Factory, torchtune or LitGPT "
                            "recipe, accelerate config)",
                            ""});
    }
    return r;
  }
  json error;
  const auto doc = read_json_file(file, "", error);
  if (!doc) {
    r.problems.push_back(
        {error["error"].value("code", ""), error["error"].value("message", ""), error["error"].value("path", "")});
    return r;
  }
  const bool object = doc->is_object();
  if (object && (doc->contains("schema") || doc->contains("tool"))) {
    r.kind = "probe report";
    ReportChecker c;
    c.check(*doc);
    r.problems = std::move(c.problems);
  } else if (object &&
             (doc->contains("model") || doc->contains("task") || doc->contains("train") || doc->contains("infer"))) {
    r.kind = "request";
    check_request(*doc, r.problems);
  } else if (object && doc->contains("model_type")) {
    r.kind = "model config";
    check_config(*doc, r.problems);
  } else if (!object || !check_framework_file(file, r)) {
    r.problems.push_back({errc::kWrongType,
                          "cannot tell what this file is: a request has \"model\", a model config \"model_type\", a "
                          "probe report \"schema\": \"" +
                              std::string(kProbeSchema) +
                              "\", and it is none of the framework files vram-probe import reads",
                          ""});
  }
  return r;
}

const char* kValidateHelp = R"(usage: vram-probe validate [--json] FILE...

Checks each file and prints every problem with its field path; exits 1 if any file has one.
The kind of each file comes from its content:
  request       has "model" (or "task", "train", "infer"): unknown fields (with the nearest known
                one), duplicate keys, each field's value and limits, the layout, and the estimate
                itself (a figure beyond 2^53 - 1 bytes is an error naming its input)
  model config  an HF config.json ("model_type"): the exact parameter count's checks
  probe report  "schema": "vram-planner-probe/1" (vram-probe watch / overheads / nccl --json)
  framework file  what `vram-probe import` reads (Axolotl, LLaMA-Factory, torchtune, LitGPT YAML;
                DeepSpeed, TrainingArguments / SFTConfig, PEFT, bitsandbytes JSON; accelerate YAML):
                the importer's errors with the key, then the request it gives when it names a model
                with a bundled preset; keys it cannot follow are warnings (they do not fail the check)
Every JSON file: at most 16 MiB, at most 64 levels of nesting, valid JSON (errors give line and
column); a framework file at most 10 MiB.
Output:    --json  {"files": [{"file", "kind", "ok", "problems": [{"code", "message", "path"}],
                   "warnings": [...]}]})
)";

}  // namespace

int run_validate(const std::vector<std::string>& args) {
  bool as_json = false;
  std::vector<std::string> files;
  for (const auto& a : args) {
    if (a == "--json") {
      as_json = true;
    } else if (a == "--help" || a == "-h") {
      std::printf("%s", kValidateHelp);
      return 0;
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "vram-probe validate: unknown option '%s' (see --help)\n", a.c_str());
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "vram-probe validate: give one or more files (see --help)\n");
    return 2;
  }
  bool all_ok = true;
  json out = {{"files", json::array()}};
  for (const auto& f : files) {
    const FileReport r = validate_file(f);
    all_ok = all_ok && r.problems.empty();
    json problems = json::array();
    for (const auto& p : r.problems) problems.push_back({{"code", p.code}, {"message", p.message}, {"path", p.path}});
    json warnings = json::array();
    for (const auto& w : r.warnings) warnings.push_back({{"code", w.code}, {"message", w.message}, {"path", w.path}});
    out["files"].push_back({{"file", r.file},
                            {"kind", r.kind},
                            {"ok", r.problems.empty()},
                            {"problems", problems},
                            {"warnings", warnings}});
    if (as_json) continue;
    if (r.problems.empty()) {
      std::printf("%s: %s: ok%s\n", f.c_str(), r.kind.c_str(),
                  r.warnings.empty() ? "" : (" (" + std::to_string(r.warnings.size()) + " warnings)").c_str());
      for (const auto& w : r.warnings) std::printf("  warning %s\n", w.message.c_str());
      continue;
    }
    std::printf("%s: %s: %zu problem%s\n", f.c_str(), r.kind.c_str(), r.problems.size(),
                r.problems.size() == 1 ? "" : "s");
    for (const auto& p : r.problems) {
      std::printf("  %s: [%s] %s\n", p.path.empty() ? "(file)" : p.path.c_str(), p.code.c_str(), p.message.c_str());
    }
    for (const auto& w : r.warnings) std::printf("  warning %s\n", w.message.c_str());
  }
  if (as_json) std::printf("%s\n", out.dump(2).c_str());
  return all_ok ? 0 : 1;
}

}  // namespace vram::cli

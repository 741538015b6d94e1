// make validate: every row of tests/fixtures/measured.json through the
// estimator, compared by what the row measured (allocated, reserved or
// nvidia-smi), or, for a figure a serving engine prints at start-up
// (measure_kind "engine_log"), with the line the estimate expects the engine
// to print (the result's infer.engine_log entry the row's `figure` names).
// Writes a Markdown table and prints the median |error| by kind.
//
// usage: vram_validate MEASURED.json REQUESTS.json FIXTURES_DIR OUT.md
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config_files.h"
#include "table_util.h"
#include "vram/api.h"
#include "vram/import.h"

namespace {

using vram::validate::fixed;
using vram::validate::median;
using vram::validate::slurp;

// A row's request as its user would type it (issue 29): the recipe files its
// source names, through `vram-probe import`, then the settings the source
// states on top (request fields, user-facing only: validation_rows_test).
vram::json row_request(const vram::json& spec, const std::string& fixtures) {
  vram::json req = vram::json::object();
  if (spec.contains("recipe")) {
    vram::json files = vram::json::array();
    for (const auto& f : spec["recipe"]) {
      const std::string path = fixtures + "/validation/" + f.get<std::string>();
      files.push_back({{"file", f}, {"content", vram::cli::read_config_tree(path)}});
    }
    const vram::json imported = vram::import_files({{"files", files}});
    if (imported.contains("error")) return imported;
    req = imported["request"];
  }
  req.merge_patch(spec["request"]);
  const std::string cfg_text = slurp(fixtures + "/validation/" + spec["config_file"].get<std::string>());
  req["model"] = {{"config", vram::json::parse(cfg_text)}};
  return req;
}

// One buffer of one device as llama.cpp prints it, in bytes: the result's
// infer.devices row the spec's llama_buffer names (NaN if there is none).
double llama_buffer_bytes(const vram::json& res, const vram::json& spec) {
  const auto& b = spec["llama_buffer"];
  for (const auto& d : res["infer"]["devices"]) {
    if (d["device"] == b["device"]) return d[b["field"].get<std::string>()].get<double>();
  }
  return NAN;
}

// The estimate's figure for what the row measured, in GiB (NaN on an error).
double estimate_gib(const vram::json& res, const vram::json& spec, const std::string& kind) {
  if (res.contains("error")) return NAN;
  // One buffer of one device as llama.cpp's start-up log prints it ("CUDA0
  // model buffer size", "CUDA0 KV buffer size", "CUDA_Host compute buffer
  // size" = the CPU device's compute_bytes): the result's infer.devices.
  if (spec.contains("llama_buffer")) return llama_buffer_bytes(res, spec) / 1073741824.0;
  if (spec.contains("phase")) {
    for (const auto& p : res["phases"]) {
      if (p["key"] == spec["phase"]) return p["bytes"].get<double>() / 1073741824.0;
    }
    return NAN;
  }
  const char* key = kind == "max_memory_allocated"  ? "peak_allocated_bytes"
                    : kind == "max_memory_reserved" ? "peak_reserved_bytes"
                                                    : "peak_bytes";
  return res[key].get<double>() / 1073741824.0;
}

// An engine figure (a row with `figure`): the estimate's value in the row's
// unit, and the largest error the target allows: 5 % or 128 MiB, whichever is
// larger, the 128 MiB turned into the figure's unit through the KV cache's
// bytes per token.
struct Figure {
  double est = NAN;
  double tolerance = NAN;
};

Figure engine_figure(const vram::json& res, const vram::json& spec, const std::string& unit, double meas) {
  Figure f;
  if (res.contains("error") || !res.contains("infer")) return f;
  const vram::json& inf = res["infer"];
  for (const auto& l : inf.value("engine_log", vram::json::array())) {
    if (l["key"] == spec["figure"]) f.est = l["value"].get<double>();
  }
  // llama.cpp's figures (its buffer lines, its memory breakdown table) are
  // one buffer of one device of infer.devices, printed in MiB.
  if (spec.contains("llama_buffer") && unit == "MiB") f.est = llama_buffer_bytes(res, spec) / 1048576.0;
  const double floor_bytes = 128.0 * 1048576.0;
  const double per_token = inf.value("kv_bytes_per_token", 0.0);
  double floor = NAN;
  if (unit == "GiB") floor = floor_bytes / 1073741824.0;
  if (unit == "MiB") floor = floor_bytes / 1048576.0;
  if (unit == "tokens" && per_token > 0) floor = floor_bytes / per_token;
  if (unit == "x" && per_token > 0 && inf.contains("max_model_len")) {
    floor = floor_bytes / per_token / inf["max_model_len"].get<double>();
  }
  f.tolerance = std::max(0.05 * std::fabs(meas), floor);
  return f;
}

// Engine figures by engine (framework_id) and figure: signed errors, and
// whether each is within the target.
struct EngineRow {
  double err = 0;
  bool within = false;
};
using EngineRows = std::map<std::string, std::map<std::string, std::vector<EngineRow>>>;

std::string engine_table(const EngineRows& by) {
  std::ostringstream t;
  t << "| engine | figure | rows | median abs error | max abs error | within 5 % or 128 MiB |\n"
    << "|---|---|---:|---:|---:|---:|\n";
  for (const auto& [engine, figures] : by) {
    for (const auto& [figure, rows] : figures) {
      std::vector<double> mag;
      int within = 0;
      for (const auto& r : rows) {
        mag.push_back(std::fabs(r.err));
        within += r.within ? 1 : 0;
      }
      t << "| " << engine << " | " << figure << " | " << rows.size() << " | " << fixed(100 * median(mag), 1) << "% | "
        << fixed(100 * *std::max_element(mag.begin(), mag.end()), 1) << "% | " << within << " of " << rows.size()
        << " |\n";
      std::printf("engine %-8s %-28s rows %2zu  median |error| %5.1f%%  within target %d\n", engine.c_str(),
                  figure.c_str(), rows.size(), 100 * median(mag), within);
    }
  }
  return t.str();
}

// A measured or estimated figure as the rows table shows it.
std::string value_text(double v, const std::string& unit) {
  if (!std::isfinite(v)) return "error";
  if (unit == "tokens") return fixed(v, 0) + " tokens";
  if (unit == "x") return fixed(v, 2) + "x";
  return fixed(v, 2) + (unit == "GiB" ? "" : " " + unit);
}

// The row's settings as the table shows them.
std::string setting_of(const vram::json& row) {
  std::string setting =
      row.value("precision", "") + ", " + (row["optimizer"].is_string() ? row["optimizer"].get<std::string>() : "-");
  if (row["micro_batch"].is_number()) setting += ", b " + std::to_string(row["micro_batch"].get<int>());
  if (row["seq_len"].is_number()) setting += ", s " + std::to_string(row["seq_len"].get<int>());
  if (row["grad_checkpointing"].is_boolean() && row["grad_checkpointing"].get<bool>()) setting += ", ckpt";
  if (row["lora_rank"].is_number()) setting += ", r " + std::to_string(row["lora_rank"].get<int>());
  for (auto& c : setting) {
    if (c == '|') c = '/';
  }
  return setting;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: vram_validate MEASURED.json REQUESTS.json FIXTURES_DIR OUT.md\n");
    return 2;
  }
  const vram::json measured = vram::json::parse(slurp(argv[1]), nullptr, false);
  const vram::json requests = vram::json::parse(slurp(argv[2]), nullptr, false);
  const std::string fixtures = argv[3];
  if (measured.is_discarded() || requests.is_discarded() || measured.size() != requests.size()) {
    std::fprintf(stderr, "vram_validate: unreadable inputs or row counts differ\n");
    return 1;
  }
  std::map<std::string, std::vector<double>> errors;
  // Signed errors by framework (measured.json framework_id), then measure kind.
  std::map<std::string, std::map<std::string, std::vector<double>>> by_framework;
  EngineRows by_engine;
  std::ostringstream table;
  table << "| # | framework | model | task | setting | measure | measured GiB | estimate GiB | error |\n"
        << "|---|---|---|---|---|---|---:|---:|---:|\n";
  int failures = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    const auto& row = measured[i];
    const auto& spec = requests[i];
    const vram::json req = row_request(spec, fixtures);
    const vram::json res = req.contains("error") ? req : vram::estimate(req);
    const std::string kind = row["measure_kind"].get<std::string>();
    const bool figure = spec.contains("figure");
    const std::string unit = figure ? row.value("unit", "GiB") : "GiB";
    const double meas = figure ? row["measured_value"].get<double>() : row["measured_gib"].get<double>();
    if (res.contains("error")) {
      ++failures;
      std::fprintf(stderr, "row %zu: %s\n", i, res.dump().c_str());
    }
    const Figure f = figure ? engine_figure(res, spec, unit, meas) : Figure{estimate_gib(res, spec, kind), NAN};
    // Relative to the measured figure's size (vLLM prints a negative KV budget when it cannot start).
    const double err = (f.est - meas) / std::fabs(meas);
    const std::string fw = row.value("framework_id", "hf");
    if (std::isfinite(err)) {
      errors[kind].push_back(std::fabs(err));
      if (figure) {
        by_engine[fw][spec["figure"].get<std::string>()].push_back({err, std::fabs(f.est - meas) <= f.tolerance});
      } else {
        by_framework[fw][kind].push_back(err);
      }
    }
    table << "| " << i << " | " << fw << " | " << row["model"].get<std::string>() << " | "
          << row["task"].get<std::string>() << " | " << setting_of(row) << " | "
          << (figure ? spec["figure"].get<std::string>() : kind) << " | " << value_text(meas, unit) << " | "
          << value_text(f.est, unit) << " | "
          << (std::isfinite(err) ? (err >= 0 ? "+" : "") + fixed(100 * err, 1) + "%" : "-") << " |\n";
  }
  std::ostringstream summary;
  summary << "| measure kind | rows | median abs error | max abs error |\n|---|---:|---:|---:|\n";
  std::vector<double> alloc_like;
  for (const auto& [kind, v] : errors) {
    summary << "| " << kind << " | " << v.size() << " | " << fixed(100 * median(v), 1) << "% | "
            << fixed(100 * *std::max_element(v.begin(), v.end()), 1) << "% |\n";
    std::printf("%-24s rows %2zu  median |error| %5.1f%%  max %5.1f%%\n", kind.c_str(), v.size(), 100 * median(v),
                100 * *std::max_element(v.begin(), v.end()));
    if (kind == "max_memory_allocated") alloc_like.insert(alloc_like.end(), v.begin(), v.end());
  }
  std::ostringstream frameworks;
  frameworks << "| framework | measure kind | rows | median abs error | max abs error | rows > 10 % low |\n"
             << "|---|---|---:|---:|---:|---:|\n";
  for (const auto& [fw, kinds] : by_framework) {
    std::vector<double> all;
    for (const auto& [kind, v] : kinds) {
      std::vector<double> mag;
      int low = 0;
      for (double e : v) {
        mag.push_back(std::fabs(e));
        low += e < -0.10 ? 1 : 0;
      }
      all.insert(all.end(), mag.begin(), mag.end());
      frameworks << "| " << fw << " | " << kind << " | " << v.size() << " | " << fixed(100 * median(mag), 1) << "% | "
                 << fixed(100 * *std::max_element(mag.begin(), mag.end()), 1) << "% | " << low << " |\n";
    }
    std::printf("framework %-14s rows %2zu  median |error| %5.1f%%\n", fw.c_str(), all.size(), 100 * median(all));
  }
  std::ofstream out(argv[4]);
  out << "# Validation against published measurements\n\n"
      << "Generated by `make validate` (tests/validate/validate.cpp) from `tests/fixtures/measured.json` and the\n"
      << "row-by-row request mapping in `tests/fixtures/validation/requests.json` (each row's `why` says how the\n"
      << "published setup was mapped onto request fields). Estimates are compared with what each row measured:\n"
      << "`peak_allocated_bytes` for max_memory_allocated, `peak_reserved_bytes` for max_memory_reserved and\n"
      << "`peak_bytes` (device view incl. CUDA context) for nvidia-smi; an engine_log row compares a figure a\n"
      << "serving engine printed at start-up with the line the estimate expects it to print\n"
      << "(`infer.engine_log`, the row's `figure`). Do not edit by hand.\n\n"
      << "## Summary\n\n"
      << summary.str() << "\n## By framework\n\n"
      << "Rows grouped by the framework that ran them (`framework_id` in measured.json; `hf` = Hugging Face\n"
      << "Trainer / TRL / PEFT / transformers, and plain PyTorch loops over transformers models).\n\n"
      << frameworks.str() << "\n## By engine and figure\n\n"
      << "Serving engines' start-up figures; the target is each within 5 % or 128 MiB of KV cache (in the\n"
      << "figure's unit), whichever is larger.\n\n"
      << engine_table(by_engine) << "\n## Rows\n\n"
      << table.str();
  std::printf("wrote %s%s\n", argv[4], failures ? " (with errors)" : "");
  return failures == 0 ? 0 : 1;
}

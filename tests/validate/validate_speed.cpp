// make validate: every row of tests/fixtures/throughput.json (published
// training and serving throughput with fully stated settings) through the
// time model, compared by what the row measured. Writes docs/throughput.md
// and prints the median |error| by kind and by source.
//
// usage: vram_validate_speed THROUGHPUT.json FIXTURES_DIR OUT.md
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "table_util.h"
#include "vram/api.h"

namespace {

using vram::validate::fixed;
using vram::validate::median;
using vram::validate::slurp;

// What a row measured, read from the result's time object: a rate's range
// {low = slow end, high = fast end}, compared at its geometric mean.
struct Estimate {
  double low = NAN, high = NAN;
  double mid() const { return std::sqrt(low * high); }
};

Estimate estimate_of(const vram::json& t, const std::string& measure, const vram::json& request) {
  auto range = [&](const char* key, double scale) {
    return Estimate{t[key]["low"].get<double>() * scale, t[key]["high"].get<double>() * scale};
  };
  if (measure == "train_tokens_per_second_per_gpu") return range("tokens_per_second_per_gpu", 1);
  if (measure == "train_tokens_per_second") return range("tokens_per_second", 1);
  if (measure == "train_samples_per_second") {
    return range("tokens_per_second", 1.0 / request["train"]["seq_len"].get<double>());
  }
  if (measure == "decode_tokens_per_second_per_sequence") return range("decode_tokens_per_second_per_sequence", 1);
  if (measure == "decode_tokens_per_second") return range("decode_tokens_per_second", 1);
  // llama-bench's ppN: N prompt tokens over the time to compute them.
  if (measure == "prefill_tokens_per_second") return range("prefill_tokens_per_second", 1);
  return {};
}

std::string kind_of(const std::string& measure) {
  if (measure.rfind("train", 0) == 0) return "training";
  return measure.rfind("prefill", 0) == 0 ? "prefill" : "decode";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: vram_validate_speed THROUGHPUT.json FIXTURES_DIR OUT.md\n");
    return 2;
  }
  const vram::json doc = vram::json::parse(slurp(argv[1]), nullptr, false);
  const std::string fixtures = argv[2];
  if (doc.is_discarded() || !doc.contains("rows")) {
    std::fprintf(stderr, "vram_validate_speed: unreadable %s\n", argv[1]);
    return 1;
  }
  std::map<std::string, std::vector<double>> by_kind;
  std::map<std::string, std::vector<double>> by_source;
  std::map<std::string, int> in_range;
  std::ostringstream table;
  table << "| # | source | model | setting | measure | measured | estimate (range) | error |\n"
        << "|---|---|---|---|---|---:|---:|---:|\n";
  int failures = 0;
  int index = 0;
  for (const auto& row : doc["rows"]) {
    vram::json req = row["request"];
    // A real config.json from the fixtures, or the request's own model (model.custom).
    if (row.contains("config_file")) {
      req["model"] = {{"config", vram::json::parse(slurp(fixtures + "/" + row["config_file"].get<std::string>()))}};
    }
    const vram::json res = vram::estimate(req);
    const std::string measure = row["measure"].get<std::string>();
    const double meas = row["measured"].get<double>();
    Estimate est;
    if (res.contains("error") || !res.contains("time") || !res["time"].contains("terms")) {
      ++failures;
      std::fprintf(stderr, "row %d: %s\n", index, res.contains("error") ? res.dump().c_str() : "no time");
    } else {
      est = estimate_of(res["time"], measure, req);
    }
    const double err = (est.mid() - meas) / meas;
    const std::string kind = kind_of(measure);
    const std::string source = row["source_key"].get<std::string>();
    if (std::isfinite(err)) {
      by_kind[kind].push_back(std::fabs(err));
      by_source[source].push_back(err);
      if (meas >= est.low && meas <= est.high) ++in_range[kind];
    }
    std::string setting = row["setting"].get<std::string>();
    for (auto& c : setting) {
      if (c == '|') c = '/';
    }
    table << "| " << index << " | " << source << " | " << row["model"].get<std::string>() << " | " << setting << " | "
          << measure << " | " << fixed(meas, 1) << " | "
          << (std::isfinite(est.mid()) ? fixed(est.mid(), 1) + " (" + fixed(est.low, 1) + "-" + fixed(est.high, 1) + ")"
                                       : std::string("error"))
          << " | " << (std::isfinite(err) ? (err >= 0 ? "+" : "") + fixed(100 * err, 1) + "%" : "-") << " |\n";
    ++index;
  }
  std::ostringstream summary;
  summary << "| kind | rows | median abs error | max abs error | measured inside the range |\n"
          << "|---|---:|---:|---:|---:|\n";
  for (const auto& [kind, v] : by_kind) {
    summary << "| " << kind << " | " << v.size() << " | " << fixed(100 * median(v), 1) << "% | "
            << fixed(100 * *std::max_element(v.begin(), v.end()), 1) << "% | " << in_range[kind] << " of " << v.size()
            << " |\n";
    std::printf("%-10s rows %2zu  median |error| %5.1f%%  max %5.1f%%\n", kind.c_str(), v.size(), 100 * median(v),
                100 * *std::max_element(v.begin(), v.end()));
  }
  std::ostringstream sources;
  sources << "| source | rows | median abs error | median signed error |\n|---|---:|---:|---:|\n";
  for (const auto& [src, v] : by_source) {
    std::vector<double> mag;
    for (double e : v) mag.push_back(std::fabs(e));
    sources << "| " << src << " | " << v.size() << " | " << fixed(100 * median(mag), 1) << "% | "
            << (median(v) >= 0 ? "+" : "") << fixed(100 * median(v), 1) << "% |\n";
    std::printf("source %-28s rows %2zu  median |error| %5.1f%%\n", src.c_str(), v.size(), 100 * median(mag));
  }
  std::ostringstream refs;
  for (const auto& [key, text] : doc["sources"].items())
    refs << "- **" << key << "**: " << text.get<std::string>() << "\n";
  std::ofstream out(argv[3]);
  out << "# Time model against published throughput\n\n"
      << "Generated by `make validate` (tests/validate/validate_speed.cpp) from `tests/fixtures/throughput.json`:\n"
      << "each row is a published measurement whose source states its settings; its `request` says them in the\n"
      << "request's vocabulary and its `why` how. The estimate is the time model's range for that request\n"
      << "(`time` in the result); the error compares the measurement with the range's geometric mean. Do not\n"
      << "edit by hand.\n\n"
      << "## Summary\n\n"
      << summary.str() << "\n## By source\n\n"
      << sources.str() << "\n"
      << refs.str() << "\n## Rows\n\n"
      << table.str();
  std::printf("wrote %s%s\n", argv[3], failures ? " (with errors)" : "");
  return failures == 0 ? 0 : 1;
}

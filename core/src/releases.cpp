// Framework releases, library versions and the rules keyed by them
// (vram/releases.h). The release table is in release_table.cpp.
#include "vram/releases.h"

#include <algorithm>
#include <cctype>

#include "release_table.h"
#include "vram/fields.h"

namespace vram {

namespace {

// The leading numbers of a version: "0.43.2.post1" -> {0, 43, 2}.
std::vector<int64_t> numbers(std::string_view v) {
  std::vector<int64_t> out;
  size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
    int64_t n = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
      n = std::min<int64_t>(n * 10 + (v[i] - '0'), int64_t{1} << 40);
      ++i;
    }
    out.push_back(n);
    if (i + 1 < v.size() && v[i] == '.' && std::isdigit(static_cast<unsigned char>(v[i + 1]))) {
      ++i;
    } else {
      break;
    }
  }
  return out;
}

// The library a framework's own release is a version of.
std::string own_library(const std::string& framework) { return framework == "hf" ? "transformers" : framework; }

}  // namespace

const std::vector<std::string>& versioned_libraries() {
  // The versions.* rows of the field table (fields.cpp), in its order.
  static const std::vector<std::string> kLibraries = [] {
    std::vector<std::string> out;
    for (const FieldSpec& f : known_fields()) {
      if (f.path.rfind("versions.", 0) == 0) out.push_back(f.path.substr(9));
    }
    return out;
  }();
  return kLibraries;
}

int compare_versions(std::string_view a, std::string_view b) {
  const std::vector<int64_t> x = numbers(a);
  const std::vector<int64_t> y = numbers(b);
  for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    const int64_t p = i < x.size() ? x[i] : 0;
    const int64_t q = i < y.size() ? y[i] : 0;
    if (p != q) return p < q ? -1 : 1;
  }
  return 0;
}

bool valid_version(std::string_view v) {
  if (v.empty() || v.size() > 64 || !std::isdigit(static_cast<unsigned char>(v[0]))) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-' || c == '_';
  });
}

bool version_in(std::string_view version, std::string_view range) {
  while (!range.empty()) {
    const size_t comma = range.find(',');
    std::string_view bound = range.substr(0, comma);
    range = comma == std::string_view::npos ? std::string_view{} : range.substr(comma + 1);
    const bool inclusive = bound.size() > 1 && bound[1] == '=';
    const char op = bound.empty() ? ' ' : bound[0];
    const int c = compare_versions(version, bound.substr(inclusive ? 2 : 1));
    const bool ok = op == '<' ? (c < 0 || (inclusive && c == 0)) : op == '>' ? (c > 0 || (inclusive && c == 0)) : true;
    if (!ok) return false;
  }
  return true;
}

FrameworkRelease releases::to_release(const ReleaseRow& row) {
  FrameworkRelease rel{row.version, row.date, {}, row.source};
  for (const std::string& pair : detail::split_bars(row.libraries)) {
    const size_t eq = pair.find('=');
    rel.libraries.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
  }
  return rel;
}

FrameworkJob releases::newest_job(const Framework& fw, const FrameworkRelease& rel) {
  FrameworkJob job;
  job.framework = &fw;
  job.release = rel.version;
  job.note = "framework release " + fw.name + "@" + rel.version + " (" + rel.date +
             "), the newest known: name another as train.framework " + fw.name + "@RELEASE";
  for (const auto& [lib, version] : rel.libraries) job.versions.push_back({lib, version, fw.name + "@" + rel.version});
  return job;
}

std::vector<FrameworkRelease> releases_of(const std::string& framework) {
  std::vector<FrameworkRelease> out;
  for (const releases::ReleaseRow& r : releases::kReleases) {
    if (framework == r.framework) out.push_back(releases::to_release(r));
  }
  return out;
}

json framework_releases(bool details) {
  json out = json::object();
  for (const Framework& f : frameworks()) {
    json list = json::array();
    for (const FrameworkRelease& r : releases_of(f.name)) {
      json one = {{"version", r.version}, {"date", r.date}};
      if (details) {
        json libs = json::object();
        for (const auto& [lib, v] : r.libraries) libs[lib] = v;
        one["libraries"] = std::move(libs);
        one["source"] = r.source;
      }
      list.push_back(std::move(one));
    }
    out[f.name] = std::move(list);
  }
  return out;
}

std::string FrameworkJob::version_of(const std::string& library) const {
  if (framework != nullptr && library == own_library(framework->name)) return release;
  for (const LibraryVersion& v : versions) {
    if (v.library == library) return v.version;
  }
  return "";
}

namespace {

// The release of `releases` that `text` names: itself, the newest of its
// series ("0.2" -> "0.2.1"), or the newest before it (its libraries then
// stand for it, and `note` says so).
const FrameworkRelease& pick_release(const std::vector<FrameworkRelease>& all, const std::string& name,
                                     const std::string& text, std::string& note) {
  const FrameworkRelease* series = nullptr;
  const FrameworkRelease* before = nullptr;
  for (const FrameworkRelease& r : all) {
    const bool same = r.version == text || r.version.rfind(text + ".", 0) == 0;
    if (same) series = &r;
    if (compare_versions(r.version, text) <= 0) before = &r;
  }
  if (series != nullptr) {
    if (series->version != text)
      note = name + "@" + text + " is release " + series->version + ", the newest of " + text;
    return *series;
  }
  if (before == nullptr) {
    std::string known;
    for (const FrameworkRelease& r : all) known += (known.empty() ? "" : ", ") + r.version;
    fail(
        errc::kUnknownValue, "train.framework",
        "train.framework " + name + "@" + text + " is older than every release known for " + name + " (" + known + ")");
  }
  note = name + "@" + text + " is not in the release table: the library versions of " + name + "@" + before->version +
         ", the newest release before it, stand for it";
  return *before;
}

// versions.<library> of the request, each checked.
std::vector<LibraryVersion> requested_versions(const json& request) {
  std::vector<LibraryVersion> out;
  if (!request.is_object() || !request.contains("versions")) return out;
  const json& v = request["versions"];
  if (!v.is_object()) fail(errc::kWrongType, "versions", "versions must be an object of library: version");
  for (const auto& [lib, value] : v.items()) {
    const std::string path = "versions." + lib;
    if (!value.is_string() || !valid_version(value.get<std::string>())) {
      fail(errc::kWrongType, path,
           path + " must be a version string such as \"0.43.2\" or \"2024.8\" (it is " + value.dump() + ")");
    }
    out.push_back({lib, value.get<std::string>(), "versions." + lib});
  }
  return out;
}

}  // namespace

FrameworkJob framework_job(const json& request) {
  const json* text = nullptr;
  if (request.is_object() && request.contains("train") && request["train"].is_object() &&
      request["train"].contains("framework")) {
    text = &request["train"]["framework"];
  }
  const FieldSpec& spec = field("train.framework");
  std::string name = defaults::kFramework;
  std::string release;
  bool release_given = false;
  if (text != nullptr) {
    const std::string s = text->is_string() ? text->get<std::string>() : "";
    const size_t at = s.find('@');
    const auto canonical = spec.canonical(s.substr(0, at));
    if (!canonical || find_framework(*canonical) == nullptr) {
      std::string allowed;
      for (const auto& v : spec.values) allowed += (allowed.empty() ? "" : ", ") + v;
      fail(errc::kUnknownValue, "train.framework",
           "train.framework " + text->dump() + " is not one of: " + allowed + " (optionally NAME@RELEASE)");
    }
    name = *canonical;
    if (at != std::string::npos) {
      release = s.substr(at + 1);
      release_given = true;
      if (!valid_version(release)) {
        fail(errc::kUnknownValue, "train.framework",
             "train.framework " + text->dump() + ": the release after '@' must be a version such as 0.2 or 2024.8");
      }
    }
  }
  std::vector<LibraryVersion> asked = requested_versions(request);
  for (auto it = asked.begin(); it != asked.end(); ++it) {
    if (it->library != own_library(name)) continue;
    // The framework's own library is its release: one place to say it.
    if (release_given && compare_versions(it->version, release) != 0) {
      fail(errc::kInconsistent, it->from,
           it->from + " " + it->version + " contradicts train.framework " + name + "@" + release);
    }
    release = it->version;
    release_given = true;
    asked.erase(it);
    break;
  }
  const std::vector<FrameworkRelease> all = releases_of(name);
  if (all.empty()) fail(errc::kInternal, "train.framework", "no release known for " + name);
  std::string note;
  const FrameworkRelease& rel = release_given ? pick_release(all, name, release, note) : all.back();
  FrameworkJob job = releases::newest_job(*find_framework(name), rel);
  if (release_given) {
    job.release =
        compare_versions(rel.version, release) != 0 && rel.version.rfind(release + ".", 0) != 0 ? release : rel.version;
    job.release_given = true;
    job.note = std::move(note);
  }
  for (LibraryVersion& a : asked) {
    auto same = std::find_if(job.versions.begin(), job.versions.end(),
                             [&](const LibraryVersion& v) { return v.library == a.library; });
    if (same != job.versions.end()) {
      *same = std::move(a);
    } else {
      job.versions.push_back(std::move(a));
    }
  }
  return job;
}

namespace {

// The value at `path` of the filled request, or the field's default.
json value_at(const json& request, const std::string& path) {
  const json* node = &request;
  std::string bars = path;
  std::replace(bars.begin(), bars.end(), '.', '|');
  for (const std::string& key : detail::split_bars(bars)) {
    if (!node->is_object() || !node->contains(key)) {
      const FieldSpec* f = find_field(path);
      return f != nullptr ? f->default_value : json();
    }
    node = &(*node)[key];
  }
  return *node;
}

// `path` set in `request`? (dots as separators)
bool has_path(const json& request, const std::string& dotted) {
  const json* node = &request;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return false;
    node = &(*node)[key];
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

// The request sets the field at `dotted`, under any of its spellings
// (train.fused_loss is train.loss "fused").
bool request_sets(const json& request, const std::string& dotted) {
  if (dotted == "train.loss" && has_path(request, "train.fused_loss")) return true;
  if (dotted == "train.fused_loss" && has_path(request, "train.loss")) return true;
  return has_path(request, dotted);
}

// Set `dotted` to `value` in `request`, creating objects on the way; false
// where a non-object stands in the way (left for the parser to report).
bool set_path(json& request, const std::string& dotted, const json& value) {
  json* node = &request;
  size_t start = 0;
  while (node->is_object()) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return true;
    }
    if (!node->contains(key)) (*node)[key] = json::object();
    node = &(*node)[key];
    start = dot + 1;
  }
  return false;
}

// The value a condition reads: parallel.sharding (one field for zero / fsdp /
// distributed_optimizer, request.cpp) stands for the dedicated field it names,
// and a method left out is the field's default (as defaults_for reads it).
json condition_value(const json& filled, const std::string& path) {
  if (path == "train.method" && !has_path(filled, path)) return defaults::kMethod;
  if (!has_path(filled, path) && has_path(filled, "parallel.sharding")) {
    const json s = value_at(filled, "parallel.sharding");
    const std::string v = s.is_string() ? s.get<std::string>() : "";
    const bool zero = v.size() == 5 && v.rfind("zero", 0) == 0;
    if (path == "parallel.zero" && zero) return v[4] - '0';
    if (path == "parallel.fsdp" && !v.empty() && !zero && v != "ddp" && v != "distributed_optimizer") return v;
  }
  return value_at(filled, path);
}

// Every "path=value" condition of `when` ('|'-separated) holds; "path=a,b"
// holds for either value.
bool holds(const json& filled, const char* when) {
  for (const std::string& cond : detail::split_bars(when)) {
    const size_t eq = cond.find('=');
    const json v = condition_value(filled, cond.substr(0, eq));
    const std::string have = v.is_string() ? v.get<std::string>() : v.dump();
    const std::string want = "," + cond.substr(eq + 1) + ",";
    if (want.find("," + have + ",") == std::string::npos) return false;
  }
  return true;
}

// Rule `r` holds for `job` (its frameworks, its library's version range)
// and the filled request (its conditions).
bool rule_holds(const releases::RuleRow& r, const FrameworkJob& job, const json& filled) {
  if (*r.frameworks != '\0') {
    const auto names = detail::split_bars(r.frameworks);
    if (std::find(names.begin(), names.end(), job.framework->name) == names.end()) return false;
  }
  const std::string version = job.version_of(r.library);
  return !version.empty() && version_in(version, r.range) && holds(filled, r.when);
}

}  // namespace

std::optional<json> rule_value(const FrameworkJob& job, const json& filled, const std::string& path) {
  std::optional<json> out;
  if (job.framework == nullptr) return out;
  for (const releases::RuleRow& r : releases::kRules) {
    if (r.path == path && rule_holds(r, job, filled)) out = r.value.to_json();  // a later rule wins
  }
  return out;
}

json with_framework_defaults(const json& request, const FrameworkJob& job, std::vector<FrameworkDefault>& applied) {
  json filled = request;
  if (filled.is_object() && filled.contains("train") && filled["train"].is_object()) {
    filled["train"]["framework"] = job.framework->name;  // the parser reads the name; the release is in the job
  }
  const json method_v = value_at(request, "train.method");
  const std::string method = method_v.is_string() ? method_v.get<std::string>() : std::string(defaults::kMethod);
  for (const FrameworkDefault& d : defaults_for(*job.framework, method)) {
    if (!version_in(job.release, d.releases) || request_sets(request, d.path)) continue;
    if (set_path(filled, d.path, d.value)) applied.push_back(d);
  }
  for (const releases::RuleRow& r : releases::kRules) {
    if (!rule_holds(r, job, filled) || request_sets(request, r.path)) continue;
    if (!set_path(filled, r.path, r.value.to_json())) continue;
    const std::string version = job.version_of(r.library);
    // A rule replaces the framework's default of the same field.
    applied.erase(
        std::remove_if(applied.begin(), applied.end(), [&](const FrameworkDefault& d) { return d.path == r.path; }),
        applied.end());
    applied.push_back({r.path,
                       r.value.to_json(),
                       std::string(r.library) + " " + version + " (" + r.range + "): " + r.source,
                       {},
                       ""});
  }
  return filled;
}

}  // namespace vram

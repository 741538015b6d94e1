#include "config_files.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "vram/import.h"

namespace vram::cli {

namespace {

// YAML 1.2.2 §10.3.2 core schema tag resolution (the npm `yaml` package's
// default schema "core", yaml/dist/schema/core).
json resolve_plain(const std::string& s) {
  static const std::regex kNull("^(~|null|Null|NULL|)$");
  static const std::regex kTrue("^(true|True|TRUE)$");
  static const std::regex kFalse("^(false|False|FALSE)$");
  static const std::regex kInt("^[-+]?[0-9]+$");
  static const std::regex kOct("^0o[0-7]+$");
  static const std::regex kHex("^0x[0-9a-fA-F]+$");
  static const std::regex kFloat(R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$)");
  static const std::regex kInf(R"(^[-+]?\.(inf|Inf|INF)$)");
  static const std::regex kNan(R"(^\.(nan|NaN|NAN)$)");
  if (std::regex_match(s, kNull)) return nullptr;
  if (std::regex_match(s, kTrue)) return true;
  if (std::regex_match(s, kFalse)) return false;
  auto number = [](double d) -> json {
    // JSON has no Infinity / NaN: JSON.stringify writes null, and so do we.
    if (!std::isfinite(d)) return nullptr;
    // JSON.stringify(3.0) is "3": an integral value becomes an integer.
    if (d == std::floor(d) && std::fabs(d) <= 9007199254740992.0) return static_cast<int64_t>(d);
    return d;
  };
  if (std::regex_match(s, kOct)) return number(static_cast<double>(std::stoull(s.substr(2), nullptr, 8)));
  if (std::regex_match(s, kHex)) return number(static_cast<double>(std::stoull(s.substr(2), nullptr, 16)));
  if (std::regex_match(s, kInt) || std::regex_match(s, kFloat)) return number(std::strtod(s.c_str(), nullptr));
  if (std::regex_match(s, kInf) || std::regex_match(s, kNan)) return nullptr;
  return s;
}

json to_json(const YAML::Node& n, const std::string& file) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // "!" is the tag of a quoted (non-plain) scalar: always a string.
      return n.Tag() == "!" ? json(n.Scalar()) : resolve_plain(n.Scalar());
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& item : n) a.push_back(to_json(item, file));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) {
          fail(errc::kBadJson, file,
               file + " line " + std::to_string(kv.first.Mark().line + 1) + ": a mapping key must be a scalar");
        }
        o[kv.first.Scalar()] = to_json(kv.second, file);
      }
      return o;
    }
  }
  return nullptr;
}

}  // namespace

void normalize_numbers(json& j) {
  if (j.is_object() || j.is_array()) {
    for (auto& v : j) normalize_numbers(v);
  } else if (j.is_number_float()) {
    const double d = j.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) <= 9007199254740992.0) j = static_cast<int64_t>(d);
  }
}

json yaml_to_json(const std::string& text, const std::string& file) {
  try {
    return to_json(YAML::Load(text), file);
  } catch (const YAML::Exception& e) {
    fail(errc::kBadJson, file,
         file + " line " + std::to_string(e.mark.line + 1) + ": not valid YAML or JSON (" + e.msg + ")");
  }
}

json read_config_tree(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail(errc::kMissingField, path, "cannot read " + path + ": " + ec.message());
  if (static_cast<int64_t>(size) > kMaxImportBytes) {
    fail(errc::kOutOfRange, path,
         path + " is " + std::to_string(size) + " bytes, over the import limit of " + std::to_string(kMaxImportBytes) +
             " (10 MiB)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(errc::kMissingField, path, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  json j = json::parse(text, nullptr, false);
  if (!j.is_discarded()) {
    normalize_numbers(j);
    return j;
  }
  return yaml_to_json(text, path);
}

}  // namespace vram::cli

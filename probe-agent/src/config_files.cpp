#include "config_files.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <regex>

#include "cli_input.h"
#include "vram/fields.h"
#include "vram/import.h"
#include "vram/utf8.h"

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

// A file's tree nests at most limits::kMaxJsonDepth levels, the limit of
// every JSON input (vram/fields.h), so nothing recursive in the importer sees
// a deeper one. yaml-cpp's own parser stops at 2000 levels (DepthGuard<2000>
// in yaml-cpp 0.7 singledocparser), so this recursion is bounded too.
[[noreturn]] void too_deep(const std::string& file, const std::string& where) {
  fail(errc::kOutOfRange, file,
       file + where + ": nested deeper than " + std::to_string(limits::kMaxJsonDepth) +
           " levels (the limit on every input)");
}

json to_json(const YAML::Node& n, const std::string& file, int depth) {
  if ((n.IsSequence() || n.IsMap()) && depth >= limits::kMaxJsonDepth) {
    too_deep(file, " line " + std::to_string(n.Mark().line + 1));
  }
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // "!" is the tag of a quoted (non-plain) scalar: always a string.
      // yaml-cpp can hand back bytes that are not UTF-8 even from UTF-8 text
      // (found by fuzz_import_file): every scalar and key is made valid.
      return n.Tag() == "!" ? json(valid_utf8(n.Scalar())) : resolve_plain(valid_utf8(n.Scalar()));
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& item : n) a.push_back(to_json(item, file, depth + 1));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) {
          fail(errc::kBadJson, file,
               file + " line " + std::to_string(kv.first.Mark().line + 1) + ": a mapping key must be a scalar");
        }
        o[valid_utf8(kv.first.Scalar())] = to_json(kv.second, file, depth + 1);
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
    return to_json(YAML::Load(text), file, 0);
  } catch (const YAML::Exception& e) {
    fail(errc::kBadJson, file,
         file + " line " + std::to_string(e.mark.line + 1) + ": not valid YAML or JSON (" + e.msg + ")");
  }
}

json config_tree(const std::string& raw, const std::string& file) {
  // The page reads a dropped file with File.text(), which decodes UTF-8 and
  // replaces ill-formed bytes with U+FFFD; so does this, and no string in the
  // tree is one nlohmann::json cannot dump.
  const std::string text = valid_utf8(raw);
  // JSON first (the page's JSON.parse, then YAML). The callback sees each
  // object and array as it opens, so a deep document is refused before it is
  // built (as parse_json_text does for requests); a syntax error means "not
  // JSON" and the text is read as YAML.
  const json::parser_callback_t depth = [&file](int level, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        level >= limits::kMaxJsonDepth) {
      too_deep(file, "");
    }
    return true;
  };
  json j = json::parse(text, depth, false);
  if (!j.is_discarded()) {
    normalize_numbers(j);
    return j;
  }
  return yaml_to_json(text, file);
}

json read_config_tree(const std::string& path) {
  std::string text;
  uint64_t bytes = 0;
  switch (read_bounded(path, static_cast<uint64_t>(kMaxImportBytes), text, &bytes)) {
    case BoundedRead::kCannotRead:
      fail(errc::kMissingField, path, "cannot read " + path);
    case BoundedRead::kTooLarge:
      // `bytes` is the file's size, or what a pipe gave before it passed the limit.
      fail(errc::kOutOfRange, path,
           path + " is over the import limit of " + std::to_string(kMaxImportBytes) +
               " bytes (10 MiB): " + std::to_string(bytes) + " bytes seen, refused before reading it whole");
    case BoundedRead::kOk:
      break;
  }
  return config_tree(text, path);
}

std::string import_file_json(const std::string& text) {
  const std::string file = "input";
  try {
    if (static_cast<int64_t>(text.size()) > kMaxImportBytes) {
      fail(errc::kOutOfRange, file,
           file + " is over the import limit of " + std::to_string(kMaxImportBytes) + " bytes");
    }
    return import_files({{"files", json::array({{{"file", file}, {"content", config_tree(text, file)}}})}}).dump(2);
  } catch (const Failure& f) {
    return error_json(f.error()).dump(2);
  } catch (const std::exception& e) {
    return error_json({errc::kInternal, std::string("import failed: ") + e.what(), ""}).dump(2);
  }
}

}  // namespace vram::cli

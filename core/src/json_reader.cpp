#include "vram/json_reader.h"

#include <cmath>
#include <limits>

namespace vram {

namespace {

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

int64_t to_int(const json& v, const std::string& path, int64_t lo, int64_t hi) {
  int64_t out = 0;
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(errc::kOutOfRange, path, path + " is too large (" + std::to_string(u) + ")");
    }
    out = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    out = v.get<int64_t>();
  } else if (v.is_number_float()) {
    // Configs sometimes write integers as 4096.0; accept exact integers only.
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d || std::fabs(d) > 9.0e15) {
      fail(errc::kWrongType, path, path + " must be a whole number, got " + v.dump());
    }
    out = static_cast<int64_t>(d);
  } else {
    fail(errc::kWrongType, path, path + " must be an integer, got " + type_name(v));
  }
  if (out < lo || out > hi) {
    fail(errc::kOutOfRange, path,
         path + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
             std::to_string(out));
  }
  return out;
}

}  // namespace

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

JsonReader::JsonReader(const json& j, std::string path) : j_(&j), path_(std::move(path)) {
  if (!j.is_object()) {
    fail(errc::kWrongType, path_,
         (path_.empty() ? std::string("input") : path_) + " must be a JSON object, got " + type_name(j));
  }
}

std::string JsonReader::child_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

bool JsonReader::has_key(const std::string& key) const { return j_->contains(key); }

bool JsonReader::has(const std::string& key) const {
  auto it = j_->find(key);
  return it != j_->end() && !it->is_null();
}

const json* JsonReader::get(const std::string& key) const {
  auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t JsonReader::int_req(const std::string& key, int64_t lo, int64_t hi) const {
  const json* v = get(key);
  if (v == nullptr) fail(errc::kMissingField, child_path(key), child_path(key) + " is required");
  return to_int(*v, child_path(key), lo, hi);
}

int64_t JsonReader::int_or(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
  const json* v = get(key);
  return v == nullptr ? fallback : to_int(*v, child_path(key), lo, hi);
}

std::optional<int64_t> JsonReader::int_opt(const std::string& key, int64_t lo, int64_t hi) const {
  const json* v = get(key);
  if (v == nullptr) return std::nullopt;
  return to_int(*v, child_path(key), lo, hi);
}

std::optional<double> JsonReader::num_opt(const std::string& key, double lo, double hi) const {
  const json* v = get(key);
  if (v == nullptr) return std::nullopt;
  const std::string p = child_path(key);
  if (!v->is_number()) fail(errc::kWrongType, p, p + " must be a number, got " + type_name(*v));
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    fail(errc::kOutOfRange, p,
         p + " must be between " + json(lo).dump() + " and " + json(hi).dump() + ", got " + v->dump());
  }
  return d;
}

double JsonReader::num_or(const std::string& key, double fallback, double lo, double hi) const {
  return num_opt(key, lo, hi).value_or(fallback);
}

bool JsonReader::bool_or(const std::string& key, bool fallback) const {
  const json* v = get(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) {
    fail(errc::kWrongType, child_path(key), child_path(key) + " must be true or false, got " + type_name(*v));
  }
  return v->get<bool>();
}

std::optional<std::string> JsonReader::str_opt(const std::string& key) const {
  const json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    fail(errc::kWrongType, child_path(key), child_path(key) + " must be a string, got " + type_name(*v));
  }
  return v->get<std::string>();
}

std::string JsonReader::str_or(const std::string& key, const std::string& fallback) const {
  return str_opt(key).value_or(fallback);
}

std::vector<std::string> JsonReader::str_list_or(const std::string& key,
                                                 const std::vector<std::string>& fallback) const {
  const json* v = get(key);
  if (v == nullptr) return fallback;
  const std::string p = child_path(key);
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) fail(errc::kWrongType, p, p + " must be a list of strings, got " + type_name(*v));
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_string()) {
      fail(errc::kWrongType, p + "[" + std::to_string(i) + "]",
           p + "[" + std::to_string(i) + "] must be a string, got " + type_name(e));
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::optional<JsonReader> JsonReader::object_opt(const std::string& key) const {
  const json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) {
    fail(errc::kWrongType, child_path(key), child_path(key) + " must be an object, got " + type_name(*v));
  }
  return JsonReader(*v, child_path(key));
}

JsonReader JsonReader::object_req(const std::string& key) const {
  auto r = object_opt(key);
  if (!r) fail(errc::kMissingField, child_path(key), child_path(key) + " is required");
  return *r;
}

json parse_json_text(const std::string& text, const std::string& path) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    fail(errc::kBadJson, path, (path.empty() ? std::string("input") : path) + " is not valid JSON");
  }
  return j;
}

}  // namespace vram

#include "vram/json_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <type_traits>
#include <vector>

#include "vram/fields.h"
#include "vram/utf8.h"

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

int64_t parse_size(const std::string& text, SizeUnit unit, const std::string& path) {
  auto bad = [&](const std::string& why) -> int64_t {
    fail(errc::kOutOfRange, path,
         path + " " + quoted(text) + " is not a size: " + why +
             (unit == SizeUnit::kCount ? " (write e.g. 7B, 6.7B, 125M: K/M/B/T = 10^3/10^6/10^9/10^12)"
                                       : " (write e.g. 80GB = 80 x 10^9 bytes or 80GiB = 80 x 2^30 bytes; "
                                         "units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"));
  };
  size_t i = 0;
  std::string whole, frac;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') whole += text[i++];
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') frac += text[i++];
    if (frac.empty()) return bad("a '.' must be followed by digits");
  }
  if (whole.empty()) return bad("it must start with digits");
  const std::string suffix = text.substr(i);
  if (whole.size() + frac.size() > 18) return bad("too many digits");
  // value = mantissa / 10^frac.size() x scale, with scale = mul_pow10 x 2^shift.
  int pow10 = 0, shift = 0;
  if (unit == SizeUnit::kCount) {
    const std::string u = suffix.size() == 1 ? std::string(1, static_cast<char>(std::toupper(suffix[0]))) : suffix;
    if (u == "K")
      pow10 = 3;
    else if (u == "M")
      pow10 = 6;
    else if (u == "B")
      pow10 = 9;
    else if (u == "T")
      pow10 = 12;
    else if (!u.empty())
      return bad("unknown unit " + quoted(suffix));
  } else {
    static const std::pair<const char*, std::pair<int, int>> kUnits[] = {
        {"B", {0, 0}},    {"KB", {3, 0}},   {"MB", {6, 0}},   {"GB", {9, 0}},   {"TB", {12, 0}},
        {"KiB", {0, 10}}, {"MiB", {0, 20}}, {"GiB", {0, 30}}, {"TiB", {0, 40}},
    };
    bool found = suffix.empty();
    for (const auto& [name, scale] : kUnits) {
      if (suffix == name) {
        pow10 = scale.first;
        shift = scale.second;
        found = true;
      }
    }
    if (!found) {
      const bool one_letter = suffix.size() == 1 && std::string("KkMmGgTt").find(suffix[0]) != std::string::npos;
      return bad(one_letter ? "the unit " + quoted(suffix) + " is ambiguous (10^n or 2^n bytes?)"
                            : "unknown unit " + quoted(suffix));
    }
  }
  if (suffix.empty() && !frac.empty()) return bad("a fraction needs a unit");
  // value = mantissa x 10^pow10 x 2^shift / 10^frac, in int64_t with
  // checked products (mantissa < 10^18). Dividing by 10^k = 2^k x 5^k: the
  // mantissa must hold the 5^k, and it or 2^shift the 2^k.
  int64_t v = 0;
  for (char c : whole + frac) v = v * 10 + (c - '0');
  const int k = static_cast<int>(frac.size()) - pow10;
  const char* fraction = unit == SizeUnit::kCount ? "not a whole number" : "not a whole number of bytes";
  bool overflow = false;
  auto times = [&](int64_t f) { overflow = overflow || __builtin_mul_overflow(v, f, &v); };
  for (int n = 0; n < -k; ++n) times(10);
  int twos = shift;
  for (int n = 0; n < k; ++n) {
    if (v % 5 != 0) return bad(fraction);
    v /= 5;
    if (twos > 0) {
      --twos;
    } else if (v % 2 == 0) {
      v /= 2;
    } else {
      return bad(fraction);
    }
  }
  for (int n = 0; n < twos; ++n) times(2);
  if (overflow) return bad("too large");
  return v;
}

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

std::optional<int64_t> JsonReader::size_opt(const std::string& key, SizeUnit unit, int64_t lo, int64_t hi) const {
  const json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) return to_int(*v, child_path(key), lo, hi);
  const int64_t n = parse_size(v->get<std::string>(), unit, child_path(key));
  return to_int(json(n), child_path(key), lo, hi);
}

std::optional<double> JsonReader::gib_opt(const std::string& key, double lo, double hi) const {
  const json* v = get(key);
  if (v == nullptr || !v->is_string()) return num_opt(key, lo, hi);
  const int64_t bytes = parse_size(v->get<std::string>(), SizeUnit::kBytes, child_path(key));
  const double gib = static_cast<double>(bytes) / 1073741824.0;
  if (gib < lo || gib > hi) {
    fail(errc::kOutOfRange, child_path(key),
         child_path(key) + " " + quoted(v->get<std::string>()) + " is " + std::to_string(gib) + " GiB, outside " +
             std::to_string(lo) + ".." + std::to_string(hi));
  }
  return gib;
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

namespace {

// One open object or array while parsing: an object's keys so far (a second
// "seq_len" is a mistake, not "the last one wins"), the key being read, an
// array's index.
struct Frame {
  bool object = false;
  std::set<std::string> keys;
  std::string key;
  size_t index = 0;
};

std::string frames_path(const std::string& base, const std::vector<Frame>& frames) {
  std::string p = base;
  for (const Frame& f : frames) {
    if (!f.object) {
      p += "[" + std::to_string(f.index) + "]";
    } else if (!f.key.empty()) {
      p += (p.empty() ? "" : ".") + f.key;
    }
  }
  return p;
}

// "line 3, column 12" of the 1-based byte offset nlohmann reports.
std::string line_column(const std::string& text, size_t byte) {
  const size_t at = std::min(byte > 0 ? byte - 1 : 0, text.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(at - line_start + 1);
}

// nlohmann's reason without its "[json.exception...] parse error at line L,
// column C: " prefix (the position is ours).
std::string reason(const std::string& what) {
  const size_t col = what.find("column ");
  const size_t colon = col == std::string::npos ? what.find("] ") : what.find(": ", col);
  if (colon == std::string::npos) return what;
  return what.substr(colon + 2);
}

}  // namespace

std::string valid_utf8(const std::string& text) {
  // WHATWG Encoding Standard, "UTF-8 decoder": bytes needed, the bounds of the
  // next continuation byte, and the start of the sequence being read (copied
  // as it is when it completes).
  static const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(text.size());
  int needed = 0;
  int seen = 0;
  unsigned char lower = 0x80;
  unsigned char upper = 0xBF;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (needed == 0) {
      start = i;
      if (b <= 0x7F) {
        out += static_cast<char>(b);
      } else if (b >= 0xC2 && b <= 0xDF) {
        needed = 1;
      } else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) lower = 0xA0;
        if (b == 0xED) upper = 0x9F;
        needed = 2;
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) lower = 0x90;
        if (b == 0xF4) upper = 0x8F;
        needed = 3;
      } else {
        out += kReplacement;
      }
      continue;
    }
    if (b < lower || b > upper) {
      // The sequence so far is one maximal subpart: one U+FFFD, then this
      // byte starts afresh.
      needed = seen = 0;
      lower = 0x80;
      upper = 0xBF;
      out += kReplacement;
      --i;
      continue;
    }
    lower = 0x80;
    upper = 0xBF;
    if (++seen == needed) {
      out.append(text, start, i + 1 - start);
      needed = seen = 0;
    }
  }
  if (needed != 0) out += kReplacement;
  return out;
}

namespace {

// nlohmann/json's DOM builder, checking as it reads and reporting a syntax
// error instead of throwing it: json::sax_parse hands every event to this
// handler (nlohmann/json sax_parse, detail/input/json_sax.hpp), which checks
// nesting and duplicate keys and forwards the event to the library's own
// json_sax_dom_parser built with allow_exceptions = false, and keeps the
// first parse_error's byte and message. One parser for both builds of core
// (status.h): without exceptions, a thrown parse_error would be nlohmann's
// JSON_THROW, an internal error. The checks run as each object, array and key
// is read, before the document is built (nothing recursive ever sees a deep
// one); they were a parser callback until 2026-11-28, which made the library
// keep a std::function and two bit stacks (4 KiB of each WASM module).
class ReportingDom {
 public:
  // `path` is the document's path, `what` its name in messages ("input" at the root).
  ReportingDom(json& root, const std::string& path, const std::string& what)
      : dom_(root, false), path_(path), what_(what) {}

  bool null() { return value() && dom_.null(); }
  bool boolean(bool v) { return value() && dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return value() && dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return value() && dom_.number_float(v, s); }
  bool string(json::string_t& v) { return value() && dom_.string(v); }
  bool binary(json::binary_t& v) { return value() && dom_.binary(v); }
  bool start_object(std::size_t n) { return open(true) && dom_.start_object(n); }
  bool key(json::string_t& v) {
    Frame& f = frames_.back();
    f.key = v;
    if (!f.keys.insert(f.key).second) {
      const std::string at = frames_path(path_, frames_);
      fail(errc::kBadJson, at, at + " is given twice (duplicate key \"" + f.key + "\"); keep one");
    }
    return dom_.key(v);
  }
  bool end_object() { return close() && dom_.end_object(); }
  bool start_array(std::size_t n) { return open(false) && dom_.start_array(n); }
  bool end_array() { return close() && dom_.end_array(); }

  template <typename Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/, const Exception& ex) {
    // A syntax error (parse_error, with its byte) or a number too large for
    // a double (out_of_range.406, without one).
    if constexpr (std::is_same_v<Exception, json::parse_error>) byte_ = ex.byte;
    error_ = ex.what();
    return false;
  }

  const std::optional<size_t>& byte() const { return byte_; }
  // The parse error's message (nlohmann's what()).
  const std::string& error() const { return error_; }
  // Drops the path frames (before fail(), which may not unwind them: status.h).
  void forget() { frames_ = {}; }

 private:
  // An object or array starts: at most limits::kMaxJsonDepth levels.
  bool open(bool object) {
    if (frames_.size() >= static_cast<size_t>(limits::kMaxJsonDepth)) {
      const std::string at = frames_path(path_, frames_);
      fail(errc::kOutOfRange, at,
           what_ + " nests objects and arrays deeper than " + std::to_string(limits::kMaxJsonDepth) + " levels" +
               (at.empty() ? "" : " (at " + at + ")"));
    }
    frames_.push_back({object, {}, {}, 0});
    return true;
  }
  // An object or array ends: it is one more element of an enclosing array.
  bool close() {
    frames_.pop_back();
    return value();
  }
  // A value was read: the next element of an enclosing array has the next index.
  bool value() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& path_;
  const std::string& what_;
  std::vector<Frame> frames_;
  std::optional<size_t> byte_;
  std::string error_;
};

}  // namespace

void check_input_size(uint64_t bytes, const std::string& path) {
  if (bytes > static_cast<uint64_t>(limits::kMaxInputBytes)) {
    fail(errc::kOutOfRange, path,
         (path.empty() ? std::string("input") : path) + " is " + std::to_string(bytes) + " bytes, more than the " +
             std::to_string(limits::kMaxInputBytes) + "-byte (16 MiB) limit on every input");
  }
}

json parse_json_text(const std::string& text, const std::string& path) {
  const std::string what = path.empty() ? std::string("input") : path;
  check_input_size(text.size(), path);
  json out;
  ReportingDom dom(out, path, what);
  if (json::sax_parse(text, &dom)) return out;
  out = nullptr;  // the part read so far, freed before fail() (which may not unwind it: status.h)
  dom.forget();
  const std::string why = reason(dom.error());
  fail(errc::kBadJson, path,
       what + " is not valid JSON: " + (dom.byte() ? line_column(text, *dom.byte()) + ": " : "") + why);
}

}  // namespace vram

// YAML text -> the JSON tree core's importer reads (config_files.h
// yaml_to_json), under the rules of one imported file (vram/import.h). The
// tree is built from yaml-cpp's parse events, not from its node graph, so an
// alias is counted before it is copied: npm yaml's alias rule (the page's
// reader), the cap on values, duplicate keys, a second document and the
// nesting limit each stop the reading at once with an error naming the file
// and the line. A "billion laughs" file is refused at its fourth level in
// microseconds; through YAML::Load it ran past 2 GB (issue 33).
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "config_files.h"
#include "vram/fields.h"
#include "vram/import.h"
#include "vram/utf8.h"

namespace vram::cli {

namespace {

bool digits(std::string_view s, bool (*is)(char)) { return !s.empty() && std::all_of(s.begin(), s.end(), is); }
bool dec(char c) { return c >= '0' && c <= '9'; }
bool oct(char c) { return c >= '0' && c <= '7'; }
bool hex(char c) { return dec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::string_view unsigned_part(std::string_view s) {
  return !s.empty() && (s[0] == '-' || s[0] == '+') ? s.substr(1) : s;
}

// [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
bool is_float(std::string_view s) {
  s = unsigned_part(s);
  const size_t e = s.find_first_of("eE");
  const std::string_view mantissa = s.substr(0, e);
  const size_t dot = mantissa.find('.');
  const std::string_view whole = mantissa.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view() : mantissa.substr(dot + 1);
  const bool mantissa_ok =
      dot == std::string_view::npos
          ? digits(whole, dec)
          : (whole.empty() ? digits(frac, dec) : digits(whole, dec) && (frac.empty() || digits(frac, dec)));
  return mantissa_ok && (e == std::string_view::npos || digits(unsigned_part(s.substr(e + 1)), dec));
}

bool one_of(std::string_view s, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), s) != words.end();
}

// A number as JSON.parse then JSON.stringify leave it on the page: an
// integral value as an integer, and one that is not finite as the text
// vram/import.h names (".inf", "-.inf", ".nan"), never null.
json number(double d) {
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  if (d == std::floor(d) && std::fabs(d) <= 9007199254740992.0) return static_cast<int64_t>(d);
  return d;
}

// The value of octal (3 bits a digit) or hex (4) digits, rounded to the
// nearest double as JavaScript's parseInt(digits, 8 or 16) does (npm yaml's
// core schema, yaml/dist/schema/core/int.js): the digits become hex text
// read by strtod, which rounds a value past 2^64 instead of throwing.
double radix_value(std::string_view digits_text, int bits_per_digit) {
  std::string bits;
  for (const char c : digits_text) {
    const int d = dec(c) ? c - '0' : (c | 0x20) - 'a' + 10;
    for (int b = bits_per_digit - 1; b >= 0; --b) bits += ((d >> b) & 1) ? '1' : '0';
  }
  bits.insert(0, (4 - bits.size() % 4) % 4, '0');
  std::string text = "0x";
  for (size_t i = 0; i < bits.size(); i += 4) text += "0123456789abcdef"[std::stoi(bits.substr(i, 4), nullptr, 2)];
  return std::strtod(text.c_str(), nullptr);
}

// YAML 1.2.2 §10.3.2 core schema tag resolution (the npm `yaml` package's
// default schema "core", yaml/dist/schema/core).
json resolve_plain(const std::string& s) {
  if (one_of(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (one_of(s, {"true", "True", "TRUE"})) return true;
  if (one_of(s, {"false", "False", "FALSE"})) return false;
  const std::string_view v(s);
  if (v.size() > 2 && v.substr(0, 2) == "0o" && digits(v.substr(2), oct)) {
    return number(radix_value(v.substr(2), 3));
  }
  if (v.size() > 2 && v.substr(0, 2) == "0x" && digits(v.substr(2), hex)) {
    return number(radix_value(v.substr(2), 4));
  }
  if (is_float(v)) return number(std::strtod(s.c_str(), nullptr));  // integers too: [-+]?[0-9]+
  if (one_of(unsigned_part(v), {".inf", ".Inf", ".INF"})) return number(v[0] == '-' ? -INFINITY : INFINITY);
  if (one_of(v, {".nan", ".NaN", ".NAN"})) return number(NAN);
  return s;
}

// One anchored node. count and alias_count are npm yaml's (yaml 2.x
// dist/nodes/toJS.js and Alias.js): count starts at 1 and grows by one per
// alias; alias_count is the node's getAliasCount, computed at its first
// alias: 1 when it holds a plain value, else the largest count x alias_count
// of the anchors aliased inside it (0 for an empty collection).
struct Anchor {
  std::string name;
  bool open = true;
  json value;        // the node's tree, once it is closed
  std::string text;  // a scalar's text (for an alias used as a key)
  bool scalar = false;
  int64_t values = 0;  // values in `value`
  int height = 0;      // levels of nesting `value` opens
  int64_t count = 1;
  int64_t alias_count = 0;
  bool plain = false;                // holds a scalar or null (a key counts)
  std::set<YAML::anchor_t> aliased;  // anchors aliased inside it
};

// A collection being read.
struct Frame {
  json value;
  bool map = false;
  std::optional<std::string> key;  // a map's key waiting for its value
  YAML::anchor_t anchor = YAML::NullAnchor;
  int64_t values_before = 0;
  int height = 1;
};

class TreeBuilder final : public YAML::EventHandler {
 public:
  explicit TreeBuilder(const std::string& file) : file_(file) {}

  json take() { return std::move(root_); }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (documents_++ > 0) {
      fail(errc::kBadJson, file_,
           at(mark) +
               ": more after the end of the first document (a second YAML document, or text after a JSON "
               "value); a config file holds one");
    }
  }
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (key_expected()) not_a_key(mark);
    scalar_leaf(mark, anchor, nullptr, "");
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    // "!" is the tag of a quoted (non-plain) scalar: always a string, as is an explicit !!str.
    const std::string text = valid_utf8(value);
    if (key_expected()) {
      take_key(mark, text);
      mark_plain();
      if (anchor != YAML::NullAnchor) define_scalar(anchor, text, text);
      return;
    }
    const bool quoted = tag == "!" || tag == "tag:yaml.org,2002:str";
    scalar_leaf(mark, anchor, quoted ? json(text) : resolve_plain(text), text);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t id) override;

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor, false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor, true);
  }
  void OnMapEnd() override { close(); }

 private:
  std::string at(const YAML::Mark& mark) const { return file_ + " line " + std::to_string(mark.line + 1); }

  bool key_expected() const { return !frames_.empty() && frames_.back().map && !frames_.back().key; }

  [[noreturn]] void not_a_key(const YAML::Mark& mark) const {
    fail(errc::kBadJson, file_, at(mark) + ": a mapping key must be a scalar");
  }

  void take_key(const YAML::Mark& mark, const std::string& key) {
    Frame& f = frames_.back();
    if (f.value.contains(key)) {
      fail(errc::kBadJson, file_, at(mark) + ": key \"" + key + "\" is given twice in one mapping; keep one");
    }
    f.key = key;
  }

  // Every anchored collection still open holds a plain value (npm yaml's getAliasCount: 1).
  void mark_plain() {
    for (const YAML::anchor_t a : open_anchors_) anchors_[a].plain = true;
  }

  void count_values(const YAML::Mark& mark, int64_t n) {
    values_ += n;
    if (values_ > kMaxImportValues) {
      fail(errc::kOutOfRange, file_,
           at(mark) + ": more than " + std::to_string(kMaxImportValues) +
               " values (aliases expanded), the limit on an imported file");
    }
  }

  void check_depth(const YAML::Mark& mark, int height) const {
    if (static_cast<int>(frames_.size()) + height > limits::kMaxJsonDepth) {
      fail(errc::kOutOfRange, file_,
           at(mark) + ": nested deeper than " + std::to_string(limits::kMaxJsonDepth) +
               " levels (the limit on every input)");
    }
  }

  void define_scalar(YAML::anchor_t id, const json& value, const std::string& text) {
    Anchor& a = anchors_[id];
    a = Anchor{};
    a.name = anchor_name_;
    a.open = false;
    a.value = value;
    a.text = text;
    a.scalar = true;
    a.values = 1;
    a.height = 0;
    a.plain = true;
  }

  void scalar_leaf(const YAML::Mark& mark, YAML::anchor_t anchor, json value, const std::string& text) {
    mark_plain();
    count_values(mark, 1);
    if (anchor != YAML::NullAnchor) define_scalar(anchor, value, text);
    place(std::move(value), 0);
  }

  // A finished value goes into the collection being read, or is the document.
  void place(json value, int height) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& f = frames_.back();
    f.height = std::max(f.height, height + 1);
    if (f.map) {
      f.value[*f.key] = std::move(value);
      f.key.reset();
    } else {
      f.value.push_back(std::move(value));
    }
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor, bool map) {
    if (key_expected()) not_a_key(mark);
    check_depth(mark, 1);
    count_values(mark, 1);
    Frame f;
    f.value = map ? json::object() : json::array();
    f.map = map;
    f.anchor = anchor;
    f.values_before = values_ - 1;
    if (anchor != YAML::NullAnchor) {
      anchors_[anchor] = Anchor{};
      anchors_[anchor].name = anchor_name_;
      open_anchors_.push_back(anchor);
    }
    frames_.push_back(std::move(f));
  }

  void close() {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    if (f.anchor != YAML::NullAnchor) {
      Anchor& a = anchors_[f.anchor];
      a.open = false;
      a.value = f.value;
      a.values = values_ - f.values_before;
      a.height = f.height;
      open_anchors_.pop_back();
    }
    place(std::move(f.value), f.height);
  }

  int64_t alias_count_of(const Anchor& a) const {
    int64_t n = a.plain ? 1 : 0;
    for (const YAML::anchor_t b : a.aliased) {
      const Anchor& inner = anchors_.at(b);
      n = std::max(n, inner.count * inner.alias_count);
    }
    return n;
  }

  const std::string& file_;
  json root_;
  int documents_ = 0;
  int64_t values_ = 0;
  std::string anchor_name_;
  std::vector<Frame> frames_;
  std::map<YAML::anchor_t, Anchor> anchors_;
  std::vector<YAML::anchor_t> open_anchors_;
};

void TreeBuilder::OnAlias(const YAML::Mark& mark, YAML::anchor_t id) {
  Anchor& a = anchors_[id];  // yaml-cpp refuses an alias to an anchor not yet defined
  if (a.open) {
    fail(errc::kBadJson, file_, at(mark) + ": alias *" + a.name + " is inside its own anchor (a recursive structure)");
  }
  for (const YAML::anchor_t o : open_anchors_) anchors_[o].aliased.insert(id);
  a.count += 1;
  if (a.alias_count == 0) a.alias_count = alias_count_of(a);
  if (a.count * a.alias_count > kMaxImportAliases) {
    fail(errc::kOutOfRange, file_,
         at(mark) + ": alias *" + a.name + " is expanded too often (its uses x the aliases inside it exceed " +
             std::to_string(kMaxImportAliases) +
             ", npm yaml's \"Excessive alias count\" rule): refused as a resource exhaustion attack");
  }
  if (key_expected()) {
    if (!a.scalar || a.value.is_null()) not_a_key(mark);
    take_key(mark, a.text);
    return;
  }
  check_depth(mark, a.height);
  count_values(mark, a.values);
  place(a.value, a.height);
}

}  // namespace

json yaml_to_json(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  TreeBuilder tree(file);
  try {
    YAML::Parser parser(in);
    if (!parser.HandleNextDocument(tree)) return nullptr;
    parser.HandleNextDocument(tree);  // a second document fails in OnDocumentStart
  } catch (const YAML::Exception& e) {
    fail(errc::kBadJson, file,
         file + " line " + std::to_string(e.mark.line + 1) + ": not valid YAML or JSON (" + e.msg + ")");
  }
  return tree.take();
}

}  // namespace vram::cli

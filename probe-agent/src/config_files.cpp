#include "config_files.h"

#include <cmath>
#include <iterator>
#include <set>
#include <vector>

#include "cli_input.h"
#include "vram/fields.h"
#include "vram/import.h"
#include "vram/utf8.h"

namespace vram::cli {

namespace {

// A forward iterator over the text that counts the newlines it has passed,
// so a parse event knows its line: nlohmann/json's lexer reads one character
// at a time, and a key's event comes right after its closing quote
// (detail/input/parser.hpp sax_parse_internal).
class LineCounting {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  LineCounting(const char* p, int64_t* line) : p_(p), line_(line) {}
  reference operator*() const { return *p_; }
  LineCounting& operator++() {
    if (*p_ == '\n') ++*line_;
    ++p_;
    return *this;
  }
  LineCounting operator++(int) {
    LineCounting old = *this;
    ++*this;
    return old;
  }
  bool operator==(const LineCounting& o) const { return p_ == o.p_; }
  bool operator!=(const LineCounting& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  int64_t* line_;
};

// nlohmann/json's DOM builder under two rules of one imported file
// (vram/import.h): a key given twice and more than limits::kMaxJsonDepth
// levels fail as they are read, naming the file and the line. (A JSON file
// holds no aliases: its values are bounded by its size, and import_files
// counts them.) A syntax error only stops the parse: the text is then read as
// YAML (the page's order), which reports it or reads it.
class ImportDom : public nlohmann::detail::json_sax_dom_parser<json> {
  using Dom = nlohmann::detail::json_sax_dom_parser<json>;

 public:
  ImportDom(json& root, const std::string& file, const int64_t& line) : Dom(root, false), file_(file), line_(line) {}

  bool start_object(std::size_t n) { return open() && Dom::start_object(n); }
  bool start_array(std::size_t n) { return open() && Dom::start_array(n); }
  bool end_object() { return close() && Dom::end_object(); }
  bool end_array() { return close() && Dom::end_array(); }
  bool key(json::string_t& v) {
    if (!keys_.back().insert(v).second) {
      fail(errc::kBadJson, file_,
           file_ + " line " + std::to_string(line_) + ": key \"" + v + "\" is given twice in one mapping; keep one");
    }
    return Dom::key(v);
  }
  template <typename Exception>
  bool parse_error(std::size_t, const std::string&, const Exception&) {
    return false;
  }

 private:
  bool open() {
    if (keys_.size() >= static_cast<size_t>(limits::kMaxJsonDepth)) {
      fail(errc::kOutOfRange, file_,
           file_ + " line " + std::to_string(line_) + ": nested deeper than " + std::to_string(limits::kMaxJsonDepth) +
               " levels (the limit on every input)");
    }
    keys_.emplace_back();  // an array's set stays empty
    return true;
  }
  bool close() {
    keys_.pop_back();
    return true;
  }

  const std::string& file_;
  const int64_t& line_;
  std::vector<std::set<std::string>> keys_;
};

// The text as JSON under ImportDom's rules, or nullopt when it is not JSON.
std::optional<json> json_tree(const std::string& text, const std::string& file) {
  int64_t line = 1;
  json out;
  ImportDom dom(out, file, line);
  const LineCounting first(text.data(), &line);
  const LineCounting last(text.data() + text.size(), &line);
  if (!json::sax_parse(first, last, &dom)) return std::nullopt;
  return out;
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

json config_tree(const std::string& raw, const std::string& file) {
  // The page reads a dropped file with File.text(), which decodes UTF-8 and
  // replaces ill-formed bytes with U+FFFD; so does this, and no string in the
  // tree is one nlohmann::json cannot dump.
  const std::string text = valid_utf8(raw);
  // JSON first (the page's JSON.parse, then YAML), under the same rules: a
  // document that breaks one (a duplicate key, too many values) is refused
  // as it is read; a syntax error means "not JSON" and the text is read as
  // YAML (trailing text after a JSON value is a second document there).
  if (auto j = json_tree(text, file)) {
    normalize_numbers(*j);
    return *j;
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

std::string yaml_tree_json(const std::string& text) {
  try {
    return json{{"tree", yaml_to_json(valid_utf8(text), "input")}}.dump();
  } catch (const Failure& f) {
    return error_json(f.error()).dump();
  } catch (const std::exception& e) {
    return error_json({errc::kInternal, std::string("yaml failed: ") + e.what(), ""}).dump();
  }
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

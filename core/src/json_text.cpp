#include "json_text.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace vram {

namespace {

// Whether nlohmann/json's serializer copies the byte as it is: printable
// ASCII (0x7F included) other than '"' and '\\' (serializer.hpp dump_escaped).
bool plain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void value(const json& v, size_t indent) {
    switch (v.type()) {
      case json::value_t::object:
        object(v.get_ref<const json::object_t&>(), indent);
        return;
      case json::value_t::array:
        array(v.get_ref<const json::array_t&>(), indent);
        return;
      case json::value_t::string:
        string(v.get_ref<const std::string&>());
        return;
      case json::value_t::boolean:
        out_ += v.get<bool>() ? "true" : "false";
        return;
      case json::value_t::number_integer:
        integer(v.get<json::number_integer_t>());
        return;
      case json::value_t::number_unsigned:
        integer(v.get<json::number_unsigned_t>());
        return;
      case json::value_t::number_float:
        number(v.get<double>());
        return;
      case json::value_t::null:
        out_ += "null";
        return;
      default:  // binary and discarded: none in an answer; as nlohmann writes them
        out_ += v.dump(2, ' ', false, json::error_handler_t::strict);
        return;
    }
  }

 private:
  void newline(size_t indent) {
    out_ += '\n';
    out_.append(indent, ' ');
  }

  void object(const json::object_t& o, size_t indent) {
    if (o.empty()) {
      out_ += "{}";
      return;
    }
    out_ += '{';
    const char* sep = "";
    for (const auto& [key, item] : o) {
      out_ += sep;
      newline(indent + 2);
      string(key);
      out_ += ": ";
      value(item, indent + 2);
      sep = ",";
    }
    newline(indent);
    out_ += '}';
  }

  void array(const json::array_t& a, size_t indent) {
    if (a.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    const char* sep = "";
    for (const json& item : a) {
      out_ += sep;
      newline(indent + 2);
      value(item, indent + 2);
      sep = ",";
    }
    newline(indent);
    out_ += ']';
  }

  void string(const std::string& s) {
    if (std::all_of(s.begin(), s.end(), [](char c) { return plain(static_cast<unsigned char>(c)); })) {
      out_ += '"';
      out_ += s;
      out_ += '"';
      return;
    }
    if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
      out_ += json(s).dump();  // nlohmann/json's UTF-8 check and escapes
      return;
    }
    out_ += '"';
    for (const char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (plain(c)) {
        out_ += ch;
      } else {
        escape(c);
      }
    }
    out_ += '"';
  }

  // serializer.hpp dump_escaped: the short escapes, else \u00XX in lower-case hex.
  void escape(unsigned char c) {
    switch (c) {
      case '\b':
        out_ += "\\b";
        return;
      case '\t':
        out_ += "\\t";
        return;
      case '\n':
        out_ += "\\n";
        return;
      case '\f':
        out_ += "\\f";
        return;
      case '\r':
        out_ += "\\r";
        return;
      case '"':
        out_ += "\\\"";
        return;
      case '\\':
        out_ += "\\\\";
        return;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char u[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out_.append(u, sizeof u);
      }
    }
  }

  template <typename Int>
  void integer(Int x) {
    std::array<char, 24> buf{};
    const char* end = std::to_chars(buf.data(), buf.data() + buf.size(), x).ptr;
    out_.append(buf.data(), static_cast<size_t>(end - buf.data()));
  }

  // serializer.hpp dump_float: null unless finite, else its Grisu2 digits.
  void number(double x) {
    if (!std::isfinite(x)) {
      out_ += "null";
      return;
    }
    std::array<char, 64> buf{};
    const char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), x);
    out_.append(buf.data(), static_cast<size_t>(end - buf.data()));
  }

  std::string& out_;
};

}  // namespace

std::string pretty_text(const json& v) {
  std::string out;
  Writer(out).value(v, 0);
  return out;
}

}  // namespace vram

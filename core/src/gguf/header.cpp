// The GGUF header reader (vram/gguf.h): a bounded parser of the layout
// ggml/src/gguf.cpp gguf_init_from_reader reads (ggml-org/ggml d99724f2),
// with the same checks, reading only the header through a Source. Every
// count is checked against the bytes left before anything is allocated, so a
// hostile file gets a named error, never a huge allocation, a crash or a hang.
#include <cmath>
#include <cstring>
#include <set>

#include "guarded.h"
#include "vram/gguf.h"

namespace vram::gguf {

namespace {

using header_limits::kMaxHeaderBytes;

// gguf.cpp GGUF_DEFAULT_ALIGNMENT and gguf.h GGUF_VERSION.
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kVersion = 3;
// gguf.h enum gguf_type.
enum ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
constexpr int64_t kMaxExactInt = int64_t{1} << 53;  // JSON numbers both front ends hold exactly
constexpr size_t kChunk = size_t{1} << 20;

size_t value_size(uint32_t type) {
  switch (type) {
    case kU8:
    case kI8:
    case kBool:
      return 1;
    case kU16:
    case kI16:
      return 2;
    case kU32:
    case kI32:
    case kF32:
      return 4;
    case kU64:
    case kI64:
    case kF64:
      return 8;
    default:
      return 0;
  }
}

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    const bool overlong = (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

// Reads the header front to back, a chunk at a time, never past the file or
// kMaxHeaderBytes.
class Cursor {
 public:
  Cursor(Source& src, std::string file) : src_(src), file_(std::move(file)) {
    limit_ = std::min<uint64_t>(src.size(), kMaxHeaderBytes);
  }

  [[noreturn]] void bad(const std::string& what) const {
    fail(errc::kBadJson, "model.gguf", file_ + ": " + what + " (at byte " + std::to_string(pos_) + ")");
  }
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return limit_ - pos_; }
  const std::string& file() const { return file_; }

  void bytes(void* dst, size_t n, const char* what) {
    if (n > left()) {
      if (pos_ + n > src_.size()) bad(std::string("the file ends inside ") + what + ": not a whole GGUF header");
      bad(std::string("the header is longer than ") + std::to_string(kMaxHeaderBytes) +
          " bytes (the most @huggingface/gguf reads) at " + what);
    }
    auto* out = static_cast<unsigned char*>(dst);
    while (n > 0) {
      if (pos_ < buf_start_ || pos_ >= buf_start_ + buf_.size()) refill();
      const size_t at = static_cast<size_t>(pos_ - buf_start_);
      const size_t take = std::min(n, buf_.size() - at);
      std::memcpy(out, buf_.data() + at, take);
      out += take;
      n -= take;
      pos_ += take;
    }
  }
  void skip(uint64_t n, const char* what) {
    if (n > left()) bad(std::string("the file ends inside ") + what);
    pos_ += n;
  }
  template <typename T>
  T get(const char* what) {
    T v{};
    bytes(&v, sizeof v, what);  // GGUF is little-endian, as every host the CLI builds for
    return v;
  }
  std::string string(const char* what) {
    const auto n = get<uint64_t>(what);
    if (n > left()) bad(std::string(what) + " claims " + std::to_string(n) + " bytes, more than the file holds");
    std::string s(static_cast<size_t>(n), '\0');
    if (n > 0) bytes(s.data(), s.size(), what);
    return s;
  }

 private:
  void refill() {
    buf_start_ = pos_;
    buf_.resize(static_cast<size_t>(std::min<uint64_t>(kChunk, limit_ - pos_)));
    if (!src_.read(buf_start_, buf_.data(), buf_.size())) bad("the file could not be read");
  }

  Source& src_;
  std::string file_;
  uint64_t limit_ = 0;
  uint64_t pos_ = 0;
  uint64_t buf_start_ = 0;
  std::vector<unsigned char> buf_;
};

// One scalar of `type` as JSON; null when the kept-metadata rule drops it.
json scalar(Cursor& c, uint32_t type, const std::string& key) {
  switch (type) {
    case kU8:
      return c.get<uint8_t>(key.c_str());
    case kI8:
      return c.get<int8_t>(key.c_str());
    case kU16:
      return c.get<uint16_t>(key.c_str());
    case kI16:
      return c.get<int16_t>(key.c_str());
    case kU32:
      return c.get<uint32_t>(key.c_str());
    case kI32:
      return c.get<int32_t>(key.c_str());
    case kBool:
      return c.get<uint8_t>(key.c_str()) != 0;
    case kU64: {
      const auto v = c.get<uint64_t>(key.c_str());
      return v <= static_cast<uint64_t>(kMaxExactInt) ? json(v) : json();
    }
    case kI64: {
      const auto v = c.get<int64_t>(key.c_str());
      return v <= kMaxExactInt && v >= -kMaxExactInt ? json(v) : json();
    }
    case kF32: {
      const auto v = static_cast<double>(c.get<float>(key.c_str()));
      return std::isfinite(v) ? json(v) : json();
    }
    case kF64: {
      const auto v = c.get<double>(key.c_str());
      return std::isfinite(v) ? json(v) : json();
    }
    case kString: {
      std::string s = c.string(key.c_str());
      return s.size() <= kMaxKeptString && valid_utf8(s) ? json(std::move(s)) : json();
    }
    default:
      c.bad("metadata key \"" + key + "\" has value type " + std::to_string(type) + ", not a GGUF type (0..12)");
  }
}

// An array value: kept (numbers and bools, up to kMaxKeptArray) or read
// through and dropped (strings, longer arrays).
json array(Cursor& c, const std::string& key) {
  const auto type = c.get<uint32_t>(key.c_str());
  const auto n = c.get<uint64_t>(key.c_str());
  if (type == kArray) c.bad("metadata key \"" + key + "\" is an array of arrays, which ggml does not read");
  if (type == kString) {
    if (n > c.left() / 8) c.bad("metadata key \"" + key + "\" claims " + std::to_string(n) + " strings");
    for (uint64_t i = 0; i < n; ++i) c.skip(c.get<uint64_t>(key.c_str()), key.c_str());
    return json();
  }
  const size_t size = value_size(type);
  if (size == 0) c.bad("metadata key \"" + key + "\" has element type " + std::to_string(type));
  if (n > c.left() / size) c.bad("metadata key \"" + key + "\" claims " + std::to_string(n) + " elements");
  if (n > kMaxKeptArray) {
    c.skip(n * size, key.c_str());
    return json();
  }
  json out = json::array();
  bool keep = true;
  for (uint64_t i = 0; i < n; ++i) {
    json v = scalar(c, type, key);
    keep = keep && !v.is_null();
    if (keep) out.push_back(std::move(v));
  }
  return keep ? out : json();
}

json read_metadata(Cursor& c, uint64_t n_kv, uint64_t& alignment) {
  json meta = json::object();
  std::set<std::string> keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.string("a metadata key");
    if (key.empty()) c.bad("metadata key " + std::to_string(i) + " is empty");
    if (!valid_utf8(key)) c.bad("metadata key " + std::to_string(i) + " is not UTF-8");
    if (!keys.insert(key).second) c.bad("metadata key \"" + key + "\" appears twice");
    const auto type = c.get<uint32_t>(key.c_str());
    if (key == "general.alignment") {
      if (type != kU32) c.bad("general.alignment must be a uint32 (type 4), not type " + std::to_string(type));
      alignment = c.get<uint32_t>(key.c_str());
      if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        c.bad("general.alignment " + std::to_string(alignment) + " is not a power of two");
      }
      meta[key] = alignment;
      continue;
    }
    json v = type == kArray ? array(c, key) : scalar(c, type, key);
    if (!v.is_null() && key.rfind("tokenizer.", 0) != 0) meta[key] = std::move(v);
  }
  return meta;
}

struct Info {
  json tensor;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

Info read_tensor(Cursor& c, std::set<std::string>& names) {
  std::string name = c.string("a tensor name");
  if (name.size() > header_limits::kMaxNameLength) {
    c.bad("tensor name \"" + name.substr(0, 64) + "...\" is longer than 63 bytes (ggml's GGML_MAX_NAME)");
  }
  if (!valid_utf8(name)) c.bad("a tensor name is not UTF-8");
  if (!names.insert(name).second) c.bad("tensor \"" + name + "\" appears twice");
  const auto dims = c.get<uint32_t>(name.c_str());
  if (dims > header_limits::kMaxDims) {
    c.bad("tensor \"" + name + "\" has " + std::to_string(dims) + " dimensions; ggml allows at most 4");
  }
  json shape = json::array();
  int64_t elements = 1;
  bool overflow = false;
  int64_t ne0 = 1;
  for (uint32_t d = 0; d < dims; ++d) {
    const auto ne = c.get<int64_t>(name.c_str());
    if (ne < 0) c.bad("tensor \"" + name + "\" dimension " + std::to_string(d) + " is negative");
    if (d == 0) ne0 = ne;
    overflow = overflow || (ne > 0 && elements > INT64_MAX / ne);
    if (!overflow) elements *= ne;
    shape.push_back(ne);
  }
  if (overflow) c.bad("tensor \"" + name + "\" has more elements than a 64-bit count holds");
  const auto id = c.get<uint32_t>(name.c_str());
  const GgmlType* t = ggml_type(id);
  if (t == nullptr) c.bad("tensor \"" + name + "\" has ggml type " + std::to_string(id) + ", not a type ggml reads");
  if (ne0 % t->block != 0) {
    c.bad("tensor \"" + name + "\" rows of " + std::to_string(ne0) + " elements are not whole " + t->name +
          " blocks of " + std::to_string(t->block));
  }
  const int64_t blocks = elements / t->block;
  if (blocks > INT64_MAX / t->bytes) c.bad("tensor \"" + name + "\" is larger than a 64-bit size");
  const auto offset = c.get<uint64_t>(name.c_str());
  Info info;
  info.offset = offset;
  info.bytes = static_cast<uint64_t>(blocks * t->bytes);
  info.tensor = {{"name", std::move(name)}, {"shape", std::move(shape)}, {"type", id}, {"offset", offset}};
  return info;
}

uint64_t pad(uint64_t x, uint64_t n) { return (x + n - 1) / n * n; }

json parse(Cursor& c) {
  char magic[4] = {};
  c.bytes(magic, 4, "the magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) c.bad("not a GGUF file (it does not start with \"GGUF\")");
  const auto version = c.get<uint32_t>("the version");
  if ((version & 0xFFFF) == 0 && version != 0) c.bad("version " + std::to_string(version) + ": a big-endian GGUF");
  if (version == 1) c.bad("GGUF version 1, which ggml no longer reads");
  if (version == 0 || version > kVersion) c.bad("GGUF version " + std::to_string(version) + " (ggml reads 2 and 3)");
  const auto n_tensors = c.get<uint64_t>("the tensor count");
  const auto n_kv = c.get<uint64_t>("the metadata count");
  // A key/value takes at least 13 bytes, a tensor info at least 24.
  if (n_kv > c.left() / 13) c.bad("the header claims " + std::to_string(n_kv) + " metadata keys");
  if (n_tensors > c.left() / 24) c.bad("the header claims " + std::to_string(n_tensors) + " tensors");
  uint64_t alignment = kDefaultAlignment;
  json meta = read_metadata(c, n_kv, alignment);
  json tensors = json::array();
  std::set<std::string> names;
  uint64_t expected = 0;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Info info = read_tensor(c, names);
    if (info.offset != expected) {
      c.bad("tensor \"" + info.tensor["name"].get<std::string>() + "\" is at offset " + std::to_string(info.offset) +
            ", but the tensors before it end at " + std::to_string(expected));
    }
    if (info.bytes > UINT64_MAX / 2 - expected) c.bad("the tensors' sizes add past 2^63 bytes");
    expected += pad(info.bytes, alignment);
    tensors.push_back(std::move(info.tensor));
  }
  const uint64_t data = n_tensors > 0 ? pad(c.pos(), alignment) : c.pos();
  if (n_tensors > 0 && (data > UINT64_MAX - expected)) c.bad("the tensor data ends past 2^64 bytes");
  return {
      {"file", c.file()},    {"version", version},    {"metadata", std::move(meta)}, {"tensors", std::move(tensors)},
      {"data_offset", data}, {"data_bytes", expected}};
}

class BufferSource : public Source {
 public:
  explicit BufferSource(const std::string& b) : b_(b) {}
  uint64_t size() const override { return b_.size(); }
  bool read(uint64_t offset, void* dst, size_t n) override {
    if (offset > b_.size() || n > b_.size() - offset) return false;
    std::memcpy(dst, b_.data() + offset, n);
    return true;
  }

 private:
  const std::string& b_;
};

}  // namespace

Result<json> read_header(Source& src, const std::string& file) {
  return attempt<json>([&]() -> json {
    Cursor c(src, file);
    json out = parse(c);
    const uint64_t end = out["data_offset"].get<uint64_t>() + out["data_bytes"].get<uint64_t>();
    if (end > src.size()) {
      fail(errc::kBadJson, "model.gguf",
           file + ": the header's tensors end at byte " + std::to_string(end) + " but the file has " +
               std::to_string(src.size()) + " bytes (a truncated download?)");
    }
    out.erase("data_offset");
    out.erase("data_bytes");
    return out;
  });
}

std::string header_json(const std::string& bytes) {
  return guarded([&]() -> std::string {
    BufferSource src(bytes);
    auto r = read_header(src, "input.gguf");
    return r.ok() ? r.value().dump() : error_json(r.error()).dump();
  });
}

}  // namespace vram::gguf

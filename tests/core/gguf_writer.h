// Small real GGUF files for the tests: the header layout of ggml/src/gguf.cpp
// (gguf_write_to_buf), written byte by byte, with an optional data section
// of zeros. site/tests/gguf-writer.mjs writes the same files for the page's
// tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace vram::test {

class GgufWriter {
 public:
  using Array = std::vector<std::variant<int64_t, double, bool>>;

  GgufWriter& u32(const std::string& key, uint32_t v) {
    begin(key, 4);
    put(v);
    return *this;
  }
  GgufWriter& u64(const std::string& key, uint64_t v) {
    begin(key, 10);
    put(v);
    return *this;
  }
  GgufWriter& i32(const std::string& key, int32_t v) {
    begin(key, 5);
    put(v);
    return *this;
  }
  GgufWriter& f32(const std::string& key, float v) {
    begin(key, 6);
    put(v);
    return *this;
  }
  GgufWriter& boolean(const std::string& key, bool v) {
    begin(key, 7);
    put(static_cast<uint8_t>(v ? 1 : 0));
    return *this;
  }
  GgufWriter& str(const std::string& key, const std::string& v) {
    begin(key, 8);
    put_string(v);
    return *this;
  }
  // An array of int32 values (ggml's per-layer head counts).
  GgufWriter& i32s(const std::string& key, const std::vector<int32_t>& v) {
    begin(key, 9);
    put(uint32_t{5});
    put(static_cast<uint64_t>(v.size()));
    for (auto x : v) put(x);
    return *this;
  }
  GgufWriter& strs(const std::string& key, const std::vector<std::string>& v) {
    begin(key, 9);
    put(uint32_t{8});
    put(static_cast<uint64_t>(v.size()));
    for (const auto& x : v) put_string(x);
    return *this;
  }
  // A tensor of `type` (ggml_type id) with ggml's dimensions (ne0 first) and
  // `bytes` bytes of data.
  GgufWriter& tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t bytes) {
    tensors_.push_back({name, std::move(ne), type, bytes});
    return *this;
  }

  // The header alone (`with_data` false) or the whole file with zero data.
  std::string bytes(bool with_data = false, uint32_t version = 3, uint64_t alignment = 32) const {
    std::string out = "GGUF";
    append(out, version);
    append(out, static_cast<uint64_t>(tensors_.size()));
    append(out, static_cast<uint64_t>(n_kv_));
    out += kv_;
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      append(out, static_cast<uint64_t>(t.name.size()));
      out += t.name;
      append(out, static_cast<uint32_t>(t.ne.size()));
      for (auto n : t.ne) append(out, n);
      append(out, t.type);
      append(out, offset);
      offset += (t.bytes + alignment - 1) / alignment * alignment;
    }
    if (!with_data) return out;
    out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
    out.resize(out.size() + offset, '\0');
    return out;
  }
  // Bytes of the header plus the padded data: the file size bytes(true) has.
  uint64_t file_size(uint64_t alignment = 32) const {
    const std::string head = bytes(false, 3, alignment);
    uint64_t data = 0;
    for (const auto& t : tensors_) data += (t.bytes + alignment - 1) / alignment * alignment;
    return (head.size() + alignment - 1) / alignment * alignment + data;
  }

 private:
  struct T {
    std::string name;
    std::vector<int64_t> ne;
    uint32_t type;
    uint64_t bytes;
  };
  template <typename V>
  static void append(std::string& out, V v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    out.append(b, sizeof v);
  }
  template <typename V>
  void put(V v) {
    append(kv_, v);
  }
  void put_string(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    kv_ += s;
  }
  void begin(const std::string& key, uint32_t type) {
    ++n_kv_;
    put_string(key);
    put(type);
  }

  std::string kv_;
  size_t n_kv_ = 0;
  std::vector<T> tensors_;
};

}  // namespace vram::test

#include "gguf_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "vram/gguf.h"

namespace vram::cli {

namespace fs = std::filesystem;

namespace {

class FileSource : public gguf::Source {
 public:
  FileSource(const std::string& path, uint64_t size) : in_(path, std::ios::binary), size_(size) {}
  bool open() const { return static_cast<bool>(in_); }
  uint64_t size() const override { return size_; }
  bool read(uint64_t offset, void* dst, size_t n) override {
    if (offset > size_ || n > size_ - offset) return false;
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    return static_cast<size_t>(in_.gcount()) == n;
  }

 private:
  std::ifstream in_;
  uint64_t size_;
};

Result<json> read_one(const fs::path& p, const std::string& field) {
  auto fail_with = [&](const std::string& what) -> Result<json> {
    return Error{errc::kBadJson, p.string() + ": " + what, field};
  };
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) return fail_with("cannot read (" + ec.message() + ")");
  FileSource src(p.string(), size);
  if (!src.open()) return fail_with("cannot open");
  auto r = gguf::read_header(src, p.filename().string());
  if (!r.ok()) return Error{r.error().code, r.error().message, field};
  return r;
}

// "name-00001-of-00003.gguf" -> ("name", 3), else ("", 0) (gguf-split's
// naming, llama.cpp llama_split_prefix).
std::pair<std::string, int> split_of(const std::string& file) {
  const size_t of = file.rfind("-of-");
  if (of == std::string::npos || of < 6 || file.size() != of + 4 + 5 + 5 || file.compare(file.size() - 5, 5, ".gguf"))
    return {"", 0};
  int count = 0, no = 0;
  if (std::sscanf(file.c_str() + of + 4, "%5d", &count) != 1 || std::sscanf(file.c_str() + of - 5, "%5d", &no) != 1) {
    return {"", 0};
  }
  return {file.substr(0, of - 6), no == 1 ? count : 0};
}

}  // namespace

Result<json> read_gguf_file(const std::string& path, const std::string& field) {
  const fs::path p(path);
  auto first = read_one(p, field);
  if (!first.ok()) return first;
  const auto [prefix, count] = split_of(p.filename().string());
  if (count <= 1) return first;
  json out = std::move(first.value());
  out["file"] = p.filename().string();
  for (auto& t : out["tensors"]) t["shard"] = 0;
  for (int i = 2; i <= count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "-%05d-of-%05d.gguf", i, count);
    auto shard = read_one(p.parent_path() / (prefix + name), field);
    if (!shard.ok()) return shard;
    for (auto& t : shard.value()["tensors"]) {
      t["shard"] = i - 1;
      out["tensors"].push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace vram::cli

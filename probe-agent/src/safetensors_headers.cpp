#include "safetensors_headers.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <vector>

#include "vram/checkpoint.h"

namespace vram::cli {

namespace fs = std::filesystem;

namespace {

Error file_error(const std::string& file, const std::string& what) {
  return Error{errc::kBadJson, file + ": " + what, "model.safetensors"};
}

// An index.json is a few MB at most (DeepSeek-V3's is 9 MB): 64 MB is ample.
constexpr std::uintmax_t kMaxIndexBytes = 64u << 20;

}  // namespace

Result<json> read_safetensors_header(const std::string& file) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec) return file_error(file, "cannot read (" + ec.message() + ")");
  if (size < 8) return file_error(file, "too short for a safetensors header (" + std::to_string(size) + " bytes)");
  std::ifstream in(file, std::ios::binary);
  if (!in) return file_error(file, "cannot open");
  std::array<unsigned char, 8> len_bytes{};
  in.read(reinterpret_cast<char*>(len_bytes.data()), 8);
  if (!in) return file_error(file, "cannot read the header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[static_cast<size_t>(i)];  // little-endian
  if (n > static_cast<std::uint64_t>(checkpoint_limits::kMaxHeaderBytes)) {
    return file_error(file, "header length " + std::to_string(n) +
                                " exceeds the 100,000,000-byte limit (not a "
                                "safetensors file?)");
  }
  if (n + 8 > size) {
    return file_error(file, "header length " + std::to_string(n) + " runs past the end of the " + std::to_string(size) +
                                "-byte file");
  }
  std::string text(static_cast<size_t>(n), '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in) return file_error(file, "cannot read the " + std::to_string(n) + "-byte header");
  json header = json::parse(text, nullptr, false);
  if (header.is_discarded() || !header.is_object()) return file_error(file, "the header is not a JSON object");
  const std::uint64_t data = size - 8 - n;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    if (!t.is_object() || !t.contains("dtype") || !t["dtype"].is_string() || !t.contains("shape") ||
        !t["shape"].is_array()) {
      return file_error(file, "tensor " + name + " has no dtype and shape");
    }
    const int bits = dtype_bits(t["dtype"].get<std::string>());
    if (bits == 0) return file_error(file, "tensor " + name + " has an unknown dtype " + t["dtype"].dump());
    long double numel = 1;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_unsigned()) return file_error(file, "tensor " + name + " has a bad shape " + t["shape"].dump());
      numel *= static_cast<long double>(d.get<std::uint64_t>());
    }
    if (t.contains("data_offsets")) {
      const json& o = t["data_offsets"];
      if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned() ||
          o[1].get<std::uint64_t>() < o[0].get<std::uint64_t>() || o[1].get<std::uint64_t>() > data) {
        return file_error(file, "tensor " + name + " has data_offsets " + o.dump() + " outside the " +
                                    std::to_string(data) + "-byte data section");
      }
      const long double want = (numel * bits + 7) / 8;
      const long double have = static_cast<long double>(o[1].get<std::uint64_t>() - o[0].get<std::uint64_t>());
      if (static_cast<std::uint64_t>(want) != static_cast<std::uint64_t>(have)) {
        return file_error(file, "tensor " + name + " spans " + std::to_string(static_cast<std::uint64_t>(have)) +
                                    " bytes but its dtype and shape need " +
                                    std::to_string(static_cast<std::uint64_t>(want)));
      }
    }
  }
  return header;
}

Result<json> read_safetensors_inventory(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (!fs::exists(p, ec)) return file_error(path, "no such file or directory");
  std::vector<fs::path> shards;
  json inventory = {{"tensors", json::array()}};
  json weight_map;
  fs::path index;
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "model.safetensors.index.json")) {
      index = p / "model.safetensors.index.json";
    } else {
      for (const auto& e : fs::directory_iterator(p, ec)) {
        if (e.path().extension() == ".safetensors") shards.push_back(e.path());
      }
      std::sort(shards.begin(), shards.end());
      if (shards.empty()) return file_error(path, "no model.safetensors.index.json and no *.safetensors files");
    }
  } else if (p.extension() == ".json") {
    index = p;
  } else {
    shards.push_back(p);
  }
  if (!index.empty()) {
    const std::uintmax_t size = fs::file_size(index, ec);
    if (ec) return file_error(index.string(), "cannot read (" + ec.message() + ")");
    if (size > kMaxIndexBytes) return file_error(index.string(), "larger than 64 MB: not a safetensors index");
    std::ifstream in(index, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    json idx = json::parse(ss.str(), nullptr, false);
    if (idx.is_discarded() || !idx.is_object()) return file_error(index.string(), "not a JSON object");
    if (!idx.contains("weight_map") || !idx["weight_map"].is_object()) {
      return file_error(index.string(), "has no weight_map object (not a model.safetensors.index.json)");
    }
    weight_map = idx["weight_map"];
    std::set<std::string> files;
    for (const auto& [_, f] : weight_map.items()) {
      if (!f.is_string()) return file_error(index.string(), "weight_map values must be file names");
      const std::string name = f.get<std::string>();
      if (name.find("..") != std::string::npos || fs::path(name).is_absolute()) {
        return file_error(index.string(), "weight_map names a file outside its directory: " + name);
      }
      files.insert(name);
    }
    for (const auto& f : files) shards.push_back(index.parent_path() / f);
    if (idx.contains("metadata") && idx["metadata"].is_object()) {
      json meta = json::object();
      for (const char* k : {"total_size", "total_parameters"}) {
        if (idx["metadata"].contains(k) && idx["metadata"][k].is_number_unsigned()) meta[k] = idx["metadata"][k];
      }
      if (!meta.empty()) inventory["metadata"] = meta;
    }
  }
  std::set<std::string> found;
  for (const auto& shard : shards) {
    auto header = read_safetensors_header(shard.string());
    if (!header.ok()) return header.error();
    for (const auto& [name, t] : header.value().items()) {
      if (name == "__metadata__") continue;
      if (!weight_map.is_null()) {
        // The index says which shard holds each tensor: take it from there only.
        auto it = weight_map.find(name);
        if (it == weight_map.end() || it->get<std::string>() != shard.filename().string()) continue;
      }
      if (!found.insert(name).second) {
        return file_error(shard.string(), "tensor " + name + " is also in another shard");
      }
      inventory["tensors"].push_back(
          {{"name", name}, {"dtype", t["dtype"]}, {"shape", t["shape"]}, {"shard", shard.filename().string()}});
    }
  }
  if (!weight_map.is_null()) {
    for (const auto& [name, f] : weight_map.items()) {
      if (!found.count(name)) {
        return file_error((index.parent_path() / f.get<std::string>()).string(),
                          "does not hold tensor " + name + " that the index lists");
      }
    }
  }
  return inventory;
}

}  // namespace vram::cli

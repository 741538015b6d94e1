// vram-probe params / estimate --safetensors: real safetensors files written
// here (8-byte little-endian header length, JSON header, zero-filled or
// sparse data), read back through the built binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "probe/probe_run.h"
#include "test_paths.h"

#if defined(VRAM_PROBE_BIN)

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct T {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

int64_t elem_bytes(const std::string& d) { return d == "F32" || d == "I32" ? 4 : d == "U8" ? 1 : 2; }

// Writes a .safetensors file: the header lists the tensors back to back; the
// data section is a sparse hole of the right size (resize_file), so a
// many-GiB tensor costs no disk and a reader that touched it would be slow.
void write_safetensors(const fs::path& file, const std::vector<T>& tensors, std::string header_override = "") {
  json header = json::object();
  int64_t offset = 0;
  for (const auto& t : tensors) {
    int64_t n = elem_bytes(t.dtype);
    for (int64_t d : t.shape) n *= d;
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string text = header_override.empty() ? header.dump() : header_override;
  while (text.size() % 8 != 0) text += ' ';
  std::ofstream out(file, std::ios::binary);
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
  out << text;
  out.close();
  fs::resize_file(file, 8 + text.size() + static_cast<uint64_t>(offset));
}

// A small Llama: hidden 64, 2 layers, 4 heads of 16 (2 KV heads), MLP 128, vocab 256.
constexpr int64_t H = 64, I = 128, V = 256, KV = 32, L = 2;

std::vector<T> layer(int64_t l) {
  const std::string p = "model.layers." + std::to_string(l) + ".";
  return {{p + "self_attn.q_proj.weight", "BF16", {H, H}},     {p + "self_attn.k_proj.weight", "BF16", {KV, H}},
          {p + "self_attn.v_proj.weight", "BF16", {KV, H}},    {p + "self_attn.o_proj.weight", "BF16", {H, H}},
          {p + "mlp.gate_proj.weight", "BF16", {I, H}},        {p + "mlp.up_proj.weight", "BF16", {I, H}},
          {p + "mlp.down_proj.weight", "BF16", {H, I}},        {p + "input_layernorm.weight", "BF16", {H}},
          {p + "post_attention_layernorm.weight", "BF16", {H}}};
}

constexpr int64_t kParams = 2 * V * H + L * (2 * H * H + 2 * KV * H + 3 * H * I + 2 * H) + H;

class CliSafetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vram_st_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Two shards and their index, as save_pretrained writes them.
  void write_sharded() {
    std::vector<T> a = {{"model.embed_tokens.weight", "BF16", {V, H}}};
    for (const auto& t : layer(0)) a.push_back(t);
    std::vector<T> b = layer(1);
    b.push_back({"model.norm.weight", "BF16", {H}});
    b.push_back({"lm_head.weight", "BF16", {V, H}});
    write_safetensors(dir_ / "model-00001-of-00002.safetensors", a);
    write_safetensors(dir_ / "model-00002-of-00002.safetensors", b);
    json map = json::object();
    for (const auto& t : a) map[t.name] = "model-00001-of-00002.safetensors";
    for (const auto& t : b) map[t.name] = "model-00002-of-00002.safetensors";
    std::ofstream(dir_ / "model.safetensors.index.json")
        << json{{"metadata", {{"total_size", 2 * kParams}}}, {"weight_map", map}}.dump();
  }

  json run_json(std::vector<std::string> args, int expected_exit) {
    args.push_back("--json");
    const auto run = vram::testing::run_binary(VRAM_PROBE_BIN, args, false);
    EXPECT_EQ(run.exit_code, expected_exit) << run.out;
    json j = json::parse(run.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << run.out;
    return j;
  }

  fs::path dir_;
};

TEST_F(CliSafetensors, ParamsCountsASingleFileFromItsHeader) {
  std::vector<T> all = {{"model.embed_tokens.weight", "BF16", {V, H}}};
  for (int64_t l = 0; l < L; ++l) {
    for (const auto& t : layer(l)) all.push_back(t);
  }
  all.push_back({"model.norm.weight", "BF16", {H}});
  all.push_back({"lm_head.weight", "BF16", {V, H}});
  write_safetensors(dir_ / "model.safetensors", all);
  const json m = run_json({"params", "--safetensors", (dir_ / "model.safetensors").string()}, 0);
  EXPECT_EQ(m["params_total"], kParams);
  EXPECT_EQ(m["checkpoint"]["tensors"], static_cast<int64_t>(all.size()));
  EXPECT_EQ(m["checkpoint"]["stored_bytes"], 2 * kParams);
  EXPECT_EQ(m["facts"]["layers"], L);
  EXPECT_EQ(m["facts"]["hidden"], H);
}

TEST_F(CliSafetensors, ADirectoryWithAnIndexAndAKnownConfigIsCrossChecked) {
  write_sharded();
  std::ofstream(dir_ / "config.json") << json{{"model_type", "llama"},    {"hidden_size", H},
                                              {"intermediate_size", I},   {"num_hidden_layers", L},
                                              {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                              {"vocab_size", V}}
                                             .dump();
  const json m = run_json({"params", "--safetensors", dir_.string()}, 0);
  EXPECT_EQ(m["family"], "llama");
  EXPECT_EQ(m["params_total"], kParams);
  EXPECT_TRUE(m["checkpoint"]["cross_check"]["matches"].get<bool>()) << m["checkpoint"].dump();
  EXPECT_EQ(m["checkpoint"]["declared_total_size"], 2 * kParams);
  // The readable table says so too.
  const auto run = vram::testing::run_binary(VRAM_PROBE_BIN, {"params", "--safetensors", dir_.string()}, false);
  EXPECT_NE(run.out.find("cross-check: the model's count equals the checkpoint's"), std::string::npos) << run.out;
}

TEST_F(CliSafetensors, EstimateServesTheWeightsAsStored) {
  write_sharded();
  const json r = run_json({"estimate", "--safetensors", (dir_ / "model.safetensors.index.json").string(), "--task",
                           "infer", "--gpu", "A100 80GB"},
                          0);
  int64_t weights = -1;
  for (const auto& c : r["components"]) {
    if (c["key"] == "weights") weights = c["bytes"].get<int64_t>();
  }
  EXPECT_EQ(weights, 2 * kParams);
}

TEST_F(CliSafetensors, OnlyTheHeaderIsReadEvenFromAHugeFile) {
  // A 16 Mi x 64 fp32 embedding: 4 GiB of (sparse) data behind a small header.
  std::vector<T> all = {{"model.embed_tokens.weight", "F32", {int64_t{1} << 24, H}}};
  for (const auto& t : layer(0)) all.push_back(t);
  write_safetensors(dir_ / "big.safetensors", all);
  const json m = run_json({"params", "--safetensors", (dir_ / "big.safetensors").string()}, 0);
  const int64_t layer_bytes = 2 * (2 * H * H + 2 * KV * H + 3 * H * I + 2 * H);
  EXPECT_EQ(m["checkpoint"]["stored_bytes"], 4 * (int64_t{1} << 24) * H + layer_bytes);
  EXPECT_EQ(m["facts"]["vocab"], int64_t{1} << 24);
}

TEST_F(CliSafetensors, AHeaderLengthPastTheFileIsAnErrorNamingTheFile) {
  const fs::path f = dir_ / "short.safetensors";
  {
    std::ofstream out(f, std::ios::binary);
    const uint64_t len = 4096;
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
    out << "{}";
  }
  const json e = run_json({"params", "--safetensors", f.string()}, 1);
  ASSERT_TRUE(e.contains("error")) << e.dump();
  const std::string msg = e["error"]["message"];
  EXPECT_NE(msg.find(f.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("past the end"), std::string::npos) << msg;
}

TEST_F(CliSafetensors, AnAbsurdHeaderLengthIsRefusedBeforeReading) {
  const fs::path f = dir_ / "huge_header.safetensors";
  {
    std::ofstream out(f, std::ios::binary);
    const uint64_t len = uint64_t{1} << 40;
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
  }
  fs::resize_file(f, (uint64_t{1} << 40) + 64);  // sparse: the length fits the file, not the limit
  const json e = run_json({"params", "--safetensors", f.string()}, 1);
  const std::string msg = e["error"]["message"];
  EXPECT_NE(msg.find("100,000,000"), std::string::npos) << msg;
  EXPECT_NE(msg.find(f.string()), std::string::npos) << msg;
}

TEST_F(CliSafetensors, ATooShortFileAndAMissingPathAreErrors) {
  std::ofstream(dir_ / "tiny.safetensors") << "abc";
  const json e = run_json({"params", "--safetensors", (dir_ / "tiny.safetensors").string()}, 1);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("too short"), std::string::npos) << e.dump();
  const json missing = run_json({"params", "--safetensors", (dir_ / "nope").string()}, 1);
  EXPECT_NE(missing["error"]["message"].get<std::string>().find("no such file"), std::string::npos) << missing.dump();
}

TEST_F(CliSafetensors, AnIndexListingATensorItsShardLacksNamesTheShard) {
  write_sharded();
  json idx = json::parse(std::ifstream(dir_ / "model.safetensors.index.json"));
  idx["weight_map"]["model.layers.1.mlp.extra.weight"] = "model-00002-of-00002.safetensors";
  std::ofstream(dir_ / "model.safetensors.index.json") << idx.dump();
  const json e = run_json({"params", "--safetensors", dir_.string()}, 1);
  const std::string msg = e["error"]["message"];
  EXPECT_NE(msg.find("model-00002-of-00002.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.layers.1.mlp.extra.weight"), std::string::npos) << msg;
}

TEST_F(CliSafetensors, DataOffsetsThatDisagreeWithTheShapeAreAnError) {
  const std::string header =
      R"({"model.layers.0.self_attn.q_proj.weight":{"dtype":"BF16","shape":[4,4],"data_offsets":[0,30]}})";
  write_safetensors(dir_ / "bad.safetensors", {}, header);
  fs::resize_file(dir_ / "bad.safetensors", fs::file_size(dir_ / "bad.safetensors") + 32);
  const json e = run_json({"params", "--safetensors", (dir_ / "bad.safetensors").string()}, 1);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("need 32"), std::string::npos) << e.dump();
}

}  // namespace

#endif

// vram-probe estimate --gguf: real GGUF files written here (the header byte by
// byte, a sparse data section), read back through the built binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/gguf_writer.h"
#include "probe/probe_run.h"

#if defined(VRAM_PROBE_BIN)

namespace {

using nlohmann::json;
using vram::test::GgufWriter;
namespace fs = std::filesystem;

// A 2-layer Llama-shaped model of width 256 in F16.
void add_layers(GgufWriter& w, int from, int to) {
  for (int l = from; l < to; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    w.tensor(p + "attn_norm.weight", {256}, 0, 1024)
        .tensor(p + "attn_q.weight", {256, 256}, 1, 256 * 256 * 2)
        .tensor(p + "attn_k.weight", {256, 128}, 1, 256 * 128 * 2)
        .tensor(p + "attn_v.weight", {256, 128}, 1, 256 * 128 * 2)
        .tensor(p + "attn_output.weight", {256, 256}, 1, 256 * 256 * 2)
        .tensor(p + "ffn_norm.weight", {256}, 0, 1024)
        .tensor(p + "ffn_gate.weight", {256, 512}, 1, 256 * 512 * 2)
        .tensor(p + "ffn_up.weight", {256, 512}, 1, 256 * 512 * 2)
        .tensor(p + "ffn_down.weight", {512, 256}, 1, 512 * 256 * 2);
  }
}

GgufWriter metadata() {
  GgufWriter w;
  w.str("general.architecture", "llama")
      .u32("general.file_type", 1)
      .u32("llama.block_count", 2)
      .u32("llama.context_length", 4096)
      .u32("llama.embedding_length", 256)
      .u32("llama.feed_forward_length", 512)
      .u32("llama.attention.head_count", 4)
      .u32("llama.attention.head_count_kv", 2);
  return w;
}

class CliGguf : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vram_gguf_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The header, then a sparse data section of the size the header says.
  fs::path write(const std::string& name, const GgufWriter& w) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << w.bytes(false);
    fs::resize_file(p, w.file_size());
    return p;
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

TEST_F(CliGguf, EstimateReadsTheHeaderIntoAModel) {
  GgufWriter w = metadata();
  w.tensor("token_embd.weight", {256, 1000}, 1, 256 * 1000 * 2);
  add_layers(w, 0, 2);
  w.tensor("output_norm.weight", {256}, 0, 1024).tensor("output.weight", {256, 1000}, 1, 256 * 1000 * 2);
  const fs::path f = write("tiny-F16.gguf", w);
  const json r = run_json({"estimate", "--gguf", f.string(), "--task", "infer"}, 0);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["model"]["family"], "gguf");
  EXPECT_EQ(r["model"]["facts"]["layers"], 2);
  EXPECT_EQ(r["model"]["checkpoint"]["quantization"], "F16");
  const int64_t params = 2 * 256 * 1000 + 2 * (2 * 256 + 2 * 256 * 256 + 2 * 256 * 128 + 3 * 256 * 512) + 256;
  EXPECT_EQ(r["model"]["params_total"], params);
}

TEST_F(CliGguf, ASplitFileIsReadShardByShard) {
  GgufWriter a = metadata();
  a.u32("split.count", 2);
  a.tensor("token_embd.weight", {256, 1000}, 1, 256 * 1000 * 2);
  add_layers(a, 0, 1);
  GgufWriter b;
  b.u32("split.count", 2);
  add_layers(b, 1, 2);
  b.tensor("output_norm.weight", {256}, 0, 1024).tensor("output.weight", {256, 1000}, 1, 256 * 1000 * 2);
  const fs::path first = write("tiny-00001-of-00002.gguf", a);
  write("tiny-00002-of-00002.gguf", b);
  const json r = run_json({"estimate", "--gguf", first.string(), "--task", "infer"}, 0);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["model"]["checkpoint"]["tensors"], 1 + 9 + 9 + 2);
}

// The command, as a user types it: llama.cpp's buffers per device, in
// MiB as its start-up log prints them (the table), and the same request as JSON.
TEST_F(CliGguf, TheLlamaCppCommandPrintsTheBuffersOfItsLog) {
  GgufWriter w = metadata();
  w.tensor("token_embd.weight", {256, 1000}, 1, 256 * 1000 * 2);
  add_layers(w, 0, 2);
  w.tensor("output_norm.weight", {256}, 0, 1024).tensor("output.weight", {256, 1000}, 1, 256 * 1000 * 2);
  const fs::path f = write("tiny-F16.gguf", w);
  const std::vector<std::string> args = {"estimate", "--engine",       "llama_cpp", "--gguf", f.string(), "--ctx-size",
                                         "32768",    "--n-gpu-layers", "99",        "--gpu",  "RTX 4090"};
  const auto text = vram::testing::run_binary(VRAM_PROBE_BIN, args, false);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("model buffer"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("3 of 3 layers on the GPU, --ctx-size 32768"), std::string::npos) << text.out;
  const json r = run_json(args, 0);
  EXPECT_EQ(r["task"], "infer");
  EXPECT_EQ(r["infer"]["ctx_size"], 32768);
  // 2 layers x 32768 cells x (128 K + 128 V) x 2 bytes, one unified cache.
  EXPECT_EQ(r["infer"]["kv_cache_bytes"], 2 * 32768 * 256 * 2);
}

TEST_F(CliGguf, BadFilesAreErrorsNamingTheFile) {
  std::ofstream(dir_ / "text.gguf") << "not a gguf file at all";
  json r = run_json({"estimate", "--gguf", (dir_ / "text.gguf").string()}, 1);
  EXPECT_EQ(r["error"]["path"], "model.gguf");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("not a GGUF file"), std::string::npos);

  GgufWriter w = metadata();
  w.tensor("token_embd.weight", {256, 1000}, 1, 256 * 1000 * 2);
  const fs::path cut = dir_ / "cut.gguf";
  std::ofstream(cut, std::ios::binary) << w.bytes(false);  // no data section
  r = run_json({"estimate", "--gguf", cut.string()}, 1);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("truncated"), std::string::npos);

  r = run_json({"estimate", "--gguf", (dir_ / "missing.gguf").string()}, 1);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("cannot read"), std::string::npos);
}

}  // namespace

#endif

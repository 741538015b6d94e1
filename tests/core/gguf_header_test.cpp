// The GGUF header reader (vram/gguf.h) and ggml's type table.
#include <gtest/gtest.h>

#include <cstring>

#include "gguf_writer.h"
#include "vram/gguf.h"

namespace vram {
namespace {

using test::GgufWriter;

class Bytes : public gguf::Source {
 public:
  explicit Bytes(std::string b, uint64_t size = 0) : b_(std::move(b)), size_(size == 0 ? b_.size() : size) {}
  uint64_t size() const override { return size_; }
  bool read(uint64_t offset, void* dst, size_t n) override {
    // Bytes past the stored ones read as zeros (a sparse file's data section).
    std::memset(dst, 0, n);
    if (offset < b_.size()) std::memcpy(dst, b_.data() + offset, std::min<size_t>(n, b_.size() - offset));
    return offset + n <= size_;
  }

 private:
  std::string b_;
  uint64_t size_;
};

// A two-layer Llama-shaped model, Q4_K_M-like types.
GgufWriter tiny() {
  GgufWriter w;
  w.str("general.architecture", "llama")
      .str("general.name", "tiny")
      .u32("general.file_type", 15)
      .u32("llama.block_count", 2)
      .u32("llama.context_length", 4096)
      .u32("llama.embedding_length", 256)
      .u32("llama.feed_forward_length", 512)
      .u32("llama.attention.head_count", 4)
      .u32("llama.attention.head_count_kv", 2)
      .f32("llama.rope.freq_base", 500000.0f)
      .strs("tokenizer.ggml.tokens", {"a", "b", "c"});
  w.tensor("token_embd.weight", {256, 1000}, 12, 1000 * 144);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    w.tensor(p + "attn_norm.weight", {256}, 0, 256 * 4)
        .tensor(p + "attn_q.weight", {256, 256}, 12, 256 * 144)
        .tensor(p + "attn_k.weight", {256, 128}, 12, 128 * 144)
        .tensor(p + "attn_v.weight", {256, 128}, 14, 128 * 210);
  }
  w.tensor("output_norm.weight", {256}, 0, 1024).tensor("output.weight", {256, 1000}, 14, 1000 * 210);
  return w;
}

Result<json> read(const std::string& bytes, uint64_t size = 0) {
  Bytes src(bytes, size);
  return gguf::read_header(src, "tiny.gguf");
}

std::string error_of(const std::string& bytes, uint64_t size = 0) {
  auto r = read(bytes, size);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, errc::kBadJson);
  EXPECT_EQ(r.error().path, "model.gguf");
  return r.error().message;
}

TEST(GgmlTypes, BlockSizesAndBytesAreGgmlTypeTraits) {
  // ggml-common.h static_asserts, ggml-org/ggml d99724f2.
  const std::vector<std::tuple<const char*, int64_t, int64_t>> expected = {
      {"f32", 1, 4},        {"f16", 1, 2},       {"bf16", 1, 2},       {"q4_0", 32, 18},   {"q4_1", 32, 20},
      {"q5_0", 32, 22},     {"q5_1", 32, 24},    {"q8_0", 32, 34},     {"q8_1", 32, 36},   {"q2_K", 256, 84},
      {"q3_K", 256, 110},   {"q4_K", 256, 144},  {"q5_K", 256, 176},   {"q6_K", 256, 210}, {"q8_K", 256, 292},
      {"iq2_xxs", 256, 66}, {"iq2_xs", 256, 74}, {"iq3_xxs", 256, 98}, {"iq1_s", 256, 50}, {"iq4_nl", 32, 18},
      {"iq3_s", 256, 110},  {"iq2_s", 256, 82},  {"iq4_xs", 256, 136}, {"iq1_m", 256, 56}, {"tq1_0", 256, 54},
      {"tq2_0", 256, 66},   {"mxfp4", 32, 17},   {"nvfp4", 64, 36},    {"q1_0", 128, 18},  {"q2_0", 64, 18}};
  for (const auto& [name, block, bytes] : expected) {
    const gguf::GgmlType* t = gguf::ggml_type_named(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->block, block) << name;
    EXPECT_EQ(t->bytes, bytes) << name;
  }
  EXPECT_EQ(gguf::ggml_type(12)->name, std::string("q4_K"));
  EXPECT_EQ(gguf::ggml_type_named("Q4_K"), gguf::ggml_type(12));
  for (int removed : {4, 5, 31, 32, 33, 36, 37, 38, 43, -1}) EXPECT_EQ(gguf::ggml_type(removed), nullptr) << removed;
}

TEST(GgufHeader, ReadsMetadataAndTensorInfosNotTheWeights) {
  const GgufWriter w = tiny();
  // The header alone, in a source the size of the whole file: no data read.
  auto r = read(w.bytes(false), w.file_size());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& inv = r.value();
  EXPECT_EQ(inv["file"], "tiny.gguf");
  EXPECT_EQ(inv["version"], 3);
  EXPECT_EQ(inv["metadata"]["general.architecture"], "llama");
  EXPECT_EQ(inv["metadata"]["llama.block_count"], 2);
  EXPECT_DOUBLE_EQ(inv["metadata"]["llama.rope.freq_base"].get<double>(), 500000.0);
  EXPECT_FALSE(inv["metadata"].contains("tokenizer.ggml.tokens"));
  ASSERT_EQ(inv["tensors"].size(), 11u);
  const json& embd = inv["tensors"][0];
  EXPECT_EQ(embd["name"], "token_embd.weight");
  EXPECT_EQ(embd["shape"], json::array({256, 1000}));
  EXPECT_EQ(embd["type"], 12);
  EXPECT_EQ(embd["offset"], 0);
  EXPECT_EQ(inv["tensors"][1]["offset"], 144000);  // 1000 * 144, already 32-aligned
}

TEST(GgufHeader, KeepsNumericArraysAndDropsStringsAndLongOnes) {
  GgufWriter w;
  w.str("general.architecture", "gemma3")
      .i32s("gemma3.attention.head_count_kv", {1, 1, 2})
      .strs("general.tags", {"x"})
      .str("general.description", std::string(2000, 'x'))
      .i32s("general.long", std::vector<int32_t>(70000, 1));
  auto r = read(w.bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& m = r.value()["metadata"];
  EXPECT_EQ(m["gemma3.attention.head_count_kv"], json::array({1, 1, 2}));
  EXPECT_FALSE(m.contains("general.tags"));
  EXPECT_FALSE(m.contains("general.description"));
  EXPECT_FALSE(m.contains("general.long"));
}

TEST(GgufHeader, HostileFilesGetNamedErrors) {
  EXPECT_NE(error_of("GG").find("ends inside"), std::string::npos);
  EXPECT_NE(error_of("ABCD\3\0\0\0").find("not a GGUF file"), std::string::npos);
  std::string v1 = tiny().bytes(false, 1);
  EXPECT_NE(error_of(v1).find("version 1"), std::string::npos);
  EXPECT_NE(error_of(tiny().bytes(false, 4)).find("version 4"), std::string::npos);
  EXPECT_NE(error_of(tiny().bytes(false, 0x03000000)).find("big-endian"), std::string::npos);

  // A count past the file: no allocation, a named error.
  std::string huge = tiny().bytes();
  const uint64_t lots = uint64_t{1} << 60;
  std::memcpy(huge.data() + 8, &lots, 8);
  EXPECT_NE(error_of(huge).find("claims"), std::string::npos);

  GgufWriter dup;
  dup.u32("a.b", 1).u32("a.b", 2);
  EXPECT_NE(error_of(dup.bytes()).find("appears twice"), std::string::npos);

  GgufWriter dims;
  dims.tensor("x", {32, 1, 1, 1, 1}, 0, 128);
  EXPECT_NE(error_of(dims.bytes(true)).find("at most 4"), std::string::npos);

  GgufWriter neg;
  neg.tensor("x", {-32}, 0, 0);
  EXPECT_NE(error_of(neg.bytes(true)).find("negative"), std::string::npos);

  GgufWriter rows;
  rows.tensor("x", {100, 2}, 12, 0);  // q4_K rows need multiples of 256
  EXPECT_NE(error_of(rows.bytes(true)).find("whole q4_K blocks"), std::string::npos);

  GgufWriter type;
  type.tensor("x", {32}, 4, 0);  // the removed Q4_2
  EXPECT_NE(error_of(type.bytes(true)).find("not a type ggml reads"), std::string::npos);

  GgufWriter big;
  big.tensor("x", {int64_t{1} << 40, int64_t{1} << 40}, 0, 0);
  EXPECT_NE(error_of(big.bytes(true)).find("64-bit"), std::string::npos);

  GgufWriter name;
  name.tensor(std::string(64, 'n'), {32}, 0, 128);
  EXPECT_NE(error_of(name.bytes(true)).find("GGML_MAX_NAME"), std::string::npos);

  GgufWriter align;
  align.u32("general.alignment", 48);
  EXPECT_NE(error_of(align.bytes()).find("power of two"), std::string::npos);

  GgufWriter utf;
  utf.u32(std::string("bad\xff", 4), 1);
  EXPECT_NE(error_of(utf.bytes()).find("not UTF-8"), std::string::npos);

  // The header says more data than the file holds.
  const GgufWriter w = tiny();
  EXPECT_NE(error_of(w.bytes(false), w.file_size() - 1).find("truncated"), std::string::npos);
}

TEST(GgufHeader, EveryTruncationOfAValidFileIsANamedError) {
  const std::string whole = tiny().bytes(true);
  ASSERT_TRUE(read(whole).ok());
  // Every cut inside the header, then a few inside the data section.
  std::vector<size_t> cuts;
  for (size_t n = 0; n <= tiny().bytes(false).size(); ++n) cuts.push_back(n);
  for (size_t n = whole.size() - 1; n > whole.size() / 2; n -= whole.size() / 8) cuts.push_back(n);
  for (size_t n : cuts) {
    auto r = read(whole.substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code, errc::kBadJson);
  }
}

TEST(GgufHeader, TextEntryPointAnswersJsonForAnyBytes) {
  const json ok = json::parse(gguf::header_json(tiny().bytes(true)));
  EXPECT_EQ(ok["tensors"].size(), 11u);
  const json bad = json::parse(gguf::header_json(std::string("GGUF\3\0\0\0\xff", 9)));
  EXPECT_EQ(bad["error"]["code"], errc::kBadJson);
}

}  // namespace
}  // namespace vram

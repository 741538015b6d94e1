// A GGUF file becomes a model (gguf/model.h, gguf/to_spec.cpp) and a
// llama-quantize preset types an HF config's tensors (gguf/quant_preset.h).
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "fixtures.h"
#include "gguf/from_spec.h"
#include "gguf/model.h"
#include "gguf/quant_preset.h"
#include "gguf_writer.h"
#include "vram/families.h"
#include "vram/gguf.h"

namespace vram {
namespace {

using test::GgufWriter;

class Whole : public gguf::Source {
 public:
  explicit Whole(std::string b) : b_(std::move(b)) {}
  uint64_t size() const override { return b_.size(); }
  bool read(uint64_t offset, void* dst, size_t n) override {
    if (offset + n > b_.size()) return false;
    std::memcpy(dst, b_.data() + offset, n);
    return true;
  }

 private:
  std::string b_;
};

// A 4-layer Llama-shaped file: 8 heads of 32, 2 KV heads, tied or not.
GgufWriter llama(bool tied = false, const std::string& arch = "llama") {
  GgufWriter w;
  w.str("general.architecture", arch)
      .str("general.name", "Tiny")
      .u32("general.file_type", 15)
      .u32(arch + ".block_count", 4)
      .u32(arch + ".context_length", 8192)
      .u32(arch + ".embedding_length", 256)
      .u32(arch + ".feed_forward_length", 768)
      .u32(arch + ".attention.head_count", 8)
      .u32(arch + ".attention.head_count_kv", 2);
  auto q = [](int64_t n) { return n / 256 * 144; };  // q4_K
  w.tensor("token_embd.weight", {256, 1000}, 12, q(256 * 1000));
  for (int l = 0; l < 4; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    w.tensor(p + "attn_norm.weight", {256}, 0, 1024)
        .tensor(p + "attn_q.weight", {256, 256}, 12, q(256 * 256))
        .tensor(p + "attn_k.weight", {256, 64}, 12, q(256 * 64))
        .tensor(p + "attn_v.weight", {256, 64}, 14, 64 * 210)
        .tensor(p + "attn_output.weight", {256, 256}, 12, q(256 * 256))
        .tensor(p + "ffn_norm.weight", {256}, 0, 1024)
        .tensor(p + "ffn_gate.weight", {256, 768}, 12, q(256 * 768))
        .tensor(p + "ffn_up.weight", {256, 768}, 12, q(256 * 768))
        .tensor(p + "ffn_down.weight", {768, 256}, 14, 768 * 210);
  }
  w.tensor("output_norm.weight", {256}, 0, 1024);
  if (!tied) w.tensor("output.weight", {256, 1000}, 14, 1000 * 210);
  return w;
}

json inventory(const GgufWriter& w) {
  Whole src(w.bytes(true));
  auto r = gguf::read_header(src, "tiny.gguf");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : json();
}

TEST(GgufModel, TensorsGetLlamaCppLayersTypesAndBytes) {
  const gguf::Model m = gguf::read_model(inventory(llama()), "model.gguf");
  EXPECT_EQ(m.hp.arch, "llama");
  EXPECT_EQ(m.hp.n_layer, 4);
  EXPECT_EQ(m.hp.head_k, 32);  // embedding_length / head_count
  EXPECT_EQ(m.hp.k_width(0), 64);
  EXPECT_EQ(m.hp.n_vocab, 1000);
  EXPECT_TRUE(m.has_output);
  int inputs = 0, outputs = 0, layer3 = 0;
  for (const auto& t : m.tensors) {
    inputs += t.part == gguf::Part::kInput;
    outputs += t.part == gguf::Part::kOutput;
    layer3 += t.layer == 3;
  }
  EXPECT_EQ(inputs, 1);   // token_embd
  EXPECT_EQ(outputs, 2);  // output_norm, output
  EXPECT_EQ(layer3, 9);
  EXPECT_EQ(m.tensors[0].bytes, 1000 * 144);  // 256 x 1000 q4_K: 1000 blocks of 144 bytes
}

TEST(GgufModel, ATiedFileLoadsTheEmbeddingAgainAsTheHead) {
  const gguf::Model m = gguf::read_model(inventory(llama(true)), "model.gguf");
  EXPECT_FALSE(m.has_output);
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes[0].find("TENSOR_DUPLICATED"), std::string::npos);
}

TEST(GgufModel, BecomesAModelLikeASafetensorsList) {
  auto r = gguf::model_from_gguf(inventory(llama()), "model.gguf");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ModelSpec& s = r.value();
  EXPECT_EQ(s.family, "gguf");
  EXPECT_EQ(s.model_type, "llama");
  EXPECT_EQ(s.text.layers, 4);
  EXPECT_EQ(s.text.hidden, 256);
  EXPECT_EQ(s.text.heads, 8);
  EXPECT_EQ(s.text.kv_heads, 2);
  EXPECT_EQ(s.text.head_dim, 32);
  EXPECT_EQ(s.text.intermediate, 768);
  EXPECT_EQ(s.vocab, 1000);
  EXPECT_FALSE(s.tie_word_embeddings);
  // Every element is a parameter: 2 x (256 x 1000) + 4 x (2 norms + q, k, v, o, 3 MLP) + final norm.
  const int64_t per_layer = 2 * 256 + 256 * 256 * 2 + 256 * 64 * 2 + 3 * 256 * 768;
  EXPECT_EQ(s.params_total(), 2 * 256 * 1000 + 4 * per_layer + 256);
  EXPECT_TRUE(s.checkpoint.present);
  EXPECT_EQ(s.checkpoint.quantization, "Q4_K_M");
  ASSERT_NE(s.gguf, nullptr);
  EXPECT_EQ(s.checkpoint.stored_bytes, s.gguf->total_bytes());
}

TEST(GgufModel, SlidingWindowLayersFollowLlamaCppsArchitectureRules) {
  GgufWriter w = llama(false, "gemma2");
  auto m = gguf::read_model(inventory(w), "model.gguf");
  // LLM_ARCH_GEMMA2: n_swa 4096 without the key, every other layer.
  EXPECT_EQ(m.hp.n_swa, 4096);
  EXPECT_EQ(m.hp.swa, (std::vector<bool>{true, false, true, false}));
  GgufWriter g = llama(false, "gemma3");
  EXPECT_FALSE(gguf::read_model(inventory(g), "model.gguf").hp.any_swa());  // no window: none
  g.u32("gemma3.attention.sliding_window", 512);
  m = gguf::read_model(inventory(g), "model.gguf");
  EXPECT_EQ(m.hp.n_swa, 512);
  EXPECT_EQ(m.hp.swa, (std::vector<bool>{true, true, true, true}));  // pattern 6: layer 5 would be global
}

TEST(GgufModel, BadInventoriesNameTheField) {
  json inv = inventory(llama());
  inv["tensors"][1]["type"] = 4;  // the removed Q4_2
  auto r = gguf::model_from_gguf(inv, "model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.gguf.tensors[1].type");

  inv = inventory(llama());
  inv["metadata"]["general.architecture"] = "mamba";
  r = gguf::model_from_gguf(inv, "model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::kUnsupported);

  inv = inventory(llama());
  inv["metadata"].erase("llama.block_count");
  r = gguf::model_from_gguf(inv, "model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.gguf.metadata.llama.block_count");

  inv = inventory(llama());
  inv["tensors"][0]["shape"] = json::array({100, 1000});  // q4_K rows of 100
  r = gguf::model_from_gguf(inv, "model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.gguf.tensors[0].shape");

  inv = inventory(llama());
  inv["extra"] = 1;
  r = gguf::model_from_gguf(inv, "model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "model.gguf.extra");
}

std::map<std::string, int> type_counts(const gguf::Model& m) {
  std::map<std::string, int> c;
  for (const auto& t : m.tensors) c[t.type->name] += 1;
  return c;
}

gguf::Model preset(const std::string& config, const char* name) {
  auto spec = model_from_config(testing::model_config(config), "model.config");
  EXPECT_TRUE(spec.ok());
  std::vector<std::string> notes;
  return gguf::model_from_spec(spec.value(), *gguf::preset_named(name), "model.config", notes);
}

TEST(QuantPreset, Llama31_8bQ4KMHasLlamaQuantizesMix) {
  // llama-quantize's mix for Llama-3.1-8B Q4_K_M: 65 f32, 193 q4_K, 33 q6_K
  // (attn_v and ffn_down of the use_more_bits layers, and the output). A
  // converted file also stores rope_freqs (64 f32 values), which the config
  // path leaves out.
  const gguf::Model m = preset("meta-llama/Llama-3.1-8B", "Q4_K_M");
  const auto c = type_counts(m);
  EXPECT_EQ(c.at("f32"), 65);
  EXPECT_EQ(c.at("q4_K"), 193);
  EXPECT_EQ(c.at("q6_K"), 33);
  EXPECT_EQ(m.file_type, 15);
  // 4.58 GiB as llama.cpp prints the model size of this file.
  EXPECT_NEAR(static_cast<double>(m.total_bytes()) / (1 << 30), 4.58, 0.005);
}

TEST(QuantPreset, Q8_0KeepsTheOutputAtQ8AndQ5KSHasNoMix) {
  const auto q8 = type_counts(preset("meta-llama/Llama-3.1-8B", "q8_0"));
  EXPECT_EQ(q8.at("q8_0"), 226);
  EXPECT_EQ(q8.at("f32"), 65);
  const auto q5 = type_counts(preset("meta-llama/Llama-3.1-8B", "Q5_K_S"));
  EXPECT_EQ(q5.at("q5_K"), 225);
  EXPECT_EQ(q5.at("q6_K"), 1);  // the output
}

TEST(QuantPreset, LayerNormBiasesAreTensorsOfTheirOwn) {
  // EleutherAI/pythia-2.8b at Q4_0 as llama.cpp's CI loads it (ggml-org/ci
  // def9ac54, llama.cpp build 4364, pythia_2_8b-tg-q4_0.log): "type f32: 258,
  // q4_0: 129, q6_K: 1". Each block's 8 f32 tensors are the two LayerNorms'
  // weights and biases and the four linear biases; the output norm adds 2.
  // The config is the validation rows' (tests/fixtures/validation), the shape
  // that log's GGUF metadata states.
  auto spec =
      model_from_config(json::parse(testing::read_text("validation/llamacpp-ci-pythia-2.8b.json")), "model.config");
  ASSERT_TRUE(spec.ok());
  std::vector<std::string> notes;
  const gguf::Model m = gguf::model_from_spec(spec.value(), *gguf::preset_named("Q4_0"), "model.config", notes);
  const auto c = type_counts(m);
  EXPECT_EQ(c.at("f32"), 258);
  EXPECT_EQ(c.at("q4_0"), 129);
  EXPECT_EQ(c.at("q6_K"), 1);
  EXPECT_EQ(m.tensors.size(), 388u);
}

TEST(QuantPreset, TiedEmbeddingTakesTheOutputsType) {
  // Llama-3.2-1B ties its head: token_embd is quantized as the output (Q6_K).
  const gguf::Model m = preset("meta-llama/Llama-3.2-1B", "Q4_K_M");
  for (const auto& t : m.tensors) {
    if (t.name == "token_embd.weight") {
      EXPECT_STREQ(t.type->name, "q6_K");
    }
  }
  EXPECT_FALSE(m.has_output);
}

TEST(QuantPreset, NamesAndAliasesAreLlamaQuantizes) {
  EXPECT_STREQ(gguf::preset_named("q4_k")->name, "Q4_K_M");
  EXPECT_STREQ(gguf::preset_named("IQ4_XS")->name, "IQ4_XS");
  EXPECT_EQ(gguf::preset_named("Q4_K_X"), nullptr);
  EXPECT_EQ(gguf::ftype_name(15), "Q4_K_M");
  EXPECT_EQ(gguf::ftype_name(999), "");
}

}  // namespace
}  // namespace vram

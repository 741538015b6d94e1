// pretty_text (core/src/json_text.h): the bytes of nlohmann/json's dump(2).
#include "json_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>

#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

void expect_same_bytes(const json& v) { EXPECT_EQ(pretty_text(v), v.dump(2)) << v.dump(); }

TEST(JsonText, EveryKindOfValueAsDumpWritesIt) {
  expect_same_bytes(nullptr);
  expect_same_bytes(true);
  expect_same_bytes(json::object());
  expect_same_bytes(json::array());
  expect_same_bytes({{"b", json::array()}, {"a", json::object()}, {"c", {1, "x", nullptr, false, {{"d", 2.5}}}}});
  expect_same_bytes({{"deep", {{"deeper", {{"deepest", {json::array({json::array({1})})}}}}}}});
  expect_same_bytes(json::array({json::object(), json::array(), json::object({{"k", json::array()}})}));
}

TEST(JsonText, IntegersAndDoublesAsDumpWritesThem) {
  json numbers = json::array();
  for (const int64_t i : {int64_t{0}, int64_t{-1}, int64_t{7}, int64_t{1} << 53, std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max()}) {
    numbers.push_back(i);
  }
  numbers.push_back(std::numeric_limits<uint64_t>::max());
  for (const double d : {0.0, -0.0, 1.0, -2.5, 0.1, 1e-5, 1.5e-7, 123456789.0, 1e21, 1e300, 5e-324, 0.8, 0.9112,
                         std::numeric_limits<double>::max(), std::numeric_limits<double>::quiet_NaN(),
                         std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    numbers.push_back(d);
  }
  expect_same_bytes(numbers);
}

TEST(JsonText, StringsAndKeysEscapedAsDumpEscapesThem) {
  std::string ascii;
  for (int c = 1; c < 0x80; ++c) ascii += static_cast<char>(c);
  ascii += std::string(1, '\0') + "tail";
  expect_same_bytes(ascii);
  expect_same_bytes({{ascii, ascii}, {"plain", "text"}, {"", ""}});
  // Past ASCII: two-, three- and four-byte UTF-8, left unescaped.
  expect_same_bytes({{"§ key", "× ≥ 𝄞 \"quoted\"\n"}, {"é", "\x7f"}});
}

TEST(JsonText, InvalidUtf8FailsAsDumpFails) {
  const json v = {{"ok", "text"}, {"bad", "ab\xff"}};
  std::string dumped;
  std::string written;
  try {
    (void)v.dump(2);
  } catch (const std::exception& e) {
    dumped = e.what();
  }
  try {
    (void)pretty_text(v);
  } catch (const std::exception& e) {
    written = e.what();
  }
  EXPECT_NE(dumped, "");
  EXPECT_EQ(written, dumped);
}

// Whole answers: a training and an inference estimate of every bundled model,
// one on a card, and a plan.
TEST(JsonText, AnswersAsDumpWritesThem) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(VRAM_FIXTURES_DIR) + "/models")) {
    const json config = json::parse(testing::read_text("models/" + entry.path().filename().string()));
    for (const char* task : {"train", "infer"}) {
      SCOPED_TRACE(entry.path().filename().string() + " " + task);
      expect_same_bytes(estimate({{"model", {{"config", config}}}, {"task", task}}));
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
  // With a card: the fit, its searches and the time model's object.
  const json config = json::parse(testing::read_text("models/meta-llama__Llama-3.1-8B.json"));
  const json on_h100 = {{"model", {{"config", config}}}, {"gpu", {{"name", "H100 80GB"}}}};
  const json answer = estimate(on_h100);
  ASSERT_TRUE(answer.contains("time") && answer.contains("fit")) << answer.dump();
  expect_same_bytes(answer);
  json on_8 = on_h100;
  on_8["parallel"] = {{"gpus", 8}};
  expect_same_bytes(plan(on_8));
}

}  // namespace
}  // namespace vram

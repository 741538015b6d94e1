// Strict input (issue 17): unknown request fields are errors with the nearest
// known field, duplicate keys are errors, syntax errors give line and column,
// every text has a size and a nesting limit, and human-readable sizes follow
// exact rules (README "Input rules").
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "vram/api.h"
#include "vram/json_reader.h"
#include "vram/request.h"
#include "vram/utf8.h"

namespace vram {
namespace {

json custom_request() {
  return {{"model", {{"custom", {{"layers", 2}, {"hidden", 64}, {"heads", 2}, {"vocab", 100}}}}}};
}

Error error_of(const json& out) {
  EXPECT_TRUE(out.contains("error")) << out.dump().substr(0, 300);
  if (!out.contains("error")) return {};
  return {out["error"]["code"], out["error"]["message"], out["error"]["path"]};
}

Error text_error(const std::string& text) { return error_of(json::parse(estimate_json(text))); }

// ---- ill-formed UTF-8 ------------------------------------------------------

// Found by fuzz_layout: a syntax error's message quotes the bytes last read,
// and a message that is not UTF-8 made error_json(...).dump() throw
// (nlohmann type_error 316) out of every *_json entry point, an abort natively
// and in WASM. tests/fuzz/regressions/layout/ keeps the input.
TEST(StrictInput, IllFormedUtf8InTheInputGivesAnErrorNotAThrow) {
  const std::string input = std::string(R"({"gpus":8,"tp":2,"pp":2)") + std::string(20, '\xff') + "}";
  for (const std::string& out : {estimate_json(input), layout_options_json(input), plan_json(input),
                                 model_info_json(input), estimate_json("\xc3")}) {
    const json j = json::parse(out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out;
    ASSERT_TRUE(j.contains("error")) << out;
    EXPECT_EQ(j["error"]["code"], "bad_json") << out;
    EXPECT_NO_THROW(j.dump());
  }
  const Error e = text_error(input);
  EXPECT_NE(e.message.find("line 1, column"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("\xEF\xBF\xBD"), std::string::npos) << e.message;  // U+FFFD for the bytes
}

TEST(StrictInput, ValidUtf8ReplacesEachMaximalSubpartAsTheWhatwgDecoderDoes) {
  // Valid text is unchanged, 1- to 4-byte sequences alike.
  const std::string ok = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z";  // a é € 😀 z
  EXPECT_EQ(valid_utf8(ok), ok);
  const std::string r = "\xEF\xBF\xBD";
  // A lone continuation byte, a bad lead, a truncated sequence (one U+FFFD
  // for its maximal subpart, then the next byte starts afresh), an overlong
  // E0 80, a surrogate ED A0 and a code point over U+10FFFF (F4 90): the
  // outputs of TextDecoder('utf-8') for the same bytes.
  EXPECT_EQ(valid_utf8("\x80"), r);
  EXPECT_EQ(valid_utf8("\xFF\xC0"), r + r);
  EXPECT_EQ(valid_utf8("\xE2\x82z"), r + "z");
  EXPECT_EQ(valid_utf8("\xE0\x80\x80"), r + r + r);
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), r + r + r);
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), r + r + r + r);
  EXPECT_EQ(valid_utf8("x\xF0\x9F\x98"), "x" + r);
}

// ---- unknown fields --------------------------------------------------------

struct Typo {
  const char* section;
  const char* key;
  const char* path;
  const char* suggestion;
};

TEST(StrictInput, UnknownFieldsNameTheNearestKnownOne) {
  for (const Typo& t : std::vector<Typo>{{"train", "seq_length", "train.seq_length", "train.seq_len"},
                                         {"train", "micro_batch_size", "train.micro_batch_size", "train.micro_batch"},
                                         {"train", "optimiser", "train.optimiser", "train.optimizer"},
                                         {"parallel", "zero_stage", "parallel.zero_stage", "parallel.zero"},
                                         {"infer", "context_length", "infer.context_length", "infer.context_len"},
                                         {"gpu", "memory_gb", "gpu.memory_gb", "gpu.memory_gib"}}) {
    json req = custom_request();
    req[t.section][t.key] = 1;
    const Error e = error_of(estimate(req));
    EXPECT_EQ(e.code, errc::kUnknownField) << t.key;
    EXPECT_EQ(e.path, t.path);
    EXPECT_NE(e.message.find(std::string("did you mean ") + t.suggestion + "?"), std::string::npos) << e.message;
  }
}

TEST(StrictInput, AFieldAtTheWrongLevelPointsToWhereItLives) {
  json req = custom_request();
  req["seq_len"] = 4096;
  const Error e = error_of(estimate(req));
  EXPECT_EQ(e.path, "seq_len");
  EXPECT_NE(e.message.find("did you mean train.seq_len?"), std::string::npos) << e.message;
}

TEST(StrictInput, HuggingFaceAndDeepSpeedKeysStayTheirOwn) {
  json req = {
      {"model",
       {{"config",
         {{"model_type", "llama"},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 2},
          {"vocab_size", 100},
          {"transformers_version", "4.99"},
          {"a_key_from_the_future", {{"x", 1}}}}}}},
      {"deepspeed", {{"zero_optimization", {{"stage", 0}, {"round_robin_gradients", true}}}, {"steps_per_print", 10}}}};
  const json out = estimate(req);
  EXPECT_FALSE(out.contains("error")) << out["error"];
}

TEST(StrictInput, PlanOptionsAreKnownToThePlanner) {
  json req = custom_request();
  req["gpu"] = {{"name", "H100 80GB"}};
  req["parallel"] = {{"gpus", 2}};
  req["plan"] = {{"top", 3}};
  EXPECT_FALSE(plan(req).contains("error"));
}

TEST(StrictInput, EveryUnknownKeyCanBeListed) {
  json req = custom_request();
  req["train"] = {{"seq_length", 1}, {"lora", {{"rnak", 8}}}};
  req["trian"] = json::object();
  const auto all = unknown_request_keys(req);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].path, "train.lora.rnak");
  EXPECT_EQ(all[1].path, "train.seq_length");
  EXPECT_EQ(all[2].path, "trian");
}

// ---- the text itself ---------------------------------------------------------

TEST(StrictInput, DuplicateKeysAreAnErrorNamingTheField) {
  const Error e = text_error(R"({"model": {"custom": {"layers": 2, "hidden": 64, "heads": 2, "vocab": 100}},
                                 "train": {"lora": {"rank": 8, "rank": 16}}})");
  EXPECT_EQ(e.code, errc::kBadJson);
  EXPECT_EQ(e.path, "train.lora.rank");
  EXPECT_NE(e.message.find("given twice"), std::string::npos) << e.message;
}

TEST(StrictInput, DuplicateKeysInsideAListAreNamedByIndex) {
  const Error e = text_error(R"({"model": {"config": {"model_type": "llava", "x": [{"a": 1}, {"b": 1, "b": 2}]}}})");
  EXPECT_EQ(e.path, "model.config.x[1].b");
}

TEST(StrictInput, SyntaxErrorsGiveLineAndColumn) {
  const Error e = text_error("{\n  \"train\": {\n    \"seq_len\": 20 48\n  }\n}");
  EXPECT_EQ(e.code, errc::kBadJson);
  EXPECT_NE(e.message.find("line 3, column 20"), std::string::npos) << e.message;
}

TEST(StrictInput, TextOverTheSizeLimitIsRefused) {
  const std::string text = custom_request().dump() + std::string(static_cast<size_t>(limits::kMaxInputBytes), ' ');
  const Error e = text_error(text);
  EXPECT_EQ(e.code, errc::kOutOfRange);
  EXPECT_NE(e.message.find("16 MiB"), std::string::npos) << e.message;
  // One byte under the limit is read.
  const std::string fits = custom_request().dump();
  EXPECT_FALSE(
      json::parse(estimate_json(fits + std::string(limits::kMaxInputBytes - fits.size(), ' '))).contains("error"));
}

TEST(StrictInput, NestingIsLimitedAt64Levels) {
  std::string ok = std::string(63, '[') + std::string(63, ']');
  EXPECT_NO_THROW(parse_json_text(ok, ""));
  const Error e = text_error(std::string(1000000, '['));
  EXPECT_EQ(e.code, errc::kOutOfRange);
  EXPECT_NE(e.message.find("deeper than 64 levels"), std::string::npos) << e.message;
  const Error in_config =
      text_error(R"({"model": {"config": {"a": )" + std::string(70, '[') + std::string(70, ']') + "}}}");
  // The root, model and config objects are 3 levels: the 62nd array is the 65th.
  std::string at = "model.config.a";
  for (int k = 0; k < 61; ++k) at += "[0]";
  EXPECT_EQ(in_config.path, at);
}

// ---- human-readable sizes ------------------------------------------------------

TEST(ParseSize, CountsTakeKMBTInEitherCase) {
  EXPECT_EQ(parse_size("7B", SizeUnit::kCount, "p"), 7'000'000'000);
  EXPECT_EQ(parse_size("7b", SizeUnit::kCount, "p"), 7'000'000'000);
  EXPECT_EQ(parse_size("6.7B", SizeUnit::kCount, "p"), 6'700'000'000);
  EXPECT_EQ(parse_size("125M", SizeUnit::kCount, "p"), 125'000'000);
  EXPECT_EQ(parse_size("1.5K", SizeUnit::kCount, "p"), 1500);
  EXPECT_EQ(parse_size("2T", SizeUnit::kCount, "p"), 2'000'000'000'000);
  EXPECT_EQ(parse_size("12345", SizeUnit::kCount, "p"), 12345);
}

TEST(ParseSize, BytesTellDecimalFromBinaryUnits) {
  EXPECT_EQ(parse_size("80GB", SizeUnit::kBytes, "p"), 80'000'000'000);
  EXPECT_EQ(parse_size("80GiB", SizeUnit::kBytes, "p"), int64_t{80} << 30);
  EXPECT_EQ(parse_size("512MiB", SizeUnit::kBytes, "p"), int64_t{512} << 20);
  EXPECT_EQ(parse_size("1.5GiB", SizeUnit::kBytes, "p"), int64_t{3} << 29);
  EXPECT_EQ(parse_size("4096B", SizeUnit::kBytes, "p"), 4096);
  EXPECT_EQ(parse_size("1TB", SizeUnit::kBytes, "p"), 1'000'000'000'000);
}

TEST(ParseSize, AmbiguousOrMalformedSizesAreErrorsNamingTheField) {
  for (const auto& [text, unit, why] : std::vector<std::tuple<std::string, SizeUnit, std::string>>{
           {"80G", SizeUnit::kBytes, "ambiguous"},
           {"80g", SizeUnit::kBytes, "ambiguous"},
           {"80Gb", SizeUnit::kBytes, "unknown unit"},
           {"80gib", SizeUnit::kBytes, "unknown unit"},
           {"80 GB", SizeUnit::kBytes, "unknown unit"},
           {"7.5.1B", SizeUnit::kCount, "unknown unit"},
           {"7.B", SizeUnit::kCount, "followed by digits"},
           {"B", SizeUnit::kCount, "start with digits"},
           {"-7B", SizeUnit::kCount, "start with digits"},
           {"1e9", SizeUnit::kCount, "unknown unit"},
           {"0x10", SizeUnit::kBytes, "unknown unit"},
           {"1.0000000001K", SizeUnit::kCount, "not a whole number"},
           {"1.5B", SizeUnit::kBytes, "not a whole number of bytes"},
           {"1.5", SizeUnit::kBytes, "a fraction needs a unit"},
           {"99999999999T", SizeUnit::kCount, "too large"},
           {"7GB", SizeUnit::kCount, "unknown unit"},
       }) {
    try {
      parse_size(text, unit, "gpu.memory_gib");
      ADD_FAILURE() << text << " was accepted";
    } catch (const Failure& f) {
      EXPECT_EQ(f.error().path, "gpu.memory_gib") << text;
      EXPECT_NE(f.error().message.find(why), std::string::npos) << text << ": " << f.error().message;
    }
  }
}

TEST(ParseSize, RequestsTakeSizesWhereSeed004Does) {
  json req = custom_request();
  req["model"]["custom"]["params"] = "1M";
  req["gpu"] = {{"memory_gib", "80GB"}};
  req["overheads"] = {{"cuda_context_bytes", "512MiB"}};
  const json out = estimate(req);
  ASSERT_FALSE(out.contains("error")) << out["error"];
  EXPECT_EQ(out["model"]["params_total"], 1'000'000);
  // "80GB" is 80 x 10^9 bytes: the same card as 80e9 / 2^30 GiB.
  json numeric = custom_request();
  numeric["gpu"] = {{"memory_gib", 80e9 / 1073741824.0}};
  EXPECT_EQ(out["fit"]["capacity_bytes"], estimate(numeric)["fit"]["capacity_bytes"]);
  EXPECT_EQ(out["gpus"].size(), estimate(numeric)["gpus"].size());
}

}  // namespace
}  // namespace vram

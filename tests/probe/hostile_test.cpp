// Hostile and careless configuration files (issue 33): the table
// tests/fixtures/hostile/cases.json, which site/tests/wasm/import.test.js
// runs through the page's reader and the CLI binary, run here through the
// CLI's own reader and importer (import_config_files), plus the readers' rules
// case by case (vram/import.h): npm yaml's alias rule, the value cap, one
// document, no key twice, non-finite numbers kept as text.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "commands.h"
#include "config_files.h"
#include "test_paths.h"
#include "vram/import.h"

namespace {

using vram::json;

std::string Hostile(const std::string& name) { return std::string(VRAM_FIXTURES_DIR) + "/hostile/" + name; }

json Cases() {
  std::ifstream in(Hostile("cases.json"));
  return json::parse(std::string(std::istreambuf_iterator<char>(in), {}))["cases"];
}

// The reader's failure for `text` (read as file "f.yaml"), or "" when it reads.
std::string ReadError(const std::string& text) {
  try {
    vram::cli::config_tree(text, "f.yaml");
  } catch (const vram::Failure& f) {
    return f.error().code + ": " + f.error().message;
  }
  return "";
}

TEST(Hostile, EveryFileOfTheTableGetsItsNamedErrorOrWarning) {
  const json cases = Cases();
  ASSERT_GE(cases.size(), 20u);
  for (const json& c : cases) {
    const std::string path = Hostile(c["file"]);
    const json r = vram::cli::import_config_files({path});
    if (c.contains("not_understood")) {
      ASSERT_FALSE(r.contains("error")) << path << "\n" << r.dump(2);
      const json& file = r["files"][0];
      EXPECT_TRUE(std::any_of(file["not_understood"].begin(), file["not_understood"].end(), [&](const json& n) {
        return n["key"] == c["not_understood"];
      })) << file.dump(2);
      EXPECT_FALSE(std::any_of(file["used"].begin(), file["used"].end(), [&](const json& u) {
        return u["key"] == c["not_understood"];
      })) << file.dump(2);
      continue;
    }
    ASSERT_TRUE(r.contains("error")) << path << "\n" << r.dump(2);
    const json& e = r["error"];
    EXPECT_EQ(e["code"], c["code"]) << e.dump(2);
    const std::string message = e["message"];
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(c["says"].get<std::string>()), std::string::npos) << message;
    if (c.contains("line")) {
      EXPECT_NE(message.find(path + " line " + std::to_string(c["line"].get<int>()) + ":"), std::string::npos)
          << message;
    }
    if (c.contains("key")) EXPECT_EQ(e["path"], path + ":" + c["key"].get<std::string>()) << e.dump(2);
  }
}

// npm yaml 2.x (nodes/Alias.js): an anchor's count starts at 1 and grows by one per alias; its
// alias count is 1 for a plain value, else the largest count x alias count of the anchors aliased
// inside it; count x alias count > 100 is "Excessive alias count".
TEST(Hostile, AliasesFollowNpmYamlsCount) {
  // A scalar aliased 99 times (count 100) reads; the 100th alias (count 101) does not.
  std::string ok = "a: &a x\nl: [";
  for (int i = 0; i < 99; ++i) ok += "*a,";
  EXPECT_EQ(ReadError(ok + "]\n"), "");
  EXPECT_NE(ReadError(ok + "*a]\n").find("out_of_range: f.yaml line 2: alias *a is expanded too often"),
            std::string::npos);
  // Nine strings, aliased nine times (count 10 x 1), then that list aliased nine times (10 x 10 = 100):
  // reads. One alias more of the third level (2 x 100 > 100) is refused, as npm yaml refuses it.
  const std::string three =
      "a: &a [l,l,l,l,l,l,l,l,l]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n";
  EXPECT_EQ(ReadError(three), "");
  EXPECT_NE(ReadError(three + "d: [*c]\n").find("line 4: alias *c is expanded too often"), std::string::npos);
  // An alias to an empty list counts 0 however often it is used; the values cap bounds it.
  EXPECT_EQ(ReadError("e: &e []\nl: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"), "");
  EXPECT_NE(ReadError("l: &l [1, *l]\n").find("bad_json: f.yaml line 1: alias *l is inside its own anchor"),
            std::string::npos);
}

TEST(Hostile, TheValueCapCountsExpandedAliases) {
  // 20,000 strings aliased five times: 100,000 expanded strings, more than the cap with the lists.
  std::string big = "a: &a [";
  for (int i = 0; i < 20000; ++i) big += "x,";
  big += "]\nb: [*a, *a, *a, *a, *a]\n";
  EXPECT_NE(ReadError(big).find("out_of_range: f.yaml line 2: more than 100000 values (aliases expanded)"),
            std::string::npos);
  // A JSON file holds no aliases (its size bounds it): import_files counts the same values. 1 root +
  // 1 micro-batch + 1 list + 99,997 numbers imports, one more does not.
  std::string list = "{\"train_micro_batch_size_per_gpu\": 2, \"wandb\": [0";
  for (int i = 1; i < vram::kMaxImportValues - 3; ++i) list += ",0";
  EXPECT_FALSE(json::parse(vram::cli::import_file_json(list + "]}")).contains("error"));
  EXPECT_EQ(json::parse(vram::cli::import_file_json(list + ",0]}"))["error"]["message"],
            "input: more than 100000 values, the limit on an imported file");
}

TEST(Hostile, ReadersRefuseSecondDocumentsAndKeysGivenTwice) {
  EXPECT_NE(ReadError("a: 1\n---\nb: 2\n").find("line 2: more after the end of the first document"), std::string::npos);
  EXPECT_NE(ReadError("{\"a\": 1} {\"b\": 2}").find("line 1: more after the end of the first document"),
            std::string::npos);
  EXPECT_NE(ReadError("a: 1\nb:\n  c: 1\n  c: 2\n").find("line 4: key \"c\" is given twice"), std::string::npos);
  EXPECT_NE(ReadError("{\n\"a\": {\"c\": 1,\n \"c\": 2}}").find("bad_json: f.yaml line 3: key \"c\" is given twice"),
            std::string::npos);
  // A key repeated in different mappings, or a comment after the document, is fine.
  EXPECT_EQ(ReadError("a: {c: 1}\nb: {c: 2}\n# end\n"), "");
  EXPECT_EQ(ReadError("{\"a\": {\"c\": 1}, \"b\": {\"c\": 2}}\n"), "");
}

TEST(Hostile, NumbersThatAreNotFiniteStayAsText) {
  const json j = vram::cli::config_tree("a: .inf\nb: -.Inf\nc: .NaN\nd: 1e400\ne: '.inf'\n", "f.yaml");
  EXPECT_EQ(j, json::parse(R"({"a": ".inf", "b": "-.inf", "c": ".nan", "d": ".inf", "e": ".inf"})"));
  // A JSON number beyond a double: nlohmann/json refuses it, the YAML reading keeps it as text.
  EXPECT_EQ(vram::cli::config_tree(R"({"n": -1e400})", "f.json"), json::parse(R"({"n": "-.inf"})"));
}

}  // namespace

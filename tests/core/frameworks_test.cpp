// train.framework: every framework the field accepts has one table of
// defaults (core/src/frameworks.cpp); each default is a declared request
// field with a value the parser accepts and a cited source; the defaults fill
// only what the request leaves out, and the result says which were applied.
#include "vram/frameworks.h"

#include <gtest/gtest.h>

#include "fixtures.h"
#include "vram/api.h"
#include "vram/fields.h"
#include "vram/releases.h"

namespace vram {
namespace {

json request(json train) {
  return {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
          {"task", "train"},
          {"train", std::move(train)}};
}

TEST(Frameworks, EveryAcceptedNameHasATableAndVersionListsThem) {
  const json version = json::parse(version_json());
  const FieldSpec& f = field("train.framework");
  EXPECT_EQ(version["frameworks"].size(), f.values.size());
  for (const auto& name : f.values) {
    EXPECT_NE(find_framework(name), nullptr) << name;
    EXPECT_NE(std::find(version["frameworks"].begin(), version["frameworks"].end(), name), version["frameworks"].end())
        << name;
  }
  EXPECT_EQ(frameworks().front().name, "hf");
  EXPECT_TRUE(frameworks().front().defaults.empty());  // the fields' own defaults are HF's
}

TEST(Frameworks, EveryDefaultIsADeclaredFieldWithAParsingValueAndASource) {
  for (const Framework& fw : frameworks()) {
    for (const FrameworkDefault& d : fw.defaults) {
      EXPECT_NE(find_field(d.path), nullptr) << fw.name << " " << d.path;
      EXPECT_FALSE(d.source.empty()) << fw.name << " " << d.path;
    }
    const json r = estimate(request({{"method", "lora"}, {"framework", fw.name}}));
    ASSERT_FALSE(r.contains("error")) << fw.name << ": " << r.dump();
    EXPECT_EQ(r["framework"]["name"], fw.name);
  }
}

TEST(Frameworks, DefaultsFillOnlyWhatTheRequestLeavesOutAndAreListed) {
  for (const Framework& fw : frameworks()) {
    for (const FrameworkDefault& d : fw.defaults) {
      // The recipe of the method the default belongs to, at a release it holds for.
      const std::string method = d.methods.empty() ? "lora" : d.methods.front();
      std::string release;
      for (const FrameworkRelease& r : releases_of(fw.name)) {
        if (version_in(r.version, d.releases)) release = r.version;
      }
      ASSERT_FALSE(release.empty()) << fw.name << " " << d.path << ": no release in " << d.releases;
      const json base = estimate(request({{"method", method}, {"framework", fw.name + "@" + release}}));
      ASSERT_FALSE(base.contains("error")) << fw.name << " " << method << ": " << base.dump();
      bool listed = false;
      for (const auto& a : base["framework"]["defaults_applied"]) {
        listed = listed || (a["path"] == d.path && a["value"] == d.value);
      }
      EXPECT_TRUE(listed) << fw.name << " " << method << " " << d.path;
    }
  }
  // A field the user sets wins over the framework's default.
  const Framework* tt = find_framework("torchtune");
  ASSERT_NE(tt, nullptr);
  for (const FrameworkDefault& d : tt->defaults) {
    if (d.path != "train.lora.rank") continue;
    const json r = estimate(request({{"method", "lora"}, {"framework", "torchtune"}, {"lora", {{"rank", 64}}}}));
    for (const auto& a : r["framework"]["defaults_applied"]) EXPECT_NE(a["path"], "train.lora.rank");
  }
}

TEST(Frameworks, TheDefaultFrameworkChangesNothing) {
  const json plain = estimate(request({{"method", "lora"}}));
  const json hf = estimate(request({{"method", "lora"}, {"framework", "hf"}}));
  EXPECT_EQ(plain["peak_bytes"], hf["peak_bytes"]);
  EXPECT_EQ(plain["framework"]["name"], "hf");
  EXPECT_TRUE(plain["framework"]["defaults_applied"].empty());
}

TEST(Frameworks, AnUnknownFrameworkNamesTheField) {
  const json r = estimate(request({{"framework", "nemo"}}));
  ASSERT_TRUE(r.contains("error"));
  EXPECT_EQ(r["error"]["path"], "train.framework");
}

}  // namespace
}  // namespace vram

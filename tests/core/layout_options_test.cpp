// The layout rules the page asks for (api.h layout_options_json) are the
// request parser's own: an option the answer allows parses, one it refuses
// is the parser's error on that field.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "vram/api.h"

namespace vram {
namespace {

json options(const json& parallel) { return json::parse(layout_options_json(parallel.dump())); }

json parse_error(json parallel) {
  const json r = estimate({{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
                           {"task", "train"},
                           {"parallel", std::move(parallel)}});
  return r.contains("error") ? r["error"] : json();
}

TEST(LayoutOptions, EveryAnswerIsWhatTheRequestParserAccepts) {
  for (int zero : {0, 1, 2, 3}) {
    for (const char* fsdp : {"", "no_shard", "shard_grad_op", "full_shard", "hybrid_shard"}) {
      if (zero > 0 && std::string(fsdp).size() > 0) continue;  // one or the other
      const json base = {{"gpus", 8}, {"zero", zero}, {"fsdp", fsdp}};
      const json o = options(base);
      for (const char* key : {"offload_optimizer", "offload_params", "distributed_optimizer"}) {
        json p = base;
        p[key] = true;
        if (std::string(key) == "offload_params") p["offload_optimizer"] = o["offload_optimizer"].get<bool>();
        const json err = parse_error(p);
        const bool refused = !err.is_null() && err["path"] == std::string("parallel.") + key;
        EXPECT_EQ(o[key].get<bool>(), !refused) << key << " zero " << zero << " fsdp '" << fsdp << "'";
      }
    }
  }
}

TEST(LayoutOptions, DataParallelFillsWhatTheOtherDegreesLeave) {
  EXPECT_EQ(options({{"gpus", 16}, {"tp", 2}, {"pp", 2}})["dp"], 4);
  EXPECT_EQ(options({{"gpus", 1}})["dp"], 1);
  EXPECT_EQ(options({{"gpus", 4}, {"tp", 8}})["dp"], 1);  // never below one
}

TEST(LayoutOptions, BadInputNamesTheField) {
  const json e = json::parse(layout_options_json(R"({"zero": 7})"));
  ASSERT_TRUE(e.contains("error"));
  EXPECT_EQ(e["error"]["path"], "parallel.zero");
  EXPECT_TRUE(json::parse(layout_options_json("not json")).contains("error"));
}

}  // namespace
}  // namespace vram

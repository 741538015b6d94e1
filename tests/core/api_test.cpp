// The JSON boundary (vram/api.h): what crosses it and what never does.
#include "vram/api.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fixtures.h"

namespace vram {
namespace {

// The page reads the model summary from the estimate, so an edit costs one
// call into the module: `result.model` is modelInfo's object for the same
// request plus `params_trainable`, for every bundled architecture and task.
TEST(Api, EstimateCarriesTheModelInfoOfItsRequest) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(VRAM_FIXTURES_DIR) + "/models")) {
    const json config = json::parse(testing::read_text("models/" + entry.path().filename().string()));
    for (const char* task : {"train", "infer"}) {
      SCOPED_TRACE(entry.path().filename().string() + " " + task);
      const json request = {{"model", {{"config", config}}}, {"task", task}};
      json result = estimate(request);
      ASSERT_FALSE(result.contains("error")) << result.dump();
      json model = result.at("model");
      ASSERT_TRUE(model.contains("params_trainable"));
      model.erase("params_trainable");
      EXPECT_EQ(model, model_info(request));
      ++checked;
    }
  }
  EXPECT_GE(checked, 2 * 40);
}

// Whatever the text, every text function answers an error object, never an
// exception (the one guard in api.cpp).
TEST(Api, TextFunctionsAnswerAnErrorObjectForAnyBadText) {
  for (const std::string text :
       {"", "{", "[]", "null", "3", "\"\\ud800\"", "{\"model\": 3}", "{\"task\": \"train\"}"}) {
    SCOPED_TRACE(text);
    for (const auto& out : {estimate_json(text), model_info_json(text), plan_json(text)}) {
      const json j = json::parse(out);
      ASSERT_TRUE(j.contains("error")) << out;
      EXPECT_FALSE(j["error"]["code"].get<std::string>().empty());
    }
  }
}

}  // namespace
}  // namespace vram

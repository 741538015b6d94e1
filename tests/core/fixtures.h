// Helpers that load test fixtures by name from tests/fixtures/.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "test_paths.h"
#include "vram/json_reader.h"

namespace vram::testing {

inline std::string read_text(const std::string& relative) {
  std::ifstream in(std::string(VRAM_FIXTURES_DIR) + "/" + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "meta-llama/Llama-3.1-8B" -> the parsed tests/fixtures/models/meta-llama__Llama-3.1-8B.json
inline json model_config(const std::string& hf_id) {
  std::string file = hf_id;
  const auto slash = file.find('/');
  if (slash != std::string::npos) file.replace(slash, 1, "__");
  return json::parse(read_text("models/" + file + ".json"));
}

}  // namespace vram::testing

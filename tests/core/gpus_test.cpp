// find_gpu (core/src/gpus.cpp): every catalog name, however it is spelt, finds
// its own card; the comparison in place (issue 32) keeps the first card whose
// normalised name is the key's.
#include "vram/gpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace vram {
namespace {

TEST(FindGpu, EveryCatalogNameFindsItsOwnCardHoweverSpelt) {
  for (const GpuInfo& g : gpu_catalog()) {
    std::string lower = g.name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return c == ' ' ? '-' : static_cast<char>(std::tolower(c)); });
    EXPECT_EQ(find_gpu(g.name), &g) << g.name;
    EXPECT_EQ(find_gpu(lower), &g) << lower;
    EXPECT_EQ(find_gpu(" " + std::string(g.name) + " "), &g) << g.name;
  }
}

TEST(FindGpu, NamesLongerThanACardOrEmptyFindNone) {
  EXPECT_EQ(find_gpu("H100 80GBX"), nullptr);
  EXPECT_EQ(find_gpu("Z9"), nullptr);
  EXPECT_EQ(find_gpu(" - "), nullptr);
  EXPECT_EQ(find_gpu(""), nullptr);
  ASSERT_NE(find_gpu("a100-80gb"), nullptr);
  EXPECT_STREQ(find_gpu("a100-80gb")->name, "A100 80GB");
}

}  // namespace
}  // namespace vram

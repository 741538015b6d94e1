// Every answer of the request corpus (tests/corpus/corpus.h) is the one kept in
// tests/fixtures/corpus/digests.json: a change meant only to make the
// estimator faster moves none of them (issue 32). A change meant to move
// estimates runs `make corpus` and says so, with the validation before/after.
#include "corpus/corpus.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test_paths.h"

namespace {

TEST(Corpus, EveryAnswerMatchesItsDigest) {
  std::ifstream in(std::string(VRAM_FIXTURES_DIR) + "/corpus/digests.json");
  ASSERT_TRUE(in) << "tests/fixtures/corpus/digests.json is missing: make corpus";
  std::stringstream s;
  s << in.rdbuf();
  const vram::json kept = vram::json::parse(s.str());
  const auto cases = vram::corpus::cases(VRAM_FIXTURES_DIR);
  EXPECT_EQ(kept["count"].get<size_t>(), cases.size()) << "the corpus changed: make corpus";
  int moved = 0;
  for (const auto& c : cases) {
    const auto it = kept["digests"].find(c.label);
    const std::string now = vram::corpus::digest(vram::corpus::answer(c));
    if (it == kept["digests"].end() || it->get<std::string>() != now) {
      if (++moved <= 20) ADD_FAILURE() << c.label << ": the answer moved (" << c.call << ")";
    }
  }
  EXPECT_EQ(moved, 0) << moved << " answers moved; if the change is meant to move estimates, run `make corpus` "
                      << "and report the validation before/after (make validate)";
}

}  // namespace

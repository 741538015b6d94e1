// vram_corpus: the request corpus's answers (corpus.h).
//
//   vram_corpus digests FILE   writes {"count", "digests": {label: FNV-1a 64}} (make corpus:
//                              tests/fixtures/corpus/digests.json)
//   vram_corpus answers FILE   writes every answer in full, one "label<TAB>answer" a line, to compare
//                              two builds byte for byte (cmp / diff)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "corpus/corpus.h"
#include "test_paths.h"

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "digests" && std::string(argv[1]) != "answers")) {
    std::fprintf(stderr, "usage: vram_corpus digests|answers FILE\n");
    return 2;
  }
  const bool full = std::string(argv[1]) == "answers";
  const auto start = std::chrono::steady_clock::now();
  const auto cases = vram::corpus::cases(VRAM_FIXTURES_DIR);
  std::ofstream out(argv[2]);
  vram::json digests = vram::json::object();
  std::vector<std::pair<double, std::string>> slowest;
  for (const auto& c : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string a = vram::corpus::answer(c);
    slowest.emplace_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), c.label);
    if (full) {
      std::string one_line = a;
      for (char& ch : one_line) {
        if (ch == '\n') ch = ' ';
      }
      out << c.label << '\t' << one_line << '\n';
    } else {
      digests[c.label] = vram::corpus::digest(a);
    }
  }
  if (!full) out << vram::json({{"count", cases.size()}, {"digests", digests}}).dump(1) << '\n';
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "%zu cases in %.2f s; the slowest:\n", cases.size(), s);
  std::sort(slowest.rbegin(), slowest.rend());
  for (size_t i = 0; i < slowest.size() && i < 12; ++i) {
    std::fprintf(stderr, "  %8.1f ms  %s\n", slowest[i].first * 1e3, slowest[i].second.c_str());
  }
  return 0;
}

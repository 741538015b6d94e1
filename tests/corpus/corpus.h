// The request corpus whose answers must not move when only speed changes
// (issue 32): every validation request, and a sweep of jobs over every
// fixture model (tests/fixtures/models), estimated, planned and given
// suggestions. tests/fixtures/corpus/digests.json keeps a digest of each
// answer; `Corpus.EveryAnswerMatchesItsDigest` (tests/core/corpus_test.cpp)
// checks them, and `make corpus` rewrites them after a change that is meant to
// move estimates (report the validation before/after with it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vram/api.h"

namespace vram::corpus {

struct Case {
  std::string label;  // unique: "<source>/<model or row>/<variant>"
  std::string call;   // "estimate", "plan" or "suggest"
  json request;
};

// Every case, in a fixed order; `fixtures` is tests/fixtures.
std::vector<Case> cases(const std::string& fixtures);

// The call's answer as the page and the CLI get it (the result text).
std::string answer(const Case& c);

// FNV-1a 64 of the text, 16 hex digits.
std::string digest(const std::string& text);

}  // namespace vram::corpus

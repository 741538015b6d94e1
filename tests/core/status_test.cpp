// fail() and recover() (status.h). This file is built twice: into
// vram_core_tests, with C++ exceptions (fail() throws), and into
// vram_status_noexc_tests, without (VRAM_NO_EXCEPTIONS: fail() longjmps, as
// in the WASM modules). Both must pass the same tests.
#include "vram/status.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memory/bytes.h"

namespace vram {
namespace {

TEST(Status, RecoverReturnsNothingWhenTheBodyFinishes) {
  int ran = 0;
  const auto e = recover([&] { ran = 1; });
  EXPECT_FALSE(e.has_value());
  EXPECT_EQ(ran, 1);
}

TEST(Status, RecoverReturnsTheErrorAndStopsTheBodyAtFail) {
  int after = 0;
  const auto e = recover([&] {
    fail(errc::kOutOfRange, "train.seq_len", "train.seq_len must be between 1 and 16777216, got 0");
    after = 1;  // never reached
  });
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, errc::kOutOfRange);
  EXPECT_EQ(e->path, "train.seq_len");
  EXPECT_EQ(e->message, "train.seq_len must be between 1 and 16777216, got 0");
  EXPECT_EQ(after, 0);
}

TEST(Status, TheInnermostRecoverStopsAFailure) {
  std::vector<std::string> seen;
  const auto outer = recover([&] {
    const auto inner = recover([&] { fail(errc::kWrongType, "a", "inner"); });
    seen.push_back(inner ? inner->message : "none");
    seen.push_back("outer went on");
  });
  EXPECT_FALSE(outer.has_value());
  EXPECT_EQ(seen, (std::vector<std::string>{"inner", "outer went on"}));
  // The inner scope is gone: a later failure reaches the outer one.
  const auto again = recover([&] {
    (void)recover([] {});
    fail(errc::kMissingField, "b", "after the inner scope");
  });
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->path, "b");
}

// A failure may come from deep inside the work (a config reader called
// from a family builder called from the registry).
int descend(int depth) {
  if (depth == 0) fail(errc::kInconsistent, "model.config.hidden_size", "deep");
  return descend(depth - 1) + 1;
}

TEST(Status, RecoverStopsAFailureFromDeepRecursion) {
  const auto e = recover([] { (void)descend(2000); });
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->message, "deep");
}

TEST(Status, AnInternalFailurePassesRecoverWithoutInternal) {
  std::string inner_saw = "nothing";
  const auto e = recover(
      [&] {
        const auto inner = recover([] { fail_internal("json.exception.type_error.302"); });
        inner_saw = inner ? inner->code : "nothing";  // never reached: the failure passes it
      },
      /*internal=*/true);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, errc::kInternal);
  EXPECT_EQ(e->message, "internal error: json.exception.type_error.302");
  EXPECT_EQ(inner_saw, "nothing");
}

TEST(Status, RecoverWithInternalStopsOrdinaryFailuresToo) {
  const auto e = recover([] { fail(errc::kBadJson, "", "not JSON"); }, /*internal=*/true);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, errc::kBadJson);
}

TEST(Status, AFailureToTheApiPassesRecoverWithoutInternalAndKeepsItsError) {
  std::string inner_saw = "nothing";
  const auto e = recover(
      [&] {
        const auto inner = recover([] {
          fail_to_api(
              Error{errc::kNotInModule, "model_type \"gemma3\" is in the full module", "model.config.model_type"});
        });
        inner_saw = inner ? inner->code : "nothing";  // never reached: the failure passes it
      },
      /*internal=*/true);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, errc::kNotInModule);
  EXPECT_EQ(e->path, "model.config.model_type");
  EXPECT_EQ(e->message, "model_type \"gemma3\" is in the full module");
  EXPECT_EQ(inner_saw, "nothing");
  // attempt() without internal lets it pass too.
  const auto outer =
      recover([] { (void)attempt<int>([]() -> int {
                     fail_to_api(Error{errc::kNotInModule, "m", "p"});
                   }); },
              /*internal=*/true);
  ASSERT_TRUE(outer.has_value());
  EXPECT_EQ(outer->code, errc::kNotInModule);
}

TEST(Status, AFailureRestoresTheBytesDriverPath) {
  const bytes::Driver outer("train.seq_len");
  const auto e = recover([] {
    const bytes::Driver inner("infer.batch");
    EXPECT_EQ(bytes::driver(), "infer.batch");
    bytes::too_large("the KV cache");
  });
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->path, "infer.batch");
  EXPECT_EQ(bytes::driver(), "train.seq_len");
}

TEST(Status, EveryRecoveredFailureIsCounted) {
  const uint64_t before = unwind_count();
  (void)recover([] {});
  EXPECT_EQ(unwind_count(), before);
  (void)recover([] { fail(errc::kWrongType, "x", "one"); });
  (void)recover([] { (void)recover([] { fail(errc::kWrongType, "x", "two"); }); });
  EXPECT_EQ(unwind_count(), before + 2);
}

TEST(Status, AttemptReturnsTheValueOrTheError) {
  const Result<int> ok = attempt<int>([] { return 42; });
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), 42);
  const Result<std::string> bad = attempt<std::string>([]() -> std::string {
    fail(errc::kUnknownValue, "train.method", "train.method \"sft\" is not one of full, lora, qlora");
  });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().path, "train.method");
  // A body returning a Result passes its own error through.
  const Result<int> passed = attempt<int>([]() -> Result<int> { return Error{errc::kUnsupported, "m", "p"}; });
  ASSERT_FALSE(passed.ok());
  EXPECT_EQ(passed.error().code, errc::kUnsupported);
}

}  // namespace
}  // namespace vram

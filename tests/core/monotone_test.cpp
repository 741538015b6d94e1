// Issue 33: estimates never shrink as the job grows. Over every fixture
// model (tests/fixtures/models/), a full fine-tune:
//   - micro-batch 1..8, 16, 32, 64 at 1024 tokens, and 128 to 32768 tokens
//     (powers of two) at micro-batch 1, without a card: the device, reserved
//     and allocated peaks never fall; the reserved range's lower end never
//     exceeds its upper end (estimate_train.cpp smaller_jobs: the range is
//     monotone exactly over these sizes: every micro-batch up to 8, then
//     powers of two; sequences at powers of two);
//   - a sweep whose smallest and largest jobs straddle an H100 80GB (the
//     only sweeps whose verdict can change) runs on that card instead (the
//     card's searches make each answer several times dearer, so the others
//     run without it, to keep the test to seconds): the same figures never
//     fall, the verdict never says a larger job fits where a smaller one
//     does not, and each verdict agrees with fit.max_micro_batch /
//     fit.max_seq_len;
//   - ZeRO-3 over 1, 2, 4, ..., 128 GPUs with NVLS buffers: the per-GPU peak
//     less the NCCL buffers never grows, and where the peak itself grows the
//     result says the NCCL buffers grew (estimate_train.cpp nccl_growth_note).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.h"
#include "test_paths.h"
#include "vram/api.h"

namespace vram {
namespace {

std::vector<std::string> fixture_models() {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::directory_iterator(std::string(VRAM_FIXTURES_DIR) + "/models")) {
    std::string id = f.path().stem().string();
    id.replace(id.find("__"), 2, "/");
    out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A full fine-tune of `config`; on `gpu` when given (the fit verdict and
// the searches then run).
json train_request(const json& config, int64_t micro_batch, int64_t seq_len, const char* gpu = nullptr) {
  json r = {{"model", {{"config", config}}},
            {"task", "train"},
            {"train", {{"method", "full"}, {"micro_batch", micro_batch}, {"seq_len", seq_len}}}};
  if (gpu != nullptr) r["gpu"] = {{"name", gpu}};
  return r;
}

bool has_note(const json& r, const std::string& text) {
  for (const auto& a : r["assumptions"]) {
    if (a.get<std::string>().find(text) != std::string::npos) return true;
  }
  return false;
}

int64_t nccl_bytes(const json& r) {
  for (const auto& c : r["components"]) {
    if (c["key"] == "nccl") return c["bytes"].get<int64_t>();
  }
  return 0;
}

constexpr const char* kCard = "H100 80GB";
const std::vector<int64_t> kBatches = {1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64};  // at 1024 tokens

std::vector<int64_t> seq_lens() {  // at micro-batch 1
  std::vector<int64_t> out;
  for (int64_t s = 128; s <= 32768; s *= 2) out.push_back(s);
  return out;
}

// The answers for one axis of one model, smallest job first.
std::vector<json> sweep(const json& config, bool batch_axis, const char* gpu = nullptr) {
  std::vector<json> out;
  for (int64_t n : batch_axis ? kBatches : seq_lens()) {
    out.push_back(estimate(train_request(config, batch_axis ? n : 1, batch_axis ? 1024 : n, gpu)));
  }
  return out;
}

// No figure falls as the job grows; the range's lower end never exceeds its
// upper end.
void expect_figures_monotone(const std::string& at_model, const std::vector<int64_t>& sizes,
                             const std::vector<json>& answers) {
  for (size_t i = 0; i < answers.size(); ++i) {
    const json& r = answers[i];
    const std::string at = at_model + " " + std::to_string(sizes[i]);
    ASSERT_FALSE(r.contains("error")) << at << ": " << r.dump();
    EXPECT_LE(r["peak_reserved_low_bytes"].get<int64_t>(), r["peak_reserved_bytes"].get<int64_t>()) << at;
    if (i == 0) continue;
    const json& p = answers[i - 1];
    const std::string after = at + " after " + std::to_string(sizes[i - 1]);
    for (const char* key : {"peak_bytes", "peak_reserved_bytes", "peak_allocated_bytes"}) {
      EXPECT_GE(r[key].get<int64_t>(), p[key].get<int64_t>()) << key << " falls: " << after;
    }
  }
}

// On a card: the verdict never turns from "does not fit" to "fits" as the job
// grows, and agrees with the search's answer (`search`: fit.max_micro_batch
// or fit.max_seq_len).
void expect_verdicts_monotone(const std::string& at_model, const std::vector<int64_t>& sizes,
                              const std::vector<json>& answers, const char* search) {
  for (size_t i = 0; i < answers.size(); ++i) {
    const std::string at = at_model + " " + std::to_string(sizes[i]);
    ASSERT_FALSE(answers[i].contains("error")) << at << ": " << answers[i].dump();
    const bool fits = answers[i]["fit"]["fits"].get<bool>();
    EXPECT_EQ(fits, sizes[i] <= answers[i]["fit"][search].get<int64_t>()) << at << " against fit." << search;
    if (i > 0) EXPECT_FALSE(fits && !answers[i - 1]["fit"]["fits"].get<bool>()) << at << " fits, a smaller job not";
  }
}

// Whether the card's verdict can change along the sweep: the smallest and the
// largest job without a card straddle what it holds (10 % either side: the
// card's bounded replay differs a little). Elsewhere the verdict is the same
// at every size.
bool crosses_card(const json& smallest, const json& largest) {
  constexpr double kCardBytes = 80.0 * 1024 * 1024 * 1024;
  return smallest["peak_bytes"].get<double>() <= kCardBytes * 1.1 &&
         largest["peak_bytes"].get<double>() >= kCardBytes * 0.9;
}

// One axis over every fixture model: the figures without a card, then on
// the card where they cross it.
void expect_axis_monotone(bool batch_axis) {
  const std::vector<int64_t> sizes = batch_axis ? kBatches : seq_lens();
  const std::string axis = batch_axis ? " micro_batch" : " seq_len";
  int crossing = 0;
  for (const std::string& id : fixture_models()) {
    const json config = testing::model_config(id);
    // The sweep runs once: on the card where its verdict can change (the
    // figures are checked there too), else without one (no searches).
    const auto request = [&](int64_t n) { return train_request(config, batch_axis ? n : 1, batch_axis ? 1024 : n); };
    const json smallest = estimate(request(sizes.front()));
    const json largest = estimate(request(sizes.back()));
    ASSERT_FALSE(smallest.contains("error") || largest.contains("error")) << id << axis;
    if (!crosses_card(smallest, largest)) {
      expect_figures_monotone(id + axis, sizes, sweep(config, batch_axis));
      continue;
    }
    ++crossing;
    const std::vector<json> on_card = sweep(config, batch_axis, kCard);
    expect_figures_monotone(id + " on the card" + axis, sizes, on_card);
    expect_verdicts_monotone(id + axis, sizes, on_card, batch_axis ? "max_micro_batch" : "max_seq_len");
  }
  EXPECT_GE(crossing, batch_axis ? 20 : 10);  // the sweeps whose verdict changes on the card
}

TEST(Monotone, NothingFallsAndNoVerdictTurnsToFitAsTheMicroBatchGrows) { expect_axis_monotone(true); }

TEST(Monotone, NothingFallsAndNoVerdictTurnsToFitAsTheSequenceGrows) { expect_axis_monotone(false); }

TEST(Monotone, MoreZero3GpusNeverCostMoreThanTheirNcclBuffers) {
  for (const std::string& id : fixture_models()) {
    const json config = testing::model_config(id);
    json previous;
    for (int64_t g = 1; g <= 128; g *= 2) {
      json req = train_request(config, 1, 1024);
      // NVLS buffers (an NVSwitch board's, as on an H100 SXM) scale with the
      // ranks in a node: the NCCL term that grows with the GPUs.
      req["parallel"] = {{"gpus", g}, {"zero", 3}, {"nvls", g > 1}};
      json r = estimate(req);
      const std::string at = id + " ZeRO-3 gpus " + std::to_string(g);
      ASSERT_FALSE(r.contains("error")) << at << ": " << r.dump();
      if (!previous.is_null()) {
        const int64_t peak = r["peak_bytes"].get<int64_t>();
        const int64_t before = previous["peak_bytes"].get<int64_t>();
        EXPECT_LE(peak - nccl_bytes(r), before - nccl_bytes(previous)) << at;
        if (peak > before) EXPECT_TRUE(has_note(r, "NCCL buffers grow with the GPUs")) << at;
      }
      previous = std::move(r);
    }
  }
}

}  // namespace
}  // namespace vram

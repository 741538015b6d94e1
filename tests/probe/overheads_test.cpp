// The context-size measurement, against a FakeSource that plays both NVML
// and the CUDA runtime.
#include "measure/overheads.h"

#include <gtest/gtest.h>

#include "probe/fake_source.h"

namespace vram::probe {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

class OverheadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuFacts gpu;
    gpu.index = 0;
    gpu.memory.total = 81920 * kMiB;
    gpu.memory.used = 8 * kMiB;
    gpu.memory.free = 81912 * kMiB;
    source_.set_gpus({gpu});
  }
  FakeSource source_;
};

TEST_F(OverheadsTest, ContextBytesAreThisProcessesUsageAfterCudaFree) {
  // 274 MiB: the order of a lazily loaded context (research §2.1: 256 MiB to
  // 0.6 GiB with CUDA_MODULE_LOADING=LAZY).
  source_.set_context_bytes(274 * kMiB);
  Result<OverheadsResult> r = MeasureOverheads(source_, 0, source_, 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(source_.context_created());
  EXPECT_EQ(r.value().method, "nvml_process_used");
  EXPECT_EQ(r.value().cuda_context_bytes, 274 * kMiB);
  EXPECT_EQ(r.value().before.used, 8 * kMiB);
  EXPECT_EQ(r.value().after.used, (8 + 274) * kMiB);
}

TEST_F(OverheadsTest, OtherProcessesOnTheDeviceAreNoted) {
  FakeSource::Step busy;
  busy.memory.total = 81920 * kMiB;
  busy.memory.used = 4096 * kMiB;
  busy.processes = {{4242, 4096 * kMiB}};
  source_.set_steps({busy});
  source_.set_context_bytes(300 * kMiB);
  Result<OverheadsResult> r = MeasureOverheads(source_, 0, source_, 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r.value().errors.empty());
  EXPECT_EQ(r.value().errors.front().code(), StatusCode::kDeviceBusy);
  EXPECT_EQ(r.value().cuda_context_bytes, 300 * kMiB);
}

TEST_F(OverheadsTest, FailingContextCreationIsAnError) {
  Result<OverheadsResult> r = MeasureOverheads(source_, 5, source_, 5);
  ASSERT_FALSE(r.ok());
}

}  // namespace
}  // namespace vram::probe

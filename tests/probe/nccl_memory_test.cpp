// The NCCL measurement, against FakeSource (NVML and the CUDA runtime) and
// FakeCollectives (NCCL): what counts as NCCL's, how the figure splits
// between ncclCommInitAll and the first all-reduce, and what fails how.
#include "measure/nccl_memory.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>
#include <vector>

#include "probe/fake_collectives.h"
#include "probe/fake_source.h"

namespace vram::probe {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = std::string(old);
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::vector<GpuFacts> Gpus(unsigned count) {
  std::vector<GpuFacts> gpus;
  for (unsigned i = 0; i < count; ++i) {
    GpuFacts gpu;
    gpu.index = i;
    gpu.memory.total = 81920 * kMiB;
    gpu.memory.used = 8 * kMiB;
    gpu.memory.free = 81912 * kMiB;
    gpus.push_back(gpu);
  }
  return gpus;
}

class NcclMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_.set_gpus(Gpus(2));
    // A lazily loaded context (research §2.1): present in every reading, so
    // it must not count as NCCL's.
    source_.set_context_bytes(300 * kMiB);
  }

  Result<NcclMeasurement> Measure(const std::vector<unsigned>& devices, std::size_t bytes = 4 * kMiB) {
    return MeasureNccl(source_, devices, source_, devices, nccl_, bytes);
  }

  FakeSource source_;
  FakeCollectives nccl_{&source_};
};

TEST_F(NcclMemoryTest, InitAndFirstAllReduceAreSplitAndSumToTheAnswer) {
  // NVLink pair, NCCL 2.22+ defaults: a little at init, the connections'
  // buffers at the first collective (research §2.4; nccl#964 saw 544 MB per
  // 2-rank group after one all-reduce).
  nccl_.set_init_bytes({12 * kMiB, 12 * kMiB});
  nccl_.set_first_collective_bytes({532 * kMiB, 532 * kMiB});
  Result<NcclMeasurement> r = Measure({0, 1});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const NcclMeasurement& m = r.value();
  EXPECT_EQ(m.method, "nvml_process_used");
  ASSERT_EQ(m.devices.size(), 2u);
  for (const NcclDeviceResult& d : m.devices) {
    EXPECT_EQ(d.init_bytes, 12 * kMiB);
    EXPECT_EQ(d.first_collective_bytes, 532 * kMiB);
    EXPECT_EQ(d.nccl_bytes, 544 * kMiB);
    // The base already holds the context and the 4 MiB all-reduce buffer.
    EXPECT_EQ(d.base.process_used_bytes, (300 + 4) * kMiB);
  }
  EXPECT_EQ(m.nccl_bytes, 544 * kMiB);
  EXPECT_EQ(m.all_reduce_bytes, 4 * kMiB);
  EXPECT_EQ(nccl_.all_reduces(), 1);
  EXPECT_EQ(nccl_.releases(), 1);
  EXPECT_TRUE(m.errors.empty());
}

TEST_F(NcclMemoryTest, TheAnswerIsTheBusiestGpu) {
  source_.set_gpus(Gpus(4));
  nccl_.set_init_bytes({10 * kMiB, 10 * kMiB, 10 * kMiB, 10 * kMiB});
  nccl_.set_first_collective_bytes({600 * kMiB, 680 * kMiB, 640 * kMiB, 600 * kMiB});
  Result<NcclMeasurement> r = Measure({0, 1, 2, 3});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().nccl_bytes, 690 * kMiB);
  EXPECT_EQ(r.value().devices[1].nccl_bytes, 690 * kMiB);
  EXPECT_EQ(r.value().devices[3].nccl_bytes, 610 * kMiB);
}

TEST_F(NcclMemoryTest, TheRanksFollowTheListedOrder) {
  source_.set_gpus(Gpus(4));
  nccl_.set_first_collective_bytes({100 * kMiB, 200 * kMiB});
  Result<NcclMeasurement> r = Measure({3, 1});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(nccl_.devices(), (std::vector<unsigned>{3, 1}));
  EXPECT_EQ(r.value().devices[0].device, 3u);
  EXPECT_EQ(r.value().devices[0].nccl_bytes, 100 * kMiB);
  EXPECT_EQ(r.value().devices[1].nccl_bytes, 200 * kMiB);
}

TEST_F(NcclMemoryTest, WithoutThisProcessInTheListTheDeviceDeltaIsUsed) {
  // The meter is a different source from the runtime, so it never lists this
  // process (as under some containers and WDDM): only `used` moves.
  FakeSource meter;
  meter.set_gpus(Gpus(2));
  FakeCollectives nccl(&meter);
  nccl.set_init_bytes({16 * kMiB, 16 * kMiB});
  nccl.set_first_collective_bytes({512 * kMiB, 520 * kMiB});
  Result<NcclMeasurement> r = MeasureNccl(meter, {0, 1}, source_, {0, 1}, nccl, 4 * kMiB);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().method, "device_used_delta");
  EXPECT_EQ(r.value().devices[0].init_bytes, 16 * kMiB);
  EXPECT_EQ(r.value().devices[0].first_collective_bytes, 512 * kMiB);
  EXPECT_EQ(r.value().devices[1].nccl_bytes, 536 * kMiB);
  EXPECT_EQ(r.value().nccl_bytes, 536 * kMiB);
  EXPECT_FALSE(r.value().devices[0].base.process_used_bytes.has_value());
}

TEST_F(NcclMemoryTest, OtherProcessesOnTheGpusAreNoted) {
  FakeSource::Step busy;
  busy.memory = Gpus(1)[0].memory;
  busy.processes = {{4242, 4096 * kMiB}};
  source_.set_steps({busy});
  nccl_.set_first_collective_bytes({500 * kMiB, 500 * kMiB});
  Result<NcclMeasurement> r = Measure({0, 1});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r.value().errors.size(), 2u);  // once per GPU, at the base reading
  EXPECT_EQ(r.value().errors[0].code(), StatusCode::kDeviceBusy);
  EXPECT_NE(r.value().errors[0].message().find("process 4242 holds memory on device 0"), std::string::npos)
      << r.value().errors[0].message();
  EXPECT_EQ(r.value().nccl_bytes, 500 * kMiB);
}

TEST_F(NcclMemoryTest, UsedMemoryGoingDownLeavesNoFigure) {
  // Device readings only (no process entry), and another process frees
  // 1 GiB on GPU 1 between init and the all-reduce.
  FakeSource meter;
  meter.set_gpus(Gpus(2));
  auto step = [](std::uint64_t used_mib) {
    FakeSource::Step s;
    s.memory.total = 81920 * kMiB;
    s.memory.used = used_mib * kMiB;
    return s;
  };
  // Memory() calls in order: base 0, 1; after init 0, 1; after the all-reduce 0, 1.
  meter.set_steps({step(2000), step(2000), step(2010), step(2010), step(2500), step(1500)});
  FakeCollectives nccl(&meter);
  Result<NcclMeasurement> r = MeasureNccl(meter, {0, 1}, source_, {0, 1}, nccl, 4 * kMiB);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().method, "device_used_delta");
  EXPECT_EQ(r.value().devices[0].nccl_bytes, 500 * kMiB);
  EXPECT_FALSE(r.value().devices[1].nccl_bytes.has_value());
  EXPECT_FALSE(r.value().nccl_bytes.has_value()) << "a missing GPU could be the busiest";
  ASSERT_FALSE(r.value().errors.empty());
  EXPECT_NE(r.value().errors.back().message().find("device 1"), std::string::npos);
}

TEST_F(NcclMemoryTest, FewerThanTwoGpusIsAnError) {
  Result<NcclMeasurement> r = Measure({0});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("at least 2 GPUs"), std::string::npos) << r.status().message();
  EXPECT_TRUE(nccl_.devices().empty()) << "nothing was prepared";
  EXPECT_FALSE(source_.context_created());
}

TEST_F(NcclMemoryTest, AGpuListedTwiceIsAnError) {
  Result<NcclMeasurement> r = Measure({1, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("GPU 1 is listed twice"), std::string::npos) << r.status().message();
}

TEST_F(NcclMemoryTest, ABufferOfPartialFloatsIsAnError) {
  Result<NcclMeasurement> r = Measure({0, 1}, 6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("multiple of 4 bytes"), std::string::npos) << r.status().message();
}

TEST_F(NcclMemoryTest, AFailingAllReduceIsReportedAndReleaseStillRuns) {
  nccl_.set_all_reduce_error(Status(StatusCode::kNcclError, "NCCL error 1 ncclUnhandledCudaError in ncclAllReduce"));
  Result<NcclMeasurement> r = Measure({0, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNcclError);
  EXPECT_NE(r.status().message().find("ncclAllReduce"), std::string::npos) << r.status().message();
  EXPECT_EQ(nccl_.releases(), 1);
}

TEST_F(NcclMemoryTest, AFailingInitIsReportedAndReleaseStillRuns) {
  nccl_.set_init_error(Status(StatusCode::kNoGpu, "CUDA error 35 cudaErrorInsufficientDriver"));
  Result<NcclMeasurement> r = Measure({0, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNoGpu);
  EXPECT_EQ(nccl_.all_reduces(), 0);
  EXPECT_EQ(nccl_.releases(), 1);
}

TEST_F(NcclMemoryTest, AFailingContextIsAnErrorBeforeNcclIsTouched) {
  FakeSource meter;
  meter.set_gpus(Gpus(2));
  FakeSource runtime;  // knows no GPU, so CreateContext fails
  Result<NcclMeasurement> r = MeasureNccl(meter, {0, 1}, runtime, {0, 1}, nccl_, 4 * kMiB);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no fake GPU 0"), std::string::npos) << r.status().message();
  EXPECT_TRUE(nccl_.devices().empty());
}

TEST_F(NcclMemoryTest, TheVersionAndTheNcclVariablesAreRecorded) {
  ScopedEnv nvls("NCCL_NVLS_ENABLE", "0");
  ScopedEnv buffsize("NCCL_BUFFSIZE", nullptr);
  nccl_.set_version("2.26.2");
  Result<NcclMeasurement> r = Measure({0, 1});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().nccl_version, "2.26.2");
  ASSERT_EQ(r.value().environment.size(), kNcclMemoryVariables.size());
  bool saw_nvls = false;
  for (const auto& [name, value] : r.value().environment) {
    if (name == "NCCL_NVLS_ENABLE") {
      saw_nvls = true;
      EXPECT_EQ(value, "0");
    }
    if (name == "NCCL_BUFFSIZE") EXPECT_FALSE(value.has_value());
  }
  EXPECT_TRUE(saw_nvls);
}

}  // namespace
}  // namespace vram::probe

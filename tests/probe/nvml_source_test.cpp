// NvmlSource: the missing-driver path on this machine, and the ABI handling
// against a fake libnvidia-ml built from tests/probe/fake_nvml.cpp (as a
// current and as a pre-510 driver). The fake is compiled against the probe's
// NVML declarations (measure/nvml_api.h); under the sanitizer build
// (VRAM_SANITIZE) UBSan's -fsanitize=function checks every call the probe
// makes through a dlsym'd pointer against the callee's type.
#include "measure/nvml_source.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "fake_nvml.h"

namespace vram::probe {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

bool RealNvmlPresent() {
  void* handle = dlopen(kNvmlLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

TEST(NvmlSource, MissingLibraryIsNoGpuNotACrash) {
  Result<std::unique_ptr<NvmlSource>> source = NvmlSource::Open("libnvidia-ml-vram-test-absent.so.1");
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kNoGpu);
  EXPECT_NE(source.status().message().find("no NVIDIA driver: libnvidia-ml-vram-test-absent.so.1 not found"),
            std::string::npos)
      << source.status().message();
}

TEST(NvmlSource, ThisMachineWithoutDriverSaysLibraryNotFound) {
  if (RealNvmlPresent()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  Result<std::unique_ptr<NvmlSource>> source = NvmlSource::Open();
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kNoGpu);
  EXPECT_NE(source.status().message().find("no NVIDIA driver: libnvidia-ml.so.1 not found"), std::string::npos)
      << source.status().message();
}

#if defined(VRAM_FAKE_NVML)

class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // dlopen of the same path returns the handle NvmlSource will get, so the
    // fake's settings are shared.
    handle_ = dlopen(VRAM_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    configure_ = reinterpret_cast<decltype(&FakeNvmlConfigure)>(dlsym(handle_, "FakeNvmlConfigure"));
    process_calls_ = reinterpret_cast<decltype(&FakeNvmlProcessCalls)>(dlsym(handle_, "FakeNvmlProcessCalls"));
    ASSERT_NE(configure_, nullptr);
    configure_(0, 0, 0);
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }

  std::unique_ptr<NvmlSource> Open() {
    Result<std::unique_ptr<NvmlSource>> source = NvmlSource::Open(VRAM_FAKE_NVML);
    EXPECT_TRUE(source.ok()) << source.status().message();
    return source.ok() ? std::move(source.value()) : nullptr;
  }

  void* handle_ = nullptr;
  decltype(&FakeNvmlConfigure) configure_ = nullptr;
  decltype(&FakeNvmlProcessCalls) process_calls_ = nullptr;
};

TEST_F(FakeNvmlTest, DeviceFactsComeFromTheVersionedV2MemoryCall) {
  std::unique_ptr<NvmlSource> nvml = Open();
  ASSERT_NE(nvml, nullptr);
  Result<GpuFacts> gpu = nvml->Device(0);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  EXPECT_EQ(gpu.value().name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu.value().uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
  EXPECT_EQ(gpu.value().compute_capability, "9.0");
  // The fake answers NVML_ERROR_NOT_SUPPORTED for MIG, as pre-Ampere boards do.
  EXPECT_FALSE(gpu.value().mig_enabled.has_value());
  // The fake checks version == sizeof | 2 << 24; a wrong version would have
  // fallen back to v1, which has no reserve.
  EXPECT_EQ(gpu.value().memory.reserved, kGiB / 2);
  EXPECT_EQ(gpu.value().memory.used, kGiB);
  EXPECT_EQ(*gpu.value().memory.total,
            *gpu.value().memory.reserved + *gpu.value().memory.used + *gpu.value().memory.free);
}

TEST_F(FakeNvmlTest, SystemFactsNameDriverAndCudaVersions) {
  std::unique_ptr<NvmlSource> nvml = Open();
  ASSERT_NE(nvml, nullptr);
  Result<SystemFacts> system = nvml->System();
  ASSERT_TRUE(system.ok());
  EXPECT_EQ(system.value().driver_version, "550.54.15");
  EXPECT_EQ(system.value().cuda_driver_version, "12.4");
}

TEST_F(FakeNvmlTest, NoProcessIsAnEmptyList) {
  std::unique_ptr<NvmlSource> nvml = Open();
  ASSERT_NE(nvml, nullptr);
  Result<std::vector<ProcessMemory>> processes = nvml->Processes(0);
  ASSERT_TRUE(processes.ok()) << processes.status().message();
  EXPECT_TRUE(processes.value().empty());
}

TEST_F(FakeNvmlTest, ProcessListRetriesWhileTheDriverSaysInsufficientSize) {
  // 2 processes at the first call, 22 by the second: the oversized buffer
  // (2 * 2 + 5) is still too small, so a third call is needed.
  configure_(0, 2, 20);
  std::unique_ptr<NvmlSource> nvml = Open();
  ASSERT_NE(nvml, nullptr);
  Result<std::vector<ProcessMemory>> processes = nvml->Processes(0);
  ASSERT_TRUE(processes.ok()) << processes.status().message();
  ASSERT_EQ(processes.value().size(), 22u);
  EXPECT_EQ(process_calls_(), 3);
  EXPECT_EQ(processes.value()[0].pid, 1000u);
  EXPECT_EQ(processes.value()[0].used_bytes, kGiB);
  EXPECT_EQ(processes.value()[1].used_bytes, 2 * kGiB);
  // NVML_VALUE_NOT_AVAILABLE becomes "unknown", not a huge number.
  EXPECT_FALSE(processes.value().back().used_bytes.has_value());

  Result<std::optional<std::uint64_t>> used = ProcessUsedBytes(*nvml, 0, 1001);
  ASSERT_TRUE(used.ok());
  EXPECT_EQ(used.value(), 2 * kGiB);
}

TEST_F(FakeNvmlTest, AccountingMaxIsReadWhenAccountingIsOn) {
  std::unique_ptr<NvmlSource> nvml = Open();
  ASSERT_NE(nvml, nullptr);
  Result<std::optional<std::uint64_t>> max = nvml->AccountingMaxBytes(0, 7);
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(max.value(), 3 * kGiB + 7);
}

TEST_F(FakeNvmlTest, DriverNotLoadedIsNoGpuWithTheNvmlErrorName) {
  configure_(9, 0, 0);  // NVML_ERROR_DRIVER_NOT_LOADED
  Result<std::unique_ptr<NvmlSource>> source = NvmlSource::Open(VRAM_FAKE_NVML);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kNoGpu);
  const std::string& message = source.status().message();
  EXPECT_NE(message.find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos) << message;
  EXPECT_NE(message.find("nvmlInit_v2()"), std::string::npos) << message;
  EXPECT_NE(message.find("nvml_source.cpp:"), std::string::npos) << message;
}

TEST_F(FakeNvmlTest, BadDeviceIndexNamesTheFailingCall) {
  std::unique_ptr<NvmlSource> nvml = Open();
  ASSERT_NE(nvml, nullptr);
  Result<DeviceMemory> memory = nvml->Memory(7);
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.status().code(), StatusCode::kNvmlError);
  EXPECT_NE(memory.status().message().find("NVML_ERROR_INVALID_ARGUMENT"), std::string::npos);
  EXPECT_NE(memory.status().message().find("nvmlDeviceGetHandleByIndex_v2(index, &device)"), std::string::npos)
      << memory.status().message();
}

#endif  // VRAM_FAKE_NVML

#if defined(VRAM_FAKE_NVML_LEGACY)

// A driver before 510: no nvmlDeviceGetMemoryInfo_v2, the unversioned
// nvmlSystemGetCudaDriverVersion, the unversioned compute process list that
// fills 16-byte nvmlProcessInfo_v1_t records, and the _v2 MPS list. Each is
// called through its own nvml.h type (nvml_source.cpp ProcessListApi).
class LegacyNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(VRAM_FAKE_NVML_LEGACY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    configure_ = reinterpret_cast<decltype(&FakeNvmlConfigure)>(dlsym(handle_, "FakeNvmlConfigure"));
    ASSERT_NE(configure_, nullptr);
    configure_(0, 0, 0);
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }

  void* handle_ = nullptr;
  decltype(&FakeNvmlConfigure) configure_ = nullptr;
};

TEST_F(LegacyNvmlTest, MemoryComesFromV1WithTheReserveUnknown) {
  Result<std::unique_ptr<NvmlSource>> nvml = NvmlSource::Open(VRAM_FAKE_NVML_LEGACY);
  ASSERT_TRUE(nvml.ok()) << nvml.status().message();
  Result<DeviceMemory> memory = nvml.value()->Memory(0);
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  EXPECT_EQ(memory.value().total, 80 * kGiB);
  // v1 `used` includes the 512 MiB driver reserve; `reserved` stays unknown.
  EXPECT_EQ(memory.value().used, kGiB + kGiB / 2);
  EXPECT_FALSE(memory.value().reserved.has_value());
  Result<SystemFacts> system = nvml.value()->System();
  ASSERT_TRUE(system.ok());
  EXPECT_EQ(system.value().cuda_driver_version, "11.4");
}

TEST_F(LegacyNvmlTest, V1ProcessRecordsAre16BytesAndMpsClientsAreMerged) {
  configure_(0, 3, 0);
  Result<std::unique_ptr<NvmlSource>> nvml = NvmlSource::Open(VRAM_FAKE_NVML_LEGACY);
  ASSERT_TRUE(nvml.ok()) << nvml.status().message();
  Result<std::vector<ProcessMemory>> processes = nvml.value()->Processes(0);
  ASSERT_TRUE(processes.ok()) << processes.status().message();
  // Three compute processes read with a 16-byte stride (a 24-byte stride
  // would read pid 1000's neighbours from the wrong offsets), then pid 2000
  // from the MPS list; pid 1000 is in both and is listed once.
  ASSERT_EQ(processes.value().size(), 4u);
  EXPECT_EQ(processes.value()[0].pid, 1000u);
  EXPECT_EQ(processes.value()[0].used_bytes, kGiB);
  EXPECT_EQ(processes.value()[1].pid, 1001u);
  EXPECT_EQ(processes.value()[1].used_bytes, 2 * kGiB);
  EXPECT_EQ(processes.value()[2].pid, 1002u);
  EXPECT_FALSE(processes.value()[2].used_bytes.has_value());
  EXPECT_EQ(processes.value()[3].pid, 2000u);
  EXPECT_EQ(processes.value()[3].used_bytes, 5 * kGiB);
}

#endif  // VRAM_FAKE_NVML_LEGACY

}  // namespace
}  // namespace vram::probe

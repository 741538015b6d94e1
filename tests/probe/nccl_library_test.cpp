// NCCL through dlopen: a missing or wrong library is a clear Status, never a
// crash; the version code decodes in both of nccl.h's encodings. The real
// Collectives fail cleanly here too (no driver).
#include "measure/nccl_library.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <regex>
#include <string>

#include "measure/nccl_collectives.h"
#if defined(VRAM_PROBE_HAVE_CUDA)
#include "measure/cuda_source.h"
#endif

namespace vram::probe {
namespace {

// Sets NCCL_LIBRARY for one test and restores it afterwards.
class ScopedNcclLibrary {
 public:
  explicit ScopedNcclLibrary(const char* path) {
    if (const char* old = std::getenv(kNcclLibraryVariable)) old_ = std::string(old);
    setenv(kNcclLibraryVariable, path, 1);
  }
  ~ScopedNcclLibrary() {
    if (old_) {
      setenv(kNcclLibraryVariable, old_->c_str(), 1);
    } else {
      unsetenv(kNcclLibraryVariable);
    }
  }

 private:
  std::optional<std::string> old_;
};

constexpr const char* kMissing = "/nonexistent/vram-probe-test/libnccl.so.2";

TEST(NcclVersionString, DecodesBothEncodingsOfNcclH) {
  EXPECT_EQ(NcclVersionString(2804), "2.8.4");   // X*1000 + Y*100 + Z up to 2.8
  EXPECT_EQ(NcclVersionString(20903), "2.9.3");  // X*10000 + Y*100 + Z from 2.9
  EXPECT_EQ(NcclVersionString(22105), "2.21.5");
  EXPECT_EQ(NcclVersionString(22809), "2.28.9");  // NCCL_VERSION_CODE of CUDA 13.0's nccl.h
}

TEST(NcclLibrary, AMissingLibraryNamedByNcclLibraryIsAClearError) {
  ScopedNcclLibrary missing(kMissing);
  Result<std::unique_ptr<NcclLibrary>> library = NcclLibrary::Open();
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(library.status().code(), StatusCode::kNotSupported);
  const std::string& message = library.status().message();
  EXPECT_NE(message.find(std::string("NCCL not found: ") + kMissing), std::string::npos) << message;
  EXPECT_NE(message.find("NCCL_LIBRARY"), std::string::npos) << message;
}

TEST(NcclLibrary, OpenNcclWithAMissingLibraryFailsCleanly) {
  ScopedNcclLibrary missing(kMissing);
  Result<std::unique_ptr<Collectives>> nccl = OpenNccl();
  ASSERT_FALSE(nccl.ok());
  EXPECT_EQ(nccl.status().code(), StatusCode::kNotSupported);
#if defined(VRAM_PROBE_HAVE_CUDA)
  EXPECT_NE(nccl.status().message().find(kMissing), std::string::npos) << nccl.status().message();
#else
  EXPECT_NE(nccl.status().message().find("built without the CUDA runtime"), std::string::npos)
      << nccl.status().message();
#endif
}

#if defined(VRAM_FAKE_NVML)
TEST(NcclLibrary, ALibraryWithoutNcclSymbolsIsRefused) {
  Result<std::unique_ptr<NcclLibrary>> library = NcclLibrary::Open(VRAM_FAKE_NVML);
  ASSERT_FALSE(library.ok());
  EXPECT_NE(library.status().message().find("has no ncclGetVersion"), std::string::npos) << library.status().message();
}
#endif

#if defined(VRAM_FAKE_NCCL)
TEST(NcclLibrary, TheFakeLibrarysVersionIsRead) {
  ScopedNcclLibrary fake(VRAM_FAKE_NCCL);
  Result<std::unique_ptr<NcclLibrary>> library = NcclLibrary::Open();
  ASSERT_TRUE(library.ok()) << library.status().message();
  EXPECT_EQ(library.value()->path(), VRAM_FAKE_NCCL);
  Result<std::string> version = library.value()->Version();
  ASSERT_TRUE(version.ok()) << version.status().message();
  EXPECT_EQ(version.value(), "2.21.5");
  EXPECT_STREQ(library.value()->ErrorString(5), "invalid usage (fake NCCL has no GPU)");
}

#if defined(VRAM_PROBE_HAVE_CUDA)
TEST(NcclCollectives, WithoutADriverPrepareIsNoGpuAndReleaseIsClean) {
  if (CudaSource::Open().ok()) GTEST_SKIP() << "a CUDA driver and GPU are present here";
  ScopedNcclLibrary fake(VRAM_FAKE_NCCL);
  Result<std::unique_ptr<Collectives>> nccl = OpenNccl();
  ASSERT_TRUE(nccl.ok()) << nccl.status().message();
  EXPECT_EQ(nccl.value()->name(), "nccl");
  Result<std::string> version = nccl.value()->Version();
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(version.value(), "2.21.5");
  Status prepared = nccl.value()->Prepare({0, 1}, 1 << 20);
  ASSERT_FALSE(prepared.ok());
  EXPECT_EQ(prepared.code(), StatusCode::kNoGpu);
  EXPECT_NE(prepared.message().find("cudaSetDevice"), std::string::npos) << prepared.message();
  EXPECT_TRUE(nccl.value()->Release().ok()) << "nothing was allocated, so nothing fails to free";
}
#endif
#endif

// The real libnccl.so.2 where one is installed (the CUDA 13 toolkit ships
// one): the version is read without touching a GPU.
TEST(NcclLibrary, TheInstalledLibraryReportsItsVersion) {
  void* probe = dlopen(kNcclLibrary, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (probe == nullptr) GTEST_SKIP() << kNcclLibrary << " is not installed here";
  dlclose(probe);
  Result<std::unique_ptr<NcclLibrary>> library = NcclLibrary::Open(kNcclLibrary);
  ASSERT_TRUE(library.ok()) << library.status().message();
  Result<std::string> version = library.value()->Version();
  ASSERT_TRUE(version.ok()) << version.status().message();
  EXPECT_TRUE(std::regex_match(version.value(), std::regex(R"(2\.\d+\.\d+)"))) << version.value();
}

}  // namespace
}  // namespace vram::probe

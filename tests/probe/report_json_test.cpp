// Shape of the probe's JSON documents (STYLE.md "Probe agent").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "measure/report.h"
#include "measure/report_writer.h"

namespace vram::probe {
namespace {

using json = nlohmann::ordered_json;

class ReportJsonTest : public ::testing::Test {
 protected:
  static ReportHeader Header() {
    ReportHeader h;
    h.version = "0.1.0";
    h.host = "gpu-box";
    h.time = "2026-11-21T22:35:35Z";
    h.source = "nvml";
    h.system.driver_version = "550.54.15";
    h.system.cuda_driver_version = "12.4";
    GpuFacts gpu;
    gpu.index = 0;
    gpu.name = "NVIDIA A100-SXM4-80GB";
    gpu.uuid = "GPU-01234567-89ab-cdef-0123-456789abcdef";
    gpu.memory.total = 85899345920;
    gpu.memory.used = 7812500;
    gpu.memory.free = 85000000000;
    // reserved, compute capability and MIG mode left unknown on purpose
    h.gpus.push_back(gpu);
    return h;
  }

  static WatchReport Watch() {
    WatchReport r;
    r.header = Header();
    r.command = {"python", "train.py"};
    r.result.exit.code = 0;
    r.result.baseline.used = 7812500;
    r.result.peak.process_used_bytes = 41000000000;
    r.result.peak.process_t_ms = 5120;
    r.result.peak.device_used_bytes = 41100000000;
    r.result.peak.device_t_ms = 5120;
    r.result.interval = std::chrono::milliseconds(20);
    r.result.samples = 3;
    Sample s;
    s.t_ms = 0;
    s.device_used_bytes = 7812500;
    s.process_used_bytes = 0;
    r.result.timeline.push_back(s);
    s.t_ms = 20;
    s.process_used_bytes.reset();  // a failed process query
    r.result.timeline.push_back(s);
    r.errors.push_back(Status(StatusCode::kNotSupported, "accounting is off"));
    return r;
  }
};

TEST_F(ReportJsonTest, WatchReportHasTheDocumentedTopLevelKeys) {
  const json doc = JsonReportWriter::WatchJson(Watch());
  for (const char* key : {"schema", "tool", "version", "host", "time", "driver_version", "cuda_driver_version", "gpus",
                          "command", "exit", "peak", "baseline", "timeline", "errors"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  EXPECT_EQ(doc["schema"], "vram-planner-probe/1");
  EXPECT_EQ(doc["tool"], "vram-probe");
  EXPECT_EQ(doc["cuda_driver_version"], "12.4");
  EXPECT_EQ(doc["command"], json::array({"python", "train.py"}));
  EXPECT_EQ(doc["exit"]["code"], 0);
  EXPECT_TRUE(doc["exit"]["signal"].is_null());
  EXPECT_EQ(doc["peak"]["process_used_bytes"], 41000000000ull);
  EXPECT_TRUE(doc["peak"]["phase"].is_null());
  EXPECT_EQ(doc["baseline"]["device_used_bytes"], 7812500);
  ASSERT_EQ(doc["timeline"].size(), 2u);
  EXPECT_EQ(doc["timeline"][0]["t_ms"], 0);
  EXPECT_EQ(doc["errors"][0]["code"], "not_supported");
}

TEST_F(ReportJsonTest, GpuKeysFollowNvidiaSmiQueryNames) {
  const json gpu = JsonReportWriter::WatchJson(Watch())["gpus"][0];
  for (const char* key : {"index", "name", "uuid", "memory.total", "memory.reserved", "memory.used", "memory.free",
                          "compute_capability", "mig_mode"}) {
    EXPECT_TRUE(gpu.contains(key)) << key;
  }
  EXPECT_EQ(gpu["memory.total"], 85899345920ull);
  EXPECT_TRUE(gpu["memory.total"].is_number_integer());
}

TEST_F(ReportJsonTest, UnsupportedFieldsAreNullNotZero) {
  const json doc = JsonReportWriter::WatchJson(Watch());
  EXPECT_TRUE(doc["gpus"][0]["memory.reserved"].is_null());
  EXPECT_TRUE(doc["gpus"][0]["compute_capability"].is_null());
  EXPECT_TRUE(doc["gpus"][0]["mig_mode"].is_null());
  EXPECT_TRUE(doc["cuda_runtime_version"].is_null());
  EXPECT_TRUE(doc["peak"]["accounting_max_bytes"].is_null());
  EXPECT_TRUE(doc["timeline"][1]["process_used_bytes"].is_null());
}

TEST_F(ReportJsonTest, SignalEndingIsNamed) {
  WatchReport r = Watch();
  r.result.exit = ExitInfo{};
  r.result.exit.signal = 9;
  const json exit = JsonReportWriter::WatchJson(r)["exit"];
  EXPECT_TRUE(exit["code"].is_null());
  EXPECT_EQ(exit["signal"], 9);
  EXPECT_EQ(exit["signal_name"], "SIGKILL");
}

TEST_F(ReportJsonTest, OverheadsAreShapedLikeTheRequestField) {
  OverheadsReport r;
  r.header = Header();
  r.result.cuda_context_bytes = 536870912;
  r.result.method = "nvml_process_used";
  const json doc = JsonReportWriter::OverheadsJson(r);
  EXPECT_EQ(doc["overheads"]["cuda_context_bytes"], 536870912);
  EXPECT_EQ(doc["measurement"]["method"], "nvml_process_used");
  EXPECT_TRUE(doc["measurement"]["cuda_mem_get_info"]["total"].is_null());
}

TEST_F(ReportJsonTest, ErrorObjectHasCodeMessageAndPath) {
  std::ostringstream out;
  JsonReportWriter().WriteError(Status(StatusCode::kNoGpu, "no NVIDIA driver"), out);
  const json doc = json::parse(out.str());
  EXPECT_EQ(doc["error"]["code"], "no_gpu");
  EXPECT_EQ(doc["error"]["message"], "no NVIDIA driver");
  EXPECT_EQ(doc["error"]["path"], "");
}

TEST_F(ReportJsonTest, TextWriterSaysNaForUnknownMemory) {
  DeviceReport r;
  r.header = Header();
  std::ostringstream out;
  TextReportWriter().WriteDevice(r, out);
  EXPECT_NE(out.str().find("NVIDIA A100-SXM4-80GB"), std::string::npos);
  EXPECT_NE(out.str().find("reserved n/a"), std::string::npos);
}

}  // namespace
}  // namespace vram::probe

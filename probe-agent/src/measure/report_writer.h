// Report writers: one interface, a JSON and a text implementation (the split
// of NVIDIA/nvbandwidth output.h / json_output.h). Unlike nvbandwidth the
// writer is an object the caller owns and the stream is an argument: no
// global holds output.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "measure/report.h"
#include "measure/status.h"

namespace vram::probe {

class ReportWriter {
 public:
  virtual ~ReportWriter() = default;
  virtual void WriteDevice(const DeviceReport& report, std::ostream& out) const = 0;
  virtual void WriteWatch(const WatchReport& report, std::ostream& out) const = 0;
  virtual void WriteOverheads(const OverheadsReport& report, std::ostream& out) const = 0;
  virtual void WriteNccl(const NcclReport& report, std::ostream& out) const = 0;
  // A failure that produced no report (no GPU, bad flags).
  virtual void WriteError(const Status& status, std::ostream& out) const = 0;
};

class JsonReportWriter final : public ReportWriter {
 public:
  void WriteDevice(const DeviceReport& report, std::ostream& out) const override;
  void WriteWatch(const WatchReport& report, std::ostream& out) const override;
  void WriteOverheads(const OverheadsReport& report, std::ostream& out) const override;
  void WriteNccl(const NcclReport& report, std::ostream& out) const override;
  void WriteError(const Status& status, std::ostream& out) const override;

  // The documents themselves, for tests and for callers that embed them.
  static nlohmann::ordered_json DeviceJson(const DeviceReport& report);
  static nlohmann::ordered_json WatchJson(const WatchReport& report);
  static nlohmann::ordered_json OverheadsJson(const OverheadsReport& report);
  static nlohmann::ordered_json NcclJson(const NcclReport& report);
  // {"error": {"code", "message", "path"}}: the boundary error shape of
  // DESIGN.md §2.
  static nlohmann::ordered_json ErrorJson(const Status& status);
};

class TextReportWriter final : public ReportWriter {
 public:
  void WriteDevice(const DeviceReport& report, std::ostream& out) const override;
  void WriteWatch(const WatchReport& report, std::ostream& out) const override;
  void WriteOverheads(const OverheadsReport& report, std::ostream& out) const override;
  void WriteNccl(const NcclReport& report, std::ostream& out) const override;
  void WriteError(const Status& status, std::ostream& out) const override;
};

}  // namespace vram::probe

// Status and Result<T> for the measurement half of vram-probe.
//
// Nothing in probe-agent/src/measure throws: every fallible call returns a
// Status or a Result<T> carrying a stable code and a message (google/draco
// status.h, as in core's vram/status.h). The measurement code keeps its own
// small type so it depends neither on core nor on CUDA or NVML headers.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace vram::probe {

// Stable codes. They cross the JSON boundary as the strings returned by
// StatusCodeName(); add new ones, never rename.
enum class StatusCode {
  kOk,
  kNoGpu,         // no driver, no NVML library, no device
  kNotSupported,  // the driver or device does not offer this query
  kNvmlError,     // any other NVML failure
  kCudaError,     // any other CUDA runtime failure
  kInvalidArgument,
  kIoError,
  kExecFailed,      // the watched command could not be started
  kDeviceBusy,      // other processes use the device during a measurement
  kProcessNotSeen,  // the driver never listed the watched command's processes
  kInternal,
  kNcclError,  // an NCCL call failed (vram-probe nccl)
};

const char* StatusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const char* code_name() const { return StatusCodeName(code_); }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) {
      v_ = Status(StatusCode::kInternal, "Result built from an OK status without a value");
    }
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace vram::probe

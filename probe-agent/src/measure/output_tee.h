// The watched job's standard output and error pass through the probe: each
// byte is written on to the probe's own stdout / stderr as it arrives, and
// every line is read by a StepLog for the step times a framework prints
// (step_log.h). Pipes instead of the terminal: a job that checks isatty()
// (tqdm, colour) writes as it would to a file.
#pragma once

#include <string>

#include "measure/child_process.h"
#include "measure/status.h"
#include "measure/step_log.h"

namespace vram::probe {

class OutputTee {
 public:
  OutputTee() = default;
  ~OutputTee();
  OutputTee(const OutputTee&) = delete;
  OutputTee& operator=(const OutputTee&) = delete;

  // Opens the pipes. On failure the job keeps the probe's own output (and
  // no step time is read): the caller notes the error and runs it anyway.
  Status Open();
  // Points the job's stdout and stderr at the pipes (Spawn dup2s them).
  void Attach(SpawnOptions& spawn) const;
  // After Spawn: the probe's copies of the write ends are closed, so the
  // pipes end when the job's last process does.
  void Spawned();
  // Moves whatever the job has written so far, without waiting.
  void Pump();
  // The job is over: the rest, including a last line without its newline.
  void Finish();
  const StepLog& log() const { return log_; }

 private:
  struct Stream {
    int read_fd = -1;
    int write_fd = -1;
    int echo_fd = -1;
    std::string partial;
  };
  void Drain(Stream& s);
  void Close(Stream& s);

  Stream streams_[2];
  StepLog log_;
};

}  // namespace vram::probe

#include "measure/output_tee.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vram::probe {
namespace {

// A line longer than this is read in pieces: no framework's timing line is
// near it, and the probe's memory stays bounded whatever the job prints.
constexpr std::size_t kMaxLine = 64 * 1024;

void WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the probe's own output is gone: the job goes on
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

OutputTee::~OutputTee() {
  for (Stream& s : streams_) Close(s);
}

Status OutputTee::Open() {
  for (int i = 0; i < 2; ++i) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return Status(StatusCode::kIoError, std::string("pipe2: ") + std::strerror(errno));
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    streams_[i] = Stream{fds[0], fds[1], i == 0 ? STDOUT_FILENO : STDERR_FILENO, {}};
  }
  return Status();
}

void OutputTee::Attach(SpawnOptions& spawn) const {
  spawn.stdout_fd = streams_[0].write_fd;
  spawn.stderr_fd = streams_[1].write_fd;
}

void OutputTee::Spawned() {
  for (Stream& s : streams_) {
    if (s.write_fd >= 0) close(s.write_fd);
    s.write_fd = -1;
  }
}

void OutputTee::Drain(Stream& s) {
  char buf[16384];
  while (s.read_fd >= 0) {
    const ssize_t n = read(s.read_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: nothing more for now
    if (n == 0) {
      Close(s);
      return;
    }
    WriteAll(s.echo_fd, buf, static_cast<std::size_t>(n));
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buf[i];
      if (c == '\n' || c == '\r' || s.partial.size() >= kMaxLine) {
        log_.Line(s.partial);
        s.partial.clear();
        if (c == '\n' || c == '\r') continue;
      }
      s.partial.push_back(c);
    }
  }
}

void OutputTee::Close(Stream& s) {
  if (s.read_fd >= 0) close(s.read_fd);
  if (s.write_fd >= 0) close(s.write_fd);
  s.read_fd = s.write_fd = -1;
}

void OutputTee::Pump() {
  for (Stream& s : streams_) Drain(s);
}

void OutputTee::Finish() {
  for (Stream& s : streams_) {
    Drain(s);
    if (!s.partial.empty()) log_.Line(s.partial);
    s.partial.clear();
    Close(s);
  }
}

}  // namespace vram::probe

#include "measure/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace vram::probe {
namespace {

Status Failure(const std::string& what, const std::string& path, int error) {
  return Status(StatusCode::kIoError, what + " " + path + ": " + std::strerror(error));
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  if (path.empty()) return Status(StatusCode::kInvalidArgument, "empty output path");
  // mkstemp needs a writable template ending in XXXXXX; same directory as the
  // target so the rename never crosses file systems.
  std::string pattern = path + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return Failure("cannot create a temporary file for", path, errno);
  const std::string temp(name.data());

  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      close(fd);
      unlink(temp.c_str());
      return Failure("cannot write", temp, error);
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; a report is not secret, give it the usual 0644.
  fchmod(fd, 0644);
  const bool synced = fsync(fd) == 0;
  const int sync_error = errno;
  const bool closed = close(fd) == 0;
  if (!synced || !closed) {
    const int error = synced ? errno : sync_error;
    unlink(temp.c_str());
    return Failure("cannot flush", temp, error);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(temp.c_str());
    return Failure("cannot rename the report to", path, error);
  }
  return Status::Ok();
}

Status CheckWritable(const std::string& path) {
  if (path.empty()) return Status(StatusCode::kInvalidArgument, "empty output path");
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status(StatusCode::kIoError, path + " is a directory");
  }
  // What WriteFileAtomically will do first: a temporary file next to `path`.
  std::string pattern = path + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return Failure("cannot create a file next to", path, errno);
  close(fd);
  unlink(name.data());
  return Status::Ok();
}

}  // namespace vram::probe

// Checked byte arithmetic (bytes.h).
#include "memory/bytes.h"

#include <cmath>
#include <utility>

#include "format.h"
#include "vram/status.h"

namespace vram::bytes {

namespace {

// Per thread: the WASM module has one, the Python module may be called from
// several.
thread_local std::string current_driver;

bool in_range(int64_t v) { return v >= -kMax && v <= kMax; }

}  // namespace

Driver::Driver(std::string path) : saved_(std::exchange(current_driver, std::move(path))) {}
Driver::~Driver() { current_driver = std::move(saved_); }

const std::string& driver() { return current_driver; }
void restore_driver(const std::string& path) { current_driver = path; }

void too_large(std::string_view what, int64_t limit) {
  const std::string& path = current_driver;
  std::string msg = std::string(what) + " would exceed " + fmt_int(limit) +
                    (limit == kMax ? " (2^53 - 1, the largest figure reported exactly)" : "");
  if (!path.empty()) msg += ": lower " + path;
  fail(errc::kOutOfRange, path, msg);
}

int64_t mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || !in_range(r)) too_large(what);
  return r;
}

int64_t add(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r) || !in_range(r)) too_large(what);
  return r;
}

int64_t ceil(double x, std::string_view what) {
  const double c = std::ceil(x);
  // kMax = 2^53 - 1 is exactly representable as a double, so the comparison
  // is exact; NaN fails both.
  if (!(c >= -static_cast<double>(kMax) && c <= static_cast<double>(kMax))) too_large(what);
  return static_cast<int64_t>(c);
}

}  // namespace vram::bytes

// Private: exact integer arithmetic for byte figures (issue 17).
//
// Every memory term forms its bytes through these helpers: products and sums
// are checked (__builtin_*_overflow), a per-token double times tokens is
// rounded up and checked before it becomes an integer (casting a double above
// 2^63 to int64_t is undefined behaviour), and any figure above
// limits::kMaxBytes fails with out_of_range. The error names the request field
// that drives the figures being computed (a `Driver` in scope: train.seq_len,
// infer.context_len, model.config, ...), so a too-large request never becomes a
// wrapped, clamped, negative or zero figure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "vram/fields.h"

namespace vram::bytes {

inline constexpr int64_t kMax = limits::kMaxBytes;

// The request field blamed when a figure does not fit, for as long as it is in
// scope (one per thread; scopes nest, the innermost wins).
class Driver {
 public:
  explicit Driver(std::string path);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

 private:
  std::string saved_;
};

// The innermost Driver's path ("" outside any).
const std::string& driver();
// Sets it back to `path`: recover() after an unwind that skipped Drivers'
// destructors (status.h, the build without exceptions).
void restore_driver(const std::string& path);

// Fails with out_of_range at driver(): `what` needs more than `limit`.
[[noreturn]] void too_large(std::string_view what, int64_t limit = kMax);

// a * b and a + b, each in [-kMax, kMax], else too_large(what).
int64_t mul(int64_t a, int64_t b, std::string_view what = "a memory figure");
int64_t add(int64_t a, int64_t b, std::string_view what = "a memory figure");
// a * b * c.
inline int64_t mul(int64_t a, int64_t b, int64_t c, std::string_view what = "a memory figure") {
  return mul(mul(a, b, what), c, what);
}
// ceil(x) as an integer: x must be finite and in [-kMax, kMax] (NaN too is
// too_large: it only comes from an overflowing product of doubles).
int64_t ceil(double x, std::string_view what = "a memory figure");

}  // namespace vram::bytes

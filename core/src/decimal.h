// Private: decimal rounding of doubles without printf, for the time model's
// figures (sig4, speed::fmt). Issue 32: snprintf of a double costs ~1,700
// instructions in glibc's __printf_fp and the time object of one estimate
// printed ~1,200 of them (train_json and its 45 catalog cards: 2.1 M of the
// padded torchtune QLoRA bench's 8.6 M outside the replay, callgrind on
// 4ae17e9). Each helper answers exactly what the printf it replaces answers,
// or says it cannot tell (a half within the product's rounding error, a
// scale past 10^22) and the caller prints as before: tests/core/
// decimal_test.cpp compares both over millions of values.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace vram {

// The powers of ten a double holds exactly (10^22 < 2^53 x 2^22): a product
// or quotient by one is IEEE-rounded once, the fast path of Clinger's
// "How to read floating point numbers accurately" (PLDI 1990).
inline double exact_pow10(int k) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  return kPow10[k];
}

// a x 10^k rounded to the nearest integer, as printf rounds the exact binary
// value (a >= 0, finite). The double product is within 2^-13 of the exact
// one while it stays below 2^40, so its fraction decides unless it lies
// within 2^-10 of a half: then, or for |k| > 22, false (the caller prints).
inline bool scaled_round(double a, int k, int64_t* out) {
  if (k > 22 || k < -22) return false;
  const double m = k >= 0 ? a * exact_pow10(k) : a / exact_pow10(-k);
  if (!(m < 1099511627776.0)) return false;  // 2^40
  const double whole = std::floor(m);
  const double frac = m - whole;                           // exact: whole and m share m's binade or whole is 0
  if (std::fabs(frac - 0.5) < 0.0009765625) return false;  // 2^-10
  *out = static_cast<int64_t>(whole) + (frac > 0.5 ? 1 : 0);
  return true;
}

// The exponent of a's first significant digit after rounding to `digits`
// significant digits (printf's %e exponent at precision digits - 1), and the
// rounded significand in [10^(digits-1), 10^digits]: false when
// scaled_round cannot tell.
inline bool significant_round(double a, int digits, int* exponent, int64_t* sig) {
  int x = static_cast<int>(std::floor(std::log10(a)));
  const double low = exact_pow10(digits - 1);
  for (int tries = 0; tries < 3; ++tries) {
    const int k = digits - 1 - x;
    if (k > 22 || k < -22) return false;
    const double m = k >= 0 ? a * exact_pow10(k) : a / exact_pow10(-k);
    if (m < low) {
      --x;
    } else if (m >= low * 10) {
      ++x;
    } else {
      *exponent = x;
      return scaled_round(a, k, sig);
    }
  }
  return false;
}

// Four significant digits (a figure of the time model in JSON): the value of
// "%.4g" read back by strtod, so native and WASM give the same bytes; 0 for a
// non-finite value. r x 10^e with both exact is one IEEE-rounded product or
// quotient, the double strtod reads from r's digits and exponent e.
inline double sig4(double v) {
  if (!std::isfinite(v) || v == 0) return 0;
  const double a = std::fabs(v);
  int x = 0;
  int64_t r = 0;
  if (significant_round(a, 4, &x, &r) && x - 3 <= 22 && x - 3 >= -22) {
    const double out =
        x >= 3 ? static_cast<double>(r) * exact_pow10(x - 3) : static_cast<double>(r) / exact_pow10(3 - x);
    return v < 0 ? -out : out;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::strtod(buf, nullptr);
}

// r / 10^decimals as printf's %.<decimals>f prints it ("-" when negative).
inline std::string fixed_text(bool negative, int64_t r, int decimals) {
  std::string digits = std::to_string(r);
  if (decimals > 0) {
    if (digits.size() <= static_cast<size_t>(decimals)) digits.insert(0, decimals + 1 - digits.size(), '0');
    digits.insert(digits.size() - decimals, 1, '.');
  }
  return negative ? "-" + digits : digits;
}

// printf's "%.<decimals>f" of v: exact (scaled_round), else printf itself
// (a half, a figure past 2^40 once scaled, zero's sign, inf, nan).
inline std::string fixed(double v, int decimals) {
  int64_t r = 0;
  if (std::isfinite(v) && v != 0 && scaled_round(std::fabs(v), decimals, &r)) return fixed_text(v < 0, r, decimals);
  char buf[32];  // speed::fmt's buffer: a figure past 10^31 was always cut there
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace vram

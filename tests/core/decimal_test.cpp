// decimal.h (sig4, scaled_round) and speed::fmt without printf answer what the
// printf versions they replace (issue 32) answered: the same doubles and the
// same text over random figures of every scale, halves, integers and the
// neighbours of powers of ten.
#include "decimal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "infer/serving.h"
#include "speed/speed.h"

namespace vram {
namespace {

// The printf versions, as on 4ae17e9 (format.h sig4, speed/machine.cpp fmt).
double printf_sig4(double v) {
  if (!std::isfinite(v) || v == 0) return 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::strtod(buf, nullptr);
}

std::string printf_fmt(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 100 || a == 0 || (a >= 1 && a < 1e15 && v == std::floor(v))) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (a >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else if (a >= 1) {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

// Figures of every scale the time model prints (1e-12 s to 1e24 FLOPs and
// past), the halves printf must break to even, and the values next to them.
std::vector<double> figures() {
  std::vector<double> out;
  std::mt19937_64 rng(32);
  std::uniform_real_distribution<double> unit(1.0, 10.0);
  std::uniform_int_distribution<int> scale(-30, 30);
  for (int i = 0; i < 150000; ++i) out.push_back(unit(rng) * std::pow(10.0, scale(rng)));
  for (int n = 0; n < 20000; ++n) {
    out.push_back(n);
    out.push_back(n + 0.5);
    out.push_back(n / 100.0);
    out.push_back(n / 1000.0 + 0.0005);
    out.push_back((n + 0.5) / 8.0);     // exact binary halves of the last printed digit
    out.push_back((2 * n + 1) / 64.0);  // 0.015625: a tie at %.3g and %.4g
    out.push_back(n * 1e6 + 500.0);     // 12345000 + 500: a tie at %.4g
  }
  for (int k = -25; k <= 25; ++k) {
    const double p = std::pow(10.0, k);
    for (double m : {1.0, 9.9995, 9.995, 9.95, 0.99995, 0.9995, 0.995, 1.0005, 1.005}) {
      double v = m * p;
      for (int step = 0; step < 6; ++step) {
        out.push_back(v);
        v = std::nextafter(v, 0.0);
      }
      v = m * p;
      for (int step = 0; step < 6; ++step) {
        v = std::nextafter(v, 1e300);
        out.push_back(v);
      }
    }
  }
  const size_t positive = out.size();
  for (size_t i = 0; i < positive; i += 3) out.push_back(-out[i]);
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {0.0, -0.0, 1e15, 1e16, 1e300, 1e-300, 5e-324, std::nan(""), inf, -inf}) out.push_back(v);
  return out;
}

TEST(Decimal, Sig4IsPrintfReadBackBitForBit) {
  int fast = 0;
  for (double v : figures()) {
    const double want = printf_sig4(v);
    const double got = sig4(v);
    ASSERT_EQ(std::memcmp(&want, &got, sizeof want), 0) << v;
    int x = 0;
    int64_t r = 0;
    if (std::isfinite(v) && v != 0 && significant_round(std::fabs(v), 4, &x, &r)) ++fast;
  }
  // The printf fallback is the exception, not the path (half a percent is
  // the band around halves; the rest past 10^22).
  EXPECT_GT(fast, 300000);
}

TEST(Decimal, FmtIsPrintfTextByteForByte) {
  for (double v : figures()) ASSERT_EQ(speed::fmt(v), printf_fmt(v)) << v;
}

TEST(Decimal, FixedIsPrintfTextForEveryPrecision) {
  const std::vector<double> all = figures();
  for (size_t i = 0; i < all.size(); i += 3) {  // a third of them: four printf calls each
    const double v = all[i];
    for (int decimals = 0; decimals <= 3; ++decimals) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
      ASSERT_EQ(fixed(v, decimals), buf) << v << " %." << decimals << "f";
    }
  }
}

// infer::gib2 (serving.cpp), the engines' start-up lines: "%.2f" of GiB.
TEST(Decimal, Gib2IsPrintfTextOfBytes) {
  std::mt19937_64 rng(2);
  std::uniform_int_distribution<int64_t> bytes(0, int64_t{1} << 50);
  for (int i = 0; i < 100000; ++i) {
    const double b = static_cast<double>(bytes(rng) >> (i % 40));
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f", b / 1073741824.0);
    ASSERT_EQ(infer::gib2(b), buf) << b;
  }
}

TEST(Decimal, ScaledRoundBreaksHalvesToPrintf) {
  int64_t r = 0;
  // 2.5 is exact: within the band, so the caller prints (printf gives "2").
  EXPECT_FALSE(scaled_round(2.5, 0, &r));
  EXPECT_TRUE(scaled_round(2.6, 0, &r));
  EXPECT_EQ(r, 3);
  // 1.005 is 1.00499999999999989... in binary: "%.2f" prints 1.00, and the
  // product 100.49999999999999 is within 2^-10 of the half: printed too.
  EXPECT_FALSE(scaled_round(1.005, 2, &r));
  EXPECT_TRUE(scaled_round(1.2345, 2, &r));
  EXPECT_EQ(r, 123);
  EXPECT_FALSE(scaled_round(1.0, 23, &r));
  EXPECT_EQ(fixed_text(false, 5, 3), "0.005");
  EXPECT_EQ(fixed_text(true, 12345, 2), "-123.45");
  EXPECT_EQ(fixed_text(false, 7, 0), "7");
}

}  // namespace
}  // namespace vram

// The public text forms every printed figure goes through (vram/number_text.h,
// vram/duration_text.h): the core's formulas and vram-probe's output.
#include "vram/number_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "vram/duration_text.h"

TEST(NumberText, GroupsDigitsByThreesWithTheSignOutside) {
  EXPECT_EQ(vram::fmt_int(0), "0");
  EXPECT_EQ(vram::fmt_int(999), "999");
  EXPECT_EQ(vram::fmt_int(1000), "1,000");
  EXPECT_EQ(vram::fmt_int(-1000), "-1,000");
  EXPECT_EQ(vram::fmt_int(-123456), "-123,456");
  EXPECT_EQ(vram::fmt_int(8030261248), "8,030,261,248");
  EXPECT_EQ(vram::fmt_int(std::numeric_limits<int64_t>::max()), "9,223,372,036,854,775,807");
  EXPECT_EQ(vram::fmt_int(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
}

TEST(DurationText, ARangeIsWrittenInTheUnitOfItsSlowEnd) {
  EXPECT_EQ(vram::format_seconds(0.00624, 0.00903), "6.24-9.03 ms");
  EXPECT_EQ(vram::format_seconds(1.2, 1.5), "1.20-1.50 s");
  EXPECT_EQ(vram::format_seconds(0.000327, 0.000399), "327-399 us");
  EXPECT_EQ(vram::format_seconds(0.0005, 0.002), "0.5-2 ms");  // the slow end's unit for both
}

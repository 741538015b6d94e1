// A duration range as people read it: the time model's formulas (speed/) and
// vram-probe's printed time terms write it the same way.
#pragma once

#include <string>

namespace vram {

// "1.2-1.5 s", "310-420 ms", "45-60 us": seconds, in the unit of the slow end,
// so a third of a millisecond does not read as "0.000327-0.000399 s".
std::string format_seconds(double low, double high);

}  // namespace vram

// The card and the machine around it (speed.h Machine): the catalog's speed
// row (vram/gpus.h GpuSpeed), overridden by the request's hardware.* and
// time.* fields, every default named.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "decimal.h"
#include "speed/links.h"
#include "speed/speed.h"
#include "vram/duration_text.h"

namespace vram {

std::string format_seconds(double low, double high) {
  const double top = std::max(low, high);
  if (top >= 1) return speed::fmt(low) + "-" + speed::fmt(high) + " s";
  if (top >= 1e-3) return speed::fmt(low * 1e3) + "-" + speed::fmt(high * 1e3) + " ms";
  return speed::fmt(low * 1e6) + "-" + speed::fmt(high * 1e6) + " us";
}

namespace speed {

double Range::mid() const { return low > 0 && high > 0 ? std::sqrt(low * high) : (low + high) / 2; }

Range max(const Range& a, const Range& b) { return {std::max(a.low, b.low), std::max(a.high, b.high)}; }

namespace {

// "%.3g" of a figure below 1 without printf (decimal.h; issue 32: the 45
// catalog cards' formulas printed ~900 figures per timed estimate): fixed
// notation with 2 - x decimals while the exponent x of the rounded figure is
// >= -4, trailing zeros dropped; printf itself for the rest.
std::string general3(double v) {
  const double a = std::fabs(v);
  int x = 0;
  int64_t r = 0;
  if (a > 0 && significant_round(a, 3, &x, &r)) {
    if (r == 1000) {
      r = 100;
      ++x;
    }
    if (x >= 0) return v < 0 ? "-1" : "1";  // below 1, rounded up to 1.00
    if (x >= -4) {
      std::string out = fixed_text(v < 0, r, 2 - x);
      out.erase(out.find_last_not_of('0') + 1);
      return out;
    }
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string fmt(double v) {
  const double a = std::fabs(v);
  if (a >= 100 || a == 0 || (a >= 1 && a < 1e15 && v == std::floor(v))) return fixed(v, 0);
  if (a >= 10) return fixed(v, 1);
  if (a >= 1) return fixed(v, 2);
  return general3(v);
}

namespace {

// Host memory bandwidth when hardware.host_memory_gbs is absent: a GPU
// server's two sockets of eight DDR5-4800 channels (NVIDIA DGX H100: 2 x
// Xeon Platinum 8480C, 8 channels each; 8 B x 4800 MT/s = 38.4 GB/s a
// channel: 614.4 GB/s) for cards sold in 8-GPU servers with a fast network,
// and a desktop's two DDR5-5600 channels (2 x 44.8 = 89.6 GB/s, JEDEC DDR5
// arithmetic) for the others.
constexpr double kServerHostGbs = 2 * 8 * 38.4;
constexpr double kDesktopHostGbs = 2 * 44.8;

}  // namespace

std::optional<Machine> machine_for(const Request& req, const GpuInfo* card, std::string* missing) {
  const HardwareOptions& hw = req.hardware;
  const bool own = card == nullptr || req.gpu.name == card->name;  // the request's card, not a table row
  if (card == nullptr && !req.gpu.name.empty()) card = find_gpu(req.gpu.name);
  const GpuSpeed* s = card != nullptr ? gpu_speed(card->name) : nullptr;
  Machine m;
  m.gpu = card != nullptr ? card->name : std::string("custom card");
  if (s == nullptr && (!hw.matmul_tflops || !hw.memory_gbs)) {
    if (missing != nullptr) {
      *missing = card != nullptr ? std::string(card->name) + " has no speed figures in the catalog"
                                 : "a card given by gpu.memory_gib has no speed figures";
      *missing += ": give hardware.matmul_tflops and hardware.memory_gbs";
    }
    return std::nullopt;
  }
  auto note = [&](const std::string& n) { m.notes.push_back(n); };
  if (s != nullptr) {
    m.peak_tflops = s->peak_tflops;
    m.matmul_tflops = s->matmul_tflops;
    m.fp32_tflops = s->fp32_tflops;
    m.memory_gbs = s->memory_gbs;
    m.link = s->link;
    m.network_gbps = s->network_gbps;
    note(m.gpu + ": " + fmt(s->matmul_tflops) + " TFLOPS measured 16-bit matmul (" + s->matmul_source + "), " +
         fmt(s->peak_tflops) + " TFLOPS datasheet peak, " + fmt(s->memory_gbs) + " GB/s memory (datasheet)");
  }
  if (hw.matmul_tflops) {
    // The user's measured rate: fp32 keeps the catalog's ratio to it, or a
    // quarter (tensor-core fp16 vs fp32 shaders on most cards) without one.
    const double ratio = s != nullptr ? s->fp32_tflops / s->matmul_tflops : 0.25;
    m.matmul_tflops = *hw.matmul_tflops;
    m.fp32_tflops = *hw.matmul_tflops * ratio;
    if (s == nullptr) m.peak_tflops = *hw.matmul_tflops;
    note("hardware.matmul_tflops " + fmt(*hw.matmul_tflops) + " TFLOPS");
  }
  if (hw.memory_gbs) {
    m.memory_gbs = *hw.memory_gbs;
    note("hardware.memory_gbs " + fmt(*hw.memory_gbs) + " GB/s");
  }
  if (s == nullptr) {
    m.link = Link::kPcie4;
    m.network_gbps = 100;
  }
  if (hw.link) m.link = *hw.link;
  if (hw.network_gbps) m.network_gbps = *hw.network_gbps;
  const bool server = m.network_gbps >= 1600;
  m.host_memory_gbs = hw.host_memory_gbs.value_or(server ? kServerHostGbs : kDesktopHostGbs);
  m.nvls = req.parallel.nvls.value_or(card != nullptr && card->nvswitch);
  if (req.parallel.gpus > 1) {
    note(std::string("link ") + link_label(m.link) + (hw.link ? " (hardware.link)" : " (the card's usual board)") +
         (req.parallel.nodes > 1 ? ", network " + fmt(m.network_gbps) + " Gbit/s per node" +
                                       (hw.network_gbps ? " (hardware.network_gbps)" : " (the card's usual servers)")
                                 : std::string()));
  }
  // Price: the request's, the request's table, or the default table's.
  auto table = req.time.prices.find(m.gpu);
  if (own && req.time.gpu_hour_usd) {
    m.usd_per_hour = *req.time.gpu_hour_usd;
    m.price_source = "time.gpu_hour_usd";
  }
  if (m.price_source.empty() && table != req.time.prices.end()) {
    m.usd_per_hour = table->second;
    m.price_source = "time.prices";
  }
  if (m.price_source.empty() && s != nullptr && s->usd_per_hour > 0) {
    m.usd_per_hour = s->usd_per_hour;
    m.price_source = gpu_price_source();
  }
  return m;
}

}  // namespace speed
}  // namespace vram

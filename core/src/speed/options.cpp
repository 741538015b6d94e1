// The time model's request fields (time.*, hardware.*; vram/request.h
// TimeOptions, HardwareOptions): read here, by the time model's side of the
// seam (core/src/reach.h read_time_fields), and only when the result is to
// carry the time (time.enabled), so that the first-visit WASM module, which
// does not carry the time model, reads none of them and its answers stay the
// full build's for every request it answers itself.
#include "speed/options.h"

#include "vram/fields.h"
#include "vram/gpus.h"

namespace vram {

namespace {

constexpr Link kLinks[] = {Link::kNvlink5, Link::kNvlink4, Link::kNvlink3, Link::kNvlink2, Link::kNvlinkBridge,
                           Link::kXgmi,    Link::kPcie5,   Link::kPcie4,   Link::kPcie3};

// The run's size and the price of an hour. time.prices names catalog cards;
// each price is a number of USD.
void read_time(const JsonReader& t, Request& req) {
  TimeOptions& o = req.time;
  o.tokens = t.int_opt("tokens", 1, limits::kMaxRunTokens);
  o.samples = t.int_opt("samples", 1, limits::kMaxRunTokens);
  o.mean_len = t.int_opt("mean_len", 1, limits::kMaxSeq);
  o.epochs = t.num_or("epochs", defaults::kEpochs, 0.001, 1e6);
  o.gpu_hour_usd = t.num_opt("gpu_hour_usd", 0.0, limits::kMaxPrice);
  if (o.tokens && o.samples) {
    fail(errc::kInconsistent, t.child_path("samples"),
         "time.tokens and time.samples both give the run's size: give one of them");
  }
  if (auto p = t.object_opt("prices")) {
    for (const auto& [name, value] : p->raw().items()) {
      const GpuInfo* g = find_gpu(name);
      if (g == nullptr) {
        fail(errc::kUnknownValue, p->child_path(name),
             p->child_path(name) + " names no catalog card (vram-probe version lists them)");
      }
      o.prices[g->name] = p->num_or(name, 0.0, 0.0, limits::kMaxPrice);
    }
  }
}

void read_hardware(const JsonReader& h, Request& req) {
  HardwareOptions& o = req.hardware;
  if (auto name = enum_value(h, "link", field("hardware.link"))) {
    for (Link l : kLinks) {
      if (*name == to_string(l)) o.link = l;
    }
  }
  o.network_gbps = h.num_opt("network_gbps", 1.0, limits::kMaxRate);
  o.host_memory_gbs = h.num_opt("host_memory_gbs", 1.0, limits::kMaxRate);
  o.matmul_tflops = h.num_opt("matmul_tflops", 0.01, limits::kMaxRate);
  o.memory_gbs = h.num_opt("memory_gbs", 1.0, limits::kMaxRate);
}

}  // namespace

const char* to_string(Link l) {
  switch (l) {
    case Link::kNvlink5:
      return "nvlink5";
    case Link::kNvlink4:
      return "nvlink4";
    case Link::kNvlink3:
      return "nvlink3";
    case Link::kNvlink2:
      return "nvlink2";
    case Link::kNvlinkBridge:
      return "nvlink_bridge";
    case Link::kXgmi:
      return "xgmi";
    case Link::kPcie5:
      return "pcie5";
    case Link::kPcie4:
      return "pcie4";
    case Link::kPcie3:
      return "pcie3";
  }
  return "?";
}

namespace speed {

void read_time_fields(const JsonReader& request, Request& req) {
  if (auto t = request.object_opt("time")) read_time(*t, req);
  if (auto h = request.object_opt("hardware")) read_hardware(*h, req);
}

}  // namespace speed

}  // namespace vram

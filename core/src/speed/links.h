// Private: what a collective costs on a link (the time model's
// communication terms).
#pragma once

#include <cstdint>
#include <string>

#include "speed/speed.h"

namespace vram::speed {

// NCCL's collectives, with nccl-tests' bus-bandwidth factors
// (NVIDIA/nccl-tests doc/PERFORMANCE.md): an all-reduce of S bytes over n
// ranks moves 2 (n - 1) / n x S through each rank's link, an all-gather or a
// reduce-scatter of S bytes (the whole, gathered size) and an all-to-all
// (n - 1) / n x S, a send/recv S.
enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };

const char* link_label(Link l);

// The bus bandwidth a collective reaches over `ranks` GPUs of which
// `per_node` share a node (ranks > per_node crosses the network), in GB/s:
// low = the slow end (gradient-bucket-sized messages, GPUs without peer
// access), high = the large-message figure measured. Sources in links.cpp.
Range bus_bandwidth_gbs(const Machine& m, int64_t ranks, int64_t per_node);

// Seconds for one collective of `bytes` over `ranks` GPUs (`per_node` of
// them in a node), `calls` calls of bytes / calls each: the bus bandwidth
// plus each call's latency. The range's low end is the fast one.
Range collective_seconds(const Machine& m, Collective c, double bytes, int64_t ranks, int64_t per_node,
                         int64_t calls = 1);

// Host <-> device over the card's PCIe link (CPU offload), GB/s, low = slow.
Range pcie_host_gbs(const Machine& m);

// "all-reduce of 1.2 GB over 8 GPUs (NVLink 4, 365-473 GB/s bus)".
std::string collective_formula(const Machine& m, Collective c, double bytes, int64_t ranks, int64_t per_node,
                               int64_t calls = 1);

}  // namespace vram::speed

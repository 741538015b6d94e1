// The links between GPUs and what NCCL's collectives reach over them.
#include "speed/links.h"

#include <algorithm>
#include <cmath>

namespace vram::speed {

namespace {

struct LinkRow {
  Link link;
  const char* label;
  double spec_gbs;   // one direction, per GPU
  double busbw_gbs;  // all-reduce bus bandwidth measured at large messages, 8 GPUs
};

// Measured all-reduce bus bandwidth (stas00/ml-engineering network/README.md
// and network/benchmarks/README.md at 744d01e1):
// - NVLink 5: 740.6 GB/s, all_reduce_bench.py on one 8 x B200 node at 4 GiB;
// - NVLink 4: 365.6 GB/s, nccl-tests on 8 x H200 at 8 GiB with the ring
//   (NCCL_NVLS_ENABLE=0); NVLS raises it (kNvlsBusbw);
// - NVLink 3: 235 GB/s, nccl-tests all_reduce on an A100 node ("80 % of the
//   300 GB/s unidirectional spec");
// - xGMI: 312.9 GB/s on 8 x MI300X, 47.7 GB/s on 2 (all_reduce_bench.py,
//   4 GiB): peer links, so the rate grows with the GPUs (bus_bandwidth_gbs);
// - PCIe 5: 55.4 GB/s host-to-device measured with nvbandwidth on 8 x H200
//   (88 % of 63 GB/s); PCIe 4 and 3 take the same 88 % of their spec;
// - NVLink 2 (V100 SXM2, 6 links x 25 GB/s) and the H100 NVL's bridge (600
//   GB/s both ways for the pair) take the "~80 % of unidirectional spec" the
//   same page measures on NVLink 3 and 4: no measurement of their own.
constexpr LinkRow kLinks[] = {
    {Link::kNvlink5, "NVLink 5", 900, 740.6},
    {Link::kNvlink4, "NVLink 4", 450, 365.6},
    {Link::kNvlink3, "NVLink 3", 300, 235},
    {Link::kNvlink2, "NVLink 2", 150, 0.8 * 150},
    {Link::kNvlinkBridge, "NVLink bridge (pair)", 300, 0.8 * 300},
    {Link::kXgmi, "xGMI", 448, 312.9},
    {Link::kPcie5, "PCIe 5 x16", 63, 0.88 * 63},
    {Link::kPcie4, "PCIe 4 x16", 31, 0.88 * 31},
    {Link::kPcie3, "PCIe 3 x16", 15.75, 0.88 * 15.75},
};

const LinkRow& row(Link l) {
  for (const LinkRow& r : kLinks) {
    if (r.link == l) return r;
  }
  return kLinks[std::size(kLinks) - 1];
}

// NVLink SHARP on an 8 x H200 node (the same page's nccl-tests table, 8 GiB):
// NCCL picks NVLS from 5 GPUs: 414.2, 435.6, 460.0, 473.1 GB/s for 5-8.
double nvls_busbw(int64_t ranks) {
  constexpr double kByRanks[] = {414.2, 435.6, 460.0, 473.1};
  return kByRanks[std::min<int64_t>(ranks, 8) - 5];
}

// What bucket-sized messages reach against the large-message figure: the
// same B200 sweep at 256 MiB against 4 GiB, inside a node 646.1 / 740.6, over
// four nodes 229.1 / 377.3 (stas00/ml-engineering network/README.md
// "Inter-node speed depends on intra-node speed").
constexpr double kBucketIntra = 646.1 / 740.6;
constexpr double kBucketInter = 229.1 / 377.3;
// Four 8 x B200 nodes with 8 x 400 Gbit/s each reached 381.8 GB/s bus
// bandwidth at 16 GiB against 400 GB/s of network: 95 % (same page).
constexpr double kNetworkShare = 381.8 / 400.0;
// Each call's latency: a small all-reduce over NVLink took 18-29 us inside
// gpt-fast's compiled tensor-parallel decode (Llama-2-7B at tp 2 and 8 against
// tp 1, 64 all-reduces per token: pytorch-labs/gpt-fast README at 0f925b5d)
// and 48 us through torch.distributed (32 KiB on 8 x B200 at 1.20 GB/s bus,
// the sweep above).
constexpr Range kCallLatency{18e-6, 48e-6};
// GeForce cards have no peer-to-peer access: NCCL stages through host memory,
// each byte crossing PCIe twice; the slow end halves the rate.
constexpr double kNoPeerShare = 0.5;

double factor(Collective c, int64_t n) {
  const double k = static_cast<double>(n - 1) / static_cast<double>(n);
  switch (c) {
    case Collective::kAllReduce:
      return 2 * k;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return k;
    case Collective::kSendRecv:
      return 1;
  }
  return 1;
}

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kReduceScatter:
      return "reduce-scatter";
    case Collective::kAllToAll:
      return "all-to-all";
    case Collective::kSendRecv:
      return "send/recv";
  }
  return "?";
}

bool pcie(Link l) { return l == Link::kPcie5 || l == Link::kPcie4 || l == Link::kPcie3; }

}  // namespace

const char* link_label(Link l) { return row(l).label; }

Range bus_bandwidth_gbs(const Machine& m, int64_t ranks, int64_t per_node) {
  const int64_t local = std::max<int64_t>(1, std::min(ranks, per_node));
  Link link = m.link;
  if (link == Link::kNvlinkBridge && local > 2) link = Link::kPcie5;  // the bridge joins pairs only
  const LinkRow& r = row(link);
  double large = r.busbw_gbs;
  if (link == Link::kXgmi) large = r.busbw_gbs * static_cast<double>(local - 1) / 7.0;
  if (link == Link::kNvlink4 && m.nvls && local >= 5) large = nvls_busbw(local);
  Range intra{large * kBucketIntra, large};
  if (pcie(link)) intra.low = large * kNoPeerShare;
  if (ranks <= per_node) return intra;
  const double net = m.network_gbps / 8.0 * kNetworkShare;
  const Range inter{net * kBucketInter, net};
  return {std::min(intra.low, inter.low), std::min(intra.high, inter.high)};
}

Range collective_seconds(const Machine& m, Collective c, double bytes, int64_t ranks, int64_t per_node, int64_t calls) {
  if (ranks <= 1 || bytes <= 0) return {};
  const Range bw = bus_bandwidth_gbs(m, ranks, per_node);
  const double moved = factor(c, ranks) * bytes;
  const double k = static_cast<double>(std::max<int64_t>(calls, 1));
  return {moved / (bw.high * 1e9) + k * kCallLatency.low, moved / (bw.low * 1e9) + k * kCallLatency.high};
}

Range pcie_host_gbs(const Machine& m) {
  // The card's own host link: SXM boards attach each GPU to the host over
  // PCIe too (H100 / H200 SXM: Gen5 x16, A100 SXM4: Gen4 x16; B200: Gen5).
  Link host = m.link;
  if (!pcie(host)) host = (m.link == Link::kNvlink3 || m.link == Link::kNvlink2) ? Link::kPcie4 : Link::kPcie5;
  if (m.link == Link::kNvlink2) host = Link::kPcie3;
  const LinkRow& r = row(host);
  // Pinned copies reach the 88 % measured with nvbandwidth; pageable ones
  // bounce through a staging buffer: half at the slow end.
  return {r.busbw_gbs * kNoPeerShare, r.busbw_gbs};
}

std::string collective_formula(const Machine& m, Collective c, double bytes, int64_t ranks, int64_t per_node,
                               int64_t calls) {
  const Range bw = bus_bandwidth_gbs(m, ranks, per_node);
  std::string over = link_label(m.link);
  if (ranks > per_node) over += " and a " + fmt(m.network_gbps) + " Gbit/s network per node";
  return (calls > 1 ? fmt(static_cast<double>(calls)) + " x " : std::string()) + collective_name(c) + " of " +
         fmt(bytes / 1e9) + " GB over " + fmt(static_cast<double>(ranks)) + " GPUs (" + over + ", " + fmt(bw.low) +
         "-" + fmt(bw.high) + " GB/s bus)";
}

}  // namespace vram::speed

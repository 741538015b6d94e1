#include "vram/gpus.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>

namespace vram {

int64_t GpuInfo::usable_bytes() const {
  const double bytes = static_cast<double>(total_mib) * 1048576.0 * (1.0 - kDriverReserveFraction);
  // Round down to the 2 MiB granularity of device allocations.
  const int64_t granule = int64_t{2} << 20;
  return static_cast<int64_t>(std::floor(bytes / granule)) * granule;
}

namespace {

// What an NVIDIA card runs follows from its compute capability:
// - bf16: torch.cuda.is_bf16_supported() is true from compute capability 8.0
//   (Ampere; torch/cuda/__init__.py), and the flash-attention README: "bf16
//   requires Ampere, Ada, or Hopper GPUs".
// - FlashAttention-2: Dao-AILab/flash-attention README, "FlashAttention-2 with
//   CUDA currently supports: Ampere, Ada, or Hopper GPUs (e.g., A100, RTX 3090,
//   RTX 4090, H100)"; Turing (T4) needs the separate flash-attention-turing
//   repo, Volta none. Blackwell (sm100/sm120) is in setup.py's default
//   TORCH_CUDA_ARCH_LIST ("80;90;100;110;120") though not named in the README.
// - FP8: FP8 tensor cores from Ada (sm89) and Hopper (sm90) on (NVIDIA
//   Transformer Engine requires compute capability 8.9+; vLLM's FP8 docs: W8A8
//   FP8 on compute capability 8.9+, weight-only FP8 via Marlin on 8.0-8.6).
// Compute capabilities: developer.nvidia.com/cuda-gpus.
GpuInfo nv(const char* name, int64_t mib, int sm, const char* note, bool nvswitch = false) {
  GpuInfo g{name, mib, sm, "nvidia", note};
  static const char* const kArch[] = {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"};
  static const int kSm[] = {70, 75, 80, 86, 89, 90, 100, 120};
  for (size_t i = 0; i < std::size(kSm); ++i) {
    if (kSm[i] == sm) g.arch = kArch[i];
  }
  g.nvswitch = nvswitch;
  g.bf16 = sm >= 80;
  g.flash_attn2 = sm >= 80;
  g.fp8 = sm >= 89;
  return g;
}

// AMD Instinct (ROCm): bf16 on CDNA2 and CDNA3; FlashAttention-2 through the
// ROCm backend of the same repository ("MI200 or MI300 GPUs", flash-attention
// README, AMD ROCm Support); FP8 only on CDNA3 (MI300: the fnuz e4m3/e5m2
// variants, AMD Instinct MI300 ISA guide), not on MI250.
GpuInfo amd(const char* name, int64_t mib, const char* arch, bool fp8, const char* note) {
  GpuInfo g{name, mib, 0, "amd", note};
  g.arch = arch;
  g.bf16 = true;
  g.flash_attn2 = true;
  g.fp8 = fp8;
  return g;
}

}  // namespace

const std::vector<GpuInfo>& gpu_catalog() {
  // total_mib: the total nvidia-smi prints for the card (FB memory, MiB), as
  // shown in vendor docs and public nvidia-smi logs; HBM parts expose all of
  // their stacks (A100 80GB: 81,920 MiB), GDDR parts a little less than the
  // marketed size (RTX 4090: 24,564 MiB). Where no nvidia-smi log was at hand
  // (marked "marketed size") the vendor's GB x 1024 MiB, which nvidia-smi
  // shows up to ~0.5 % lower. AMD: rocm-smi VRAM total per device. Memory
  // sizes: the vendor spec pages (nvidia.com product pages, amd.com/instinct),
  // listed with each card in the README's GPU catalog table.
  static const std::vector<GpuInfo> kGpus = {
      // Data centre, NVIDIA.
      nv("B200 180GB", 183359, 100, "HBM3e (DGX B200: 1,440 GB / 8)", true),
      nv("H200 141GB", 143771, 90, "HBM3e, SXM on HGX", true),
      nv("GH200 96GB", 97871, 90, "Grace Hopper, HBM3"),
      nv("H100 NVL 94GB", 95830, 90, "HBM3, one card of the NVL pair (PCIe, NVLink bridge)"),
      nv("H100 80GB", 81559, 90, "SXM5 HBM3 on HGX / DGX (NVSwitch)", true),
      nv("H100 PCIe 80GB", 81559, 90, "PCIe HBM2e, no NVSwitch"),
      nv("A100 80GB", 81920, 80, "SXM4 / PCIe HBM2e"),
      nv("A100 40GB", 40960, 80, "SXM4 / PCIe HBM2"),
      nv("L40S 48GB", 46068, 89, "GDDR6 with ECC"),
      nv("L40 48GB", 46068, 89, "GDDR6 with ECC"),
      nv("A40 48GB", 46068, 86, "GDDR6 with ECC"),
      nv("L4 24GB", 23034, 89, "GDDR6"),
      nv("A10G 24GB", 23028, 86, "AWS g5 GDDR6 (A10 variant: same memory, fewer tensor-core TFLOPS)"),
      nv("A10 24GB", 23028, 86, "GDDR6"),
      nv("T4 16GB", 15360, 75, "GDDR6 with ECC; no bf16, no FlashAttention-2"),
      nv("V100 32GB", 32768, 70, "SXM2 HBM2; no bf16, no FlashAttention-2"),
      nv("V100 16GB", 16384, 70, "SXM2 HBM2; no bf16, no FlashAttention-2"),
      // Workstation.
      nv("RTX 6000 Ada 48GB", 49140, 89, "GDDR6"),
      nv("RTX A6000 48GB", 49140, 86, "GDDR6"),
      nv("RTX A5000 24GB", 24564, 86, "GDDR6"),
      nv("RTX A4000 16GB", 16376, 86, "GDDR6"),
      // Consumer, RTX 50 / 40 / 30.
      nv("RTX 5090 32GB", 32607, 120, "GDDR7"),
      nv("RTX 5080 16GB", 16384, 120, "GDDR7, marketed size"),
      nv("RTX 5070 Ti 16GB", 16384, 120, "GDDR7, marketed size"),
      nv("RTX 5070 12GB", 12288, 120, "GDDR7, marketed size"),
      nv("RTX 5060 Ti 16GB", 16384, 120, "GDDR7, marketed size (an 8 GB model exists)"),
      nv("RTX 4090 24GB", 24564, 89, "GDDR6X"),
      nv("RTX 4080 16GB", 16376, 89, "GDDR6X (4080 SUPER the same)"),
      nv("RTX 4070 Ti SUPER 16GB", 16376, 89, "GDDR6X"),
      nv("RTX 4070 Ti 12GB", 12282, 89, "GDDR6X"),
      nv("RTX 4070 12GB", 12282, 89, "GDDR6X / GDDR6 (4070 SUPER the same)"),
      nv("RTX 4060 Ti 16GB", 16380, 89, "GDDR6"),
      nv("RTX 4060 Ti 8GB", 8188, 89, "GDDR6"),
      nv("RTX 4060 8GB", 8188, 89, "GDDR6"),
      nv("RTX 3090 Ti 24GB", 24564, 86, "GDDR6X"),
      nv("RTX 3090 24GB", 24576, 86, "GDDR6X"),
      nv("RTX 3080 Ti 12GB", 12288, 86, "GDDR6X"),
      nv("RTX 3080 12GB", 12288, 86, "GDDR6X"),
      nv("RTX 3080 10GB", 10240, 86, "GDDR6X"),
      nv("RTX 3070 8GB", 8192, 86, "GDDR6 (3070 Ti: GDDR6X, the same size)"),
      nv("RTX 3060 Ti 8GB", 8192, 86, "GDDR6"),
      nv("RTX 3060 12GB", 12288, 86, "GDDR6 (an 8 GB model exists)"),
      // AMD Instinct.
      amd("MI300X 192GB", 196592, "gfx942", true,
          "HBM3 (ROCm); FP8 in the fnuz variants; the CUDA context and NCCL figures are NVIDIA's (RCCL and the HIP "
          "runtime are not measured here)"),
      amd("MI250X 64GB", 65520, "gfx90a", false,
          "HBM2e, one GCD: the card's 128 GB are two GCDs that ROCm shows as two devices; no FP8"),
      amd("MI250 64GB", 65520, "gfx90a", false, "HBM2e, one GCD of two (as MI250X); no FP8"),
  };
  return kGpus;
}

namespace {

std::string normalise(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// normalise(name) == key, read in place: a catalog name is compared without
// building its normalised copy (every estimate looks its card up several
// times; the copies were 3.2 M of the vLLM bench's 24.7 M instructions and
// 10.5 M of the planner's, callgrind on 4ae17e9, issue 32).
bool normalises_to(const char* name, const std::string& key) {
  size_t i = 0;
  for (; *name != 0; ++name) {
    const auto c = static_cast<unsigned char>(*name);
    if (!std::isalnum(c)) continue;
    if (i == key.size() || key[i] != static_cast<char>(std::tolower(c))) return false;
    ++i;
  }
  return i == key.size();
}

}  // namespace

const GpuInfo* find_gpu(const std::string& name) {
  const std::string key = normalise(name);
  if (key.empty()) return nullptr;
  const auto& cat = gpu_catalog();
  // Exact (normalised) name first, then the name without its memory suffix,
  // then a unique prefix match ("4090" -> "RTX 4090 24GB").
  for (const auto& g : cat) {
    if (normalises_to(g.name, key)) return &g;
  }
  // The name without its memory ("A10" is the A10 24GB, not an A100; "RTX
  // 4060 Ti" the first listed, larger, of its two sizes).
  for (const auto& g : cat) {
    const std::string n = g.name;
    const size_t space = n.rfind(' ');
    if (space != std::string::npos && n.size() > space + 2 && n.compare(n.size() - 2, 2, "GB") == 0 &&
        normalise(n.substr(0, space)) == key)
      return &g;
  }
  std::vector<const GpuInfo*> hits;
  for (const auto& g : cat) {
    const std::string n = normalise(g.name);
    if (n.find(key) != std::string::npos) hits.push_back(&g);
  }
  if (hits.size() == 1) return hits[0];
  // "3090": the RTX 3090, not the 3090 Ti: the one hit whose name without
  // its memory ends with the key.
  const GpuInfo* ends = nullptr;
  int ending = 0;
  for (const GpuInfo* g : hits) {
    std::string base = g->name;
    if (const size_t space = base.rfind(' '); space != std::string::npos) base = base.substr(0, space);
    const std::string b = normalise(base);
    if (b.size() >= key.size() && b.compare(b.size() - key.size(), key.size(), key) == 0) {
      ends = g;
      ++ending;
    }
  }
  if (ending == 1) return ends;
  // "A100" alone is ambiguous between 40 and 80 GB: prefer the first listed
  // (the larger, current SKU) only when every hit is the same family.
  if (!hits.empty()) {
    const std::string first = normalise(hits[0]->name);
    const bool same_family = std::all_of(hits.begin(), hits.end(), [&](const GpuInfo* g) {
      return normalise(g->name).substr(0, key.size()) == first.substr(0, key.size());
    });
    if (same_family && first.rfind(key, 0) == 0) return hits[0];
  }
  return nullptr;
}

}  // namespace vram

namespace vram {

namespace {

// Where each matmul figure comes from. The 16-bit column is the largest
// bf16 (fp16 on T4 and V100, which lack bf16) torch.matmul rate measured on
// the card; the fp32 column the same with fp32 inputs (PyTorch's default
// keeps TF32 off for matmuls since 1.12). Cards nobody measured take a
// measured sibling's ratio to its own datasheet figure (same architecture
// and product class), and say so.
constexpr const char* kMamf =
    "Maximum Achievable Matmul FLOPS (bf16, best shape, mean of 100 runs): stas00/ml-engineering "
    "compute/accelerator/README.md at 744d01e1; fp32 column: zzc0721/torch-performance-test-data database.md at "
    "9d828276";
constexpr const char* kZzc =
    "torch.matmul at 1024-10240 square, largest rate, median of the card's rows: zzc0721/torch-performance-test-data "
    "database.md at 9d828276";

constexpr const char* kFromH100Sxm = "derived: datasheet peak x the H100 SXM's measured ratio (794.5 / 989)";
constexpr const char* kFromL40s = "derived: datasheet peak x the L40S's measured ratio (269.2 / 362)";
constexpr const char* kFromA6000 = "derived: datasheet peak x the RTX A6000's measured ratio (123.3 / 154.8)";
constexpr const char* kFrom4090 = "derived: datasheet peak x the RTX 4090's measured ratio (165.3 / 165.2)";
constexpr const char* kFrom3090 = "derived: datasheet peak x the RTX 3090's measured ratio (76.6 / 71)";
constexpr const char* kFromMi300x = "derived: datasheet peak x the MI300X's measured ratio (668.4 / 1307)";

// Backend network of a node, Gbit/s over all its NICs: NVIDIA DGX H100 and
// DGX B200 datasheets (8 x single-port ConnectX-7, 400 Gb/s each); DGX A100
// user guide (8 x ConnectX-6, 200 Gb/s HDR each); Azure ND MI300X v5 (8 x 400
// Gb/s InfiniBand per VM); one 100 GbE NIC for PCIe servers and workstations
// (AWS g5.48xlarge: 100 Gbps), the low end users should override
// (hardware.network_gbps).
constexpr double kHgx = 3200, kDgxA100 = 1600, kPcieNode = 100;

// Default prices, USD per GPU-hour: RunPod Serverless flex workers, per
// second x 3600 (docs.runpod.io/serverless/pricing, the stored copy read
// 2026-11-29): one provider's list price, per-second billing; editable
// (time.prices, time.gpu_hour_usd). Cards the table does not list have no
// default (0): the cost then needs a price.
constexpr const char* kPriceSource =
    "RunPod Serverless flex price per second x 3600 (docs.runpod.io/serverless/pricing, read 2026-11-29)";
constexpr double kB200 = 0.00240 * 3600, kH200 = 0.00155 * 3600, kH100 = 0.00116 * 3600, kA100 = 0.00076 * 3600,
                 kL40 = 0.00053 * 3600, kA6000 = 0.00034 * 3600, kL4 = 0.00019 * 3600, k4090 = 0.00031 * 3600,
                 kA4000 = 0.00016 * 3600;

// Datasheet peaks: dense, FP32 accumulation (NVIDIA product datasheets;
// GeForce cards: the architecture whitepapers' appendix tables, "Peak
// FP16 Tensor TFLOPS with FP32 Accumulate", which is half the FP16-accumulate
// rate on GeForce; AMD: the Instinct product pages, MI250(X) halved for one
// GCD). Memory bandwidth: the same datasheets.
constexpr GpuSpeed kSpeeds[] = {
    {"B200 180GB", 2250, 1745, 66.2, kMamf, 8000, Link::kNvlink5, kHgx, kB200},
    {"H200 141GB", 989, 794.5, 51.3, "H100 SXM's MAMF (the same compute; stas00/ml-engineering: \"H200 is the same\")",
     4800, Link::kNvlink4, kHgx, kH200},
    {"GH200 96GB", 989, 828.6, 52.0, kMamf, 4000, Link::kPcie5, 400, 0},
    {"H100 NVL 94GB", 835, 835 * 794.5 / 989, 835 * 52.0 / 989, kFromH100Sxm, 3900, Link::kNvlinkBridge, kPcieNode,
     kH100},
    {"H100 80GB", 989, 794.5, 52.0, kMamf, 3350, Link::kNvlink4, kHgx, kH100},
    {"H100 PCIe 80GB", 756, 495.9, 37.0, kZzc, 2000, Link::kPcie5, kPcieNode, kH100},
    {"A100 80GB", 312, 271.2, 19.2, kMamf, 2039, Link::kNvlink3, kDgxA100, kA100},
    {"A100 40GB", 312, 271.2, 18.1, kMamf, 1555, Link::kNvlink3, kDgxA100, 0},
    {"L40S 48GB", 362, 269.2, 46.9, kZzc, 864, Link::kPcie4, kPcieNode, kL40},
    {"L40 48GB", 181, 181 * 269.2 / 362, 46.9 * 90.5 / 91.6, kFromL40s, 864, Link::kPcie4, kPcieNode, kL40},
    {"A40 48GB", 149.7, 149.7 * 123.3 / 154.8, 23.9 * 37.4 / 38.7, kFromA6000, 696, Link::kPcie4, kPcieNode, kA6000},
    {"L4 24GB", 121, 70.9, 15.4, kZzc, 300, Link::kPcie4, kPcieNode, kL4},
    {"A10G 24GB", 70, 70 * 123.3 / 154.8, 23.9 * 31.2 / 38.7, kFromA6000, 600, Link::kPcie4, kPcieNode, 0},
    {"A10 24GB", 125, 125 * 123.3 / 154.8, 23.9 * 31.2 / 38.7, kFromA6000, 600, Link::kPcie4, kPcieNode, 0},
    {"T4 16GB", 65, 41.9, 4.35, kZzc, 320, Link::kPcie3, kPcieNode, 0},
    {"V100 32GB", 125, 94.8, 14.1, kZzc, 900, Link::kNvlink2, kPcieNode, 0},
    {"V100 16GB", 125, 94.8, 14.1, kZzc, 900, Link::kNvlink2, kPcieNode, 0},
    {"RTX 6000 Ada 48GB", 364.2, 364.2 * 269.2 / 362, 46.9 * 91.1 / 91.6, kFromL40s, 960, Link::kPcie4, kPcieNode,
     kL40},
    {"RTX A6000 48GB", 154.8, 123.3, 23.9, kZzc, 768, Link::kPcie4, kPcieNode, kA6000},
    {"RTX A5000 24GB", 111.1, 111.1 * 123.3 / 154.8, 23.9 * 27.8 / 38.7, kFromA6000, 768, Link::kPcie4, kPcieNode, kL4},
    {"RTX A4000 16GB", 76.7, 62.8, 11.9, kZzc, 448, Link::kPcie4, kPcieNode, kA4000},
    {"RTX 5090 32GB", 209.5, 238.0, 68.4, kZzc, 1792, Link::kPcie5, kPcieNode, 0},
    {"RTX 5080 16GB", 112.6, 102.9, 33.6, kZzc, 960, Link::kPcie5, kPcieNode, 0},
    {"RTX 5070 Ti 16GB", 87.9, 99.1, 33.1, kZzc, 896, Link::kPcie5, kPcieNode, 0},
    {"RTX 5070 12GB", 61.7, 67.2, 24.1, kZzc, 672, Link::kPcie5, kPcieNode, 0},
    {"RTX 5060 Ti 16GB", 47.4, 48.2, 17.4, kZzc, 448, Link::kPcie5, kPcieNode, 0},
    {"RTX 4090 24GB", 165.2, 165.3, 54.3, kZzc, 1008, Link::kPcie4, kPcieNode, k4090},
    {"RTX 4080 16GB", 97.5, 97.5 * 165.3 / 165.2, 54.3 * 48.7 / 82.6, kFrom4090, 716.8, Link::kPcie4, kPcieNode, 0},
    {"RTX 4070 Ti SUPER 16GB", 88.2, 91.1, 30.8, kZzc, 672, Link::kPcie4, kPcieNode, 0},
    {"RTX 4070 Ti 12GB", 80.2, 80.2 * 165.3 / 165.2, 54.3 * 40.1 / 82.6, kFrom4090, 504, Link::kPcie4, kPcieNode, 0},
    {"RTX 4070 12GB", 58.3, 58.3 * 165.3 / 165.2, 54.3 * 29.1 / 82.6, kFrom4090, 504, Link::kPcie4, kPcieNode, 0},
    {"RTX 4060 Ti 16GB", 44.1, 42.7, 11.5, kZzc, 288, Link::kPcie4, kPcieNode, 0},
    {"RTX 4060 Ti 8GB", 44.1, 42.7, 11.5, "the RTX 4060 Ti 16GB's measurement (the same chip)", 288, Link::kPcie4,
     kPcieNode, 0},
    {"RTX 4060 8GB", 30.1, 31.2, 8.3, kZzc, 272, Link::kPcie4, kPcieNode, 0},
    {"RTX 3090 Ti 24GB", 80, 80 * 76.6 / 71, 24.8 * 40 / 35.6, kFrom3090, 1008, Link::kPcie4, kPcieNode, 0},
    {"RTX 3090 24GB", 71, 76.6, 24.8, kZzc, 936, Link::kPcie4, kPcieNode, kL4},
    {"RTX 3080 Ti 12GB", 68.2, 77.4, 24.6, kZzc, 912, Link::kPcie4, kPcieNode, 0},
    {"RTX 3080 12GB", 61.3, 61.3 * 76.6 / 71, 24.8 * 30.6 / 35.6, kFrom3090, 912, Link::kPcie4, kPcieNode, 0},
    {"RTX 3080 10GB", 59.5, 64.7, 21.1, kZzc, 760, Link::kPcie4, kPcieNode, 0},
    {"RTX 3070 8GB", 40.6, 41.4, 13.7, kZzc, 448, Link::kPcie4, kPcieNode, 0},
    {"RTX 3060 Ti 8GB", 32.4, 36.5, 13.8, kZzc, 448, Link::kPcie4, kPcieNode, 0},
    {"RTX 3060 12GB", 25.4, 25.4 * 76.6 / 71, 24.8 * 12.7 / 35.6, kFrom3090, 360, Link::kPcie4, kPcieNode, 0},
    {"MI300X 192GB", 1307, 668.4, 163.4 * 668.4 / 1307, kMamf, 5300, Link::kXgmi, kHgx, 0},
    {"MI250X 64GB", 191.5, 191.5 * 668.4 / 1307, 23.9 * 668.4 / 1307, kFromMi300x, 1638, Link::kXgmi, kPcieNode, 0},
    {"MI250 64GB", 181, 181 * 668.4 / 1307, 22.6 * 668.4 / 1307, kFromMi300x, 1638, Link::kXgmi, kPcieNode, 0},
};

}  // namespace

const GpuSpeed* gpu_speed(const std::string& catalog_name) {
  for (const GpuSpeed& s : kSpeeds) {
    if (catalog_name == s.name) return &s;
  }
  return nullptr;
}

const char* gpu_price_source() { return kPriceSource; }

}  // namespace vram

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

}  // namespace

const GpuInfo* find_gpu(const std::string& name) {
  const std::string key = normalise(name);
  if (key.empty()) return nullptr;
  const auto& cat = gpu_catalog();
  // Exact (normalised) name first, then the name without its memory suffix,
  // then a unique prefix match ("4090" -> "RTX 4090 24GB").
  for (const auto& g : cat) {
    if (normalise(g.name) == key) return &g;
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

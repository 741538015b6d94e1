#include "vram/gpus.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace vram {

int64_t GpuInfo::usable_bytes() const {
  const double bytes = static_cast<double>(total_mib) * 1048576.0 * (1.0 - kDriverReserveFraction);
  // Round down to the 2 MiB granularity of device allocations.
  const int64_t granule = int64_t{2} << 20;
  return static_cast<int64_t>(std::floor(bytes / granule)) * granule;
}

const std::vector<GpuInfo>& gpu_catalog() {
  // total_mib: the total nvidia-smi prints for the card (FB memory, MiB), as
  // shown in vendor docs and public nvidia-smi logs; HBM parts expose all of
  // their stacks (A100 80GB: 81,920 MiB), GDDR parts a little less than the
  // marketed size (RTX 4090: 24,564 MiB). AMD: rocm-smi VRAM total.
  static const std::vector<GpuInfo> kGpus = {
      {"H100 80GB", 81559, 90, "nvidia", "SXM5 / PCIe HBM3"},
      {"H100 NVL 94GB", 95830, 90, "nvidia", "HBM3, one card of the NVL pair"},
      {"H200 141GB", 143771, 90, "nvidia", "HBM3e"},
      {"GH200 96GB", 97871, 90, "nvidia", "Grace Hopper, HBM3"},
      {"B200 180GB", 183359, 100, "nvidia", "HBM3e (DGX B200: 1,440 GB / 8)"},
      {"A100 80GB", 81920, 80, "nvidia", "SXM4 / PCIe HBM2e"},
      {"A100 40GB", 40960, 80, "nvidia", "SXM4 / PCIe HBM2"},
      {"L40S 48GB", 46068, 89, "nvidia", "GDDR6 with ECC"},
      {"L40 48GB", 46068, 89, "nvidia", "GDDR6 with ECC"},
      {"RTX 6000 Ada 48GB", 49140, 89, "nvidia", "GDDR6"},
      {"RTX A6000 48GB", 49140, 86, "nvidia", "GDDR6"},
      {"A40 48GB", 46068, 86, "nvidia", "GDDR6 with ECC"},
      {"L4 24GB", 23034, 89, "nvidia", "GDDR6"},
      {"A10G 24GB", 23028, 86, "nvidia", "AWS g5 GDDR6"},
      {"A10 24GB", 23028, 86, "nvidia", "GDDR6"},
      {"RTX 5090 32GB", 32607, 120, "nvidia", "GDDR7"},
      {"RTX 4090 24GB", 24564, 89, "nvidia", "GDDR6X"},
      {"RTX 3090 24GB", 24576, 86, "nvidia", "GDDR6X"},
      {"RTX 4080 16GB", 16376, 89, "nvidia", "GDDR6X"},
      {"T4 16GB", 15360, 75, "nvidia", "GDDR6 with ECC"},
      {"V100 32GB", 32768, 70, "nvidia", "SXM2 HBM2"},
      {"V100 16GB", 16384, 70, "nvidia", "SXM2 HBM2"},
      {"MI300X 192GB", 196592, 0, "amd", "HBM3 (ROCm)"},
      {"MI250X 128GB", 131056, 0, "amd", "HBM2e, two GCDs of 64 GB each seen as two devices"},
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
  std::vector<const GpuInfo*> hits;
  for (const auto& g : cat) {
    const std::string n = normalise(g.name);
    if (n.find(key) != std::string::npos) hits.push_back(&g);
  }
  if (hits.size() == 1) return hits[0];
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

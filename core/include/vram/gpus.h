// GPU catalog: what a process can really use on each card.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vram {

struct GpuInfo {
  const char* name;
  int64_t total_mib;   // nvidia-smi "FB Memory Usage: Total" (MiB)
  int sm;              // compute capability x10 (cuBLAS workspace depends on sm90); 0 on AMD
  const char* vendor;  // "nvidia" | "amd"
  const char* note;
  const char* arch = "";  // "sm_86", "gfx942"
  bool nvswitch = false;  // sold on NVSwitch boards (HGX / DGX): NCCL turns NVLS on by default
  // What the card runs (gpu_catalog() cites each rule): bf16 arithmetic,
  // FlashAttention-2, FP8 tensor cores.
  bool bf16 = false;
  bool flash_attn2 = false;
  bool fp8 = false;
  int64_t usable_bytes() const;  // total minus the driver reserve CUDA does not expose
};

const std::vector<GpuInfo>& gpu_catalog();
// Case-insensitive; accepts aliases like "h100", "A100-80GB", "4090".
const GpuInfo* find_gpu(const std::string& name);

// Why the card cannot run what the request asks (bf16 precision,
// FP8 weights), naming the field, or "" when it
// can. Custom cards (gpu.memory_gib) have no compute capability: never refused.
struct GpuRefusal {
  std::string path;  // "train.precision", "infer.weights_dtype"
  std::string message;
};

// Fraction of nvidia-smi's total that cudaMemGetInfo does not report.
// H100 80GB: nvidia-smi 81,559 MiB vs torch.cuda.mem_get_info total 79.18 GiB
// (81,080 MiB; llm-d config_explorer) -> 0.59 %; a 96 GiB card: NVML 95.59 GiB
// vs CUDA 94.97 GiB (ollama PR #18201) -> 0.65 %. We take 0.6 %.
inline constexpr double kDriverReserveFraction = 0.006;

// The seeds' headroom rule: keep the peak at or below 75-80 % of physical
// memory (seed 000 "Safety Margins"). We check the upper end, 80 %.
inline constexpr double kHeadroomFraction = 0.80;

}  // namespace vram

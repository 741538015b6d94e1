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

// The link between the GPUs of one node (request hardware.link): what NCCL's
// collectives run over. Sourced figures in core/src/speed/links.cpp.
enum class Link { kNvlink5, kNvlink4, kNvlink3, kNvlink2, kNvlinkBridge, kXgmi, kPcie5, kPcie4, kPcie3 };

// What a card computes and moves per second, for the time model (issue 31):
// gpus.cpp cites every figure. Only the time model reads it (the full WASM
// module), so the first-visit module carries none of it.
struct GpuSpeed {
  const char* name;  // the catalog name (GpuInfo::name)
  // Dense 16-bit tensor-core peak with FP32 accumulation (bf16, or fp16 on
  // cards without bf16), TFLOPS: the datasheet figure MFU is measured against.
  double peak_tflops;
  // The largest 16-bit torch.matmul rate measured on the card, TFLOPS: what a
  // matmul can reach, not the datasheet's peak.
  double matmul_tflops;
  // The same for fp32 matmuls (no TF32: PyTorch's default since 1.12), TFLOPS.
  double fp32_tflops;
  const char* matmul_source;  // whose measurement (or which sibling it is derived from)
  double memory_gbs;          // memory bandwidth, datasheet, GB/s
  Link link;                  // the usual link between the cards of one node
  // Backend network of a node of these cards, Gbit/s summed over its NICs.
  double network_gbps;
  // Default price per GPU-hour in USD, 0 when the price table has none.
  double usd_per_hour;
};

// The speed row of a catalog card (nullptr for a card without one).
const GpuSpeed* gpu_speed(const std::string& catalog_name);
// Where the default prices come from and when they were read.
const char* gpu_price_source();

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

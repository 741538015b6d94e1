// `vram-probe nccl`: the GPU memory NCCL takes on this machine's topology, to
// replace the estimator's modelled NCCL buffers (channels x 2 connections x
// ~9.19 MiB per ring communicator, research/memory-internals.md §2.4; open
// item §10.4) with a measured overheads.nccl_bytes.
//
// One process drives every listed GPU (ncclCommInitAll). The CUDA contexts
// and the all-reduce buffers exist before the first reading, so the figure is
// NCCL's alone: what ncclCommInitAll adds plus what the first collective adds
// (its connection buffers, and its kernels as they load into the context, which
// a real job pays too).
// With NCCL_RUNTIME_CONNECT=1, the default since NCCL 2.22 ("lazy data
// channel connection", pytorch/pytorch#142179; NCCL_PARAM(RuntimeConnect, ..., 1)
// in init.cc), the connections and their buffers appear at the first
// collective, not at init, and only for the algorithm that collective uses
// (research §2.4). A run that also uses other algorithms (tree, NVLS, PAT for
// all-gather / reduce-scatter) takes more; NCCL_RUNTIME_CONNECT=0 connects
// every algorithm at init ("it will build all the channel connectivity",
// aws/aws-ofi-nccl#1007) and so measures every collective algorithm's
// buffers; send/recv and all-to-all buffers (research §2.4) come on top.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "measure/collectives.h"
#include "measure/memory_source.h"
#include "measure/status.h"

namespace vram::probe {

// The all-reduce size when --bytes is not given: 32 MiB, above PyTorch DDP's
// 25 MiB gradient bucket (bucket_cap_mb default, torch/nn/parallel/distributed.py),
// so NCCL picks the algorithm and protocol it uses for large gradient
// reductions.
inline constexpr std::size_t kDefaultNcclBytes = 32u << 20;

// Variables that change how much memory NCCL allocates (research §2.4):
// buffer size, NVLink SHARP, channel counts, lazy connection, the P2P
// transport's reach, and the protocol / algorithm choice.
inline constexpr std::array<const char*, 8> kNcclMemoryVariables = {
    "NCCL_BUFFSIZE",        "NCCL_NVLS_ENABLE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
    "NCCL_RUNTIME_CONNECT", "NCCL_P2P_LEVEL",   "NCCL_PROTO",         "NCCL_ALGO"};

// One meter reading of a device.
struct NcclReading {
  DeviceMemory memory;                              // the device as NVML sees it
  std::optional<std::uint64_t> process_used_bytes;  // this process's usedGpuMemory on it
};

struct NcclDeviceResult {
  unsigned device = 0;                 // meter (NVML, nvidia-smi) index
  unsigned cuda_device = 0;            // the same GPU in the runtime's (CUDA) numbering
  NcclReading base;                    // contexts and the all-reduce buffer exist; no communicator yet
  NcclReading after_init;              // after ncclCommInitAll
  NcclReading after_first_collective;  // after the first all-reduce finished
  // Differences by the report's method; null when a reading is missing or
  // went down (another process freed memory meanwhile).
  std::optional<std::uint64_t> init_bytes;              // after_init - base
  std::optional<std::uint64_t> first_collective_bytes;  // after_first_collective - after_init
  std::optional<std::uint64_t> nccl_bytes;              // after_first_collective - base
};

struct NcclMeasurement {
  // The answer, per GPU: the largest device's nccl_bytes (the busiest rank
  // decides whether a layout fits). Null when any device could not be measured.
  std::optional<std::uint64_t> nccl_bytes;
  // "nvml_process_used" when NVML listed this process on every device at
  // every reading, else "device_used_delta", else "none".
  std::string method;
  std::size_t all_reduce_bytes = 0;
  std::optional<std::string> nccl_version;
  // Every kNcclMemoryVariables name with its value, or nullopt when unset.
  std::vector<std::pair<std::string, std::optional<std::string>>> environment;
  std::vector<NcclDeviceResult> devices;
  std::vector<Status> errors;  // notes: busy devices, failed process lists, a failed release
};

// `meter` reads memory without a context of its own (NVML); `runtime`
// creates the contexts (CUDA); `nccl` runs the collective. meter_indices[i]
// and runtime_indices[i] name the same GPU, and the order is the ranks'
// order. `bytes` is the float32 all-reduce buffer per GPU. Needs at least two
// distinct GPUs: a communicator of one rank opens no connection.
Result<NcclMeasurement> MeasureNccl(MemorySource& meter, const std::vector<unsigned>& meter_indices,
                                    MemorySource& runtime, const std::vector<unsigned>& runtime_indices,
                                    Collectives& nccl, std::size_t bytes);

}  // namespace vram::probe

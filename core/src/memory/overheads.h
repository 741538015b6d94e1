// Private: memory outside the model's tensors, shared by training and
// inference estimates (research/memory-internals.md §2).
#pragma once

#include <cstdint>

#include "vram/gpus.h"
#include "vram/request.h"

namespace vram::memory {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// PyTorch CublasHandlePool.cpp: the default CUBLAS_WORKSPACE_CONFIG
// ":4096:2:16:8" = 8 MiB + 128 KiB per (handle, stream), 32 MiB on sm90;
// cuBLASLt adds 1 MiB per handle. Training uses two handles (the forward
// thread and autograd's backward thread), inference one.
inline int64_t cublas_per_handle(int sm) {
  return sm == 90 ? (int64_t{32} << 20) : (int64_t{4096} * 2 + 16 * 8) * 1024;
}
inline constexpr int64_t kCublasLtPerHandle = int64_t{1} << 20;

inline int64_t cublas_bytes(const Request& req, int handles) {
  const GpuInfo* gpu = req.gpu.name.empty() ? nullptr : find_gpu(req.gpu.name);
  const int sm = gpu != nullptr ? gpu->sm : 80;
  return req.overheads.cublas_workspace_bytes.value_or(handles * (cublas_per_handle(sm) + kCublasLtPerHandle));
}

// CUDA context with lazy module loading (default since CUDA 12.2, set by
// PyTorch since 1.13): ~300 MB bare (pytorch PR #86509: 287,047,680 B;
// ptrblck in pytorch#109888: "around 400MB"), growing as cuBLAS,
// FlashAttention and Triton kernels load. 512 MiB is research §2.1's working
// prior; `vram-probe overheads` measures the real value.
inline constexpr int64_t kDefaultContextBytes = int64_t{512} << 20;

inline int64_t context_bytes(const Request& req) {
  return req.overheads.cuda_context_bytes.value_or(kDefaultContextBytes);
}

}  // namespace vram::memory

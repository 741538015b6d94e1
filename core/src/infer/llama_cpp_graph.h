// Private: llama.cpp's compute buffers (issue 30).
//
// llama_context reserves its compute buffers once, at start-up, for the
// worst-case prompt-processing graph: n_tokens = min(n_ctx, n_ubatch) tokens,
// every one an output, attending to the whole KV cache (llama-context.cpp
// graph_reserve with memory->init_full(), ggml-org/llama.cpp ec98e2002).
// graph() builds that graph for a decoder the way llm_graph_context builds
// one (models/llama.cpp llm_build_llama and its kin, llama-graph.cpp
// build_attn / build_attn_mha / build_ffn / build_moe_ffn): the tensors of
// every layer with their sizes and the device of their weights; ggml's
// scheduler and allocator then size each backend's buffer
// (memory/ggml_graph.h).
#pragma once

#include <cstdint>
#include <vector>

#include "gguf/model.h"

namespace vram::infer::llama_cpp {

// What the graph depends on, resolved from the request (llama_cpp.cpp).
struct GraphShape {
  int64_t n_tokens = 512;    // min(n_ctx, n_ubatch)
  int64_t n_outputs = 512;   // = n_tokens in the reserve
  int64_t n_stream = 1;      // KV streams (1 unified, else n_seq_max)
  int64_t kv_cells = 0;      // cells per stream of the full-attention cache
  int64_t kv_cells_swa = 0;  // cells per stream of the sliding-window cache
  bool flash_attn = false;
  const gguf::GgmlType* type_k = nullptr;
  const gguf::GgmlType* type_v = nullptr;
  int32_t gpus = 1;                   // GPU backends; the CPU is backend `gpus`
  std::vector<int32_t> layer_device;  // per block: its weights' backend
  std::vector<int32_t> kv_device;     // per block: its KV cache's backend
  int32_t output_device = 0;          // the output layer's backend
  bool op_offload = true;
  int32_t copies = 1;  // pipeline parallelism: GGML_SCHED_MAX_COPIES = 4
};

// Each backend's compute buffer in bytes (GPUs 0..gpus-1, then the host's).
std::vector<int64_t> compute_buffers(const gguf::Model& m, const GraphShape& s);

}  // namespace vram::infer::llama_cpp

// Private: ggml's compute buffers (issue 30), the way ggml sizes them.
//
// llama.cpp does not allocate activations one by one: at start-up it builds
// the worst-case graph (llama-context.cpp graph_reserve), ggml_backend_sched
// assigns each node to a backend and splits the graph where the backend
// changes, copying each split's inputs from other backends, and ggml-alloc
// (ggml_gallocr) plans every node's place in one buffer per backend. That
// plan is a timeline of tensors replayed through an allocator: nodes are
// allocated in execution order, reuse a parent's memory when the op can run
// in place, and are freed after their last consumer; the buffer is the
// highest offset ggml_dyn_tallocr reaches (best fit among free blocks, else
// the end). Graph holds those tensors; reserve() replays them.
// Sources: ggml-org/ggml d99724f2 src/ggml-backend.cpp
// (ggml_backend_sched_split_graph) and src/ggml-alloc.c
// (ggml_gallocr_alloc_graph_impl, ggml_dyn_tallocr_alloc / _free_bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vram::memory::ggml {

// A ggml op's memory behaviour.
enum class Op {
  kInPlace,  // ggml_op_can_inplace: SCALE, ADD, MUL, UNARY, ROPE, RMS_NORM, SOFT_MAX, ... (ggml-alloc.c)
  kNew,      // a fresh result (MUL_MAT, GET_ROWS, CONT, CPY, GLU, FLASH_ATTN_EXT, ...)
  kView,     // RESHAPE, VIEW, PERMUTE, TRANSPOSE, SET_ROWS into a cache: no storage of its own
};

struct Tensor {
  std::string name;
  int64_t bytes = 0;  // as the backend allocates it (ggml_backend_buft_get_alloc_size)
  Op op = Op::kNew;
  std::vector<int32_t> src;
  // Where the data already is: a weight (in a model buffer) or the KV cache,
  // on backend `home`; not part of any compute buffer.
  bool external = false;
  bool weight = false;  // external and a weight (GGML_BACKEND_BUFFER_USAGE_WEIGHTS)
  bool input = false;   // ggml_set_input: a graph input the host fills
  bool output = false;  // ggml_set_output: never freed
  // The backend: external tensors' buffer; -1 = chosen by the scheduler.
  int32_t home = -1;
  // ggml_backend_offload_op: a higher-priority backend (a GPU) takes this op
  // when its weight is in host memory (batch >= 32 rows for CUDA).
  bool offloadable = false;
};

class Graph {
 public:
  int32_t add(Tensor t);
  // An op node of `bytes` reading `src`.
  int32_t op(const char* name, Op op, int64_t bytes, std::vector<int32_t> src);
  int32_t view(const char* name, int32_t of) { return op(name, Op::kView, 0, {of}); }
  const std::vector<Tensor>& tensors() const { return t_; }
  std::vector<Tensor>& tensors() { return t_; }

 private:
  std::vector<Tensor> t_;
};

struct Backends {
  int32_t count = 1;               // the last one is the CPU (the lowest priority)
  std::vector<int64_t> alignment;  // per backend: ggml_backend_buft_get_alignment
  bool op_offload = true;          // llama_context_params.op_offload
  int32_t copies = 1;              // GGML_SCHED_MAX_COPIES with pipeline parallelism, else 1
};

// The size of each backend's compute buffer for `g`: the scheduler's
// assignment and splits, then ggml-alloc's plan.
std::vector<int64_t> reserve(Graph g, const Backends& b);

}  // namespace vram::memory::ggml

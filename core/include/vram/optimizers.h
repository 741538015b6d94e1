// Optimizers by HF Trainer `optim` name (training_args.py OptimizerNames) plus
// the seeds' list: state bytes per trainable parameter and step temporaries.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vram {

enum class StateDtype {
  kParam,   // torch.optim: zeros_like(param) -> the parameter's dtype
  kFp32,    // always fp32 (apex, bnb 32-bit)
  kBlock8,  // bitsandbytes 8-bit blockwise: 1 B + fp32 absmax per 256 values
};

enum class StepKernel {
  kForeach,  // torch _multi_tensor_*: param-group-sized temporaries
  kFused,    // one multi-tensor kernel, no param-sized temporaries
  kForLoop,  // per-tensor loop: temporaries <= the largest tensor
};

struct OptimizerInfo {
  const char* name;   // canonical HF/torch name
  const char* label;  // shown to the user
  int states;         // full-size state tensors per parameter
  StateDtype state_dtype;
  StepKernel kernel;
  // Param-group-sized temporaries of the foreach path, in state-sized units
  // (torch/optim/adam.py: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs) -> 1).
  int foreach_temporaries;
  bool factored;       // Adafactor: row + column second moments for matrices
  bool paged;          // bnb paged: cudaMallocManaged, evictable to host
  const char* source;  // where the numbers come from
  // Muon: steps only the 2-D weights of the hidden layers (its states and
  // Newton-Schulz temporaries); embeddings, the head, norms and biases go to
  // AdamW (2 states), as torch.optim.Muon's docstring prescribes.
  bool matrices_only = false;
};

// nullptr when unknown. Accepts aliases ("adamw" -> adamw_torch).
const OptimizerInfo* find_optimizer(const std::string& name);
std::vector<std::string> optimizer_names();
// The accepted alias names and the optimizer each stands for.
std::vector<std::pair<std::string, std::string>> optimizer_aliases();

}  // namespace vram

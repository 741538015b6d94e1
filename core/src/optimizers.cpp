#include "vram/optimizers.h"

#include <algorithm>
#include <utility>

namespace vram {

namespace {

// State counts: torch/optim/*.py `_init_group` (the tensors created with
// zeros_like per parameter); bitsandbytes/optim/optimizer.py init_state;
// transformers/optimization.py Adafactor; apex FusedLAMB.
// foreach temporaries: torch/optim/adam.py _multi_tensor_adam allocates
// exp_avg_sq_sqrt = torch._foreach_sqrt(...) (1 state-size); RMSprop/Adagrad do
// the same with _foreach_sqrt / _foreach_addcdiv inputs (1); SGD momentum and
// Lion update in place (0).
const OptimizerInfo kOptimizers[] = {
    {"adamw_torch", "AdamW (torch, foreach)", 2, StateDtype::kParam, StepKernel::kForeach, 1, false, false,
     "torch/optim/adamw.py -> adam.py _multi_tensor_adam (default on CUDA)"},
    {"adamw_torch_fused", "AdamW (torch, fused)", 2, StateDtype::kParam, StepKernel::kFused, 0, false, false,
     "torch/optim/adam.py _fused_adam; HF Trainer's default optim in recent transformers"},
    {"adamw_torch_forloop", "AdamW (torch, for-loop)", 2, StateDtype::kParam, StepKernel::kForLoop, 0, false, false,
     "torch/optim/adam.py _single_tensor_adam (foreach=False)"},
    {"adam", "Adam (torch, foreach)", 2, StateDtype::kParam, StepKernel::kForeach, 1, false, false,
     "torch/optim/adam.py _multi_tensor_adam"},
    {"adamw_apex_fused", "AdamW (apex FusedAdam)", 2, StateDtype::kFp32, StepKernel::kFused, 0, false, false,
     "apex/optimizers/fused_adam.py (fp32 exp_avg/exp_avg_sq)"},
    {"adamw_bnb_8bit", "AdamW 8-bit (bitsandbytes)", 2, StateDtype::kBlock8, StepKernel::kFused, 0, false, false,
     "bitsandbytes/optim/optimizer.py Optimizer2State: uint8 states + fp32 absmax per 256"},
    {"paged_adamw_8bit", "Paged AdamW 8-bit (bitsandbytes)", 2, StateDtype::kBlock8, StepKernel::kFused, 0, false, true,
     "bitsandbytes PagedAdamW8bit: states in cudaMallocManaged pages"},
    {"paged_adamw_32bit", "Paged AdamW 32-bit (bitsandbytes)", 2, StateDtype::kFp32, StepKernel::kFused, 0, false, true,
     "bitsandbytes PagedAdamW32bit"},
    {"adamw_bnb_32bit", "AdamW 32-bit (bitsandbytes)", 2, StateDtype::kFp32, StepKernel::kFused, 0, false, false,
     "bitsandbytes AdamW32bit"},
    {"adafactor", "Adafactor (HF)", 0, StateDtype::kFp32, StepKernel::kForLoop, 0, true, false,
     "transformers/optimization.py Adafactor: beta1=None, factored exp_avg_sq_row/col"},
    {"sgd", "SGD (no momentum)", 0, StateDtype::kParam, StepKernel::kForeach, 0, false, false,
     "torch/optim/sgd.py: momentum_buffer only when momentum != 0"},
    {"sgd_momentum", "SGD with momentum", 1, StateDtype::kParam, StepKernel::kForeach, 0, false, false,
     "torch/optim/sgd.py momentum_buffer"},
    {"nesterov", "SGD with Nesterov momentum", 1, StateDtype::kParam, StepKernel::kForeach, 0, false, false,
     "torch/optim/sgd.py momentum_buffer (nesterov=True)"},
    {"adagrad", "Adagrad", 1, StateDtype::kParam, StepKernel::kForeach, 1, false, false,
     "torch/optim/adagrad.py state_sum; _multi_tensor_adagrad std = _foreach_sqrt(state_sums)"},
    {"rmsprop", "RMSprop", 1, StateDtype::kParam, StepKernel::kForeach, 1, false, false,
     "torch/optim/rmsprop.py square_avg; avg = _foreach_sqrt(square_avgs)"},
    {"rmsprop_momentum", "RMSprop with momentum", 2, StateDtype::kParam, StepKernel::kForeach, 1, false, false,
     "torch/optim/rmsprop.py square_avg + momentum_buffer"},
    {"nadam", "NAdam", 2, StateDtype::kParam, StepKernel::kForeach, 1, false, false,
     "torch/optim/nadam.py exp_avg, exp_avg_sq (+ scalar mu_product)"},
    {"radam", "RAdam", 2, StateDtype::kParam, StepKernel::kForeach, 1, false, false, "torch/optim/radam.py"},
    {"adamax", "Adamax", 2, StateDtype::kParam, StepKernel::kForeach, 1, false, false,
     "torch/optim/adamax.py exp_avg, exp_inf"},
    {"amsgrad", "AdamW with AMSGrad", 3, StateDtype::kParam, StepKernel::kForeach, 1, false, false,
     "torch/optim/adam.py max_exp_avg_sq (amsgrad=True)"},
    {"lamb", "LAMB (apex FusedLAMB)", 2, StateDtype::kFp32, StepKernel::kFused, 0, false, false,
     "apex/optimizers/fused_lamb.py exp_avg, exp_avg_sq"},
    {"lion_32bit", "Lion 32-bit (bitsandbytes)", 1, StateDtype::kFp32, StepKernel::kFused, 0, false, false,
     "Chen et al. 2023 (one momentum); bitsandbytes Lion32bit"},
    {"lion_8bit", "Lion 8-bit (bitsandbytes)", 1, StateDtype::kBlock8, StepKernel::kFused, 0, false, false,
     "bitsandbytes Lion8bit: uint8 state + absmax"},
    {"paged_lion_8bit", "Paged Lion 8-bit (bitsandbytes)", 1, StateDtype::kBlock8, StepKernel::kFused, 0, false, true,
     "bitsandbytes PagedLion8bit"},
    {"schedule_free_adamw", "Schedule-free AdamW", 2, StateDtype::kParam, StepKernel::kForLoop, 0, false, false,
     "facebookresearch/schedule_free AdamWScheduleFree: z, exp_avg_sq"},
    // torch/optim/_muon.py (torch >= 2.9): one momentum_buffer (zeros_like
    // grad) per 2-D parameter, _single_tensor_muon only ("Foreach is not
    // supported for Muon yet").
    {"muon", "Muon (torch.optim.Muon) + AdamW for the rest", 1, StateDtype::kParam, StepKernel::kForLoop, 0, false,
     false,
     "torch/optim/_muon.py: momentum_buffer per hidden 2-D weight, Newton-Schulz per tensor; embeddings, head, norms "
     "with AdamW (2 states)",
     true},
};

// adamw_hf is transformers' own AdamW (transformers/optimization.py AdamW:
// a Python loop over the parameters, no foreach temporaries), the Trainer's
// default optim before 4.32 (transformers PR #25109), not torch's.
const std::pair<const char*, const char*> kAliases[] = {
    {"adamw", "adamw_torch"},       {"adamw_hf", "adamw_torch_forloop"}, {"adamw_8bit", "adamw_bnb_8bit"},
    {"adam8bit", "adamw_bnb_8bit"}, {"adamw8bit", "adamw_bnb_8bit"},     {"paged_adamw", "paged_adamw_32bit"},
    {"lion", "lion_32bit"},         {"sgd-momentum", "sgd_momentum"},    {"adamw_torch_foreach", "adamw_torch"},
};

}  // namespace

const OptimizerInfo* find_optimizer(const std::string& name) {
  std::string n = name;
  for (const auto& [alias, canonical] : kAliases) {
    if (n == alias) n = canonical;
  }
  for (const auto& o : kOptimizers) {
    if (n == o.name) return &o;
  }
  return nullptr;
}

std::vector<std::string> optimizer_names() {
  std::vector<std::string> out;
  for (const auto& o : kOptimizers) out.emplace_back(o.name);
  return out;
}

std::vector<std::pair<std::string, std::string>> optimizer_aliases() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [alias, canonical] : kAliases) out.emplace_back(alias, canonical);
  return out;
}

}  // namespace vram

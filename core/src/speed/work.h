// Private: the work of one training micro-step on one pipeline rank, and the
// rates it runs at (the time model's compute, memory and dispatch terms).
#pragma once

#include <string>
#include <vector>

#include "speed/speed.h"
#include "train/layout.h"

namespace vram::speed {

// One micro-step of one rank: FLOPs, bytes moved by memory-bound kernels and
// kernels dispatched, with what went into them.
struct StageWork {
  double tokens = 0;  // tokens this rank processes per micro-step
  double layers = 0;
  double attention_layers = 0;
  double moe_layers = 0;
  double linear_params = 0;     // this rank's Linear weights (all instances)
  double trainable_params = 0;  // this rank's trainable parameters (base + adapters)
  double trainable_tensors = 0;
  double weight_bytes = 2, grad_bytes = 2, state_bytes = 2, master_bytes = 0, act_bytes = 2;
  bool full_recompute = false;
  bool fp32 = false;                  // matmuls in fp32 (train.precision fp32)
  bool flash = true;                  // a fused attention kernel (SDPA / FlashAttention / xformers), not eager
  double mm_flops = 0;                // Linear layers (and LoRA adapters): forward, backward, recomputation
  double attn_flops = 0;              // attention scores and their product with the values
  double mem_bytes = 0;               // norms, activations, rotary, residuals, the loss, dequantisation, casts
  double host_ops = 0;                // kernels the host dispatches
  double backward_share = 2.0 / 3.0;  // of the micro-step's compute, what backward takes
  double model_flops_per_token = 0;   // the whole model, forward + backward, no recomputation (MFU)
  std::string mm_formula, attn_formula, mem_formula, host_formula;
  std::vector<std::string> assumptions;

  Range matmul_time(const Machine& m) const;
  Range attention_time(const Machine& m) const;
  Range memory_time(const Machine& m) const;
};

StageWork stage_work(const Request& req, const train::Stage& stage);

// Every pipeline rank's work, which does not depend on the card (the GPU
// table times it on every card), and the whole model's FLOPs per token.
struct TrainWork {
  std::vector<StageWork> stages;
  double model_flops_per_token = 0;
};
TrainWork train_work(const Request& req);
TrainTime train_time(const Request& req, const TrainWork& w, const Machine& m);

// The micro-step: the GPU's kernels, or the host's dispatch of them when
// that takes longer (eager PyTorch launches asynchronously, so the slower
// of the two sets the pace).
Range micro_step(const StageWork& w, const Machine& m);

// The micro-step's terms over `steps` micro-steps (compute, attention,
// memory-bound kernels, and the host's dispatch when it sets the pace).
std::vector<Term> micro_terms(const StageWork& w, const Machine& m, double steps);

// `bytes` at the card's measured share of `gbs` (gpt-fast, below).
Range bandwidth_time(double bytes, double gbs);
std::string bandwidth_share_text();
// `kernels` dispatched by eager PyTorch from Python.
Range host_time(double kernels);

}  // namespace vram::speed

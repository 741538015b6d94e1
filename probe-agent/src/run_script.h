// `vram-probe run`: the training script for a request (issue 16 part 5).
//
// The script is probe-agent/src/run/train_script.py, embedded at build time,
// with the request's resolved settings (the core's defaults and the
// framework's applied) filled in as its SPEC. Nothing here runs it.
#pragma once

#include <string>

#include "vram/json_reader.h"

namespace vram::cli {

// The script's SPEC for a training request, or {"error": {code, message, path}}:
// {"request", "model_config", "method", "micro_batch", "seq_len", "grad_accum",
//  "precision", "optimizer", "grad_checkpointing", "attention", "fused_loss",
//  "fused_norm", "lora": {rank, alpha, dropout, targets, adapter_fp32, use_dora},
//  "quant": {double_quant, prepare_kbit, quantizer}, "trainable_modules",
//  "optimizer_in_backward", "activation_offload", "compile",
//  "zero_grad_set_to_none", "steps"}. `estimate` receives the core's result for
// the request (the report carries it).
json run_spec(const json& request, int steps, json* estimate);

// The script text with `spec` as its SPEC.
std::string run_script(const json& spec);

}  // namespace vram::cli

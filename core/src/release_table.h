// The release table and the version rules (vram/releases.h), as data
// (issue 18: constexpr rows cost the WebAssembly module data, not code).
// Included by releases.cpp only.
#pragma once

#include "table_def.h"

namespace vram::releases {

using detail::Def;

struct ReleaseRow {
  const char* framework;
  const char* version;
  const char* date;
  const char* libraries;  // "library=version|..."
  const char* source;
};

// A rule: while `library` is in `range`, `path` takes `value` where the
// request leaves it out, for the frameworks listed ("" = every one) and
// when every "path=value" of `when` holds in the filled request.
struct RuleRow {
  const char* library;
  const char* range;
  const char* frameworks;
  const char* when;
  const char* path;
  Def value;
  const char* source;
};

// Each framework's releases, oldest first. PLACEHOLDER_TABLE
inline constexpr ReleaseRow kReleases[] = {
    {"hf", "4.57.1", "2025-10-14", "torch=2.9.0|peft=0.17.1|trl=0.24.0|bitsandbytes=0.48.1", "PLACEHOLDER"},
    {"torchtune", "0.1.0", "2024-04-15", "torch=2.2.2|torchao=0.1|bitsandbytes=0.43.1",
     "torchtune v0.1.0 pyproject.toml torchao==0.1; README: tested with PyTorch 2.2.2"},
    {"torchtune", "0.1.1", "2024-04-18", "torch=2.2.2|torchao=0.1|bitsandbytes=0.43.1",
     "torchtune v0.1.1 pyproject.toml torchao==0.1"},
    {"torchtune", "0.2.0", "2024-07-16", "torch=2.3.1|torchao=0.3.1|bitsandbytes=0.43.1",
     "torchtune v0.2.0 pyproject.toml torchao==0.3.1"},
    {"torchtune", "0.2.1", "2024-07-25", "torch=2.4.0|torchao=0.3.1|bitsandbytes=0.43.2",
     "torchtune v0.2.1 pyproject.toml torchao==0.3.1"},
    {"torchtune", "0.3.0", "2024-09-17", "torch=2.4.1|torchao=0.5.0|bitsandbytes=0.43.3", "PLACEHOLDER"},
    {"torchtune", "0.3.1", "2024-10-02", "torch=2.4.1|torchao=0.5.0|bitsandbytes=0.44.1", "PLACEHOLDER"},
    {"torchtune", "0.4.0", "2024-11-13", "torch=2.5.1|torchao=0.6.1|bitsandbytes=0.44.1", "PLACEHOLDER"},
    {"torchtune", "0.5.0", "2024-12-20", "torch=2.5.1|torchao=0.7.0|bitsandbytes=0.45.0", "PLACEHOLDER"},
    {"torchtune", "0.6.0", "2025-03-18", "torch=2.6.0|torchao=0.9.0|bitsandbytes=0.45.3", "PLACEHOLDER"},
    {"torchtune", "0.6.1", "2025-04-07", "torch=2.6.0|torchao=0.10.0|bitsandbytes=0.45.5", "PLACEHOLDER"},
    {"litgpt", "0.5.11", "2025-09-01", "torch=2.8.0|bitsandbytes=0.45.2", "PLACEHOLDER"},
    {"unsloth", "2025.11.1", "2025-11-01", "torch=2.8.0|transformers=4.57.1|peft=0.17.1|trl=0.23.0|bitsandbytes=0.48.1",
     "PLACEHOLDER"},
    {"axolotl", "0.12.2", "2025-08-20", "torch=2.7.1|transformers=4.55.2|peft=0.17.0|trl=0.21.0|bitsandbytes=0.47.0",
     "PLACEHOLDER"},
    {"llama_factory", "0.9.3", "2025-06-16",
     "torch=2.7.1|transformers=4.52.4|peft=0.15.2|trl=0.9.6|bitsandbytes=0.46.0", "PLACEHOLDER"},
    {"torchtitan", "0.2.0", "2025-10-01", "torch=2.9.0", "PLACEHOLDER"},
    {"megatron", "0.14.0", "2025-10-01", "torch=2.8.0", "PLACEHOLDER"},
    {"deepspeed", "0.18.0", "2025-10-01", "torch=2.8.0", "PLACEHOLDER"},
};

// Behaviour that changed with a library version.
inline constexpr RuleRow kRules[] = {
    {"bitsandbytes", "<0.43.2", "", "train.method=qlora|train.quant.quantizer=bitsandbytes,lightning_bitsandbytes",
     "train.quant.saves_input", true, "PLACEHOLDER"},
    {"torch", "<1.11", "", "", "train.softmax_saves_input", true, "PLACEHOLDER"},
    {"torch", "<2.0", "hf", "", "train.zero_grad_set_to_none", false, "PLACEHOLDER"},
    {"torchao", "<0.2", "", "train.method=qlora|train.quant.quantizer=torchao", "train.quant.quantizer",
     "torchao_unchunked", "PLACEHOLDER"},
    {"unsloth", "<2024.2", "unsloth", "train.kernels=unsloth", "train.returns_kv_cache", true, "PLACEHOLDER"},
};

}  // namespace vram::releases

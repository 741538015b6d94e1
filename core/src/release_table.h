// The release table and the version rules (vram/releases.h), as data
// (issue 18: constexpr rows cost the WebAssembly module data, not code).
// Included by releases.cpp, frameworks.cpp (hf's label) and core/lite/reach.cpp
// (hf at its newest release, below).
#pragma once

#include "table_def.h"
#include "vram/releases.h"

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

// The default framework, hf, at its newest release, and its label: the
// first-visit WASM module answers a request that names no other framework and
// no release (core/lite/reach.cpp) from these alone, and the full table below
// (kReleases) and frameworks.cpp read the same definitions, so the two builds
// cannot drift apart. A rule of the version table that held for this release
// would need the full module too: tests/core/frameworks_test.cpp checks that
// none does.
inline constexpr const char* kHfLabel = "Hugging Face Trainer / TRL / Accelerate + PEFT";
inline constexpr ReleaseRow kHfNewest = {
    "hf", "5.14.1", "2026-07-17", "torch=2.13.0|peft=0.19.1|trl=1.5.1|bitsandbytes=0.49.2",
    "hf transformers 5.14.1 (axolotl v0.18.0 pins it, 2026-07-17), the newest this table knows: others the newest "
    "known"};

// An FSDP1 LoRA or QLoRA job (a rule's `when`).
inline constexpr const char* kFsdp1Lora =
    "train.method=lora,qlora|parallel.fsdp=full_shard,shard_grad_op,hybrid_shard,no_shard|parallel.fsdp_version=1";

// A torchtune full fine-tune under FSDP: the distributed recipe (a rule's `when`).
inline constexpr const char* kTorchtuneFullFsdp =
    "train.method=full|parallel.fsdp=full_shard,shard_grad_op,hybrid_shard,no_shard";

// A row as the API gives it (libraries as pairs).
FrameworkRelease to_release(const ReleaseRow& row);

// The job of `fw` at `rel` as the newest release, what a request that names
// no release and no versions.* gets (framework_job adjusts it otherwise):
// the release's library versions, and the note saying which release applied.
FrameworkJob newest_job(const Framework& fw, const FrameworkRelease& rel);

// Each framework's releases, oldest first, and the versions of the libraries
// their users ran: the release's own pins (pyproject.toml / setup.py /
// requirements at its tag) where it pins one, else the newest release of the
// library on the release's date (PyPI release dates and git tags; research for
// issue 29, 2026-11-29). "0.0" stands for a framework before its first
// release, at the commit a published measurement names: lit-gpt 8641822
// (2023-10, before LitGPT's first release) and torchtitan 9dec370 (2024-12).
// A 2026 release's libraries are the newest this table knows on its date.
inline constexpr ReleaseRow kReleases[] = {
    {"hf", "4.15.0", "2021-12-22", "torch=1.10.1",
     "hf transformers 4.15.0: torch the newest on 2021-12-22 (PEFT, TRL, bitsandbytes 4-bit not yet released)"},
    {"hf", "4.31.0", "2023-07-18", "torch=2.0.1|peft=0.4.0|trl=0.4.7|bitsandbytes=0.40.0",
     "hf transformers 4.31.0: others the newest on 2023-07-18"},
    {"hf", "4.32.0", "2023-08-22", "torch=2.0.1|peft=0.5.0|trl=0.5.0|bitsandbytes=0.41.0",
     "hf transformers 4.32.0: others the newest on 2023-08-22"},
    {"hf", "4.33.0", "2023-09-06", "torch=2.0.1|peft=0.5.0|trl=0.7.1|bitsandbytes=0.41.0",
     "hf transformers 4.33.0: others the newest on 2023-09-06"},
    {"hf", "4.36.0", "2023-12-11", "torch=2.1.1|peft=0.7.0|trl=0.7.4|bitsandbytes=0.41.0",
     "hf transformers 4.36.0: others the newest on 2023-12-11"},
    {"hf", "4.39.0", "2024-03-20", "torch=2.2.1|peft=0.9.0|trl=0.8.1|bitsandbytes=0.43.0",
     "hf transformers 4.39.0: others the newest on 2024-03-20"},
    {"hf", "4.40.0", "2024-04-18", "torch=2.2.2|peft=0.10.0|trl=0.8.1|bitsandbytes=0.43.1",
     "hf transformers 4.40.0: others the newest on 2024-04-18"},
    {"hf", "4.44.0", "2024-08-06", "torch=2.4.0|peft=0.12.0|trl=0.9.6|bitsandbytes=0.43.3",
     "hf transformers 4.44.0: others the newest on 2024-08-06"},
    {"hf", "4.46.0", "2024-10-24", "torch=2.5.0|peft=0.13.2|trl=0.11.4|bitsandbytes=0.44.1",
     "hf transformers 4.46.0: others the newest on 2024-10-24"},
    {"hf", "4.48.0", "2025-01-10", "torch=2.5.1|peft=0.14.0|trl=0.13.0|bitsandbytes=0.45.0",
     "hf transformers 4.48.0: others the newest on 2025-01-10"},
    {"hf", "4.51.0", "2025-04-05", "torch=2.6.0|peft=0.15.0|trl=0.16.1|bitsandbytes=0.45.4",
     "hf transformers 4.51.0: others the newest on 2025-04-05"},
    {"hf", "4.53.0", "2025-06-26", "torch=2.7.1|peft=0.15.2|trl=0.18.2|bitsandbytes=0.46.0",
     "hf transformers 4.53.0: others the newest on 2025-06-26"},
    {"hf", "4.54.0", "2025-07-25", "torch=2.7.1|peft=0.16.0|trl=0.19.1|bitsandbytes=0.46.1",
     "hf transformers 4.54.0: others the newest on 2025-07-25"},
    {"hf", "4.57.0", "2025-10-03", "torch=2.8.0|peft=0.17.1|trl=0.23.1|bitsandbytes=0.48.1",
     "hf transformers 4.57.0: others the newest on 2025-10-03"},
    {"hf", "5.0.0", "2026-01-30", "torch=2.9.1|peft=0.18.1|trl=0.27.2|bitsandbytes=0.49.1",
     "hf transformers 5.0.0 (axolotl v0.14.0 pins it, 2026-01-30): others the newest known on that date"},
    {"hf", "5.13.1", "2026-07-14", "torch=2.13.0|peft=0.19.1|trl=1.5.1|bitsandbytes=0.49.2",
     "hf transformers 5.13.1 with torch 2.13.0, as huggingface/peft method_comparison/MetaMathQA/results record them "
     "(run 2026-07-14); others the newest known"},
    kHfNewest,
    {"torchtune", "0.1.0", "2024-04-15", "torch=2.2.2|torchao=0.1|bitsandbytes=0.43.1",
     "torchtune v0.1.0 9e2c9c06: pins torchao; others the newest on 2024-04-15"},
    {"torchtune", "0.1.1", "2024-04-18", "torch=2.2.2|torchao=0.1|bitsandbytes=0.43.1",
     "torchtune v0.1.1 02847ec4: pins torchao; others the newest on 2024-04-18"},
    {"torchtune", "0.2.0", "2024-07-16", "torch=2.3.1|torchao=0.3.1|bitsandbytes=0.43.1",
     "torchtune v0.2.0 95f8a47e: pins torchao; others the newest on 2024-07-16"},
    {"torchtune", "0.2.1", "2024-07-25", "torch=2.4.0|torchao=0.3.1|bitsandbytes=0.43.2",
     "torchtune v0.2.1 83557aa9: pins torchao; others the newest on 2024-07-25"},
    {"torchtune", "0.3.0", "2024-09-17", "torch=2.4.1|torchao=0.5.0|bitsandbytes=0.43.3",
     "torchtune v0.3.0 651a7300: others the newest on 2024-09-17"},
    {"torchtune", "0.3.1", "2024-10-02", "torch=2.4.1|torchao=0.5.0|bitsandbytes=0.44.1",
     "torchtune v0.3.1 48a6c75f: others the newest on 2024-10-02"},
    {"torchtune", "0.4.0", "2024-11-13", "torch=2.5.1|torchao=0.6.1|bitsandbytes=0.44.1",
     "torchtune v0.4.0 03a4b1e4: others the newest on 2024-11-13"},
    {"torchtune", "0.5.0", "2024-12-20", "torch=2.5.1|torchao=0.7.0|bitsandbytes=0.45.0",
     "torchtune v0.5.0 0bb00a47: others the newest on 2024-12-20"},
    {"torchtune", "0.6.0", "2025-03-18", "torch=2.6.0|torchao=0.9.0|bitsandbytes=0.45.3",
     "torchtune v0.6.0 235c0fe2: others the newest on 2025-03-18"},
    {"torchtune", "0.6.1", "2025-04-07", "torch=2.6.0|torchao=0.10.0|bitsandbytes=0.45.5",
     "torchtune v0.6.1 a6290a5b: others the newest on 2025-04-07"},
    {"litgpt", "0.0", "2023-10-20", "torch=2.1.0+cu121|bitsandbytes=0.41.1",
     "lit-gpt 8641822: tutorials/resource-tables.md states torch 2.1.0+cu121 and bitsandbytes 0.41.1"},
    {"litgpt", "0.3.1", "2024-05-08", "torch=2.3.0|bitsandbytes=0.42.0",
     "litgpt v0.3.1 b7f77316: pins bitsandbytes; others the newest on 2024-05-08"},
    {"litgpt", "0.4.0", "2024-06-10", "torch=2.3.1|bitsandbytes=0.42.0",
     "litgpt v0.4.0 8ca46d2f: pins bitsandbytes; others the newest on 2024-06-10"},
    {"litgpt", "0.4.5", "2024-07-17", "torch=2.3.1|bitsandbytes=0.42.0",
     "litgpt v0.4.5 7884343c: pins bitsandbytes; others the newest on 2024-07-17"},
    {"litgpt", "0.4.10", "2024-08-13", "torch=2.4.0|bitsandbytes=0.42.0",
     "litgpt v0.4.10 b042058e: pins bitsandbytes; others the newest on 2024-08-13"},
    {"litgpt", "0.5.0", "2024-10-04", "torch=2.4.1|bitsandbytes=0.42.0",
     "litgpt v0.5.0 4e5b81b1: pins bitsandbytes; others the newest on 2024-10-04"},
    {"litgpt", "0.5.4", "2024-12-23", "torch=2.5.1|bitsandbytes=0.42.0",
     "litgpt v0.5.4 e63099c4: pins bitsandbytes; others the newest on 2024-12-23"},
    {"litgpt", "0.5.8", "2025-05-06", "torch=2.7.0|bitsandbytes=0.45.5",
     "litgpt v0.5.8 c50b5746: others the newest on 2025-05-06"},
    {"litgpt", "0.5.10", "2025-08-13", "torch=2.8.0|bitsandbytes=0.47.0",
     "litgpt v0.5.10 90cc9a80: others the newest on 2025-08-13"},
    {"litgpt", "0.5.12", "2025-12-18", "torch=2.9.1|bitsandbytes=0.49.0",
     "litgpt v0.5.12 df94ee2c: others the newest on 2025-12-18"},
    {"litgpt", "0.5.13", "2026-06-29", "torch=2.9.1|bitsandbytes=0.49.2",
     "litgpt v0.5.13 26857050: others the newest known on 2026-06-29"},
    {"unsloth", "2024.1", "2023-12-30", "torch=2.1.2|transformers=4.36.0|peft=0.7.1|trl=0.7.6|bitsandbytes=0.41.0",
     "unsloth aab090d20f: others the newest on 2023-12-30"},
    {"unsloth", "2024.2", "2024-02-04", "torch=2.2.0|transformers=4.37.0|peft=0.8.2|trl=0.7.10|bitsandbytes=0.42.0",
     "unsloth efa0d2332e: others the newest on 2024-02-04"},
    {"unsloth", "2024.3", "2024-03-03", "torch=2.2.1|transformers=4.38.0|peft=0.9.0|trl=0.7.11|bitsandbytes=0.42.0",
     "unsloth fa2a43baf3: others the newest on 2024-03-03"},
    {"unsloth", "2024.4", "2024-04-06", "torch=2.2.2|transformers=4.39.0|peft=0.10.0|trl=0.8.1|bitsandbytes=0.43.0",
     "unsloth 920f0ae6e5: others the newest on 2024-04-06"},
    {"unsloth", "2024.8", "2024-07-24", "torch=2.4.0|transformers=4.43.0|peft=0.12.0|trl=0.9.6|bitsandbytes=0.43.2",
     "unsloth e9ab1ad5bc: others the newest on 2024-07-24"},
    {"unsloth", "2024.11.1", "2024-11-05", "torch=2.5.1|transformers=4.46.0|peft=0.13.2|trl=0.12.0|bitsandbytes=0.44.1",
     "unsloth 15268ba184: others the newest on 2024-11-05"},
    {"unsloth", "2024.12.1", "2024-12-03", "torch=2.5.1|transformers=4.46.0|peft=0.13.2|trl=0.12.0|bitsandbytes=0.44.1",
     "unsloth e7edb9b339: others the newest on 2024-12-03"},
    {"unsloth", "2025.2.1", "2025-02-06", "torch=2.6.0|transformers=4.48.0|peft=0.14.0|trl=0.14.0|bitsandbytes=0.45.2",
     "unsloth 144190bd06: others the newest on 2025-02-06"},
    {"unsloth", "2025.8.1", "2025-08-02", "torch=2.7.1|transformers=4.54.0|peft=0.17.0|trl=0.20.0|bitsandbytes=0.46.1",
     "unsloth 5202538bf5: others the newest on 2025-08-02"},
    {"unsloth", "2026.8.1", "2026-08-02", "torch=2.13.0|transformers=5.5.0|peft=0.20.0|trl=1.9.0|bitsandbytes=0.50.0",
     "unsloth d7e52ec85d: others the newest known on 2026-08-02"},
    {"axolotl", "0.4.0", "2024-01-24", "torch=2.1.2|transformers=4.37.0|peft=0.7.0|trl=0.7.10|bitsandbytes=0.42.0",
     "axolotl v0.4.0: pins transformers, peft; others the newest on 2024-01-24"},
    {"axolotl", "0.5.0", "2024-11-08",
     "torch=2.5.1|transformers=4.46.1|peft=0.13.2|trl=0.12.0|bitsandbytes=0.44.1|torchao=0.5.0",
     "axolotl v0.5.0: pins transformers, peft, trl, bitsandbytes, torchao; others the newest on 2024-11-08"},
    {"axolotl", "0.6.0", "2024-12-09",
     "torch=2.5.1|transformers=4.47.0|peft=0.14.0|trl=0.12.2|bitsandbytes=0.45.0|torchao=0.5.0",
     "axolotl v0.6.0: pins peft, bitsandbytes, torchao; others the newest on 2024-12-09"},
    {"axolotl", "0.7.0", "2025-02-18",
     "torch=2.6.0|transformers=4.48.3|peft=0.14.0|trl=0.15.0|bitsandbytes=0.45.2|torchao=0.7.0",
     "axolotl v0.7.0: pins transformers, peft, trl, bitsandbytes, torchao; others the newest on 2025-02-18"},
    {"axolotl", "0.9.0", "2025-04-28",
     "torch=2.7.0|transformers=4.51.3|peft=0.15.2|trl=0.17.0|bitsandbytes=0.45.4|torchao=0.9.0",
     "axolotl v0.9.0: pins transformers, peft, bitsandbytes, torchao; others the newest on 2025-04-28"},
    {"axolotl", "0.12.0", "2025-08-08",
     "torch=2.8.0|transformers=4.55.0|peft=0.17.0|trl=0.21.0|bitsandbytes=0.46.1|torchao=0.12.0",
     "axolotl v0.12.0: pins transformers, peft, bitsandbytes, torchao; others the newest on 2025-08-08"},
    {"axolotl", "0.13.0", "2025-11-18",
     "torch=2.9.1|transformers=4.57.1|peft=0.18.0|trl=0.25.1|bitsandbytes=0.48.2|torchao=0.13.0",
     "axolotl v0.13.0: pins transformers, bitsandbytes, torchao; others the newest on 2025-11-18"},
    {"axolotl", "0.14.0", "2026-01-30",
     "torch=2.9.1|transformers=5.0.0|peft=0.18.1|trl=0.26.2|bitsandbytes=0.49.1|torchao=0.13.0",
     "axolotl v0.14.0: pins transformers, bitsandbytes, torchao; others the newest known on 2026-01-30"},
    {"axolotl", "0.18.0", "2026-07-17",
     "torch=2.13.0|transformers=5.14.1|peft=0.19.1|trl=1.5.1|bitsandbytes=0.49.1|torchao=0.17.0",
     "axolotl v0.18.0: pins transformers, peft, bitsandbytes, torchao; others the newest known on 2026-07-17"},
    {"llama_factory", "0.6.0", "2024-03-25",
     "torch=2.2.1|transformers=4.39.0|peft=0.10.0|trl=0.8.1|bitsandbytes=0.43.0",
     "llama_factory v0.6.0: others the newest on 2024-03-25"},
    {"llama_factory", "0.8.0", "2024-06-08",
     "torch=2.3.1|transformers=4.41.0|peft=0.11.1|trl=0.9.4|bitsandbytes=0.43.1",
     "llama_factory v0.8.0: others the newest on 2024-06-08"},
    {"llama_factory", "0.9.0", "2024-09-09",
     "torch=2.4.1|transformers=4.44.0|peft=0.12.0|trl=0.10.1|bitsandbytes=0.43.3",
     "llama_factory v0.9.0: others the newest on 2024-09-09"},
    {"llama_factory", "0.9.1", "2024-11-25",
     "torch=2.5.1|transformers=4.46.0|peft=0.13.2|trl=0.12.0|bitsandbytes=0.44.1",
     "llama_factory v0.9.1: others the newest on 2024-11-25"},
    {"llama_factory", "0.9.3", "2025-06-17",
     "torch=2.7.1|transformers=4.52.0|peft=0.15.2|trl=0.18.2|bitsandbytes=0.46.0",
     "llama_factory v0.9.3: others the newest on 2025-06-17"},
    {"llama_factory", "0.9.4", "2025-12-31",
     "torch=2.9.1|transformers=4.57.0|peft=0.18.0|trl=0.26.2|bitsandbytes=0.49.0",
     "llama_factory v0.9.4: others the newest on 2025-12-31"},
    {"llama_factory", "0.9.5", "2026-05-30", "torch=2.9.1|transformers=5.6.0|peft=0.18.1|trl=1.5.1|bitsandbytes=0.49.2",
     "llama_factory v0.9.5: others the newest known on 2026-05-30"},
    {"torchtitan", "0.0", "2024-12-26", "torch=2.6.0.dev20241223|torchao=0.7.0",
     "torchtitan 9dec370: others the newest on 2024-12-26"},
    {"torchtitan", "0.1.0", "2025-06-17", "torch=2.7.1|torchao=0.11.0",
     "torchtitan v0.1.0: others the newest on 2025-06-17"},
    {"torchtitan", "0.2.0", "2025-10-17", "torch=2.9.0|torchao=0.13.0",
     "torchtitan v0.2.0: others the newest on 2025-10-17"},
    {"torchtitan", "0.2.2", "2026-02-20", "torch=2.9.1|torchao=0.16.0",
     "torchtitan v0.2.2: others the newest known on 2026-02-20"},
    {"fsdp_qlora", "0.0", "2024-03-26", "torch=2.2.1|transformers=4.39.0|peft=0.9.0|bitsandbytes=0.43.0",
     "fsdp_qlora 50efa1e (no releases; the commit benchmarks_03_2024.md's figures are read with, 'done in February "
     "and March 2024'): README 'bitsandbytes>=0.43.0', 'Pytorch >= 2.2'; transformers, peft and torch the newest on "
     "2024-03-20, as hf@4.39.0"},
    {"deepspeed", "0.14.4", "2024-06-20", "torch=2.3.1", "deepspeed v0.14.4: others the newest on 2024-06-20"},
    {"deepspeed", "0.15.0", "2024-08-22", "torch=2.4.0", "deepspeed v0.15.0: others the newest on 2024-08-22"},
    {"deepspeed", "0.16.0", "2024-11-25", "torch=2.5.1", "deepspeed v0.16.0: others the newest on 2024-11-25"},
    {"deepspeed", "0.17.0", "2025-06-02", "torch=2.7.0", "deepspeed v0.17.0: others the newest on 2025-06-02"},
    {"deepspeed", "0.18.0", "2025-10-07", "torch=2.8.0", "deepspeed v0.18.0: others the newest on 2025-10-07"},
    {"deepspeed", "0.19.5", "2026-08-09", "torch=2.13.0", "deepspeed v0.19.5: others the newest known on 2026-08-09"},
    {"megatron", "0.8.0", "2024-08-12", "torch=2.4.0",
     "megatron Megatron-LM core_r0.8.0: torch the newest on 2024-08-12"},
    {"megatron", "0.10.0", "2025-02-17", "torch=2.6.0",
     "megatron Megatron-LM core_r0.10.0: torch the newest on 2025-02-17"},
    {"megatron", "0.12.0", "2025-05-07", "torch=2.7.0",
     "megatron Megatron-LM core_v0.12.0: torch the newest on 2025-05-07"},
    {"megatron", "0.14.0", "2025-10-08", "torch=2.8.0",
     "megatron Megatron-LM core_v0.14.0: torch the newest on 2025-10-08"},
    {"megatron", "0.16.0", "2026-02-26", "torch=2.9.1",
     "megatron Megatron-LM core_v0.16.0: torch the newest on 2026-02-26"},
};

// Behaviour that changed with a library version, in order: a later rule of
// the same field wins (the default optimizer's three rules).
inline constexpr RuleRow kRules[] = {
    {"bitsandbytes", "<0.43.2", "", "train.method=qlora|train.quant.quantizer=bitsandbytes,lightning_bitsandbytes",
     "train.quant.saves_input", true,
     "bitsandbytes 9e753741 (PR #1270, first released in 0.43.2): MatMul4Bit.forward kept ctx.tensors = (A, B), "
     "each 4-bit Linear's input, for backward; since then (None, B)"},
    {"torch", "<1.11", "", "", "train.softmax_saves_input", true,
     "pytorch PR #65242 / #66018 (first in 1.11): softmax and log_softmax autograd saved their input as well as "
     "their result until then"},
    {"torch", "<2.0", "hf|axolotl|llama_factory|unsloth", "", "train.zero_grad_set_to_none", false,
     "pytorch PR #92731 (2.0) made zero_grad(set_to_none=True) the default; before, the HF Trainer's "
     "model.zero_grad() zeroed the gradients in place and kept them"},
    {"torchao", "<0.2", "", "train.method=qlora|train.quant.quantizer=torchao", "train.quant.quantizer",
     "torchao_unchunked",
     "pytorch/ao 6081796b (PR #196, first in v0.2.0): NF4 quantisation in chunks of 1024^2 values; v0.1 searched "
     "the nearest code over the whole weight at once"},
    {"unsloth", "<2024.2", "unsloth", "train.kernels=unsloth", "train.returns_kv_cache", true,
     "unslothai/unsloth 0439b850 (PR #173, 2024.2): LlamaModel_fast_forward turns use_cache off in training; "
     "before, without gradient checkpointing, model() returned every layer's keys and values"},
    {"peft", ">=0.6,<0.12", "hf|fsdp_qlora", "train.method=lora", "train.lora.adapter_fp32", false,
     "huggingface/peft b786b884 (PR #915, 0.6.0): LoraLayer.update_layer moves the adapters to the base weight's "
     "dtype; ae1ae20b (PR #1706, 0.12.0) added get_peft_model(autocast_adapter_dtype=True), which casts them "
     "back to fp32"},
    // QLoRA sharded by FSDP: the 4-bit codes are stored as the model's bf16
    // (bnb_4bit_quant_storage) so FSDP can flatten them with the rest of a
    // unit, which must be one dtype (torch FSDP1 FlatParameter).
    {"trl", ">=0.8.0", "hf", "train.method=qlora|parallel.fsdp=full_shard,shard_grad_op,hybrid_shard,no_shard",
     "train.quant.prepare_kbit", false,
     "huggingface/trl 58c08889 (PR #1416, first in v0.8.0) sft_trainer.py: 'one should never call "
     "peft_module_casting_to_bf16 or prepare_model_for_kbit_training when doing QLoRA + FSDP / DS-Zero3', so the "
     "embeddings, norms and lm_head stay bf16; Answer.AI fsdp_qlora train.py (50efa1e) never calls it either"},
    {"trl", ">=0.8.0", "hf", "train.method=qlora|parallel.zero=3", "train.quant.prepare_kbit", false,
     "huggingface/trl 58c08889 (PR #1416, first in v0.8.0) sft_trainer.py: no prepare_model_for_kbit_training for "
     "QLoRA under DeepSpeed ZeRO-3 (is_sharded_qlora)"},
    {"peft", ">=0.6,<0.12", "hf|fsdp_qlora",
     "train.method=qlora|parallel.fsdp=full_shard,shard_grad_op,hybrid_shard,no_shard", "train.lora.adapter_fp32",
     false,
     "huggingface/peft b786b884 (PR #915, 0.6.0) LoraLayer.update_layer: the adapters take the base weight's dtype "
     "when it is a float one, and a 4-bit weight sharded by FSDP is stored as bf16 (bnb_4bit_quant_storage)"},
    {"trl", ">=0.9.3", "hf", "train.method=qlora|parallel.fsdp=full_shard,shard_grad_op,hybrid_shard,no_shard",
     "train.lora.adapter_fp32", false,
     "huggingface/trl e4ed7a3a (PR #1654, first in v0.9.3): get_peft_model(..., autocast_adapter_dtype=False) for "
     "QLoRA under FSDP, so PEFT >= 0.12 does not upcast the adapters either"},
    // The Trainer's own FSDP (TrainingArguments fsdp / fsdp_config) builds
    // FSDP2's fully_shard by default; before, FSDP1. Ahead of the FSDP1
    // rules below, which read the version this rule leaves. accelerate's own
    // config (FSDP_VERSION, "1" by default) is imported as the version it
    // names, which a rule never overrides.
    {"transformers", ">=5.10.3", "hf", "parallel.fsdp=full_shard,shard_grad_op", "parallel.fsdp_version", 2,
     "huggingface/transformers PR #45640 ('[Trainer] Default to FSDP2', opened 2026-04-24) "
     "src/transformers/training_args.py _process_fsdp_args: fsdp_version = int(self.fsdp_config.get('version', 2)), "
     "get('version', 1) before (at 00349ae8); full_shard / shard_grad_op become reshard_after_forward true / false, "
     "hybrid_shard and no_shard need version 1; v5.10.3 is the first release known to carry it (releases between "
     "5.0 and 5.10.3 not checked)"},
    // FSDP1's construction broadcasts each unit from rank 0
    // (memory/parallel_buffers.h broadcast_buckets).
    {"transformers", ">=4.31", "hf|axolotl|llama_factory|fsdp_qlora",
     "parallel.fsdp=full_shard,shard_grad_op,hybrid_shard,no_shard|parallel.fsdp_version=1",
     "parallel.fsdp_sync_module_states", true,
     "huggingface/accelerate 50eabe5b (v0.21.0, with transformers 4.31) FullyShardedDataParallelPlugin "
     "sync_module_states defaults to True (FSDP_SYNC_MODULE_STATES, 'True' through v0.33); the Trainer's "
     "TrainingArguments writes FSDP_SYNC_MODULE_STATES from fsdp_config.get('sync_module_states', 'true'); Answer.AI "
     "fsdp_qlora train.py 50efa1e passes sync_module_states=low_memory (True by default)"},
    {"torchtune", "<0.3", "torchtune",
     "parallel.fsdp=full_shard,shard_grad_op,hybrid_shard,no_shard|parallel.fsdp_version=1",
     "parallel.fsdp_sync_module_states", true,
     "torchtune v0.1.0 / v0.2.0 recipes/full_finetune_distributed.py and lora_finetune_distributed.py wrap the "
     "model in FSDP(..., sync_module_states=True); v0.3.0 moved to FSDP2's fully_shard"},
    // torchtune's full-method defaults (frameworks.cpp) are its single-device
    // configs'; a sharded full fine-tune runs full_finetune_distributed.py,
    // whose configs differ.
    {"torchtune", "", "torchtune", kTorchtuneFullFsdp, "train.optimizer_in_backward", false,
     "torchtune recipes/full_finetune_distributed.py has no optimizer_in_bwd through v0.3.1 (it came with dc0591c6, "
     "PR #1833, first in v0.4.0), and from v0.4.0 its configs set it off (recipes/configs/llama3_1/8B_full.yaml "
     "optimizer_in_bwd: False)"},
    {"torchtune", "<0.1.1", "torchtune", kTorchtuneFullFsdp, "train.optimizer", "adamw_torch",
     "torchtune v0.1.0 recipes/configs/llama2/7B_full.yaml optimizer: torch.optim.AdamW (foreach on CUDA)"},
    {"torchtune", ">=0.1.1,<0.3.1", "torchtune", kTorchtuneFullFsdp, "train.optimizer", "adamw_torch_forloop",
     "torchtune v0.1.1 .. v0.3.0 recipes/configs/llama3/8B_full.yaml, llama3_1/8B_full.yaml optimizer: "
     "torch.optim.AdamW, foreach: False"},
    {"torchtune", ">=0.3.1", "torchtune", kTorchtuneFullFsdp, "train.optimizer", "adamw_torch_fused",
     "torchtune v0.3.1 .. v0.6.1 recipes/configs/llama3_1/8B_full.yaml optimizer: torch.optim.AdamW, fused: True"},
    // FSDP1's LoRA wrap policy (memory/parallel_buffers.h
    // fsdp1_adapter_pieces): each adapter matrix its own unit, or whole
    // decoder layers with the frozen weights (use_orig_params=True).
    {"transformers", "", "hf", kFsdp1Lora, "parallel.fsdp_adapter_units", true,
     "huggingface/transformers src/transformers/trainer.py Trainer._fsdp_qlora_plugin_updates: a PeftModel "
     "with a LoraConfig under FSDP gets fsdp_plugin.auto_wrap_policy = peft.utils.other.fsdp_auto_wrap_policy "
     "(lambda_policy_fn: every leaf module whose weight requires grad its own unit, _or_policy with the "
     "decoder layers); releases before it (FSDP-QLoRA support, 2024-03) not told apart"},
    {"torchtune", "<0.3", "torchtune", kFsdp1Lora, "parallel.fsdp_adapter_units", true,
     "torchtune v0.2.0 recipes/lora_finetune_distributed.py FSDP(auto_wrap_policy="
     "utils.lora_fsdp_wrap_policy(modules_to_wrap={modules.TransformerDecoderLayer})): each trainable leaf its "
     "own unit (torchtune/utils/_distributed.py)"},
    {"fsdp_qlora", "", "fsdp_qlora", kFsdp1Lora, "parallel.fsdp_adapter_units", true,
     "fsdp_qlora train.py 50efa1e get_wrapping_policy: lambda_policy_fn (a leaf module whose weight requires "
     "grad) _or_policy the decoder layers, use_orig_params=False"},
    {"litgpt", "<0.5.8", "litgpt", kFsdp1Lora, "parallel.fsdp_adapter_units", false,
     "litgpt v0.3.1 .. v0.5.7 litgpt/finetune/lora.py setup(): FSDPStrategy(auto_wrap_policy={Block}) under "
     "lightning src/lightning/fabric/strategies/fsdp.py use_orig_params=True (51697a8b on): one FlatParameter "
     "per Block, frozen weights included, whose sharded gradient spans them (torch _flat_param.py; "
     "memory/parallel_buffers.h fsdp1_mixed_unit_grads); v0.5.8 wraps torch.nn.Linear instead, v0.5.11 moves "
     "to FSDP2 (ModelParallelStrategy)"},
    {"transformers", "<4.36", "hf|axolotl|llama_factory|unsloth", "", "train.attention", "eager",
     "huggingface/transformers v4.36.0 (PR #26572) added attn_implementation and the SDPA path; before, every "
     "model ran its eager attention (the s^2 probabilities kept for backward)"},
    // The causal-LM loss of transformers' models (not Unsloth's kernel, a
    // chunked or a fused loss: memory/loss.cpp standard_loss reads these).
    {"transformers", "<4.49", "hf|axolotl|llama_factory|fsdp_qlora", "", "train.loss_shift_copy", true,
     "huggingface/transformers PR #35646 ('Optimize ForCausalLMLoss by removing unnecessary contiguous() call', "
     "opened 2025-01-13, after v4.48.0; v4.49.0 the first release after it): loss_utils.py ForCausalLMLoss pads "
     "the labels instead of copying the logits shifted by one (logits[..., :-1, :].contiguous()), which every "
     "causal LM's forward also did before v4.46"},
    {"transformers", "<4.46", "hf|axolotl|llama_factory|fsdp_qlora", "", "train.logits_upcast_in_model", true,
     "huggingface/transformers v4.45 modeling_llama.py LlamaForCausalLM.forward: logits = "
     "self.lm_head(...).float() ('TODO: remove the float() operation in v4.46'; warning 'Starting from v4.46, the "
     "logits model output will have the same type as the model'): the fp32 logits are the model's output, its "
     "model-dtype ones are freed; v4.46 moved the upcast into loss/loss_utils.py ForCausalLMLoss"},
    {"torch", "<2.8", "hf", "", "train.optimizer", "adamw_torch",
     "huggingface/transformers PR #37358 (4.54): the default optim is adamw_torch_fused only with torch >= 2.8, "
     "adamw_torch (torch.optim.AdamW, foreach) otherwise"},
    {"transformers", "<4.54", "hf", "", "train.optimizer", "adamw_torch",
     "huggingface/transformers PR #37358 (4.54): adamw_torch (torch.optim.AdamW, foreach) was the default optim "
     "before"},
    {"transformers", "<4.32", "hf", "", "train.optimizer", "adamw_torch_forloop",
     "huggingface/transformers PR #25109 (4.32): the default optim was adamw_hf (transformers.AdamW, a Python "
     "loop over the parameters) before"},
};

}  // namespace vram::releases

// vram-probe quick SIZE: seed 004's `gpu-mem-calc quick 7 --gpus 8 --engine
// deepspeed`. The size becomes model.size (core: families/quick_size.cpp, a
// Llama-3-shaped decoder flagged approximate with its measured error), the
// engine becomes its request fields (core: quick_engine_fields), and every
// `vram-probe estimate` flag still applies; the estimate runs as `estimate`.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "commands.h"
#include "vram/families.h"

namespace vram::cli {

namespace {

const char* kQuickHelp =
    R"(usage: vram-probe quick SIZE [--gpus N] [--engine deepspeed|fsdp|megatron|ddp] [estimate options] [--json]

Estimates a model you know only by its size: a decoder of SIZE parameters shaped like today's open
models (Llama 3 / Qwen2.5: head_dim 128, 8 KV heads, SwiGLU 3.5 x hidden, vocab 128256, hidden / layers
near 112). APPROXIMATE: the result says so and quotes the error measured against exact presets (README
"Quick sizing"); give --model-config for an exact estimate.

SIZE:      7B, 1.5B, 350M, 1T, or a bare number of billions as in seed 004 (`quick 7` = 7B)
Engine:    --engine ddp        one full replica per GPU (the default)
           --engine deepspeed  ZeRO stage 3
           --engine fsdp       FSDP FULL_SHARD
           --engine megatron   Megatron-LM defaults (tp 1, pp 1): add --tp / --pp
Task:      training (full fine-tuning) unless --task infer or --method lora|qlora; every option of
           `vram-probe estimate --help` applies (--gpus, --gpu, --gpu-mem, --seq-len, --dtype, ...)
Output:    --json  the result object
)";

bool bare_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0';
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "vram-probe quick: %s (see --help)\n", message.c_str());
  return 2;
}

}  // namespace

int run_quick(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  std::string size, engine = "ddp";
  bool task_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kQuickHelp);
      return 0;
    }
    if (a == "--engine") {
      if (i + 1 >= args.size()) return usage_error("--engine needs deepspeed, fsdp, megatron or ddp");
      engine = args[++i];
      continue;
    }
    if (a == "--task") task_given = true;
    if (i == 0 && !a.empty() && a[0] != '-') {  // SIZE comes first, as in seed 004
      size = a;
      continue;
    }
    out.push_back(a);
  }
  if (size.empty()) return usage_error("SIZE is required, e.g. vram-probe quick 7B --gpus 8");
  // Seed 004 counts `quick 7` in billions; the request field wants units.
  if (bare_number(size)) size += "B";
  const auto fields = quick_engine_fields(engine);
  if (!fields.ok()) return usage_error(fields.error().message);
  std::vector<std::string> flags = {"--model-size", size};
  if (!task_given) flags.insert(flags.end(), {"--task", "train"});
  const json& f = fields.value();
  if (f.contains("train")) flags.insert(flags.end(), {"--framework", f["train"]["framework"].get<std::string>()});
  if (f.contains("parallel")) {
    for (const auto& [k, v] : f["parallel"].items()) {
      flags.push_back("--" + k);
      flags.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  // The user's own flags come last and win.
  flags.insert(flags.end(), out.begin(), out.end());
  return run_estimate(flags);
}

}  // namespace vram::cli

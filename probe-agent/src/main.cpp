// vram-probe: flags only. Each subcommand lives in its own file (STYLE.md).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"params", "count parameters of a config.json exactly (table, or --json)", vram::cli::run_params},
      {"estimate", "estimate per-GPU memory for a request or flags (table, or --json)", vram::cli::run_estimate},
      {"quick", "estimate a model known only by its size: quick 7B --gpus 8 --engine deepspeed (approximate)",
       vram::cli::run_quick},
      {"plan", "rank every layout of N GPUs by fit and cost: --gpus N --gpu NAME (table, or --json)",
       vram::cli::run_plan},
      {"version", "print version, schema and supported model types as JSON", vram::cli::run_version},
      {"fields", "every request field: default, values, limits, flag, URL key (table, or --json)",
       vram::cli::run_fields},
      {"validate", "check requests, model configs and probe reports; every problem with its field path",
       vram::cli::run_validate},
      {"frameworks", "each training framework's defaults for a method, with sources (text, or --json)",
       vram::cli::run_frameworks},
      {"import",
       "the request your Axolotl / LLaMA-Factory / torchtune / LitGPT / HF / DeepSpeed / accelerate files give",
       vram::cli::run_import},
      {"export", "write the DeepSpeed / accelerate / Trainer / Axolotl / LLaMA-Factory / torchtune file for a request",
       vram::cli::run_export},
      {"device", "facts of every NVIDIA GPU: memory, driver, CUDA, MIG (text, or --json)", vram::cli::run_device},
      {"watch", "run a command and record its GPU memory peak and timeline: watch -- <cmd>", vram::cli::run_watch},
      {"overheads", "measure the CUDA context size on this GPU (text, or --json)", vram::cli::run_overheads},
      {"nccl", "measure NCCL's memory per GPU over these GPUs (text, or --json)", vram::cli::run_nccl},
      {"run", "write and run a PyTorch script of the request, measure each phase: run --request FILE",
       vram::cli::run_run},
  };
  return kCommands;
}

void usage(FILE* out) {
  std::fprintf(out, "usage: vram-probe <command> [options]\n\ncommands:\n");
  for (const auto& c : commands()) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out, "\nRun 'vram-probe <command> --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& c : commands()) {
    if (name == c.name) return c.run(args);
  }
  std::fprintf(stderr, "vram-probe: unknown command '%s'\n\n", name.c_str());
  usage(stderr);
  return 2;
}

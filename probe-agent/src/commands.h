// Subcommands of vram-probe. Each returns the process exit code:
// 0 success, 1 bad input (error JSON printed), 2 usage error, 3 no GPU.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "vram/json_reader.h"

namespace vram::cli {

int run_params(const std::vector<std::string>& args);
int run_estimate(const std::vector<std::string>& args);
int run_plan(const std::vector<std::string>& args);
int run_version(const std::vector<std::string>& args);
int run_fields(const std::vector<std::string>& args);
// `vram-probe quick SIZE` (cli_quick.cpp): estimate from a parameter count.
int run_quick(const std::vector<std::string>& args);
int run_frameworks(const std::vector<std::string>& args);
int run_import(const std::vector<std::string>& args);
int run_export(const std::vector<std::string>& args);

// The import of these files (vram/import.h) with the bundled preset of the
// model they name added, or {"error": ...}. `estimate --from` starts from its request.
json import_config_files(const std::vector<std::string>& paths);
// Checks requests, model configs, probe reports and framework files (cli_validate.cpp).
int run_validate(const std::vector<std::string>& args);

// Every estimate / plan flag that sets a request field, with the field's path:
// the field table's flags (vram/fields.h), then the CLI's aliases and
// shortcuts (a shortcut setting two fields appears twice).
std::vector<std::pair<std::string, std::string>> request_flags();
// `vram-probe estimate --help`.
const char* estimate_help();

// GPU measurement (cli_measure.cpp).
int run_device(const std::vector<std::string>& args);
int run_watch(const std::vector<std::string>& args);
int run_overheads(const std::vector<std::string>& args);
int run_nccl(const std::vector<std::string>& args);

// Train the request's job for a few steps and measure each phase (cli_run.cpp).
int run_run(const std::vector<std::string>& args);

}  // namespace vram::cli

// Subcommands of vram-probe. Each returns the process exit code:
// 0 success, 1 bad input (error JSON printed), 2 usage error, 3 no GPU.
#pragma once

#include <string>
#include <vector>

namespace vram::cli {

int run_params(const std::vector<std::string>& args);
int run_estimate(const std::vector<std::string>& args);
int run_plan(const std::vector<std::string>& args);
int run_version(const std::vector<std::string>& args);

// GPU measurement (cli_measure.cpp).
int run_device(const std::vector<std::string>& args);
int run_watch(const std::vector<std::string>& args);
int run_overheads(const std::vector<std::string>& args);
int run_nccl(const std::vector<std::string>& args);

}  // namespace vram::cli

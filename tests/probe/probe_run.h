// Test helper: runs the built vram-probe binary with arguments and collects
// its exit code and output (shared by the CLI tests).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

namespace vram::testing {

struct ProbeRun {
  int exit_code = -1;
  std::string out;
};

// Single quotes keep spaces ("H100 80GB") and shell characters literal.
inline std::string shell_quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `binary args...`; `with_stderr` merges standard error into `out`.
inline ProbeRun run_binary(const std::string& binary, const std::vector<std::string>& args, bool with_stderr) {
  std::string command = shell_quote(binary);
  for (const auto& a : args) command += " " + shell_quote(a);
  command += with_stderr ? " 2>&1" : " 2>/dev/null";
  ProbeRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) run.out += buffer;
  const int status = pclose(pipe);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

}  // namespace vram::testing

// Reading the CLI's JSON input files (cli_input.h).
#include "cli_input.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "vram/fields.h"
#include "vram/json_reader.h"

namespace vram::cli {

// A regular file is checked by its size before reading; a pipe or
// /dev/stdin, which has none, is read in 64 KiB pieces and refused as soon as
// it passes the limit.
bool read_text_file(const std::string& file, const std::string& path, std::string& text, json& error) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    error = error_json({errc::kBadJson, "cannot read " + file, path});
    return false;
  }
  try {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    if (!ec) check_input_size(size, path);
    // Bounded read: a FIFO or /dev/stdin has no size to ask for.
    std::vector<char> buf(64 * 1024);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      text.append(buf.data(), static_cast<size_t>(in.gcount()));
      check_input_size(text.size(), path);
    }
    return true;
  } catch (const Failure& f) {
    Error e = f.error();
    e.message = file + ": " + e.message;  // the core's messages say "input" or the request path
    error = error_json(e);
    return false;
  }
}

std::optional<json> read_json_file(const std::string& file, const std::string& path, json& error) {
  std::string text;
  if (!read_text_file(file, path, text, error)) return std::nullopt;
  try {
    return parse_json_text(text, path);
  } catch (const Failure& f) {
    Error e = f.error();
    e.message = file + ": " + e.message;
    error = error_json(e);
    return std::nullopt;
  }
}

}  // namespace vram::cli

// Reading the CLI's JSON input files (cli_input.h).
#include "cli_input.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "vram/fields.h"
#include "vram/json_reader.h"

namespace vram::cli {

BoundedRead read_bounded(const std::string& file, uint64_t limit, std::string& text, uint64_t* bytes) {
  text.clear();
  std::ifstream in(file, std::ios::binary);
  if (!in) return BoundedRead::kCannotRead;
  std::error_code ec;
  if (std::filesystem::is_regular_file(file, ec)) {
    const auto size = std::filesystem::file_size(file, ec);
    if (!ec && size > limit) {
      *bytes = size;
      return BoundedRead::kTooLarge;
    }
  }
  // Bounded read: a FIFO or /dev/stdin has no size to ask for, and a regular
  // file may grow after it was measured.
  std::vector<char> buf(64 * 1024);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    text.append(buf.data(), static_cast<size_t>(in.gcount()));
    if (text.size() > limit) {
      *bytes = text.size();
      text.clear();
      return BoundedRead::kTooLarge;
    }
  }
  if (in.bad()) return BoundedRead::kCannotRead;
  *bytes = text.size();
  return BoundedRead::kOk;
}

namespace {

// Why a file could not be read, in words a user can act on: a model's name
// typed where a file's path goes ("--model-config Llama-3.1-8B") is the
// common case.
std::string why_unreadable(const std::string& file) {
  std::error_code ec;
  const auto st = std::filesystem::status(file, ec);
  if (st.type() == std::filesystem::file_type::not_found)
    return ": no such file (the option takes a file's path, not a model's name: for a Hub model, save its "
           "config.json and pass that)";
  if (st.type() == std::filesystem::file_type::directory) return ": it is a directory, not a file";
  return ": it exists but cannot be opened (permissions?)";
}

}  // namespace

bool read_text_file(const std::string& file, const std::string& path, std::string& text, json& error) {
  uint64_t bytes = 0;
  try {
    switch (read_bounded(file, static_cast<uint64_t>(limits::kMaxInputBytes), text, &bytes)) {
      case BoundedRead::kCannotRead:
        error = error_json({errc::kBadJson, "cannot read " + file + why_unreadable(file), path});
        return false;
      case BoundedRead::kTooLarge:
        check_input_size(bytes, path);  // throws the core's out_of_range error
        break;
      case BoundedRead::kOk:
        break;
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

// Text taken from the input into a message or a tree (vram/utf8.h): kept
// apart from json_reader.h so that only its few users depend on it.
#pragma once

#include <string>

namespace vram {

// `text` with every ill-formed UTF-8 sequence replaced by U+FFFD, the way the
// WHATWG Encoding Standard's UTF-8 decoder does (one U+FFFD per maximal
// subpart), which is what the page's File.text() and TextDecoder give.
// nlohmann::json refuses to dump a string that is not UTF-8 (type_error 316),
// so any text taken from the input into a message or a tree passes here.
std::string valid_utf8(const std::string& text);

}  // namespace vram

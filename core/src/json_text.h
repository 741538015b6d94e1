// Private: the answers' JSON text, written faster than nlohmann/json's dump.
#pragma once

#include <string>

#include "vram/json_reader.h"

namespace vram {

// The bytes of v.dump(2) (nlohmann/json 3.11's serializer: two spaces of
// indent, keys in the object's order, strings as UTF-8 with only '"', '\\'
// and the control characters escaped, integers in decimal, doubles by its
// Grisu2 to_chars, NaN and infinities as null), written into one string
// without nlohmann's per-byte UTF-8 decoder and output adapter: printing
// an estimate's answer was 17 % of its instructions (issue 32). A string
// with a byte past ASCII is printed by nlohmann/json itself, which checks
// its UTF-8 (invalid UTF-8 fails as v.dump(2) fails).
std::string pretty_text(const json& v);

}  // namespace vram

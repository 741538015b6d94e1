// Private: the time model's request fields (time.*, hardware.*).
#pragma once

#include "vram/json_reader.h"
#include "vram/request.h"

namespace vram::speed {

// Fills req.time (but `enabled`, which the parser reads) and req.hardware
// from the request's `time` and `hardware` objects; throws Failure naming
// the field.
void read_time_fields(const JsonReader& request, Request& req);

}  // namespace vram::speed

// Private: the result's `time` object (docs/schema.md "Time").
#pragma once

#include "vram/json_reader.h"
#include "vram/request.h"
#include "vram/result.h"

namespace vram::speed {

// The time model's answer for a request and its estimate: the request's card
// (step time or prefill and decode speed, run hours, cost, every term and
// assumption) and every catalog card's figures (`cards`, the GPU table's
// columns). Throws Failure only on the estimate's own errors.
json time_json(const Request& req, const Estimate& e);

}  // namespace vram::speed

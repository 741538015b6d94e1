// The estimate: dispatch a parsed request to the training or inference
// estimator, then fit it against the GPUs (result types in result.h).
#pragma once

#include "vram/request.h"
#include "vram/result.h"
#include "vram/status.h"

namespace vram {

// Estimates the request. Never throws.
Result<Estimate> estimate_request(const Request& request);

}  // namespace vram

// Private: the GGUF Model a llama-quantize preset makes of an HF config
// (issue 30), for a llama.cpp estimate without a file.
#pragma once

#include <string>
#include <vector>

#include "gguf/model.h"
#include "gguf/quant_preset.h"

namespace vram::gguf {

// The tensors and hyperparameters llama.cpp would load from `spec`
// converted (convert_hf_to_gguf.py) and quantized with `preset`; what the
// conversion assumes goes into `assumptions`. Fails with `unsupported` at
// `path` for a recurrent model.
Model model_from_spec(const ModelSpec& spec, const Preset& preset, const std::string& path,
                      std::vector<std::string>& assumptions);

}  // namespace vram::gguf

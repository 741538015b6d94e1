// Private: llama-quantize presets (issue 30) — which ggml type each tensor
// of a model gets for Q4_K_M, Q5_K_S, IQ4_XS, Q8_0, ...
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gguf/model.h"

namespace vram::gguf {

// One preset: the name llama-quantize takes (tools/quantize/quantize.cpp
// QUANT_OPTIONS), its llama_ftype (include/llama.h, the general.file_type a
// file records) and its default ggml type (llama-quant.cpp
// llama_model_quantize_impl's switch).
struct Preset {
  const char* name;
  int ftype;
  int type;
};

const std::vector<Preset>& presets();
// By name, case-insensitive, with llama-quantize's aliases (Q4_K = Q4_K_M,
// Q5_K = Q5_K_M, Q3_K = Q3_K_M); nullptr when unknown.
const Preset* preset_named(std::string_view name);
// The preset name of a general.file_type ("Q4_K_M"), or "" when unknown.
std::string ftype_name(int64_t ftype);

// Gives every tensor of `m` (in file order, as the source file lists them)
// the type llama-quantize picks for `p` from an F16/BF16/F32 source:
// llama_model_quantize_impl's rule for which tensors are quantized at all
// and llama_tensor_get_type's per-tensor mix, then recomputes the bytes.
// `seventy_b`: llama.cpp's model type is LLM_TYPE_70B (more bits for attn_v).
void apply_preset(Model& m, const Preset& p, bool seventy_b);

}  // namespace vram::gguf

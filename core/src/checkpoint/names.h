// Tensor names -> module, attribute and role (checkpoint/names.cpp).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace vram::detail {

// What a tensor is to its module.
enum class Attr {
  kWeight,     // <module>.weight (plain, FP8, int8, or bitsandbytes 4-bit packed bytes)
  kBias,       // <module>.bias, or a fused parameter's <name>_bias
  kPacked,     // GPTQ / AWQ qweight, compressed-tensors weight_packed: int32 words of 4- or 8-bit values
  kBlocks,     // MXFP4 <name>_blocks: uint8, two FP4 values per byte
  kQuantMeta,  // scales, zero points, group indices, absmax, quant maps: stored bytes, no parameters
  kBuffer,     // registered buffers saved with the weights: stored bytes, no parameters
  kRaw,        // a bare nn.Parameter (attention sinks, fused expert weights, SSM A_log)
};

struct NameParts {
  std::string module;  // the module the tensor belongs to (for kRaw: the parameter's own path)
  std::string attr;    // "weight", "qweight", "scales", ...
  Attr kind = Attr::kRaw;
};

// Splits a tensor name. `names` is every tensor name of the checkpoint, used to
// pair MXFP4 _blocks with _scales and fused parameters with their _bias.
NameParts split_name(const std::string& name, int64_t rank, const std::set<std::string>& names);

enum class Role { kEmbedding, kAttention, kMlp, kSharedMlp, kExperts, kRouter, kNorm, kHead, kTower, kUnplaced };

struct Placement {
  std::string stack = "text";  // "text", "vision_tower", "audio_tower", "projector", "encoder"
  std::string canonical;       // module path with layer and expert numbers replaced by '*'
  std::string leaf;            // the module's own name (PEFT target_modules name)
  int64_t layer = -1;          // decoder layer number, -1 outside the layer stack
  int64_t expert = -1;         // expert number when experts are separate modules
  Role role = Role::kUnplaced;
  bool output_side = false;  // projects back to the hidden size (o_proj, down_proj, ...)
  // A multi-token-prediction module stored under its own prefix (Qwen3-Next
  // mtp.layers.0.*, mtp.fc): never built by transformers, like the layers
  // past num_hidden_layers that DeepSeek-V3 and GLM-4.5 store.
  bool mtp = false;
};

// Places a module path. `encoder_decoder`: the checkpoint has a decoder, so an
// "encoder" prefix is a separate stack (T5, Whisper) rather than the model
// itself (BERT).
Placement place(const std::string& module, bool encoder_decoder);

const char* role_name(Role r);

}  // namespace vram::detail

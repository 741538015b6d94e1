// Dense decoders, encoders and encoder-decoders.
#include "families/registry_entries.h"

namespace vram::detail {

const std::vector<AdapterEntry>& dense_adapters() {
  static const std::vector<AdapterEntry> kAdapters = {
      {"gemma", build_gemma},
      {"gemma2", build_gemma2},
      {"phi", build_phi},
      {"phi3", build_phi3},
      {"gpt2", build_gpt2},
      {"gpt_bigcode", build_gpt_bigcode},
      {"gpt_neox", build_gpt_neox},
      {"falcon", build_falcon},
      {"opt", build_opt},
      {"bloom", build_bloom},
      {"bert", build_bert},
      {"t5", build_t5},
      {"olmo2", build_olmo2},
      {"granite", build_granite},
      {"smollm3", build_smollm3},
      {"cohere", build_cohere},
      {"cohere2", build_cohere2},
      {"glm4", build_glm4},
      {"internlm2", build_internlm2},
      {"starcoder2", build_starcoder2},
      {"exaone", build_exaone},
      {"mamba", build_mamba},
      {"mamba2", build_mamba2},
  };
  return kAdapters;
}

}  // namespace vram::detail

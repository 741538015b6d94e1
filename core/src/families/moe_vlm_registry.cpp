// Mixture-of-experts, multi-head latent attention and vision-language models.
#include "families/registry_entries.h"

namespace vram::detail {

const std::vector<AdapterEntry>& moe_vlm_adapters() {
  static const std::vector<AdapterEntry> kAdapters = {
      {"mixtral", build_mixtral},
      {"qwen2_moe", build_qwen2_moe},
      {"qwen3_moe", build_qwen3_moe},
      {"deepseek_v2", build_deepseek_v2},
      {"deepseek_v3", build_deepseek_v3},
      {"gemma3_text", build_gemma3_text},
      {"gemma3", build_gemma3},
      {"llava", build_llava},
      {"qwen2_vl", build_qwen2_vl},
      {"gpt_oss", build_gpt_oss},
      {"olmoe", build_olmoe},
      {"phimoe", build_phimoe},
      {"granitemoe", build_granitemoe},
      {"jamba", build_jamba},
      {"falcon_h1", build_falcon_h1},
      {"lfm2", build_lfm2},
      {"mllama", build_mllama},
      {"qwen2_5_vl", build_qwen2_5_vl},
      {"paligemma", build_paligemma},
      {"llama4", build_llama4},
      {"llama4_text", build_llama4_text},
      {"whisper", build_whisper},
      {"idefics3", build_idefics3},
      {"glm4_moe", build_glm4_moe},
      {"qwen3_next", build_qwen3_next},
      {"qwen3_vl", build_qwen3_vl},
      {"gemma3n_text", build_gemma3n_text},
      {"gemma3n", build_gemma3n},
  };
  return kAdapters;
}

}  // namespace vram::detail

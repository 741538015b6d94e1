// Every model_type with an exact adapter, once (an X-macro list, as LLVM's
// .def files): X(name) stands for the model_type "name" and its builder
// detail::build_name (registry_entries.h). registry.cpp expands it into the
// names (supported_model_types, which every module reports in full) and
// reach.cpp into the builders; the first-visit WASM module expands only the
// common list (core/lite/reach.cpp).
#pragma once

// clang-format off
// Llama-shaped decoders: the families of the page's default presets, carried
// by every module (llama.cpp).
#define VRAM_COMMON_FAMILIES(X) X(llama) X(mistral) X(qwen2) X(qwen3)

// The rest, in the order they were added: dense decoders, encoders and
// encoder-decoders, then mixture-of-experts, latent attention, hybrid and
// vision-language models.
#define VRAM_OTHER_FAMILIES(X)                                                                   \
  X(gemma) X(gemma2) X(phi) X(phi3) X(gpt2) X(gpt_bigcode) X(gpt_neox) X(falcon) X(opt)          \
  X(bloom) X(bert) X(t5) X(olmo2) X(granite) X(smollm3) X(cohere) X(cohere2) X(glm4)             \
  X(internlm2) X(starcoder2) X(exaone) X(mamba) X(mamba2)                                        \
  X(mixtral) X(qwen2_moe) X(qwen3_moe) X(deepseek_v2) X(deepseek_v3) X(gemma3_text) X(gemma3)    \
  X(llava) X(qwen2_vl) X(gpt_oss) X(olmoe) X(phimoe) X(granitemoe) X(jamba) X(falcon_h1)         \
  X(lfm2) X(mllama) X(qwen2_5_vl) X(paligemma) X(llama4) X(llama4_text) X(whisper) X(idefics3)   \
  X(glm4_moe) X(qwen3_next) X(qwen3_vl) X(gemma3n_text) X(gemma3n)
// clang-format on

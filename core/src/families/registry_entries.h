// Private: every adapter function, declared once for the seam's two sides
// (core/src/reach.cpp, core/lite/reach.cpp; the names: family_list.h).
#pragma once

#include <vector>

#include "vram/families.h"
#include "vram/json_reader.h"
#include "vram/model.h"

namespace vram::detail {

void build_llama(const JsonReader& cfg, ModelSpec& spec);
void build_mistral(const JsonReader& cfg, ModelSpec& spec);
void build_qwen2(const JsonReader& cfg, ModelSpec& spec);
void build_qwen3(const JsonReader& cfg, ModelSpec& spec);

// Dense families: gemma.cpp, phi.cpp, gpt2.cpp,
// gpt_neox.cpp, falcon.cpp, opt.cpp, bloom.cpp, bert.cpp, t5.cpp.
void build_gemma(const JsonReader& cfg, ModelSpec& spec);
void build_gemma2(const JsonReader& cfg, ModelSpec& spec);
void build_phi(const JsonReader& cfg, ModelSpec& spec);
void build_phi3(const JsonReader& cfg, ModelSpec& spec);
void build_gpt2(const JsonReader& cfg, ModelSpec& spec);
void build_gpt_bigcode(const JsonReader& cfg, ModelSpec& spec);
void build_gpt_neox(const JsonReader& cfg, ModelSpec& spec);
void build_falcon(const JsonReader& cfg, ModelSpec& spec);
void build_opt(const JsonReader& cfg, ModelSpec& spec);
void build_bloom(const JsonReader& cfg, ModelSpec& spec);
void build_bert(const JsonReader& cfg, ModelSpec& spec);
void build_t5(const JsonReader& cfg, ModelSpec& spec);
// Llama-shaped variants (llama_variants.cpp).
void build_olmo2(const JsonReader& cfg, ModelSpec& spec);
void build_granite(const JsonReader& cfg, ModelSpec& spec);
void build_smollm3(const JsonReader& cfg, ModelSpec& spec);
// StarCoder2, Command R, Command R7B, GLM-4-0414, InternLM2, EXAONE, Phi-3.5-MoE and Granite MoE
// (decoders_2024.cpp).
void build_cohere(const JsonReader& cfg, ModelSpec& spec);
void build_cohere2(const JsonReader& cfg, ModelSpec& spec);
void build_glm4(const JsonReader& cfg, ModelSpec& spec);
void build_internlm2(const JsonReader& cfg, ModelSpec& spec);
void build_phimoe(const JsonReader& cfg, ModelSpec& spec);
void build_granitemoe(const JsonReader& cfg, ModelSpec& spec);
void build_starcoder2(const JsonReader& cfg, ModelSpec& spec);
void build_exaone(const JsonReader& cfg, ModelSpec& spec);
// Mamba (mamba.cpp): state-space mixers, no attention.
void build_mamba(const JsonReader& cfg, ModelSpec& spec);
void build_mamba2(const JsonReader& cfg, ModelSpec& spec);
// Hybrids of attention and state-space layers (hybrid.cpp).
void build_jamba(const JsonReader& cfg, ModelSpec& spec);
void build_falcon_h1(const JsonReader& cfg, ModelSpec& spec);
void build_lfm2(const JsonReader& cfg, ModelSpec& spec);

// Mixture-of-experts, latent attention and vision-language families
// (mixtral.cpp, qwen_moe.cpp, deepseek.cpp, gemma3.cpp, llava.cpp, qwen2_vl.cpp,
// gpt_oss.cpp, olmoe.cpp).
void build_mixtral(const JsonReader& cfg, ModelSpec& spec);
void build_qwen2_moe(const JsonReader& cfg, ModelSpec& spec);
void build_qwen3_moe(const JsonReader& cfg, ModelSpec& spec);
void build_deepseek_v2(const JsonReader& cfg, ModelSpec& spec);
void build_deepseek_v3(const JsonReader& cfg, ModelSpec& spec);
void build_gemma3_text(const JsonReader& cfg, ModelSpec& spec);
void build_gemma3(const JsonReader& cfg, ModelSpec& spec);
void build_llava(const JsonReader& cfg, ModelSpec& spec);
void build_qwen2_vl(const JsonReader& cfg, ModelSpec& spec);
void build_gpt_oss(const JsonReader& cfg, ModelSpec& spec);
void build_olmoe(const JsonReader& cfg, ModelSpec& spec);
void build_glm4_moe(const JsonReader& cfg, ModelSpec& spec);      // glm4_moe.cpp
void build_qwen3_next(const JsonReader& cfg, ModelSpec& spec);    // qwen3_next.cpp
void build_qwen3_vl(const JsonReader& cfg, ModelSpec& spec);      // qwen3_vl.cpp
void build_gemma3n_text(const JsonReader& cfg, ModelSpec& spec);  // gemma3n.cpp
void build_gemma3n(const JsonReader& cfg, ModelSpec& spec);
// Cross-attention and other vision / audio models (mllama.cpp).
void build_mllama(const JsonReader& cfg, ModelSpec& spec);
void build_qwen2_5_vl(const JsonReader& cfg, ModelSpec& spec);  // qwen2_vl.cpp
void build_paligemma(const JsonReader& cfg, ModelSpec& spec);   // paligemma.cpp
void build_llama4(const JsonReader& cfg, ModelSpec& spec);      // llama4.cpp
void build_llama4_text(const JsonReader& cfg, ModelSpec& spec);
void build_whisper(const JsonReader& cfg, ModelSpec& spec);   // whisper.cpp
void build_idefics3(const JsonReader& cfg, ModelSpec& spec);  // idefics3.cpp

}  // namespace vram::detail

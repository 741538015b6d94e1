// Private: pieces shared by the mixture-of-experts and vision-language adapters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vram/json_reader.h"
#include "vram/model.h"

namespace vram::detail {

// Reads the routed-experts-per-token key and checks it against the expert
// count read from `experts_key` (a router cannot pick more experts than exist).
int64_t read_experts_per_token(const JsonReader& cfg, const char* key, int64_t fallback, int64_t experts,
                               const char* experts_key);

// Routed experts: `experts` gated MLPs of width `inter` on each of `moe_layers`
// layers (gate-like `in_a` and up-like `in_b` read the hidden state, `out`
// writes it back). Only `k` of `experts` run per token, so the groups carry
// active_num = k, active_den = experts.
void add_routed_experts(ModelSpec& s, const char* in_a, const char* in_b, const char* out, int64_t hidden,
                        int64_t inter, int64_t experts, int64_t k, int64_t moe_layers, bool bias = false);

// build_llama_like() gives every layer a dense gate/up/down MLP; MoE families
// keep it on `dense_layers` layers only (and drop it when that is 0).
void keep_dense_mlp_on(ModelSpec& s, int64_t dense_layers);

// Marks groups [from, end) as repeating over the sparse or the dense layers only.
void mark_layers(ModelSpec& s, size_t from, LayerSet layers);

// Sets or clears the bias of the text-stack linear `module`, keeping numel right.
void set_text_linear_bias(ModelSpec& s, const std::string& module, bool bias);

// Labels groups [from, end) with `component` (vision tower, projector).
void relabel_component(ModelSpec& s, size_t from, const char* component);

// Qwen2-MoE / Qwen3-MoE sparse-layer rule (modeling_qwen2_moe.py,
// Qwen2MoeDecoderLayer): layer i is sparse when i is not in mlp_only_layers,
// num_experts > 0 and (i + 1) % decoder_sparse_step == 0.
int64_t qwen_moe_sparse_layers(const JsonReader& cfg, int64_t layers, int64_t experts);

// A ViT-style vision encoder read from a vision_config object.
struct VitDefaults {
  const char* config_class = "CLIPVisionConfig";
  int64_t hidden = 768;
  int64_t intermediate = 3072;
  int64_t layers = 12;
  int64_t heads = 12;
  int64_t image_size = 224;
  int64_t patch_size = 32;
  const char* activation = "quick_gelu";
};

LayerStack read_vit(const JsonReader& vc, const VitDefaults& d, ModelSpec& spec);

// CLIPVisionModel (modeling_clip.py): class_embedding, patch conv without bias,
// position embedding of num_patches + 1 rows, pre_layrnorm, encoder layers
// (q/k/v/out_proj and fc1/fc2 with biases, layer_norm1/2), post_layernorm.
// Every group is labelled comp::kVision. Returns patches per image (no CLS).
int64_t add_clip_vision_tower(const JsonReader& vc, ModelSpec& spec, const LayerStack& v);

// SiglipVisionModel (modeling_siglip.py): patch conv with bias, position
// embedding of num_patches rows, the same encoder layers, post_layernorm, and
// the attention-pooling head when vision_use_head (absent = True).
int64_t add_siglip_vision_tower(const JsonReader& vc, ModelSpec& spec, const LayerStack& v);

// Moves the language model `t`, built from the VLM's `key` config, into
// `spec`: its text stack, vocabulary, tied embeddings, positions and parameter
// groups, and its notes under "key." (each caller decides the torch_dtype).
void adopt_text_model(const ModelSpec& t, const std::string& key, ModelSpec& spec);

// Builds the text model of a VLM from `parent[key]` through the adapter
// registry, dispatching on its model_type (`default_type` when absent, as the
// VLM's config class does), and moves it into `spec`. A missing or null
// `key` uses the default config of `default_type`.
void build_nested_text(const JsonReader& parent, const char* key, const char* default_type, ModelSpec& spec);

// A Qwen-VL vision_config (Qwen2.5-VL, Qwen3-VL): its reader (an empty one
// at vision_config when the key is missing, with a note) and the vision
// stack of depth x hidden / heads / intermediate with the class's defaults;
// out_hidden_size must equal the text hidden size (`writes_into` finishes
// that error's message).
struct QwenVisionDefaults {
  const char* config_class = "";
  int64_t depth = 0;
  int64_t hidden = 0;
  int64_t intermediate = 0;
  MlpKind mlp = MlpKind::kGated;
  NormKind norm = NormKind::kRmsNorm;
  const char* activation = "";
  const char* writes_into = "";
};
struct QwenVision {
  JsonReader vc;
  LayerStack v;
  int64_t out_hidden = 0;
};
QwenVision read_qwen_vision(const JsonReader& cfg, ModelSpec& spec, const QwenVisionDefaults& d);

}  // namespace vram::detail

// Qwen3-VL (Qwen3VLForConditionalGeneration): a dynamic-resolution ViT with
// learned position embeddings, a patch merger and DeepStack mergers that feed
// three intermediate tower layers into the first text layers, over a
// Qwen3-shaped language model. Sources: transformers
// src/transformers/models/qwen3_vl/configuration_qwen3_vl.py and
// modeling_qwen3_vl.py.
#include <string>

#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

// Qwen3VLTextConfig defaults: vocab 151936, hidden 4096, intermediate 22016,
// 32 layers, 32 heads, 32 KV heads, head_dim 128, 128000 positions,
// attention_bias False. modeling_qwen3_vl.py Qwen3VLTextAttention: q/k/v/o_proj
// with bias = attention_bias, q_norm / k_norm (RMSNorm over head_dim);
// Qwen3VLTextMLP gate/up/down without bias; two RMSNorms a layer; final norm.
// Qwen3VLConfig: tie_word_embeddings False (the composite's key; a
// text_config that sets its own wins here, noted).
// Qwen3VLVisionConfig defaults: depth 27, hidden_size 1152, intermediate_size
// 4304, num_heads 16, in_channels 3, patch_size 16, spatial_merge_size 2,
// temporal_patch_size 2, out_hidden_size 3584, num_position_embeddings 2304,
// deepstack_visual_indexes [8, 16, 24], hidden_act gelu_pytorch_tanh.
// modeling_qwen3_vl.py Qwen3VLVisionModel: patch_embed.proj Conv3d(in_channels,
// hidden, [temporal, patch, patch], bias=True); pos_embed
// nn.Embedding(num_position_embeddings, hidden) (interpolated to each image's
// grid); per Qwen3VLVisionBlock norm1 / norm2 (nn.LayerNorm with bias),
// attn.qkv (hidden -> 3 hidden) and attn.proj with biases, mlp.linear_fc1 /
// linear_fc2 (hidden -> intermediate -> hidden) with biases; merger, a
// Qwen3VLVisionPatchMerger: norm LayerNorm(hidden), linear_fc1 (hidden x
// merge^2 -> the same) and linear_fc2 (-> out_hidden_size) with biases;
// deepstack_merger_list, one Qwen3VLVisionPatchMerger(use_postshuffle_norm=True)
// per deepstack index, whose norm spans hidden x merge^2.
void build_qwen3_vl(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Qwen3VLTextConfig";
  d.vocab = 151936;
  d.hidden = 4096;
  d.intermediate = 22016;
  d.layers = 32;
  d.heads = 32;
  d.kv_heads = 32;
  d.head_dim = 128;
  d.max_positions = 128000;
  d.has_mlp_bias = false;
  d.qk_norm = true;
  d.tie = cfg.bool_or("tie_word_embeddings", false);
  const auto text_cfg = cfg.object_opt("text_config");
  if (!text_cfg) spec.notes.push_back("text_config missing: using Qwen3VLTextConfig defaults");
  static const json kEmpty = json::object();
  const JsonReader tc = text_cfg ? *text_cfg : JsonReader(kEmpty, cfg.child_path("text_config"));
  {
    ModelSpec t;
    build_llama_like(tc, t, d);
    adopt_text_model(t, "text_config", spec);
    spec.torch_dtype = t.torch_dtype;
  }
  spec.text.position_encoding = "rope";
  if (cfg.has("torch_dtype") || cfg.has("dtype")) spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));

  const QwenVision qv = read_qwen_vision(cfg, spec,
                                         {"Qwen3VLVisionConfig", 27, 1152, 4304, MlpKind::kPlain, NormKind::kLayerNorm,
                                          "gelu_pytorch_tanh", "the mergers write"});
  const JsonReader& vc = qv.vc;
  const LayerStack& v = qv.v;
  const int64_t out_hidden = qv.out_hidden;
  const int64_t channels = vc.int_or("in_channels", 3, 1, 64);
  const int64_t patch = vc.int_or("patch_size", 16);
  const int64_t temporal = vc.int_or("temporal_patch_size", 2, 1, 64);
  const int64_t merge = vc.int_or("spatial_merge_size", 2, 1, 64);
  const int64_t positions = vc.int_or("num_position_embeddings", 2304);
  int64_t deepstack = 3;
  if (const json* idx = vc.get("deepstack_visual_indexes"); idx != nullptr) {
    const std::string p = vc.child_path("deepstack_visual_indexes");
    if (!idx->is_array()) fail(errc::kWrongType, p, p + " must be a list of vision layer indices");
    for (size_t i = 0; i < idx->size(); ++i) {
      const json& e = (*idx)[i];
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= v.layers) {
        fail(errc::kOutOfRange, p + "[" + std::to_string(i) + "]",
             p + "[" + std::to_string(i) + "] must be a vision layer index in 0.." + std::to_string(v.layers - 1));
      }
    }
    deepstack = static_cast<int64_t>(idx->size());
  }
  const int64_t h = v.hidden, L = v.layers, m = h * merge * merge;

  const size_t from = spec.groups.size();
  add_other(spec, "patch_embed", comp::kVision, "vision", channels * temporal * patch * patch * h + h, 1);
  add_embedding(spec, "pos_embed", "vision", positions, h, comp::kVision);
  add_norm(spec, "norm1", "vision", h, true, L);
  add_norm(spec, "norm2", "vision", h, true, L);
  add_linear(spec, "qkv", comp::kVision, "vision", h, 3 * h, true, L);
  add_linear(spec, "proj", comp::kVision, "vision", h, h, true, L);
  add_linear(spec, "linear_fc1", comp::kVision, "vision", h, v.intermediate, true, L);
  add_linear(spec, "linear_fc2", comp::kVision, "vision", v.intermediate, h, true, L);
  relabel_component(spec, from, comp::kVision);
  // The mergers' leaf names are the tower MLP's (PEFT matches target_modules
  // by suffix, so "linear_fc1" reaches both); they sit on the projector stack.
  const size_t merger = spec.groups.size();
  add_norm(spec, "norm", "projector", h, true, 1);
  add_linear(spec, "linear_fc1", comp::kProjector, "projector", m, m, true, 1);
  add_linear(spec, "linear_fc2", comp::kProjector, "projector", m, out_hidden, true, 1);
  if (deepstack > 0) {
    add_norm(spec, "norm", "projector", m, true, deepstack);
    add_linear(spec, "linear_fc1", comp::kProjector, "projector", m, m, true, deepstack);
    add_linear(spec, "linear_fc2", comp::kProjector, "projector", m, out_hidden, true, deepstack);
  }
  relabel_component(spec, merger, comp::kProjector);
  spec.extra_stacks.push_back(v);

  spec.vision.patch_size = patch;
  spec.vision.dynamic_resolution = true;
  spec.vision.spatial_merge = merge;
  spec.notes.push_back("dynamic resolution: an H x W image gives (H/" + std::to_string(patch) + ")*(W/" +
                       std::to_string(patch) + ") vision-tower tokens and 1/" + std::to_string(merge * merge) +
                       " as many language-model tokens");
  if (deepstack > 0) {
    spec.notes.push_back("DeepStack: " + std::to_string(deepstack) +
                         " more mergers turn intermediate vision layers into language-model-width features added to "
                         "the image tokens' hidden states after the first " +
                         std::to_string(deepstack) +
                         " text layers; like the image tokens themselves, their activations depend on each image's "
                         "size and are not estimated");
  }
}

}  // namespace vram::detail

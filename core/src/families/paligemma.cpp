// PaliGemma (PaliGemmaForConditionalGeneration): a SigLIP tower whose patch
// embeddings, projected, are a prefix of the Gemma / Gemma 2 sequence.
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_paligemma.py (PaliGemmaConfig): a vision_config dict is a
// siglip_vision_model (SiglipVisionConfig defaults: image 224, patch 16, ...;
// the Hub's configs set vision_use_head false, so the attention-pooling head
// is not built); text_config dict without model_type is "gemma"; projection_dim
// 2048; text_config.num_image_tokens = (image_size // patch_size)^2.
// Without text_config / vision_config the class builds its own PaliGemma-3B
// sub-configs, which differ from GemmaConfig / SiglipVisionConfig defaults, so
// both are required here. modeling_paligemma.py: vision_tower =
// AutoModel.from_config(vision_config); multi_modal_projector.linear =
// nn.Linear(vision hidden, projection_dim, bias=True); language_model from
// the text config (lm_head tied to embed_tokens as Gemma's).
void build_paligemma(const JsonReader& cfg, ModelSpec& spec) {
  for (const char* key : {"text_config", "vision_config"}) {
    if (!cfg.object_opt(key)) {
      fail(errc::kMissingField, cfg.child_path(key),
           cfg.child_path(key) + " is required for paligemma (the class's built-in sub-configs are not modelled)");
    }
  }
  build_nested_text(cfg, "text_config", "gemma", spec);
  if (cfg.has("torch_dtype") || cfg.has("dtype")) spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));

  const JsonReader vc = *cfg.object_opt("vision_config");
  const std::string vt = vc.str_or("model_type", "siglip_vision_model");
  if (vt != "siglip_vision_model") {
    fail(errc::kUnsupportedModel, vc.child_path("model_type"),
         vc.child_path("model_type") + " " + vram::quoted(vt) +
             " is not a supported PaliGemma vision tower (siglip_vision_model)");
  }
  // SiglipVisionConfig defaults (configuration_siglip.py): hidden 768,
  // intermediate 3072, 12 layers, 12 heads, image 224, patch 16.
  VitDefaults vd;
  vd.config_class = "SiglipVisionConfig";
  vd.patch_size = 16;
  vd.activation = "gelu_pytorch_tanh";
  const LayerStack v = read_vit(vc, vd, spec);
  const int64_t patches = add_siglip_vision_tower(vc, spec, v);
  spec.extra_stacks.push_back(v);

  const int64_t proj = cfg.int_or("projection_dim", 2048);
  if (proj != spec.text.hidden) {
    fail(errc::kInconsistent, cfg.child_path("projection_dim"),
         cfg.child_path("projection_dim") + " (" + std::to_string(proj) +
             ") must equal the language model's hidden_size (" + std::to_string(spec.text.hidden) +
             "): the projected image tokens are part of its input sequence");
  }
  const size_t from = spec.groups.size();
  add_linear(spec, "linear", comp::kProjector, "projector", v.hidden, proj, true, 1);
  relabel_component(spec, from, comp::kProjector);
  // Every patch becomes one prefix token of the language model (the
  // processor inserts image_seq_length = num_image_tokens <image> tokens).
  spec.vision.tokens_per_image = patches;
}

}  // namespace vram::detail

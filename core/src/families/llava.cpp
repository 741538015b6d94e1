// LLaVA (LlavaForConditionalGeneration): a CLIP (or SigLIP) vision tower, a
// two-layer MLP projector and any supported language model.
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_llava.py (LlavaConfig): vision_config None -> CLIPVisionConfig
// with intermediate 4096, hidden 1024, patch 14, image 336, 24 layers,
// 16 heads (CLIP ViT-L/14-336); a vision_config dict without model_type is a
// clip_vision_model whose missing keys take CLIPVisionConfig's own defaults
// (hidden 768, intermediate 3072, 12 layers, 12 heads, image 224, patch 32);
// text_config without model_type is "llama", None is LlamaConfig();
// vision_feature_layer -2, vision_feature_select_strategy "default",
// multimodal_projector_bias True.
// modeling_llava.py: vision_tower = AutoModel.from_config(vision_config)
// (every layer is built even though vision_feature_layer -2 reads the
// second-to-last output); multi_modal_projector linear_1 (vision hidden x
// number of feature layers -> text hidden) and linear_2 (text hidden -> text
// hidden) with biases; lm_head from the text config.
void build_llava(const JsonReader& cfg, ModelSpec& spec) {
  build_nested_text(cfg, "text_config", "llama", spec);
  if (spec.torch_dtype.empty() || cfg.has("torch_dtype")) {
    spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", spec.torch_dtype));
  }

  static const json kEmpty = json::object();
  const auto vision_cfg = cfg.object_opt("vision_config");
  VitDefaults vd;
  if (!vision_cfg) {
    vd.config_class = "LlavaConfig's CLIPVisionConfig";
    vd.hidden = 1024;
    vd.intermediate = 4096;
    vd.layers = 24;
    vd.heads = 16;
    vd.image_size = 336;
    vd.patch_size = 14;
    spec.notes.push_back("vision_config missing: using LlavaConfig's default CLIP ViT-L/14-336");
  }
  const JsonReader vc = vision_cfg ? *vision_cfg : JsonReader(kEmpty, cfg.child_path("vision_config"));
  const std::string vt = vc.str_or("model_type", "clip_vision_model");
  LayerStack v;
  if (vt == "clip_vision_model") {
    v = read_vit(vc, vd, spec);
    add_clip_vision_tower(vc, spec, v);
  } else if (vt == "siglip_vision_model") {
    vd.config_class = "SiglipVisionConfig";
    vd.patch_size = 16;
    vd.activation = "gelu_pytorch_tanh";
    v = read_vit(vc, vd, spec);
    add_siglip_vision_tower(vc, spec, v);
  } else {
    fail(errc::kUnsupportedModel, vc.child_path("model_type"),
         vc.child_path("model_type") + " " + vram::quoted(vt) +
             " is not a supported LLaVA vision tower (clip_vision_model, siglip_vision_model)");
  }
  spec.extra_stacks.push_back(v);

  // vision_feature_layer: one index, or a list whose features are concatenated.
  int64_t feature_layers = 1;
  if (const json* fl = cfg.get("vision_feature_layer")) {
    if (fl->is_array()) {
      if (fl->empty()) {
        fail(errc::kOutOfRange, cfg.child_path("vision_feature_layer"),
             cfg.child_path("vision_feature_layer") + " must not be an empty list");
      }
      feature_layers = static_cast<int64_t>(fl->size());
    } else if (!fl->is_number_integer()) {
      fail(errc::kWrongType, cfg.child_path("vision_feature_layer"),
           cfg.child_path("vision_feature_layer") + " must be a layer index or a list of them");
    }
  }
  const bool bias = cfg.bool_or("multimodal_projector_bias", true);
  const size_t from = spec.groups.size();
  add_linear(spec, "linear_1", comp::kProjector, "projector", v.hidden * feature_layers, spec.text.hidden, bias, 1);
  add_linear(spec, "linear_2", comp::kProjector, "projector", spec.text.hidden, spec.text.hidden, bias, 1);
  relabel_component(spec, from, comp::kProjector);

  // "default" drops the first (CLS) position, "full" keeps every position.
  const std::string strategy = cfg.str_or("vision_feature_select_strategy", "default");
  if (strategy == "default") {
    spec.vision.tokens_per_image = spec.vision.encoder_tokens_per_image - 1;
  } else if (strategy == "full") {
    spec.vision.tokens_per_image = spec.vision.encoder_tokens_per_image;
  } else {
    fail(errc::kUnknownValue, cfg.child_path("vision_feature_select_strategy"),
         cfg.child_path("vision_feature_select_strategy") + " " + vram::quoted(strategy) +
             " is not one of \"default\", \"full\"");
  }
}

}  // namespace vram::detail

// Idefics3 / SmolVLM (Idefics3ForConditionalGeneration): a SigLIP-style tower
// whose patches are pixel-shuffled by scale_factor and projected into a Llama
// sequence.
#include <algorithm>

#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_idefics3.py: Idefics3VisionConfig defaults hidden 1152,
// intermediate 3072, 12 layers, 16 heads, 3 channels, image 224, patch 32,
// gelu_pytorch_tanh; Idefics3Config: scale_factor 2, text_config None ->
// LlamaConfig (a dict without model_type is "llama"), tie_word_embeddings
// False. modeling_idefics3.py: Idefics3VisionTransformer = patch_embedding
// Conv2d (bias), position_embedding ((image/patch)^2 rows), encoder layers
// (q/k/v/out_proj and fc1/fc2 with biases, layer_norm1/2) and post_layernorm,
// no pooling head; connector.modality_projection.proj = nn.Linear(vision
// hidden x scale_factor^2, text hidden, bias=False); text_model from the text
// config; lm_head nn.Linear(text hidden, vocab, bias=False), tied only when
// tie_word_embeddings.
void build_idefics3(const JsonReader& cfg, ModelSpec& spec) {
  build_nested_text(cfg, "text_config", "llama", spec);
  if (cfg.has("torch_dtype") || cfg.has("dtype")) spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));
  // The composite's own tie_word_embeddings decides (False by default); the
  // Llama builder put a tied or untied head by the text config's.
  const bool tie = cfg.bool_or("tie_word_embeddings", false);
  if (tie != spec.tie_word_embeddings) {
    if (tie) {
      spec.groups.erase(std::remove_if(spec.groups.begin(), spec.groups.end(),
                                       [](const ParamGroup& g) { return g.component == comp::kLmHead; }),
                        spec.groups.end());
    } else {
      add_linear(spec, "lm_head", comp::kLmHead, "text", spec.text.hidden, spec.vocab, false, 1);
    }
    spec.tie_word_embeddings = tie;
  }

  static const json kEmpty = json::object();
  const auto vision_cfg = cfg.object_opt("vision_config");
  if (!vision_cfg) spec.notes.push_back("vision_config missing: using Idefics3VisionConfig defaults");
  // The tower has no attention-pooling head: read it as SigLIP with
  // vision_use_head false.
  json vj = vision_cfg ? vision_cfg->raw() : kEmpty;
  vj["vision_use_head"] = false;
  const JsonReader vc(vj, cfg.child_path("vision_config"));
  VitDefaults vd;
  vd.config_class = "Idefics3VisionConfig";
  vd.hidden = 1152;
  vd.intermediate = 3072;
  vd.layers = 12;
  vd.heads = 16;
  vd.image_size = 224;
  vd.patch_size = 32;
  vd.activation = "gelu_pytorch_tanh";
  const LayerStack v = read_vit(vc, vd, spec);
  const int64_t patches = add_siglip_vision_tower(vc, spec, v);
  spec.extra_stacks.push_back(v);

  const int64_t scale = cfg.int_or("scale_factor", 2, 1, 64);
  const int64_t side = spec.vision.image_size / spec.vision.patch_size;
  if (side % scale != 0) {
    fail(errc::kInconsistent, cfg.child_path("scale_factor"),
         cfg.child_path("scale_factor") + " (" + std::to_string(scale) + ") must divide the " + std::to_string(side) +
             " patches a side (image_size / patch_size): the pixel shuffle folds scale_factor^2 of them into one");
  }
  const size_t from = spec.groups.size();
  add_linear(spec, "proj", comp::kProjector, "projector", v.hidden * scale * scale, spec.text.hidden, false, 1);
  relabel_component(spec, from, comp::kProjector);
  // One image tile gives (image/patch)^2 / scale^2 text tokens (the processor's
  // image_seq_len); with do_image_splitting an image becomes up to
  // (longest_edge / image_size)^2 tiles plus a global one, each as many.
  spec.vision.tokens_per_image = patches / (scale * scale);
  spec.notes.push_back("an image is counted as one " + std::to_string(spec.vision.image_size) +
                       " px tile: " + std::to_string(spec.vision.tokens_per_image) +
                       " text tokens (with image splitting, each further tile adds as many)");
}

}  // namespace vram::detail

// Gemma 3: the text-only Gemma3ForCausalLM and the SigLIP + Gemma 3
// Gemma3ForConditionalGeneration.
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_gemma3.py (Gemma3TextConfig): vocab 262208, hidden 2304,
// intermediate 9216, 26 layers, 8 heads, 4 KV heads, head_dim 256,
// hidden_activation gelu_pytorch_tanh, 131072 positions, tie_word_embeddings
// True, attention_bias False, sliding_window 4096, sliding_window_pattern 6.
// modeling_gemma3.py: q/k/v/o_proj (bias = attention_bias), q_norm / k_norm
// (Gemma3RMSNorm over head_dim), gate/up/down_proj without bias, four norms per
// layer (input, post_attention, pre_feedforward, post_feedforward), final norm,
// lm_head tied to embed_tokens unless tie_word_embeddings is false. The
// embedding scale is a non-persistent buffer, not a parameter.
void build_gemma3_text(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Gemma3TextConfig";
  d.vocab = 262208;
  d.hidden = 2304;
  d.intermediate = 9216;
  d.layers = 26;
  d.heads = 8;
  d.kv_heads = 4;
  d.head_dim = 256;
  d.max_positions = 131072;
  d.tie = true;
  d.activation = "gelu_pytorch_tanh";
  d.has_mlp_bias = false;
  d.qk_norm = true;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  t.activation = cfg.str_or("hidden_activation", cfg.str_or("hidden_act", d.activation));
  t.norms_per_layer = 4;
  add_norm(spec, "pre_feedforward_layernorm", "text", t.hidden, false, t.layers);
  add_norm(spec, "post_feedforward_layernorm", "text", t.hidden, false, t.layers);

  // Local/global attention: layer_types when given, else every
  // sliding_window_pattern-th layer is global ((i + 1) % pattern == 0).
  t.sliding_window = cfg.int_or("sliding_window", 4096);
  if (const json* types = cfg.get("layer_types")) {
    const std::string path = cfg.child_path("layer_types");
    if (!types->is_array() || static_cast<int64_t>(types->size()) != t.layers) {
      fail(errc::kInconsistent, path, path + " must list one attention type per layer (num_hidden_layers)");
    }
    t.sliding_layers = 0;
    for (const auto& v : *types) {
      if (v.is_string() && v.get<std::string>() == "sliding_attention") ++t.sliding_layers;
    }
  } else {
    const int64_t pattern = cfg.int_or("sliding_window_pattern", 6, 1, 100000);
    t.sliding_layers = t.layers - t.layers / pattern;
  }
}

// configuration_gemma3.py (Gemma3Config): text_config None -> Gemma3TextConfig(),
// vision_config None -> SiglipVisionConfig(), mm_tokens_per_image 256.
// modeling_gemma3.py: vision_tower = SiglipVisionModel; multi_modal_projector
// = mm_input_projection_weight (vision hidden x text hidden, a bare
// Parameter) + mm_soft_emb_norm (Gemma3RMSNorm over the vision hidden size) +
// an average pool without parameters; the language model as above with lm_head
// tied to its embed_tokens (tie_word_embeddings of the text config).
void build_gemma3(const JsonReader& cfg, ModelSpec& spec) {
  static const json kEmpty = json::object();
  const auto text_cfg = cfg.object_opt("text_config");
  if (!text_cfg) spec.notes.push_back("text_config missing: using Gemma3TextConfig defaults");
  {
    ModelSpec t;
    build_gemma3_text(text_cfg ? *text_cfg : JsonReader(kEmpty, cfg.child_path("text_config")), t);
    adopt_text_model(t, "text_config", spec);
  }
  spec.torch_dtype =
      cfg.str_or("torch_dtype", cfg.str_or("dtype", text_cfg ? text_cfg->str_or("torch_dtype", "") : ""));

  // SiglipVisionConfig defaults (configuration_siglip.py): hidden 768,
  // intermediate 3072, 12 layers, 12 heads, image 224, patch 16, gelu_pytorch_tanh.
  VitDefaults vd;
  vd.config_class = "SiglipVisionConfig";
  vd.patch_size = 16;
  vd.activation = "gelu_pytorch_tanh";
  const auto vision_cfg = cfg.object_opt("vision_config");
  if (!vision_cfg) spec.notes.push_back("vision_config missing: using SiglipVisionConfig defaults");
  const JsonReader vc = vision_cfg ? *vision_cfg : JsonReader(kEmpty, cfg.child_path("vision_config"));
  const LayerStack v = read_vit(vc, vd, spec);
  add_siglip_vision_tower(vc, spec, v);
  spec.extra_stacks.push_back(v);

  const size_t from = spec.groups.size();
  add_other(spec, "mm_input_projection_weight", comp::kProjector, "projector", v.hidden * spec.text.hidden, 1);
  add_norm(spec, "mm_soft_emb_norm", "projector", v.hidden, false, 1);
  relabel_component(spec, from, comp::kProjector);
  spec.vision.tokens_per_image = cfg.int_or("mm_tokens_per_image", 256);
}

}  // namespace vram::detail

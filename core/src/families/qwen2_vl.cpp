// Qwen2-VL (Qwen2VLForConditionalGeneration): a dynamic-resolution vision
// transformer, a patch merger and a Qwen2-shaped language model.
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_qwen2_vl.py: Qwen2VLTextConfig defaults vocab 152064,
// hidden 8192, intermediate 29568, 80 layers, 64 heads, 8 KV heads, 32768
// positions, untied; without text_config the text fields are read from the
// top level (the Hub layout of Qwen2-VL-2B/7B/72B). Qwen2VLVisionConfig
// defaults depth 32, embed_dim 1280, hidden_size 3584, quick_gelu,
// mlp_ratio 4, num_heads 16, in_channels 3, patch_size 14,
// spatial_merge_size 2, temporal_patch_size 2.
// modeling_qwen2_vl.py: text layers as Qwen2 (q/k/v_proj with bias, o_proj
// without); vision: patch_embed.proj Conv3d(in_channels, embed_dim,
// [temporal_patch_size, patch, patch], bias=False); per block norm1/norm2
// (LayerNorm), attn.qkv (embed -> 3 embed) and attn.proj, mlp.fc1/fc2
// (embed * mlp_ratio), all with biases; merger: ln_q LayerNorm(embed) and an
// MLP of embed * merge^2 -> embed * merge^2 -> hidden_size, with biases. The
// rotary tables are buffers.
namespace {

// The Qwen2-shaped language model of Qwen2-VL and Qwen2.5-VL (their text
// config classes share these defaults), from text_config or the top level.
void build_qwen_vl_text(const JsonReader& cfg, ModelSpec& spec, const char* config_class) {
  LlamaLikeDefaults d;
  d.config_class = config_class;
  d.vocab = 152064;
  d.hidden = 8192;
  d.intermediate = 29568;
  d.layers = 80;
  d.heads = 64;
  d.kv_heads = 8;
  d.max_positions = 32768;
  d.qkv_bias_always = true;
  d.has_mlp_bias = false;
  const auto text_cfg = cfg.object_opt("text_config");
  // With a text_config, a top-level tie_word_embeddings still applies when the
  // text config does not set its own.
  d.tie = cfg.bool_or("tie_word_embeddings", false);
  {
    ModelSpec t;
    build_llama_like(text_cfg ? *text_cfg : cfg, t, d);
    spec.text = t.text;
    spec.vocab = t.vocab;
    spec.tie_word_embeddings = t.tie_word_embeddings;
    spec.max_position_embeddings = t.max_position_embeddings;
    spec.torch_dtype = t.torch_dtype;
    for (const auto& n : t.notes) spec.notes.push_back(text_cfg ? "text_config." + n : n);
    spec.groups = t.groups;
  }
  if (spec.torch_dtype.empty()) spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));
  const JsonReader& tc = text_cfg ? *text_cfg : cfg;
  if (tc.bool_or("use_sliding_window", false) && tc.has("sliding_window")) {
    const int64_t mwl = tc.int_or("max_window_layers", 80, 0, kMaxSize);
    spec.text.sliding_window = tc.int_req("sliding_window");
    spec.text.sliding_layers = spec.text.layers > mwl ? spec.text.layers - mwl : 0;
  }
}

}  // namespace

void build_qwen2_vl(const JsonReader& cfg, ModelSpec& spec) {
  build_qwen_vl_text(cfg, spec, "Qwen2VLTextConfig");

  static const json kEmpty = json::object();
  const auto vision_cfg = cfg.object_opt("vision_config");
  if (!vision_cfg) spec.notes.push_back("vision_config missing: using Qwen2VLVisionConfig defaults");
  const JsonReader vc = vision_cfg ? *vision_cfg : JsonReader(kEmpty, cfg.child_path("vision_config"));
  LayerStack v;
  v.name = "vision";
  v.layers = vc.int_or("depth", 32, 1, 100000);
  v.hidden = vc.int_or("embed_dim", 1280);
  v.heads = vc.int_or("num_heads", 16, 1, 1 << 20);
  v.kv_heads = v.heads;
  check_heads(vc, v, "num_heads", "num_heads", false);
  v.head_dim = v.hidden / v.heads;
  v.v_head_dim = v.head_dim;
  // VisionMlp: hidden_dim = int(embed_dim * mlp_ratio).
  const double ratio = vc.num_or("mlp_ratio", 4.0, 1e-3, 1024.0);
  v.intermediate = static_cast<int64_t>(static_cast<double>(v.hidden) * ratio);
  v.mlp = MlpKind::kPlain;
  v.norm = NormKind::kLayerNorm;
  v.attention = AttnKind::kMha;
  v.activation = vc.str_or("hidden_act", "quick_gelu");
  v.causal = false;
  const int64_t out_hidden = vc.int_or("hidden_size", 3584);
  if (out_hidden != spec.text.hidden) {
    fail(errc::kInconsistent, vc.child_path("hidden_size"),
         vc.child_path("hidden_size") + " (" + std::to_string(out_hidden) +
             ") must equal the language model's hidden_size (" + std::to_string(spec.text.hidden) +
             "): the merger writes into the text embedding space");
  }
  const int64_t channels = vc.int_or("in_channels", 3, 1, 64);
  const int64_t patch = vc.int_or("patch_size", 14);
  const int64_t temporal = vc.int_or("temporal_patch_size", 2, 1, 64);
  const int64_t merge = vc.int_or("spatial_merge_size", 2, 1, 64);
  const int64_t h = v.hidden, L = v.layers, m = h * merge * merge;

  const size_t from = spec.groups.size();
  add_other(spec, "patch_embed", comp::kVision, "vision", channels * temporal * patch * patch * h, 1);
  add_norm(spec, "norm1", "vision", h, true, L);
  add_norm(spec, "norm2", "vision", h, true, L);
  add_linear(spec, "qkv", comp::kVision, "vision", h, 3 * h, true, L);
  add_linear(spec, "proj", comp::kVision, "vision", h, h, true, L);
  add_linear(spec, "fc1", comp::kVision, "vision", h, v.intermediate, true, L);
  add_linear(spec, "fc2", comp::kVision, "vision", v.intermediate, h, true, L);
  relabel_component(spec, from, comp::kVision);
  const size_t merger = spec.groups.size();
  add_norm(spec, "ln_q", "projector", h, true, 1);
  add_linear(spec, "mlp.0", comp::kProjector, "projector", m, m, true, 1);
  add_linear(spec, "mlp.2", comp::kProjector, "projector", m, spec.text.hidden, true, 1);
  relabel_component(spec, merger, comp::kProjector);
  spec.extra_stacks.push_back(v);

  // Images keep their own resolution: the tower sees (H/patch) x (W/patch)
  // patches and the merger folds merge^2 of them into one language token.
  spec.vision.patch_size = patch;
  spec.vision.dynamic_resolution = true;
  spec.vision.spatial_merge = merge;
  spec.notes.push_back("dynamic resolution: an H x W image gives (H/" + std::to_string(patch) + ")*(W/" +
                       std::to_string(patch) + ") vision-tower tokens and 1/" + std::to_string(merge * merge) +
                       " as many language-model tokens");
}

QwenVision read_qwen_vision(const JsonReader& cfg, ModelSpec& spec, const QwenVisionDefaults& d) {
  static const json kEmpty = json::object();
  const auto vision_cfg = cfg.object_opt("vision_config");
  if (!vision_cfg) spec.notes.push_back(std::string("vision_config missing: using ") + d.config_class + " defaults");
  const JsonReader vc = vision_cfg ? *vision_cfg : JsonReader(kEmpty, cfg.child_path("vision_config"));
  for (const char* key : {"depth", "hidden_size", "intermediate_size", "num_heads", "out_hidden_size"}) {
    if (vision_cfg && !vc.has(key)) {
      spec.notes.push_back(vc.child_path(key) + std::string(" missing: using the ") + d.config_class + " default");
    }
  }
  LayerStack v;
  v.name = "vision";
  v.layers = vc.int_or("depth", d.depth, 1, 100000);
  v.hidden = vc.int_or("hidden_size", d.hidden);
  v.heads = vc.int_or("num_heads", 16, 1, 1 << 20);
  v.kv_heads = v.heads;
  check_heads(vc, v, "num_heads", "num_heads", false);
  v.head_dim = v.hidden / v.heads;
  v.v_head_dim = v.head_dim;
  v.intermediate = vc.int_or("intermediate_size", d.intermediate);
  v.mlp = d.mlp;
  v.norm = d.norm;
  v.attention = AttnKind::kMha;
  v.activation = vc.str_or("hidden_act", d.activation);
  v.causal = false;
  const int64_t out_hidden = vc.int_or("out_hidden_size", 3584);
  if (out_hidden != spec.text.hidden) {
    fail(errc::kInconsistent, vc.child_path("out_hidden_size"),
         vc.child_path("out_hidden_size") + " (" + std::to_string(out_hidden) +
             ") must equal the language model's hidden_size (" + std::to_string(spec.text.hidden) +
             "): " + d.writes_into + " into the text embedding space");
  }
  return {vc, v, out_hidden};
}

// Qwen2.5-VL (Qwen2_5_VLForConditionalGeneration). configuration_qwen2_5_vl.py:
// the text config as Qwen2-VL's; Qwen2_5_VLVisionConfig defaults depth 32,
// hidden_size 3584, hidden_act silu, intermediate_size 3420, num_heads 16,
// in_channels 3, patch_size 14, spatial_merge_size 2, temporal_patch_size 2,
// window_size 112, out_hidden_size 3584, fullatt_block_indexes [7, 15, 23, 31].
// modeling_qwen2_5_vl.py: patch_embed.proj Conv3d(in_channels, hidden_size,
// [temporal, patch, patch], bias=False); per block norm1 / norm2
// Qwen2RMSNorm(hidden_size) (weight only), attn.qkv (hidden -> 3 hidden) and
// attn.proj with biases, and a gated MLP (Qwen2_5_VLMLP(bias=True):
// gate_proj, up_proj hidden -> intermediate, down_proj back); merger ln_q
// Qwen2RMSNorm(hidden_size) and an MLP of hidden * merge^2 -> hidden * merge^2
// -> out_hidden_size with biases. Blocks outside fullatt_block_indexes attend
// within windows of window_size pixels (window_size / patch / merge merged
// tokens a side); the weights are the same.
void build_qwen2_5_vl(const JsonReader& cfg, ModelSpec& spec) {
  build_qwen_vl_text(cfg, spec, "Qwen2_5_VLTextConfig");
  // A config re-saved by transformers >= 4.52 nests text_config (with its own
  // torch_dtype, float32 when the class default was written); the top-level
  // dtype is the checkpoint's.
  if (cfg.has("torch_dtype") || cfg.has("dtype")) spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));

  const QwenVision qv = read_qwen_vision(
      cfg, spec,
      {"Qwen2_5_VLVisionConfig", 32, 3584, 3420, MlpKind::kGated, NormKind::kRmsNorm, "silu", "the merger writes"});
  const JsonReader& vc = qv.vc;
  const LayerStack& v = qv.v;
  const int64_t out_hidden = qv.out_hidden;
  const int64_t channels = vc.int_or("in_channels", vc.int_or("in_chans", 3, 1, 64), 1, 64);
  const int64_t patch = vc.int_or("patch_size", 14);
  const int64_t temporal = vc.int_or("temporal_patch_size", 2, 1, 64);
  const int64_t merge = vc.int_or("spatial_merge_size", 2, 1, 64);
  const int64_t h = v.hidden, L = v.layers, m = h * merge * merge;

  const size_t from = spec.groups.size();
  add_other(spec, "patch_embed", comp::kVision, "vision", channels * temporal * patch * patch * h, 1);
  add_norm(spec, "norm1", "vision", h, false, L);
  add_norm(spec, "norm2", "vision", h, false, L);
  add_linear(spec, "qkv", comp::kVision, "vision", h, 3 * h, true, L);
  add_linear(spec, "proj", comp::kVision, "vision", h, h, true, L);
  add_linear(spec, "gate_proj", comp::kVision, "vision", h, v.intermediate, true, L);
  add_linear(spec, "up_proj", comp::kVision, "vision", h, v.intermediate, true, L);
  add_linear(spec, "down_proj", comp::kVision, "vision", v.intermediate, h, true, L);
  relabel_component(spec, from, comp::kVision);
  const size_t merger = spec.groups.size();
  add_norm(spec, "ln_q", "projector", h, false, 1);
  add_linear(spec, "mlp.0", comp::kProjector, "projector", m, m, true, 1);
  add_linear(spec, "mlp.2", comp::kProjector, "projector", m, out_hidden, true, 1);
  relabel_component(spec, merger, comp::kProjector);
  spec.extra_stacks.push_back(v);

  spec.vision.patch_size = patch;
  spec.vision.dynamic_resolution = true;
  spec.vision.spatial_merge = merge;
  spec.notes.push_back("dynamic resolution: an H x W image gives (H/" + std::to_string(patch) + ")*(W/" +
                       std::to_string(patch) + ") vision-tower tokens and 1/" + std::to_string(merge * merge) +
                       " as many language-model tokens");
}

}  // namespace vram::detail

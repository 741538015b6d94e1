// Llama 3.2 Vision (MllamaForConditionalGeneration): a tiled ViT with a local
// and a gated global encoder, one projector, and a Llama 3.1 decoder in which
// some layers are cross-attention layers reading the image instead of the text.
#include <set>

#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

namespace {

// Reads an integer list (cross_attention_layers, intermediate_layers_indices).
std::vector<int64_t> int_list(const JsonReader& cfg, const char* key, const std::vector<int64_t>& fallback) {
  const json* v = cfg.get(key);
  if (v == nullptr || v->is_null()) return fallback;
  const std::string path = cfg.child_path(key);
  if (!v->is_array()) fail(errc::kWrongType, path, path + " must be a list of layer indices");
  std::vector<int64_t> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& x = (*v)[i];
    const std::string item = path + "[" + std::to_string(i) + "]";
    if (!x.is_number_integer()) fail(errc::kWrongType, item, item + " must be an integer layer index");
    out.push_back(x.get<int64_t>());
  }
  return out;
}

// MllamaTextConfig (configuration_mllama.py): vocab 128256, hidden 4096,
// intermediate 14336, 40 layers, 32 heads, 8 KV heads, 131072 positions,
// silu, untied, cross_attention_layers None -> [3, 8, 13, 18, 23, 28, 33, 38].
// modeling_mllama.py MllamaTextModel: embed_tokens = nn.Embedding(vocab_size
// + 8, hidden) (8 extra rows for the image token and padding), then per layer
// either MllamaSelfAttentionDecoderLayer (self_attn q/k/v/o_proj without
// bias, gated MLP, input / post_attention RMSNorm) or, for an index in
// cross_attention_layers, MllamaCrossAttentionDecoderLayer: cross_attn
// q/k/v/o_proj of the same shapes plus q_norm / k_norm (RMSNorm over
// head_dim), two scalar gates (cross_attn_attn_gate, cross_attn_mlp_gate),
// the same MLP and norms; final norm; lm_head = nn.Linear(hidden, vocab_size)
// (vocab_size rows, not + 8).
void build_mllama_text(const JsonReader& tc, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "MllamaTextConfig";
  d.vocab = 128256;
  d.hidden = 4096;
  d.intermediate = 14336;
  d.layers = 40;
  d.heads = 32;
  d.kv_heads = 8;
  d.max_positions = 131072;
  d.has_mlp_bias = false;
  build_llama_like(tc, spec, d);
  LayerStack& t = spec.text;
  t.dropout = tc.num_or("dropout", 0.0, 0.0, 1.0);
  for (auto& g : spec.groups) {
    if (g.module == "embed_tokens") {
      g.in_features = spec.vocab + 8;
      g.numel = (spec.vocab + 8) * t.hidden;
    }
  }
  if (!tc.has("cross_attention_layers")) {
    spec.notes.push_back("cross_attention_layers missing: using MllamaTextConfig default [3, 8, ..., 38]");
  }
  const std::vector<int64_t> listed = int_list(tc, "cross_attention_layers", {3, 8, 13, 18, 23, 28, 33, 38});
  std::set<int64_t> cross;
  for (size_t i = 0; i < listed.size(); ++i) {
    const int64_t idx = listed[i];
    if (idx < 0 || idx >= t.layers) {
      const std::string item = tc.child_path("cross_attention_layers") + "[" + std::to_string(i) + "]";
      fail(errc::kOutOfRange, item,
           item + " (" + std::to_string(idx) + ") is not a layer index below num_hidden_layers (" +
               std::to_string(t.layers) + ")");
    }
    cross.insert(idx);
  }
  const int64_t X = static_cast<int64_t>(cross.size());
  t.image_cross_layers = X;
  if (X > 0) {
    add_norm(spec, "q_norm", "text", t.head_dim, false, X);
    add_norm(spec, "k_norm", "text", t.head_dim, false, X);
    add_other(spec, "cross_attn_attn_gate", comp::kAttention, "text", 1, X);
    add_other(spec, "cross_attn_mlp_gate", comp::kMlp, "text", 1, X);
  }
}

// MllamaVisionConfig (configuration_mllama.py): hidden 1280, gelu, 32 local
// and 8 global layers, 16 heads (the Hub's config.json names them
// attention_heads), 3 channels, intermediate 5120, vision_output_dim 7680,
// image 448, patch 14, max_num_tiles 4, intermediate_layers_indices
// [3, 7, 15, 23, 30], supported_aspect_ratios the 8 tilings of up to 4 tiles
// (max_aspect_ratio_id = their count).
struct MllamaVision {
  LayerStack v;
  int64_t global = 0;
  int64_t channels = 0, image = 0, patch = 0, tiles = 0;
  int64_t aspect_ratios = 0;
  int64_t out_dim = 0;
  // num_patches per tile: (image/patch)^2 + the class token.
  int64_t patches() const {
    const int64_t side = image / patch;
    return side * side + 1;
  }
};

MllamaVision read_mllama_vision(const JsonReader& vc, ModelSpec& spec) {
  auto note_default = [&](const char* key, int64_t v) {
    if (!vc.has(key)) {
      spec.notes.push_back(vc.child_path(key) + " missing: using MllamaVisionConfig default " + std::to_string(v));
    }
  };
  note_default("hidden_size", 1280);
  note_default("num_hidden_layers", 32);
  note_default("num_global_layers", 8);
  note_default("intermediate_size", 5120);
  note_default("image_size", 448);
  note_default("patch_size", 14);
  note_default("max_num_tiles", 4);
  MllamaVision m;
  LayerStack& v = m.v;
  v.name = "vision";
  v.hidden = vc.int_or("hidden_size", 1280);
  v.intermediate = vc.int_or("intermediate_size", 5120);
  const int64_t local = vc.int_or("num_hidden_layers", 32, 1, 100000);
  m.global = vc.int_or("num_global_layers", 8, 0, 100000);
  v.layers = local + m.global;
  const char* heads_key = vc.has("attention_heads") ? "attention_heads" : "num_attention_heads";
  if (!vc.has(heads_key)) note_default(heads_key, 16);
  v.heads = vc.int_or(heads_key, 16, 1, 1 << 20);
  v.kv_heads = v.heads;
  check_heads(vc, v, heads_key, heads_key, false);
  v.head_dim = v.hidden / v.heads;
  v.v_head_dim = v.head_dim;
  v.mlp = MlpKind::kPlain;
  v.norm = NormKind::kLayerNorm;
  v.attention = AttnKind::kMha;
  v.activation = vc.str_or("hidden_act", "gelu");
  v.causal = false;
  m.channels = vc.int_or("num_channels", 3, 1, 64);
  m.image = vc.int_or("image_size", 448);
  m.patch = vc.int_or("patch_size", 14);
  if (m.patch > m.image) {
    fail(errc::kInconsistent, vc.child_path("patch_size"),
         vc.child_path("patch_size") + " (" + std::to_string(m.patch) + ") is larger than " +
             vc.child_path("image_size") + " (" + std::to_string(m.image) + ")");
  }
  m.tiles = vc.int_or("max_num_tiles", 4, 1, 64);
  m.aspect_ratios = 8;  // the default supported_aspect_ratios
  if (const json* ar = vc.get("supported_aspect_ratios"); ar != nullptr && !ar->is_null()) {
    if (!ar->is_array() || ar->empty()) {
      fail(errc::kWrongType, vc.child_path("supported_aspect_ratios"),
           vc.child_path("supported_aspect_ratios") + " must be a non-empty list of [rows, columns] tilings");
    }
    m.aspect_ratios = static_cast<int64_t>(ar->size());
  }
  const std::vector<int64_t> feature_layers = int_list(vc, "intermediate_layers_indices", {3, 7, 15, 23, 30});
  m.out_dim = vc.int_or("vision_output_dim", 7680);
  // MllamaVisionModel.forward concatenates the final hidden state with the
  // hidden states of intermediate_layers_indices along the feature axis.
  const int64_t expected = v.hidden * (static_cast<int64_t>(feature_layers.size()) + 1);
  if (m.out_dim != expected) {
    fail(errc::kInconsistent, vc.child_path("vision_output_dim"),
         vc.child_path("vision_output_dim") + " (" + std::to_string(m.out_dim) + ") must be hidden_size x (" +
             std::to_string(feature_layers.size()) + " intermediate_layers_indices + 1) = " + std::to_string(expected));
  }
  return m;
}

// modeling_mllama.py MllamaVisionModel: patch_embedding Conv2d(bias=False);
// class_embedding (hidden); gated_positional_embedding: gate (1), embedding
// (num_patches x hidden, num_patches = (image/patch)^2 + 1) and tile_embedding
// nn.Embedding(max_aspect_ratio_id + 1, max_num_tiles x num_patches x hidden);
// pre_ and post_tile_positional_embedding: nn.Embedding(max_aspect_ratio_id +
// 1, max_num_tiles x hidden) and a gate each; layernorm_pre / layernorm_post;
// transformer (num_hidden_layers) and global_transformer (num_global_layers)
// of MllamaVisionEncoderLayer: self_attn q/k/v/o_proj without bias, mlp
// fc1/fc2 with bias, input / post_attention LayerNorm, and on the global ones
// gate_attn and gate_ffn (1 each). multi_modal_projector = nn.Linear(
// vision_output_dim, text hidden, bias=True).
void add_mllama_vision_params(const MllamaVision& m, ModelSpec& spec) {
  const LayerStack& v = m.v;
  const int64_t h = v.hidden;
  const int64_t patches = m.patches();
  const int64_t rows = m.aspect_ratios + 1;  // nn.Embedding(max_aspect_ratio_id + 1, ...)
  const int64_t tiles = m.tiles;
  const size_t from = spec.groups.size();
  add_other(spec, "patch_embedding", comp::kVision, "vision", m.channels * m.patch * m.patch * h, 1);
  add_other(spec, "class_embedding", comp::kVision, "vision", h, 1);
  add_other(spec, "gated_positional_embedding.embedding", comp::kVision, "vision", patches * h, 1);
  add_other(spec, "gated_positional_embedding.gate", comp::kVision, "vision", 1, 1);
  add_embedding(spec, "tile_embedding", "vision", rows, tiles * patches * h, comp::kVision);
  add_embedding(spec, "pre_tile_positional_embedding", "vision", rows, tiles * h, comp::kVision);
  add_embedding(spec, "post_tile_positional_embedding", "vision", rows, tiles * h, comp::kVision);
  add_other(spec, "tile_positional_embedding.gate", comp::kVision, "vision", 1, 2);
  add_norm(spec, "layernorm_pre", "vision", h, true, 1);
  add_norm(spec, "layernorm_post", "vision", h, true, 1);
  const int64_t L = v.layers;
  add_linear(spec, "q_proj", comp::kVision, "vision", h, h, false, L);
  add_linear(spec, "k_proj", comp::kVision, "vision", h, h, false, L);
  add_linear(spec, "v_proj", comp::kVision, "vision", h, h, false, L);
  add_linear(spec, "o_proj", comp::kVision, "vision", h, h, false, L);
  add_linear(spec, "fc1", comp::kVision, "vision", h, v.intermediate, true, L);
  add_linear(spec, "fc2", comp::kVision, "vision", v.intermediate, h, true, L);
  add_norm(spec, "input_layernorm", "vision", h, true, L);
  add_norm(spec, "post_attention_layernorm", "vision", h, true, L);
  if (m.global > 0) {
    add_other(spec, "gate_attn", comp::kVision, "vision", 1, m.global);
    add_other(spec, "gate_ffn", comp::kVision, "vision", 1, m.global);
  }
  relabel_component(spec, from, comp::kVision);
  const size_t proj = spec.groups.size();
  add_linear(spec, "multi_modal_projector", comp::kProjector, "projector", m.out_dim, spec.text.hidden, true, 1);
  relabel_component(spec, proj, comp::kProjector);
}

}  // namespace

// MllamaConfig (configuration_mllama.py): text_config / vision_config None ->
// the class defaults.
void build_mllama(const JsonReader& cfg, ModelSpec& spec) {
  static const json kEmpty = json::object();
  const auto text_cfg = cfg.object_opt("text_config");
  if (!text_cfg) spec.notes.push_back("text_config missing: using MllamaTextConfig defaults");
  {
    ModelSpec t;
    build_mllama_text(text_cfg ? *text_cfg : JsonReader(kEmpty, cfg.child_path("text_config")), t);
    adopt_text_model(t, "text_config", spec);
    spec.torch_dtype = t.torch_dtype;
  }
  if (cfg.has("torch_dtype") || cfg.has("dtype")) spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));

  const auto vision_cfg = cfg.object_opt("vision_config");
  if (!vision_cfg) spec.notes.push_back("vision_config missing: using MllamaVisionConfig defaults");
  const JsonReader vc = vision_cfg ? *vision_cfg : JsonReader(kEmpty, cfg.child_path("vision_config"));
  const MllamaVision m = read_mllama_vision(vc, spec);
  add_mllama_vision_params(m, spec);
  spec.extra_stacks.push_back(m.v);

  // MllamaImageProcessor pads every image to max_image_tiles tiles (the
  // processor's max_image_tiles equals the model's max_num_tiles: 4 on the
  // Hub); the tower pads each tile's patches + CLS to a multiple of 8 and
  // slices the padding off before the projector, so the cross-attention
  // layers see tiles x (patches + 1) tokens per image, while the text holds
  // one <|image|> token per image.
  const int64_t patches = m.patches();
  spec.vision.image_size = m.image;
  spec.vision.patch_size = m.patch;
  spec.vision.tokens_per_image = 1;
  spec.vision.encoder_tokens_per_image = m.tiles * (patches + (8 - patches % 8) % 8);
  spec.vision.cross_tokens_per_image = m.tiles * patches;
  spec.notes.push_back("image cross-attention: " + std::to_string(spec.text.image_cross_layers) + " of " +
                       std::to_string(spec.text.layers) + " text layers attend to " +
                       std::to_string(spec.vision.cross_tokens_per_image) + " vision tokens per image (" +
                       std::to_string(m.tiles) + " tiles x " + std::to_string(patches) + ")");
}

}  // namespace vram::detail

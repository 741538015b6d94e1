#include "families/moe_vlm_common.h"

#include <algorithm>

#include "reach.h"
#include "vram/families.h"

namespace vram::detail {

int64_t read_experts_per_token(const JsonReader& cfg, const char* key, int64_t fallback, int64_t experts,
                               const char* experts_key) {
  const int64_t k = cfg.int_or(key, fallback, 1, kMaxSize);
  if (experts > 0 && k > experts) {
    fail(errc::kInconsistent, cfg.child_path(key),
         cfg.child_path(key) + " (" + std::to_string(k) + ") is larger than " + cfg.child_path(experts_key) + " (" +
             std::to_string(experts) + "): a router cannot pick more experts than exist");
  }
  return k;
}

void add_routed_experts(ModelSpec& s, const char* in_a, const char* in_b, const char* out, int64_t hidden,
                        int64_t inter, int64_t experts, int64_t k, int64_t moe_layers, bool bias) {
  if (moe_layers <= 0 || experts <= 0) return;
  const size_t from = s.groups.size();
  add_linear(s, in_a, comp::kExperts, "text", hidden, inter, bias, moe_layers * experts);
  add_linear(s, in_b, comp::kExperts, "text", hidden, inter, bias, moe_layers * experts);
  add_linear(s, out, comp::kExperts, "text", inter, hidden, bias, moe_layers * experts);
  for (size_t i = from; i < s.groups.size(); ++i) {
    s.groups[i].active_num = k;
    s.groups[i].active_den = experts;
  }
  mark_layers(s, from, LayerSet::kMoe);
}

void mark_layers(ModelSpec& s, size_t from, LayerSet layers) {
  for (size_t i = from; i < s.groups.size(); ++i) s.groups[i].layers = layers;
}

void keep_dense_mlp_on(ModelSpec& s, int64_t dense_layers) {
  for (auto& g : s.groups) {
    if (g.stack == "text" && g.component == comp::kMlp) {
      g.instances = dense_layers;
      g.layers = LayerSet::kDense;
    }
  }
  s.groups.erase(std::remove_if(s.groups.begin(), s.groups.end(), [](const ParamGroup& g) { return g.instances == 0; }),
                 s.groups.end());
}

void set_text_linear_bias(ModelSpec& s, const std::string& module, bool bias) {
  for (auto& g : s.groups) {
    if (g.stack == "text" && g.kind == ModuleKind::kLinear && g.module == module) {
      g.bias = bias;
      g.numel = g.in_features * g.out_features + (bias ? g.out_features : 0);
    }
  }
}

void relabel_component(ModelSpec& s, size_t from, const char* component) {
  for (size_t i = from; i < s.groups.size(); ++i) s.groups[i].component = component;
}

int64_t qwen_moe_sparse_layers(const JsonReader& cfg, int64_t layers, int64_t experts) {
  std::vector<bool> mlp_only(static_cast<size_t>(layers), false);
  if (const json* list = cfg.get("mlp_only_layers")) {
    const std::string path = cfg.child_path("mlp_only_layers");
    if (!list->is_array()) fail(errc::kWrongType, path, path + " must be a list of layer indices");
    for (size_t i = 0; i < list->size(); ++i) {
      const json& v = (*list)[i];
      const std::string item = path + "[" + std::to_string(i) + "]";
      if (!v.is_number_integer()) fail(errc::kWrongType, item, item + " must be an integer layer index");
      const int64_t idx = v.get<int64_t>();
      if (idx < 0 || idx >= layers) {
        fail(errc::kOutOfRange, item,
             item + " (" + std::to_string(idx) + ") is not a layer index below num_hidden_layers (" +
                 std::to_string(layers) + ")");
      }
      mlp_only[static_cast<size_t>(idx)] = true;
    }
  }
  // Qwen2MoeConfig / Qwen3MoeConfig: decoder_sparse_step defaults to 1.
  const int64_t step = cfg.int_or("decoder_sparse_step", 1, 1, kMaxSize);
  int64_t sparse = 0;
  for (int64_t i = 0; i < layers; ++i) {
    if (!mlp_only[static_cast<size_t>(i)] && experts > 0 && (i + 1) % step == 0) ++sparse;
  }
  return sparse;
}

LayerStack read_vit(const JsonReader& vc, const VitDefaults& d, ModelSpec& spec) {
  auto note_default = [&](const char* key, int64_t v) {
    if (!vc.has(key)) {
      spec.notes.push_back(vc.child_path(key) + " missing: using " + d.config_class + " default " + std::to_string(v));
    }
  };
  note_default("hidden_size", d.hidden);
  note_default("intermediate_size", d.intermediate);
  note_default("num_hidden_layers", d.layers);
  note_default("num_attention_heads", d.heads);
  note_default("image_size", d.image_size);
  note_default("patch_size", d.patch_size);
  LayerStack v;
  v.name = "vision";
  v.hidden = vc.int_or("hidden_size", d.hidden);
  v.intermediate = vc.int_or("intermediate_size", d.intermediate);
  v.layers = vc.int_or("num_hidden_layers", d.layers, 1, 100000);
  v.heads = vc.int_or("num_attention_heads", d.heads, 1, 1 << 20);
  v.kv_heads = v.heads;
  check_heads(vc, v, "num_attention_heads", "num_attention_heads", false);
  v.head_dim = v.hidden / v.heads;
  v.v_head_dim = v.head_dim;
  v.mlp = MlpKind::kPlain;
  v.norm = NormKind::kLayerNorm;
  v.attention = AttnKind::kMha;
  v.activation = vc.str_or("hidden_act", d.activation);
  v.causal = false;
  v.dropout = vc.num_or("attention_dropout", 0.0, 0.0, 1.0);
  spec.vision.image_size = vc.int_or("image_size", d.image_size);
  spec.vision.patch_size = vc.int_or("patch_size", d.patch_size);
  if (spec.vision.patch_size > spec.vision.image_size) {
    fail(errc::kInconsistent, vc.child_path("patch_size"),
         vc.child_path("patch_size") + " (" + std::to_string(spec.vision.patch_size) + ") is larger than " +
             vc.child_path("image_size") + " (" + std::to_string(spec.vision.image_size) + ")");
  }
  return v;
}

namespace {

// The encoder layer shared by CLIP and SigLIP: self_attn.{q,k,v,out}_proj and
// mlp.fc1/fc2, all with biases, plus layer_norm1/2 (LayerNorm with bias).
void add_vit_layers(ModelSpec& s, const LayerStack& v) {
  const int64_t h = v.hidden, L = v.layers;
  add_linear(s, "q_proj", comp::kVision, "vision", h, h, true, L);
  add_linear(s, "k_proj", comp::kVision, "vision", h, h, true, L);
  add_linear(s, "v_proj", comp::kVision, "vision", h, h, true, L);
  add_linear(s, "out_proj", comp::kVision, "vision", h, h, true, L);
  add_norm(s, "layer_norm1", "vision", h, true, L);
  add_norm(s, "layer_norm2", "vision", h, true, L);
  add_linear(s, "fc1", comp::kVision, "vision", h, v.intermediate, true, L);
  add_linear(s, "fc2", comp::kVision, "vision", v.intermediate, h, true, L);
}

int64_t patches(const ModelSpec& s) {
  const int64_t side = s.vision.image_size / s.vision.patch_size;  // Conv2d stride = patch: floor
  return side * side;
}

}  // namespace

int64_t add_clip_vision_tower(const JsonReader& vc, ModelSpec& spec, const LayerStack& v) {
  const size_t from = spec.groups.size();
  const int64_t channels = vc.int_or("num_channels", 3, 1, 64);
  const int64_t h = v.hidden, p = spec.vision.patch_size, n = patches(spec);
  add_other(spec, "class_embedding", comp::kVision, "vision", h, 1);
  add_other(spec, "patch_embedding", comp::kVision, "vision", channels * p * p * h, 1);  // bias=False
  add_embedding(spec, "position_embedding", "vision", n + 1, h, comp::kVision);
  add_norm(spec, "pre_layrnorm", "vision", h, true, 1);
  add_vit_layers(spec, v);
  add_norm(spec, "post_layernorm", "vision", h, true, 1);
  relabel_component(spec, from, comp::kVision);
  spec.vision.encoder_tokens_per_image = n + 1;
  return n;
}

int64_t add_siglip_vision_tower(const JsonReader& vc, ModelSpec& spec, const LayerStack& v) {
  const size_t from = spec.groups.size();
  const int64_t channels = vc.int_or("num_channels", 3, 1, 64);
  const int64_t h = v.hidden, p = spec.vision.patch_size, n = patches(spec);
  add_other(spec, "patch_embedding", comp::kVision, "vision", channels * p * p * h + h, 1);  // Conv2d with bias
  add_embedding(spec, "position_embedding", "vision", n, h, comp::kVision);
  add_vit_layers(spec, v);
  add_norm(spec, "post_layernorm", "vision", h, true, 1);
  // SiglipVisionTransformer: use_head = True unless the config says vision_use_head.
  if (vc.bool_or("vision_use_head", true)) {
    add_other(spec, "probe", comp::kVision, "vision", h, 1);
    add_other(spec, "in_proj", comp::kVision, "vision", 3 * h * h + 3 * h, 1);  // nn.MultiheadAttention
    add_linear(spec, "out_proj", comp::kVision, "vision", h, h, true, 1);
    add_norm(spec, "layernorm", "vision", h, true, 1);
    add_linear(spec, "fc1", comp::kVision, "vision", h, v.intermediate, true, 1);
    add_linear(spec, "fc2", comp::kVision, "vision", v.intermediate, h, true, 1);
  }
  relabel_component(spec, from, comp::kVision);
  spec.vision.encoder_tokens_per_image = n;
  return n;
}

void build_nested_text(const JsonReader& parent, const char* key, const char* default_type, ModelSpec& spec) {
  static const json kEmpty = json::object();
  const auto sub = parent.object_opt(key);
  const JsonReader tc = sub ? *sub : JsonReader(kEmpty, parent.child_path(key));
  if (!sub) {
    spec.notes.push_back(parent.child_path(key) + " missing: using the default " + default_type + " config");
  }
  const std::string mt = tc.str_or("model_type", default_type);
  const Adapter build = reach::find_adapter(mt, tc.child_path("model_type"));
  if (build == nullptr) {
    fail(errc::kUnsupportedModel, tc.child_path("model_type"),
         tc.child_path("model_type") + " " + vram::quoted(mt) + " has no adapter for the language model of this VLM");
  }
  ModelSpec t;
  t.model_type = mt;
  t.family = mt;
  build(tc, t);
  if (spec.torch_dtype.empty()) spec.torch_dtype = t.torch_dtype;
  adopt_text_model(t, key, spec);
  if (!t.exact) {
    spec.exact = false;
    for (const auto& why : t.inexact) spec.inexact.push_back(std::string(key) + ": " + why);
  }
}

void adopt_text_model(const ModelSpec& t, const std::string& key, ModelSpec& spec) {
  spec.text = t.text;
  spec.vocab = t.vocab;
  spec.tie_word_embeddings = t.tie_word_embeddings;
  spec.max_position_embeddings = t.max_position_embeddings;
  for (const auto& n : t.notes) spec.notes.push_back(key + "." + n);
  spec.groups.insert(spec.groups.end(), t.groups.begin(), t.groups.end());
}

}  // namespace vram::detail

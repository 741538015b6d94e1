// Llama 4 (Llama4ForConditionalGeneration): a mixture-of-experts decoder whose
// MoE layers interleave with dense ones, chunked local attention on the RoPE
// layers and global NoPE attention on every fourth, and a ViT whose
// pixel-shuffled patches are projected into the text sequence.
#include <algorithm>
#include <set>

#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"

namespace vram::detail {

namespace {

// A list of 0/1 flags or layer indices (no_rope_layers, moe_layers), checked.
std::vector<int64_t> read_ints(const JsonReader& cfg, const char* key) {
  const json* v = cfg.get(key);
  std::vector<int64_t> out;
  if (v == nullptr || v->is_null()) return out;
  const std::string path = cfg.child_path(key);
  if (!v->is_array()) fail(errc::kWrongType, path, path + " must be a list of integers");
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string item = path + "[" + std::to_string(i) + "]";
    if (!(*v)[i].is_number_integer()) fail(errc::kWrongType, item, item + " must be an integer");
    out.push_back((*v)[i].get<int64_t>());
  }
  return out;
}

// Which layers are sparse: moe_layers, else every interleave_moe_layer_step-th.
std::set<int64_t> llama4_moe_layers(const JsonReader& cfg, int64_t L) {
  std::set<int64_t> moe;
  if (cfg.has("moe_layers")) {
    const auto listed = read_ints(cfg, "moe_layers");
    for (size_t i = 0; i < listed.size(); ++i) {
      if (listed[i] < 0 || listed[i] >= L) {
        const std::string item = cfg.child_path("moe_layers") + "[" + std::to_string(i) + "]";
        fail(errc::kOutOfRange, item,
             item + " (" + std::to_string(listed[i]) + ") is not a layer index below num_hidden_layers (" +
                 std::to_string(L) + ")");
      }
      moe.insert(listed[i]);
    }
  } else {
    const int64_t step = cfg.int_or("interleave_moe_layer_step", 1, 0, kMaxSize);
    if (step > 0) {
      for (int64_t i = step - 1; i < L; i += step) moe.insert(i);
    }
  }
  return moe;
}

// Chunked attention: a RoPE layer attends within attention_chunk_size
// blocks, so transformers' HybridChunkedCache (the checkpoints set
// cache_implementation "hybrid") keeps at most attention_chunk_size tokens
// for it; NoPE layers (no_rope_layers 0) attend globally and keep all.
void set_chunked_attention(const JsonReader& cfg, LayerStack& t) {
  const int64_t L = t.layers;
  const int64_t interval = cfg.int_or("no_rope_layer_interval", 4, 1, kMaxSize);
  std::vector<int64_t> rope = read_ints(cfg, "no_rope_layers");
  if (rope.empty()) {
    for (int64_t i = 0; i < L; ++i) rope.push_back((i + 1) % interval != 0 ? 1 : 0);
  } else if (static_cast<int64_t>(rope.size()) != L) {
    fail(errc::kInconsistent, cfg.child_path("no_rope_layers"),
         cfg.child_path("no_rope_layers") + " must give one flag per layer (num_hidden_layers " + std::to_string(L) +
             "), has " + std::to_string(rope.size()));
  }
  int64_t chunked = 0;
  for (int64_t r : rope) chunked += r != 0 ? 1 : 0;
  if (cfg.has_key("attention_chunk_size") && !cfg.has("attention_chunk_size")) {
    chunked = 0;  // null: no chunking
  } else {
    t.sliding_window = cfg.int_or("attention_chunk_size", 8192, 1, kMaxSize);
  }
  t.sliding_layers = chunked;
  if (chunked == 0) t.sliding_window = 0;
}

}  // namespace

// configuration_llama4.py (Llama4TextConfig): vocab 202048, hidden 5120,
// intermediate_size 8192 (each expert and the shared expert),
// intermediate_size_mlp 16384 (the dense layers' MLP), 48 layers, 40 heads,
// 8 KV heads, head_dim 128, untied, num_local_experts 16, num_experts_per_tok
// 1, interleave_moe_layer_step 1, moe_layers None -> range(step - 1, layers,
// step), no_rope_layers None -> 1 (RoPE) except every no_rope_layer_interval
// (4)-th layer, attention_chunk_size 8192, use_qk_norm True.
// modeling_llama4.py Llama4TextDecoderLayer: self_attn q/k/v/o_proj
// (bias = attention_bias), qk_norm an L2 norm without weights; feed_forward =
// Llama4TextMoe on moe_layers (experts.gate_up_proj [E, hidden, 2 x
// intermediate] and experts.down_proj [E, intermediate, hidden] as bare
// Parameters, router nn.Linear(hidden, E, bias=False), shared_expert a gated
// MLP of intermediate_size) and Llama4TextMLP(intermediate_size_mlp)
// elsewhere; input / post_attention RMSNorm; final norm; lm_head.
void build_llama4_text(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "Llama4TextConfig";
  d.vocab = 202048;
  d.hidden = 5120;
  d.intermediate = 8192;
  d.layers = 48;
  d.heads = 40;
  d.kv_heads = 8;
  d.head_dim = 128;
  d.max_positions = 4096 * 32;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  const int64_t L = t.layers, h = t.hidden;
  const int64_t expert_inter = t.intermediate;
  if (!cfg.has("intermediate_size_mlp")) {
    spec.notes.push_back("intermediate_size_mlp missing: using Llama4TextConfig default 16384");
  }
  const int64_t dense_inter = cfg.int_or("intermediate_size_mlp", 16384);
  const std::string experts_key = "num_local_experts";
  const int64_t experts = cfg.int_or(experts_key, 16, 0, kMaxSize);
  const int64_t k = read_experts_per_token(cfg, "num_experts_per_tok", 1, experts, experts_key.c_str());

  const std::set<int64_t> moe = llama4_moe_layers(cfg, L);
  const int64_t sparse = experts > 0 ? static_cast<int64_t>(moe.size()) : 0;

  // build_llama_like gave every layer a gated MLP of intermediate_size: the
  // dense layers' is intermediate_size_mlp wide, the sparse ones have none.
  spec.groups.erase(std::remove_if(spec.groups.begin(), spec.groups.end(),
                                   [](const ParamGroup& g) { return g.stack == "text" && g.component == comp::kMlp; }),
                    spec.groups.end());
  if (L - sparse > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "gate_proj", comp::kMlp, "text", h, dense_inter, false, L - sparse);
    add_linear(spec, "up_proj", comp::kMlp, "text", h, dense_inter, false, L - sparse);
    add_linear(spec, "down_proj", comp::kMlp, "text", dense_inter, h, false, L - sparse);
    mark_layers(spec, from, LayerSet::kDense);
  }
  if (sparse > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "router", comp::kRouter, "text", h, experts, false, sparse);
    // gate_up_proj is one fused tensor; its halves are two groups of the same size.
    add_routed_experts(spec, "gate_up_proj", "gate_up_proj", "down_proj", h, expert_inter, experts, k, sparse);
    add_linear(spec, "gate_proj", comp::kMlp, "text", h, expert_inter, false, sparse);
    add_linear(spec, "up_proj", comp::kMlp, "text", h, expert_inter, false, sparse);
    add_linear(spec, "down_proj", comp::kMlp, "text", expert_inter, h, false, sparse);
    mark_layers(spec, from, LayerSet::kMoe);
  }
  t.intermediate = dense_inter;
  t.moe_layers = sparse;
  t.experts = sparse > 0 ? experts : 0;
  t.experts_per_token = sparse > 0 ? k : 0;
  t.expert_intermediate = sparse > 0 ? expert_inter : 0;
  t.shared_expert_intermediate = sparse > 0 ? expert_inter : 0;
  if (sparse > 0 && sparse < L) {
    spec.notes.push_back("the estimator places the " + std::to_string(sparse) +
                         " MoE layers above the dense ones (Llama 4 interleaves them); sizes are exact, only pipeline "
                         "stage boundaries are approximate");
  }

  set_chunked_attention(cfg, t);
  t.position_encoding = "rope";
}

// configuration_llama4.py (Llama4Config): text_config / vision_config None ->
// the class defaults. Llama4VisionConfig as the Hub writes it: hidden 1408,
// intermediate 5632, 34 layers, 16 heads, image 336, patch 14, gelu,
// pixel_shuffle_ratio 0.5, projector_input_dim / projector_output_dim /
// vision_output_dim 4096, multi_modal_projector_bias False.
// modeling_llama4.py Llama4VisionModel: patch_embedding
// (Llama4UnfoldConvolution: nn.Linear(channels x patch^2, hidden,
// bias=False)), class_embedding (hidden), positional_embedding_vlm
// ((image/patch)^2 + 1 rows), layernorm_pre / layernorm_post, layers of
// q/k/v/o_proj and fc1/fc2 with biases and two LayerNorms, vision_adapter
// (Llama4VisionPixelShuffleMLP: mlp.fc1 nn.Linear(intermediate_size,
// projector_input_dim) and mlp.fc2 nn.Linear(projector_output_dim,
// projector_output_dim), no biases); multi_modal_projector.linear_1 =
// nn.Linear(vision_output_dim, text hidden, bias=False).
void build_llama4(const JsonReader& cfg, ModelSpec& spec) {
  static const json kEmpty = json::object();
  for (const char* key : {"text_config", "vision_config"}) {
    if (!cfg.object_opt(key)) {
      fail(errc::kMissingField, cfg.child_path(key),
           cfg.child_path(key) + " is required for llama4 (a text-only checkpoint is model_type llama4_text)");
    }
  }
  const JsonReader tc = *cfg.object_opt("text_config");
  {
    ModelSpec t;
    build_llama4_text(tc, t);
    adopt_text_model(t, "text_config", spec);
    spec.torch_dtype = t.torch_dtype;
  }
  if (cfg.has("torch_dtype") || cfg.has("dtype")) spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));

  const JsonReader vc = *cfg.object_opt("vision_config");
  for (const char* key :
       {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "image_size", "patch_size"}) {
    if (!vc.has(key)) fail(errc::kMissingField, vc.child_path(key), vc.child_path(key) + " is required");
  }
  LayerStack v;
  v.name = "vision";
  v.hidden = vc.int_req("hidden_size");
  v.intermediate = vc.int_req("intermediate_size");
  v.layers = vc.int_req("num_hidden_layers", 1, 100000);
  v.heads = vc.int_req("num_attention_heads", 1, 1 << 20);
  v.kv_heads = v.heads;
  check_heads(vc, v, "num_attention_heads", "num_attention_heads", false);
  v.head_dim = v.hidden / v.heads;
  v.v_head_dim = v.head_dim;
  v.mlp = MlpKind::kPlain;
  v.norm = NormKind::kLayerNorm;
  v.attention = AttnKind::kMha;
  v.activation = vc.str_or("hidden_act", "gelu");
  v.causal = false;
  const int64_t channels = vc.int_or("num_channels", 3, 1, 64);
  const int64_t image = vc.int_req("image_size");
  const int64_t patch = vc.int_req("patch_size");
  if (patch > image) {
    fail(errc::kInconsistent, vc.child_path("patch_size"),
         vc.child_path("patch_size") + " (" + std::to_string(patch) + ") is larger than " +
             vc.child_path("image_size") + " (" + std::to_string(image) + ")");
  }
  const double ratio = vc.num_or("pixel_shuffle_ratio", 0.5, 1e-3, 1.0);
  const int64_t proj_in = vc.int_or("projector_input_dim", 4096);
  const int64_t proj_out = vc.int_or("projector_output_dim", 4096);
  const int64_t out_dim = vc.int_or("vision_output_dim", 4096);
  const bool proj_bias = vc.bool_or("multi_modal_projector_bias", false);
  const int64_t h = v.hidden, L = v.layers;
  const int64_t side = image / patch;
  const int64_t positions = side * side + 1;

  const size_t from = spec.groups.size();
  add_linear(spec, "patch_embedding", comp::kVision, "vision", channels * patch * patch, h, false, 1);
  add_other(spec, "class_embedding", comp::kVision, "vision", h, 1);
  add_other(spec, "positional_embedding_vlm", comp::kVision, "vision", positions * h, 1);
  add_norm(spec, "layernorm_pre", "vision", h, true, 1);
  add_norm(spec, "layernorm_post", "vision", h, true, 1);
  add_linear(spec, "q_proj", comp::kVision, "vision", h, h, true, L);
  add_linear(spec, "k_proj", comp::kVision, "vision", h, h, true, L);
  add_linear(spec, "v_proj", comp::kVision, "vision", h, h, true, L);
  add_linear(spec, "o_proj", comp::kVision, "vision", h, h, true, L);
  add_linear(spec, "fc1", comp::kVision, "vision", h, v.intermediate, true, L);
  add_linear(spec, "fc2", comp::kVision, "vision", v.intermediate, h, true, L);
  add_norm(spec, "input_layernorm", "vision", h, true, L);
  add_norm(spec, "post_attention_layernorm", "vision", h, true, L);
  add_linear(spec, "vision_adapter.mlp.fc1", comp::kVision, "vision", v.intermediate, proj_in, false, 1);
  add_linear(spec, "vision_adapter.mlp.fc2", comp::kVision, "vision", proj_out, proj_out, false, 1);
  relabel_component(spec, from, comp::kVision);
  const size_t proj = spec.groups.size();
  add_linear(spec, "linear_1", comp::kProjector, "projector", out_dim, spec.text.hidden, proj_bias, 1);
  relabel_component(spec, proj, comp::kProjector);
  spec.extra_stacks.push_back(v);

  // One image tile is (image/patch)^2 patches (+ the class token inside the
  // tower); the pixel shuffle folds 1/ratio^2 of them into one text token:
  // 576 x 0.25 = 144 per 336 x 336 tile (Llama4Processor writes 144 <|patch|>
  // tokens a tile). Larger images are split into up to max_patches (16) tiles
  // plus a global one, each another 144 tokens.
  const int64_t per_tile = static_cast<int64_t>(static_cast<double>(side * side) * ratio * ratio + 0.5);
  spec.vision.image_size = image;
  spec.vision.patch_size = patch;
  spec.vision.tokens_per_image = per_tile;
  spec.vision.encoder_tokens_per_image = positions;
  spec.notes.push_back("an image is counted as one " + std::to_string(image) + " x " + std::to_string(image) +
                       " tile: " + std::to_string(per_tile) +
                       " text tokens (larger images split into up to 16 tiles + a global one, each as many)");
}

}  // namespace vram::detail

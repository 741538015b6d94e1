// Gemma 3n: the text-only Gemma3nForCausalLM and the MobileNetV5 + USM audio +
// Gemma 3n text Gemma3nForConditionalGeneration (transformers
// models/gemma3n/modeling_gemma3n.py and configuration_gemma3n.py; the vision
// tower is timm's mobilenetv5_300m_enc, timm/models/mobilenetv5.py, which
// transformers builds through TimmWrapperModel).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"
#include "memory/bytes.h"
#include "vram/families.h"

namespace vram::detail {

namespace {

constexpr const char* kParams = "the parameter count";

// An int list key (sscp_conv_channel_size) or its class default.
std::vector<int64_t> int_list_or(const JsonReader& cfg, const char* key, const std::vector<int64_t>& fallback,
                                 size_t n) {
  const json* v = cfg.get(key);
  if (v == nullptr) return fallback;
  const std::string path = cfg.child_path(key);
  if (!v->is_array() || v->size() != n) {
    fail(errc::kInconsistent, path, path + " must list " + std::to_string(n) + " integers");
  }
  std::vector<int64_t> out;
  for (const auto& x : *v) {
    if (!x.is_number_integer() || x.get<int64_t>() < 1 || x.get<int64_t>() > kMaxSize) {
      fail(errc::kInconsistent, path, path + " must list positive integers");
    }
    out.push_back(x.get<int64_t>());
  }
  return out;
}

// sscp_conv_kernel_size / sscp_conv_stride_size: two (time, frequency) pairs.
std::vector<std::vector<int64_t>> pairs_or(const JsonReader& cfg, const char* key, int64_t fallback) {
  std::vector<std::vector<int64_t>> out = {{fallback, fallback}, {fallback, fallback}};
  const json* v = cfg.get(key);
  if (v == nullptr) return out;
  const std::string path = cfg.child_path(key);
  if (!v->is_array() || v->size() != 2) fail(errc::kInconsistent, path, path + " must list two [time, freq] pairs");
  for (size_t i = 0; i < 2; ++i) {
    const json& p = (*v)[i];
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer() ||
        p[0].get<int64_t>() < 1 || p[1].get<int64_t>() < 1 || p[0].get<int64_t>() > 1024 ||
        p[1].get<int64_t>() > 1024) {
      fail(errc::kInconsistent, path, path + " must list two [time, freq] pairs of positive integers");
    }
    out[i] = {p[0].get<int64_t>(), p[1].get<int64_t>()};
  }
  return out;
}

// ---- The USM audio encoder (Gemma3nAudioEncoder) ----------------------------
//
// configuration_gemma3n.py (Gemma3nAudioConfig): hidden_size 1536,
// input_feat_size 128, conf_num_attention_heads 8, conf_num_hidden_layers 12,
// conf_conv_kernel_size 5, sscp_conv_channel_size (128, 32),
// sscp_conv_kernel_size ((3, 3), (3, 3)), sscp_conv_stride_size ((2, 2), (2, 2)).
// modeling_gemma3n.py:
// - Gemma3nAudioSubSampleConvProjection: two Gemma3nAudioSSCPConvBlock (a
//   Conv2d without bias, in 1 then channel_size[i-1], out channel_size[i],
//   kernel kernel_size[i]; a Gemma3nAudioCumulativeGroupNorm weight of the
//   out channels), the frequency width padded (1, 1) so f_out = (f_in + 2 -
//   k_w) // s_w + 1; input_proj_linear (channels[-1] x f_out -> hidden, no bias).
// - 12 Gemma3nAudioConformerBlock: ffw_layer_start and ffw_layer_end
//   (Gemma3nAudioConformerFeedForward: pre_layer_norm, ffw_layer_1 hidden ->
//   4 hidden, ffw_layer_2 back, post_layer_norm; no biases), attention
//   (Gemma3nAudioConformerAttention: pre_attn_norm, Gemma3nAudioAttention with
//   per_dim_scale (head_dim), q/k/v_proj and relative_position_embedding.pos_proj
//   of hidden x hidden without bias; post linear; post_norm), lconv1d
//   (Gemma3nAudioConformerLightConv1d: pre_layer_norm, linear_start hidden ->
//   2 hidden, a depthwise Conv1d of conf_conv_kernel_size without bias,
//   conv_norm, linear_end), and the block norm. Every Gemma3nRMSNorm here has
//   a weight (with_scale True).
void add_audio_tower(const JsonReader& ac, ModelSpec& spec) {
  const int64_t d = ac.int_or("hidden_size", 1536, 1, 1 << 20);
  const int64_t heads = ac.int_or("conf_num_attention_heads", 8, 1, 1 << 16);
  const int64_t layers = ac.int_or("conf_num_hidden_layers", 12, 0, 100000);
  const int64_t kernel = ac.int_or("conf_conv_kernel_size", 5, 1, 1 << 16);
  const int64_t feat = ac.int_or("input_feat_size", 128, 1, 1 << 20);
  check_divisible(ac.child_path("hidden_size"), d, ac.child_path("conf_num_attention_heads"), heads);
  const std::vector<int64_t> ch = int_list_or(ac, "sscp_conv_channel_size", {128, 32}, 2);
  const auto ks = pairs_or(ac, "sscp_conv_kernel_size", 3);
  const auto ss = pairs_or(ac, "sscp_conv_stride_size", 2);
  const std::string a = "audio";
  int64_t f = feat;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = i == 0 ? 1 : ch[i - 1];
    add_other(spec, "conv", comp::kAudio, a, bytes::mul(bytes::mul(in, ch[i], kParams), ks[i][0] * ks[i][1], kParams),
              1);
    add_other(spec, "norm", comp::kAudio, a, ch[i], 1);  // Gemma3nAudioCumulativeGroupNorm.weight
    f = (f + 2 - ks[i][1]) / ss[i][1] + 1;
    if (f < 1) {
      fail(errc::kInconsistent, ac.child_path("input_feat_size"),
           ac.child_path("input_feat_size") + " is too small for the subsampling convolutions");
    }
  }
  add_linear(spec, "input_proj_linear", comp::kAudio, a, bytes::mul(ch[1], f, kParams), d, false, 1);
  if (layers == 0) return;
  // Two feed-forward modules per block.
  add_linear(spec, "ffw_layer_1", comp::kAudio, a, d, 4 * d, false, 2 * layers);
  add_linear(spec, "ffw_layer_2", comp::kAudio, a, 4 * d, d, false, 2 * layers);
  add_other(spec, "pre_layer_norm", comp::kAudio, a, d, 3 * layers);  // 2 feed-forwards + lconv1d
  add_other(spec, "post_layer_norm", comp::kAudio, a, d, 2 * layers);
  // Attention.
  add_other(spec, "pre_attn_norm", comp::kAudio, a, d, layers);
  add_other(spec, "per_dim_scale", comp::kAudio, a, d / heads, layers);
  add_linear(spec, "q_proj", comp::kAudio, a, d, d, false, layers);
  add_linear(spec, "k_proj", comp::kAudio, a, d, d, false, layers);
  add_linear(spec, "v_proj", comp::kAudio, a, d, d, false, layers);
  add_linear(spec, "pos_proj", comp::kAudio, a, d, d, false, layers);
  add_linear(spec, "post", comp::kAudio, a, d, d, false, layers);
  add_other(spec, "post_norm", comp::kAudio, a, d, layers);
  // Light convolution.
  add_linear(spec, "linear_start", comp::kAudio, a, d, 2 * d, false, layers);
  add_other(spec, "depthwise_conv1d", comp::kAudio, a, bytes::mul(d, kernel, kParams), layers);
  add_other(spec, "conv_norm", comp::kAudio, a, d, layers);
  add_linear(spec, "linear_end", comp::kAudio, a, d, d, false, layers);
  add_other(spec, "norm", comp::kAudio, a, d, layers);  // Gemma3nAudioConformerBlock.norm
}

// ---- The MobileNetV5 vision tower (timm mobilenetv5_300m_enc) ---------------
//
// timm/models/mobilenetv5.py _gen_mobilenet_v5 (the non-"base" arch_def) and
// MobileNetV5Encoder: stem_size 64, RmsNorm2d norms (weight only,
// timm/layers/norm.py), stem_bias True, layer_scale_init_value 1e-5, msfa
// over the last two stages (msfa_indices (-2, -1)) into 2048 channels
// (num_features = head_hidden_size = 2048). The blocks decoded by
// _efficientnet_builder.py _decode_block_str:
// - "er" EdgeResidual (_efficientnet_blocks.py): conv_exp k x k from in to
//   mid = in x e (no bias), bn1, conv_pwl 1x1 to out, bn2.
// - "uir" UniversalInvertedResidual: dw_start (depthwise a x a + norm) when
//   a > 0, pw_exp 1x1 to mid = in x e + norm, dw_mid (depthwise k x k + norm)
//   when k > 0, pw_proj 1x1 to out + norm, layer_scale gamma (out).
// - "mqa" MobileAttention with MultiQueryAttention2d (timm/layers/
//   attention2d.py): norm (in), query.proj 1x1 in -> h x d, key and value
//   each (down_conv depthwise k x k + norm when the kv stride v > 1) and proj
//   1x1 in -> d, output.proj h x d -> out, layer_scale gamma (out); no biases
//   (create_conv2d_pad defaults bias False).
// MobileNetV5MultiScaleFusionAdapter: ffn = UniversalInvertedResidual(in =
// the two stages' channels, out 2048, exp_ratio 2, no depthwise convs,
// layer_scale_init_value None) + norm (2048).
struct MnBlock {
  char type;                             // 'e' EdgeResidual, 'u' UniversalInvertedResidual, 'm' MobileAttention
  int64_t a = 0, k = 0, e = 0, out = 0;  // uir start / mid kernels, expansion; er / mqa kernel k
  int64_t heads = 0, kv_dim = 0, kv_stride = 1;
  int64_t count = 1;
};

std::vector<std::vector<MnBlock>> mobilenetv5_300m_blocks() {
  auto er = [](int64_t k, int64_t e, int64_t c) { return MnBlock{'e', 0, k, e, c}; };
  auto uir = [](int64_t a, int64_t k, int64_t e, int64_t c, int64_t n = 1) {
    MnBlock b{'u', a, k, e, c};
    b.count = n;
    return b;
  };
  auto mqa = [](int64_t k, int64_t h, int64_t v, int64_t d, int64_t c) {
    MnBlock b{'m', 0, k, 0, c};
    b.heads = h;
    b.kv_dim = d;
    b.kv_stride = v;
    return b;
  };
  std::vector<std::vector<MnBlock>> s(4);
  // Stage 0: 'er_r1_k3_s2_e4_c128', 'er_r1_k3_s1_e4_c128' x 2.
  s[0] = {er(3, 4, 128), er(3, 4, 128), er(3, 4, 128)};
  // Stage 1: uir a3 k5 e6, a5 k0 e4, a3 k0 e4, a5 k0 e4, a3 k0 e4 (c256).
  s[1] = {uir(3, 5, 6, 256), uir(5, 0, 4, 256), uir(3, 0, 4, 256), uir(5, 0, 4, 256), uir(3, 0, 4, 256)};
  // Stage 2: uir a5 k5 e6, 7 x uir a5 k0 e4, uir a0 k0 e1, then 14 x
  // ('mqa_r1_k3_h12_v2_s1_d64_c640', 'uir_r1_a0_k0_s1_e2_c640').
  s[2] = {uir(5, 5, 6, 640), uir(5, 0, 4, 640, 7), uir(0, 0, 1, 640)};
  for (int i = 0; i < 14; ++i) {
    s[2].push_back(mqa(3, 12, 2, 64, 640));
    s[2].push_back(uir(0, 0, 2, 640));
  }
  // Stage 3: uir a5 k5 e6, then 19 x ('mqa_r1_k3_h16_s1_d96_c1280',
  // 'uir_r1_a0_k0_s1_e2_c1280').
  s[3] = {uir(5, 5, 6, 1280)};
  for (int i = 0; i < 19; ++i) {
    s[3].push_back(mqa(3, 16, 1, 96, 1280));
    s[3].push_back(uir(0, 0, 2, 1280));
  }
  return s;
}

// Adds the tower's parameters (component vision_tower, stack "vision_tower")
// and returns them.
int64_t add_mobilenetv5_tower(ModelSpec& spec) {
  const std::string v = "vision_tower";
  const size_t from = spec.groups.size();
  constexpr int64_t kStem = 64;
  add_other(spec, "conv_stem", comp::kVision, v, 3 * kStem * 9 + kStem + kStem, 1);  // conv + bias, bn
  int64_t in = kStem;
  std::vector<int64_t> stage_out;
  std::map<std::string, int64_t> by_kind;  // summed per block kind, one group each
  for (const auto& stage : mobilenetv5_300m_blocks()) {
    for (const MnBlock& b : stage) {
      for (int64_t r = 0; r < b.count; ++r) {
        int64_t n = 0;
        if (b.type == 'e') {
          const int64_t mid = in * b.e;
          n = in * mid * b.k * b.k + mid + mid * b.out + b.out;
          by_kind["edge_residual"] += n;
        } else if (b.type == 'u') {
          const int64_t mid = in * b.e;
          if (b.a > 0) n += in * b.a * b.a + in;
          n += in * mid + mid;
          if (b.k > 0) n += mid * b.k * b.k + mid;
          n += mid * b.out + b.out + b.out;  // pw_proj + norm, layer_scale
          by_kind["universal_inverted_residual"] += n;
        } else {
          n = in;                        // norm
          n += in * b.heads * b.kv_dim;  // query.proj
          for (int kv = 0; kv < 2; ++kv) {
            if (b.kv_stride > 1) n += in * b.k * b.k + in;  // down_conv + norm
            n += in * b.kv_dim;                             // key / value proj
          }
          n += b.heads * b.kv_dim * b.out + b.out;  // output.proj, layer_scale
          by_kind["mobile_attention"] += n;
        }
        in = b.out;
      }
    }
    stage_out.push_back(in);
  }
  for (const auto& [name, n] : by_kind) add_other(spec, name, comp::kVision, v, n, 1);
  const int64_t msfa_in = stage_out[2] + stage_out[3];
  const int64_t msfa_mid = 2 * msfa_in;
  constexpr int64_t kOut = 2048;
  add_other(spec, "msfa", comp::kVision, v, msfa_in * msfa_mid + msfa_mid + msfa_mid * kOut + kOut + kOut, 1);
  int64_t total = 0;
  for (size_t i = from; i < spec.groups.size(); ++i) total += spec.groups[i].total();
  return total;
}

// Gemma3nMultimodalEmbedder: embedding (vocab_size x the tower's hidden),
// hard_embedding_norm and soft_embedding_norm (tower hidden), embedding_projection
// (tower hidden -> text hidden, no bias); embedding_post_projection_norm has
// with_scale False (a buffer, no parameter).
void add_embedder(ModelSpec& spec, const std::string& prefix, int64_t vocab, int64_t mm_hidden, int64_t text_hidden) {
  const std::string p = "projector";
  add_embedding(spec, prefix + ".embedding", p, vocab, mm_hidden, comp::kProjector);
  add_other(spec, prefix + ".hard_embedding_norm", comp::kProjector, p, mm_hidden, 1);
  add_other(spec, prefix + ".soft_embedding_norm", comp::kProjector, p, mm_hidden, 1);
  add_linear(spec, "embedding_projection", comp::kProjector, p, mm_hidden, text_hidden, false, 1);
}

// intermediate_size: one width for every layer, or one per layer
// (Gemma3nTextConfig.__post_init__ requires num_hidden_layers entries).
std::vector<int64_t> mlp_widths(const JsonReader& cfg, const ConfigKeys& k, int64_t L) {
  std::vector<int64_t> inter;
  if (const json* v = cfg.get("intermediate_size"); v != nullptr && v->is_array()) {
    const std::string path = cfg.child_path("intermediate_size");
    if (static_cast<int64_t>(v->size()) != L) {
      fail(errc::kInconsistent, path, path + " must have one entry per layer (num_hidden_layers) or be one number");
    }
    for (const auto& x : *v) {
      if (!x.is_number_integer() || x.get<int64_t>() < 1 || x.get<int64_t>() > kMaxSize) {
        fail(errc::kInconsistent, path, path + " must list positive integers");
      }
      inter.push_back(x.get<int64_t>());
    }
  } else {
    inter.assign(static_cast<size_t>(L), k.size({"intermediate_size"}, 16384));
  }
  return inter;
}

// Attention types (Gemma3nTextAttention.__init__): true where a layer slides.
std::vector<bool> sliding_layers(const JsonReader& cfg, int64_t L) {
  std::vector<bool> sliding(static_cast<size_t>(L));
  if (const json* types = cfg.get("layer_types")) {
    const std::string path = cfg.child_path("layer_types");
    if (!types->is_array() || static_cast<int64_t>(types->size()) != L) {
      fail(errc::kInconsistent, path, path + " must list one attention type per layer (num_hidden_layers)");
    }
    for (size_t i = 0; i < types->size(); ++i) {
      const json& v = (*types)[i];
      if (!v.is_string() || (v.get<std::string>() != "sliding_attention" && v.get<std::string>() != "full_attention")) {
        fail(errc::kInconsistent, path, path + " entries must be \"sliding_attention\" or \"full_attention\"");
      }
      sliding[i] = v.get<std::string>() == "sliding_attention";
    }
  } else {
    for (int64_t i = 0; i < L; ++i) sliding[static_cast<size_t>(i)] = (i + 1) % 5 != 0;
  }
  return sliding;
}

// KV sharing (Gemma3nTextAttention.__init__): the last num_kv_shared_layers
// layers reuse an earlier layer's keys and values.
void count_kv_shared(const JsonReader& cfg, const std::vector<bool>& sliding, LayerStack& t) {
  const int64_t L = t.layers;
  const int64_t shared = cfg.int_or("num_kv_shared_layers", 15, 0, L);
  const int64_t first_shared = L - shared;
  if (shared > 0 && first_shared > 0) {
    // A shared layer reads the last earlier layer of its own type; the
    // config must have one (prev_layers[::-1].index(...) raises otherwise).
    for (int64_t l = first_shared; l < L; ++l) {
      const bool s = sliding[static_cast<size_t>(l)];
      bool found = false;
      for (int64_t j = 0; j < first_shared; ++j) found = found || sliding[static_cast<size_t>(j)] == s;
      if (!found) {
        fail(errc::kInconsistent, cfg.child_path("num_kv_shared_layers"),
             cfg.child_path("num_kv_shared_layers") + " (" + std::to_string(shared) + ") leaves layer " +
                 std::to_string(l) + " no earlier " + (s ? "sliding" : "full") + " attention layer to share keys with");
      }
      ++t.kv_shared_layers;
      if (s) ++t.kv_shared_sliding;
    }
  }
}

// activation_sparsity_pattern: how many layers have a sparse (top-k gated) MLP.
int64_t sparse_mlp_layers(const JsonReader& cfg, int64_t L) {
  if (const json* sp = cfg.get("activation_sparsity_pattern")) {
    const std::string path = cfg.child_path("activation_sparsity_pattern");
    if (!sp->is_array() || static_cast<int64_t>(sp->size()) != L) {
      fail(errc::kInconsistent, path, path + " must give one sparsity per layer (num_hidden_layers)");
    }
    int64_t sparse = 0;
    for (const auto& x : *sp) {
      if (!x.is_number()) fail(errc::kInconsistent, path, path + " must list numbers");
      if (x.get<double>() > 0.0) ++sparse;
    }
    return sparse;
  }
  return L > 10 ? 10 : 0;
}

// The text model's parameters; `inter` has one MLP width per layer.
// modeling_gemma3n.py Gemma3nTextModel / Gemma3nTextDecoderLayer:
// - embed_tokens (vocab x hidden); embed_tokens_per_layer
//   (vocab_size_per_layer_input x layers * hidden_size_per_layer_input);
//   per_layer_model_projection (hidden -> layers * per-layer width, no bias);
//   per_layer_projection_norm (per-layer width); altup_projections and
//   altup_unembed_projections (altup_num_inputs - 1 Linears hidden x hidden
//   each); norm; lm_head tied to embed_tokens.
// - per layer: q/k/v/o_proj (bias = attention_bias; every layer has k/v_proj,
//   the KV-shared ones too), q_norm and k_norm (head_dim; v_norm has no
//   weight), gate/up/down_proj of the layer's intermediate size (no bias),
//   input / post_attention / pre_feedforward / post_feedforward layernorms;
//   altup (correct_output_scale (hidden), correction_coefs n -> n,
//   prediction_coefs n -> n^2, modality_router hidden -> n, router_norm);
//   laurel (linear_left hidden -> rank, linear_right rank -> hidden,
//   post_laurel_norm); per_layer_input_gate (hidden -> per-layer width),
//   per_layer_projection (back), post_per_layer_input_norm.
void add_gemma3n_text_params(const JsonReader& cfg, ModelSpec& spec, const std::vector<int64_t>& inter,
                             int64_t ple_vocab) {
  const LayerStack& t = spec.text;
  const int64_t L = t.layers;
  const int64_t h = t.hidden;
  const bool uniform = std::all_of(inter.begin(), inter.end(), [&](int64_t x) { return x == inter[0]; });
  const bool bias = cfg.bool_or("attention_bias", false);
  const int64_t q_out = t.heads * t.head_dim;
  const int64_t kv_out = t.kv_heads * t.head_dim;
  const int64_t n = t.altup_inputs;
  const int64_t P = t.per_layer_input;
  const int64_t lp = bytes::mul(L, P, kParams);

  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  add_embedding(spec, "embed_tokens_per_layer", "text", ple_vocab, lp);
  add_linear(spec, "per_layer_model_projection", comp::kEmbeddings, "text", h, lp, false, 1);
  add_norm(spec, "per_layer_projection_norm", "text", P, false, 1);
  add_linear(spec, "q_proj", comp::kAttention, "text", h, q_out, bias, L);
  add_linear(spec, "k_proj", comp::kAttention, "text", h, kv_out, bias, L);
  add_linear(spec, "v_proj", comp::kAttention, "text", h, kv_out, bias, L);
  add_linear(spec, "o_proj", comp::kAttention, "text", q_out, h, bias, L);
  add_norm(spec, "q_norm", "text", t.head_dim, false, L);
  add_norm(spec, "k_norm", "text", t.head_dim, false, L);
  if (uniform) {
    add_linear(spec, "gate_proj", comp::kMlp, "text", h, inter[0], false, L);
    add_linear(spec, "up_proj", comp::kMlp, "text", h, inter[0], false, L);
    add_linear(spec, "down_proj", comp::kMlp, "text", inter[0], h, false, L);
  } else {
    for (int64_t l = 0; l < L; ++l) {
      const int64_t w = inter[static_cast<size_t>(l)];
      const size_t at = spec.groups.size();
      add_linear(spec, "gate_proj", comp::kMlp, "text", h, w, false, 1);
      add_linear(spec, "up_proj", comp::kMlp, "text", h, w, false, 1);
      add_linear(spec, "down_proj", comp::kMlp, "text", w, h, false, 1);
      for (size_t i = at; i < spec.groups.size(); ++i) spec.groups[i].layer_index = l;
    }
  }
  add_norm(spec, "input_layernorm", "text", h, false, L);
  add_norm(spec, "post_attention_layernorm", "text", h, false, L);
  add_norm(spec, "pre_feedforward_layernorm", "text", h, false, L);
  add_norm(spec, "post_feedforward_layernorm", "text", h, false, L);
  // AltUp, LAuReL and the per-layer input path: their own bucket (comp::kOther).
  add_other(spec, "correct_output_scale", comp::kOther, "text", h, L);
  add_linear(spec, "correction_coefs", comp::kOther, "text", n, n, false, L);
  add_linear(spec, "prediction_coefs", comp::kOther, "text", n, n * n, false, L);
  add_linear(spec, "modality_router", comp::kOther, "text", h, n, false, L);
  add_norm(spec, "router_norm", "text", h, false, L);
  add_linear(spec, "linear_left", comp::kOther, "text", h, t.laurel_rank, false, L);
  add_linear(spec, "linear_right", comp::kOther, "text", t.laurel_rank, h, false, L);
  add_norm(spec, "post_laurel_norm", "text", h, false, L);
  add_linear(spec, "per_layer_input_gate", comp::kOther, "text", h, P, false, L);
  add_linear(spec, "per_layer_projection", comp::kOther, "text", P, h, false, L);
  add_norm(spec, "post_per_layer_input_norm", "text", h, false, L);
  if (n > 1) {
    add_linear(spec, "altup_projections", comp::kOther, "text", h, h, false, n - 1);
    add_linear(spec, "altup_unembed_projections", comp::kOther, "text", h, h, false, n - 1);
  }
  add_norm(spec, "norm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace

// configuration_gemma3n.py (Gemma3nTextConfig, defaults = E4B): vocab 262400,
// hidden 2048, intermediate 16384 (one per layer or one for all), 35 layers,
// 8 heads, 2 KV heads, head_dim 256, gelu_pytorch_tanh, 32768 positions,
// tie_word_embeddings True, attention_bias False, sliding_window 512,
// layer_types None -> full attention when (i + 1) % 5 == 0,
// vocab_size_per_layer_input 262144, hidden_size_per_layer_input 256,
// altup_num_inputs 4, num_kv_shared_layers 15, laurel_rank 64,
// activation_sparsity_pattern None -> 0.95 on the first 10 layers (when more
// than 10), 0 after.
void build_gemma3n_text(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "Gemma3nTextConfig (configuration_gemma3n.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 262400);
  t.hidden = k.size({"hidden_size"}, 2048);
  t.layers = k.size({"num_hidden_layers"}, 35, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 8, 1, 1 << 20);
  t.kv_heads = k.size({"num_key_value_heads"}, 2, 1, 1 << 20);
  t.head_dim = k.size({"head_dim"}, 256, 1, 1 << 20);
  check_kv_heads(cfg.child_path("num_key_value_heads"), t.kv_heads, cfg.child_path("num_attention_heads"), t.heads);
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;
  t.activation = cfg.str_or("hidden_activation", cfg.str_or("hidden_act", "gelu_pytorch_tanh"));
  t.qk_norm = true;
  t.norms_per_layer = 4;
  t.position_encoding = "rope";
  t.dropout = cfg.num_or("attention_dropout", 0.0, 0.0, 1.0);
  spec.tie_word_embeddings = cfg.bool_or("tie_word_embeddings", true);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", 32768);
  read_dtype(cfg, spec);
  const int64_t L = t.layers;

  const std::vector<int64_t> inter = mlp_widths(cfg, k, L);
  const bool uniform = std::all_of(inter.begin(), inter.end(), [&](int64_t x) { return x == inter[0]; });
  // Activations and backward buffers take the widest layer (an estimate
  // never below the truth); the parameters below are exact per layer.
  t.intermediate = *std::max_element(inter.begin(), inter.end());
  if (!uniform) {
    spec.notes.push_back("intermediate_size varies by layer (MatFormer): activations use the widest, " +
                         std::to_string(t.intermediate));
  }

  // Attention types and KV sharing (Gemma3nTextAttention.__init__).
  const std::vector<bool> sliding = sliding_layers(cfg, L);
  t.sliding_window = k.size({"sliding_window"}, 512);
  t.sliding_layers = std::count(sliding.begin(), sliding.end(), true);
  count_kv_shared(cfg, sliding, t);

  t.altup_inputs = cfg.int_or("altup_num_inputs", 4, 1, 64);
  t.laurel_rank = cfg.int_or("laurel_rank", 64, 1, 1 << 20);
  t.per_layer_input = cfg.int_or("hidden_size_per_layer_input", 256, 1, 1 << 20);
  const int64_t ple_vocab = cfg.int_or("vocab_size_per_layer_input", 262144, 1, kMaxSize);
  t.sparse_mlp_layers = sparse_mlp_layers(cfg, L);

  add_gemma3n_text_params(cfg, spec, inter, ple_vocab);
  const int64_t lp = bytes::mul(L, t.per_layer_input, kParams);
  spec.notes.push_back(
      // Starts with the config key it is about: a gemma3n config prefixes it with "text_config.".
      "vocab_size_per_layer_input: transformers keeps the per-layer embeddings (embed_tokens_per_layer, " +
      std::to_string(bytes::mul(ple_vocab, lp, kParams)) +
      " parameters) on the GPU with the rest of the model; Google's on-device runtimes keep them off the accelerator "
      "(PLE caching), which this estimate does not assume");
}

// configuration_gemma3n.py (Gemma3nConfig): text_config / vision_config /
// audio_config default to their classes' defaults (E4B), tie_word_embeddings
// True, vision_soft_tokens_per_image 256, audio_soft_tokens_per_image 188.
// Gemma3nVisionConfig: architecture "mobilenetv5_300m_enc", hidden_size 2048,
// vocab_size 128, model_args None. Gemma3nAudioConfig: hidden_size 1536,
// vocab_size 128. modeling_gemma3n.py Gemma3nModel: vision_tower
// (TimmWrapperModel of the timm architecture), language_model, audio_tower
// (Gemma3nAudioEncoder), embed_vision and embed_audio
// (Gemma3nMultimodalEmbedder); Gemma3nForConditionalGeneration adds lm_head,
// tied to the language model's embed_tokens (_tied_weights_keys).
void build_gemma3n(const JsonReader& cfg, ModelSpec& spec) {
  static const json kEmpty = json::object();
  const auto text_cfg = cfg.object_opt("text_config");
  if (!text_cfg) spec.notes.push_back("text_config missing: using Gemma3nTextConfig defaults (E4B)");
  {
    ModelSpec t;
    build_gemma3n_text(text_cfg ? *text_cfg : JsonReader(kEmpty, cfg.child_path("text_config")), t);
    spec.text = t.text;
    spec.vocab = t.vocab;
    spec.max_position_embeddings = t.max_position_embeddings;
    for (const auto& note : t.notes) spec.notes.push_back("text_config." + note);
    spec.groups = t.groups;
    spec.torch_dtype = t.torch_dtype;
  }
  // The conditional-generation model ties lm_head to embed_tokens by its own
  // tie_word_embeddings (Gemma3nConfig default True).
  spec.tie_word_embeddings = cfg.bool_or("tie_word_embeddings", true);
  spec.groups.erase(std::remove_if(spec.groups.begin(), spec.groups.end(),
                                   [](const ParamGroup& g) { return g.component == std::string(comp::kLmHead); }),
                    spec.groups.end());
  if (!spec.tie_word_embeddings) {
    add_linear(spec, "lm_head", comp::kLmHead, "text", spec.text.hidden, spec.vocab, false, 1);
  }
  if (spec.torch_dtype.empty()) read_dtype(cfg, spec);

  const auto vision_cfg = cfg.object_opt("vision_config");
  if (!vision_cfg) spec.notes.push_back("vision_config missing: using Gemma3nVisionConfig defaults");
  const JsonReader vc = vision_cfg ? *vision_cfg : JsonReader(kEmpty, cfg.child_path("vision_config"));
  const std::string arch = vc.str_or("architecture", "mobilenetv5_300m_enc");
  if (arch != "mobilenetv5_300m_enc") {
    fail(errc::kUnsupported, vc.child_path("architecture"),
         vc.child_path("architecture") + " " + vram::quoted(arch) +
             ": only timm's mobilenetv5_300m_enc (the released Gemma 3n tower) is counted");
  }
  if (const json* ma = vc.get("model_args"); ma != nullptr && !(ma->is_object() && ma->empty())) {
    fail(errc::kUnsupported, vc.child_path("model_args"),
         vc.child_path("model_args") + ": timm model_args change the MobileNetV5 tower, which is counted as released");
  }
  const int64_t v_hidden = vc.int_or("hidden_size", 2048, 1, 1 << 20);
  if (v_hidden != 2048) {
    // MobileNetV5Encoder emits num_features = 2048 channels, which
    // get_image_features reshapes with vision_config.hidden_size.
    fail(errc::kInconsistent, vc.child_path("hidden_size"),
         vc.child_path("hidden_size") + " (" + std::to_string(v_hidden) +
             ") must equal the MobileNetV5 encoder's 2048 output channels");
  }
  add_mobilenetv5_tower(spec);

  const auto audio_cfg = cfg.object_opt("audio_config");
  if (!audio_cfg) spec.notes.push_back("audio_config missing: using Gemma3nAudioConfig defaults");
  const JsonReader ac = audio_cfg ? *audio_cfg : JsonReader(kEmpty, cfg.child_path("audio_config"));
  add_audio_tower(ac, spec);

  add_embedder(spec, "embed_vision", vc.int_or("vocab_size", 128, 1, kMaxSize), v_hidden, spec.text.hidden);
  add_embedder(spec, "embed_audio", ac.int_or("vocab_size", 128, 1, kMaxSize),
               ac.int_or("hidden_size", 1536, 1, 1 << 20), spec.text.hidden);

  spec.vision.tokens_per_image = cfg.int_or("vision_soft_tokens_per_image", 256);
  spec.media_unsupported =
      "the MobileNetV5 vision tower's and the USM audio encoder's activations are not modelled (convolutional "
      "feature maps, not transformer tokens); their weights are counted";
}

}  // namespace vram::detail

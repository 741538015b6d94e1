// Hybrid stacks that mix attention layers with state-space mixers: Jamba
// (Mamba + attention + MoE), Falcon-H1 (Mamba-2 beside attention in every
// layer) and LFM2 (gated short convolutions between attention layers). Sources: transformers
// src/transformers/models/<family>/ configuration_<family>.py and modeling_<family>.py.
#include <cmath>
#include <string>
#include <vector>

#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"
#include "families/ssm_mixers.h"
#include "vram/families.h"

namespace vram::detail {

namespace {

// Which Jamba layers attend and which feed forward through experts
// (JambaConfig.layers_block_type and layers_num_experts).
struct JambaLayout {
  int64_t attn_layers = 0, moe_layers = 0;
  int64_t experts = 0, top_k = 0;
};

JambaLayout jamba_layout(const JsonReader& cfg, const ConfigKeys& k, LayerStack& t) {
  const int64_t attn_period = k.size({"attn_layer_period"}, 8, 1, 100000);
  const int64_t attn_offset = k.size({"attn_layer_offset"}, 4, 0, 100000);
  const int64_t exp_period = k.size({"expert_layer_period"}, 2, 1, 100000);
  const int64_t exp_offset = k.size({"expert_layer_offset"}, 1, 0, 100000);
  const int64_t experts = k.size({"num_experts"}, 16, 1, 1 << 20);
  const int64_t top_k = read_experts_per_token(cfg, "num_experts_per_tok", 2, experts, "num_experts");
  JambaLayout lay;
  const int64_t L = t.layers;
  t.ssm_at.assign(static_cast<size_t>(L), false);
  for (int64_t i = 0; i < L; ++i) {
    const bool attn = i % attn_period == attn_offset;
    t.ssm_at[static_cast<size_t>(i)] = !attn;
    lay.attn_layers += attn ? 1 : 0;
    lay.moe_layers += experts > 1 && i % exp_period == exp_offset ? 1 : 0;
  }
  lay.experts = experts;
  lay.top_k = top_k;
  return lay;
}

// The Mamba mixer's widths (JambaMambaMixer): inner I = mamba_expand x
// hidden, state N, conv kernel K, dt rank R ("auto": ceil(hidden / 16)).
struct JambaMamba {
  int64_t I = 0, N = 0, K = 0, R = 0;
  bool proj_bias = false, conv_bias = true;
};

JambaMamba read_jamba_mamba(const JsonReader& cfg, const ConfigKeys& k, int64_t h) {
  JambaMamba m;
  const int64_t expand = k.size({"mamba_expand"}, 2, 1, 1024);
  m.I = expand * h;
  m.N = k.size({"mamba_d_state"}, 16);
  m.K = k.size({"mamba_d_conv"}, 4, 1, 1024);
  const int64_t auto_rank = (h + 15) / 16;
  m.R = auto_rank;
  if (const json* r = cfg.get("mamba_dt_rank"); r != nullptr && r->is_string()) {
    if (r->get<std::string>() != "auto") {
      fail(errc::kUnknownValue, cfg.child_path("mamba_dt_rank"),
           cfg.child_path("mamba_dt_rank") + " must be an integer or \"auto\"");
    }
  } else {
    m.R = k.size({"mamba_dt_rank"}, auto_rank);
  }
  m.proj_bias = k.flag("mamba_proj_bias", false);
  m.conv_bias = k.flag("mamba_conv_bias", true);
  return m;
}

void add_jamba_mamba(ModelSpec& spec, const JambaMamba& m, int64_t mamba_layers) {
  const int64_t h = spec.text.hidden;
  if (mamba_layers > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "in_proj", comp::kSsm, "text", h, 2 * m.I, m.proj_bias, mamba_layers);
    add_other(spec, "conv1d", comp::kSsm, "text", m.I * m.K + (m.conv_bias ? m.I : 0), mamba_layers);
    add_linear(spec, "x_proj", comp::kSsm, "text", m.I, m.R + 2 * m.N, false, mamba_layers);
    add_linear(spec, "dt_proj", comp::kSsm, "text", m.R, m.I, true, mamba_layers);
    add_other(spec, "A_log", comp::kSsm, "text", m.I * m.N, mamba_layers);
    add_other(spec, "D", comp::kSsm, "text", m.I, mamba_layers);
    add_linear(spec, "out_proj", comp::kSsm, "text", m.I, h, m.proj_bias, mamba_layers);
    add_other(spec, "dt_layernorm", comp::kSsm, "text", m.R, mamba_layers);
    add_other(spec, "b_layernorm", comp::kSsm, "text", m.N, mamba_layers);
    add_other(spec, "c_layernorm", comp::kSsm, "text", m.N, mamba_layers);
    mark_layers(spec, from, LayerSet::kSsm);
  }
}

// Dense JambaMLPs, and on the expert layers the router and num_experts
// JambaMLPs.
void add_jamba_mlps(ModelSpec& spec, const JambaLayout& lay) {
  LayerStack& t = spec.text;
  const int64_t L = t.layers, h = t.hidden;
  const int64_t dense_layers = L - lay.moe_layers;
  if (dense_layers > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "gate_proj", comp::kMlp, "text", h, t.intermediate, false, dense_layers);
    add_linear(spec, "up_proj", comp::kMlp, "text", h, t.intermediate, false, dense_layers);
    add_linear(spec, "down_proj", comp::kMlp, "text", t.intermediate, h, false, dense_layers);
    mark_layers(spec, from, LayerSet::kDense);
  }
  if (lay.moe_layers > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "router", comp::kRouter, "text", h, lay.experts, false, lay.moe_layers);
    add_routed_experts(spec, "gate_proj", "up_proj", "down_proj", h, t.intermediate, lay.experts, lay.top_k,
                       lay.moe_layers);
    mark_layers(spec, from, LayerSet::kMoe);
    t.experts = lay.experts;
    t.experts_per_token = lay.top_k;
    t.expert_intermediate = t.intermediate;
  }
  t.moe_layers = lay.moe_layers;
}

}  // namespace

// JambaConfig defaults: vocab 65536, hidden 4096, intermediate 14336, 32
// layers, 32 heads, 8 KV heads, 262144 positions, untied, num_experts 16,
// num_experts_per_tok 2, expert_layer_period 2 / offset 1, attn_layer_period
// 8 / offset 4, mamba_d_state 16, mamba_d_conv 4, mamba_expand 2,
// mamba_dt_rank "auto" (= ceil(hidden / 16)), mamba_conv_bias True,
// mamba_proj_bias False.
// Layer i is attention when i % attn_layer_period == attn_layer_offset, else
// Mamba (JambaConfig.layers_block_type); its feed_forward is a
// JambaSparseMoeBlock when i % expert_layer_period == expert_layer_offset and
// num_experts > 1, else a JambaMLP (layers_num_experts).
// modeling_jamba.py, per layer: input_layernorm and pre_ff_layernorm
// (JambaRMSNorm, hidden); JambaAttention q/k/v/o_proj without bias
// (head_dim = hidden / heads, no rotary: the Mamba layers carry position);
// JambaMambaMixer in_proj (hidden -> 2 x intermediate, bias
// mamba_proj_bias), conv1d (depthwise, intermediate x d_conv + bias when
// mamba_conv_bias), x_proj (intermediate -> dt_rank + 2 x d_state, no bias),
// dt_proj (dt_rank -> intermediate, with bias), A_log (intermediate x
// d_state), D (intermediate), out_proj (intermediate -> hidden, bias
// mamba_proj_bias), dt_layernorm (dt_rank), b_layernorm and c_layernorm
// (d_state); JambaMLP gate/up/down_proj without bias; the MoE block's router
// (hidden -> num_experts, no bias) and num_experts JambaMLPs. JambaModel:
// embed_tokens, layers, final_layernorm; lm_head tied only when
// tie_word_embeddings.
void build_jamba(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "JambaConfig (configuration_jamba.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 65536);
  t.hidden = k.size({"hidden_size"}, 4096);
  t.intermediate = k.size({"intermediate_size"}, 14336);
  t.layers = k.size({"num_hidden_layers"}, 32, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 32, 1, 1 << 20);
  t.kv_heads = k.size({"num_key_value_heads"}, 8, 1, 1 << 20);
  check_divisible(k.path({"hidden_size"}), t.hidden, k.path({"num_attention_heads"}), t.heads);
  check_kv_heads(k.path({"num_key_value_heads"}), t.kv_heads, k.path({"num_attention_heads"}), t.heads);
  t.head_dim = t.hidden / t.heads;
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;
  t.activation = k.str({"hidden_act"}, "silu");
  t.position_encoding = "none";
  spec.max_position_embeddings = k.size({"max_position_embeddings"}, 262144);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", false);
  read_dtype(cfg, spec);

  const JambaLayout lay = jamba_layout(cfg, k, t);
  const int64_t L = t.layers, h = t.hidden;
  const int64_t attn_layers = lay.attn_layers;
  const int64_t mamba_layers = L - attn_layers;
  const JambaMamba m = read_jamba_mamba(cfg, k, h);
  t.ssm_kind = SsmKind::kJambaMamba;
  t.ssm_layers = mamba_layers;
  t.ssm_inner = m.I;
  t.ssm_state = m.N;
  t.ssm_conv_kernel = m.K;
  t.ssm_dt_rank = m.R;

  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  if (attn_layers > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "q_proj", comp::kAttention, "text", h, t.heads * t.head_dim, false, attn_layers);
    add_linear(spec, "k_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, false, attn_layers);
    add_linear(spec, "v_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, false, attn_layers);
    add_linear(spec, "o_proj", comp::kAttention, "text", t.heads * t.head_dim, h, false, attn_layers);
    mark_layers(spec, from, LayerSet::kAttention);
  }
  add_jamba_mamba(spec, m, mamba_layers);
  add_jamba_mlps(spec, lay);
  add_norm(spec, "input_layernorm", "text", h, false, L);
  add_norm(spec, "pre_ff_layernorm", "text", h, false, L);
  add_norm(spec, "final_layernorm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
  // JambaConfig.sliding_window (None in the published configs) windows every
  // attention layer when set.
  t.sliding_window = cfg.int_or("sliding_window", 0, 1, kMaxSize);
  t.sliding_layers = t.sliding_window > 0 ? attn_layers : 0;
}

// FalconH1Config defaults: vocab 128000, hidden 4096, intermediate 14336, 32
// layers, 32 heads, 8 KV heads (head_dim when given, else hidden / heads),
// 8192 positions, untied, attention_bias / mlp_bias / projectors_bias /
// mamba_proj_bias False, mamba_conv_bias True, mamba_d_ssm 1024 (None:
// mamba_expand x hidden), mamba_n_heads 128, mamba_d_head "auto" (=
// mamba_d_ssm / mamba_n_heads), mamba_n_groups 1, mamba_d_state 256,
// mamba_d_conv 4, mamba_expand 2, mamba_rms_norm False.
// modeling_falcon_h1.py FalconH1DecoderLayer: input_layernorm and
// pre_ff_layernorm (hidden); `mamba` (FalconH1Mixer: Mamba2Mixer's tree with
// in_proj bias mamba_proj_bias, out_proj bias projectors_bias, and the gated
// norm FalconH1RMSNormGated only when mamba_rms_norm; mup_vector is a
// non-persistent buffer, not a parameter) and `self_attn` (q/k/v/o_proj,
// bias attention_bias) run side by side on the same normalised input, and
// the gated MLP gate/up/down_proj (bias mlp_bias). FalconH1Model:
// embed_tokens, layers, final_layernorm; lm_head tied only when
// tie_word_embeddings. Every layer caches keys and values and keeps a
// Mamba-2 state (FalconHybridMambaAttentionDynamicCache).
void build_falcon_h1(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "FalconH1Config (configuration_falcon_h1.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 128000);
  t.hidden = k.size({"hidden_size"}, 4096);
  t.intermediate = k.size({"intermediate_size"}, 14336);
  t.layers = k.size({"num_hidden_layers"}, 32, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 32, 1, 1 << 20);
  t.kv_heads = k.size({"num_key_value_heads"}, 8, 1, 1 << 20);
  check_kv_heads(k.path({"num_key_value_heads"}), t.kv_heads, k.path({"num_attention_heads"}), t.heads);
  if (cfg.get("head_dim") != nullptr) {
    t.head_dim = k.size({"head_dim"}, 0, 1, 1 << 20);
  } else {
    check_divisible(k.path({"hidden_size"}), t.hidden, k.path({"num_attention_heads"}), t.heads);
    t.head_dim = t.hidden / t.heads;
  }
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;
  t.activation = k.str({"hidden_act"}, "silu");
  t.position_encoding = "rope";
  spec.max_position_embeddings = k.size({"max_position_embeddings"}, 8192);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", false);
  read_dtype(cfg, spec);

  Mamba2Shape m;
  m.hidden = t.hidden;
  const int64_t expand = k.size({"mamba_expand"}, 2, 1, 1024);
  if (cfg.has_key("mamba_d_ssm") && !cfg.has("mamba_d_ssm")) {
    m.inner = expand * t.hidden;  // an explicit null: mamba_expand x hidden
  } else {
    m.inner = k.size({"mamba_d_ssm"}, 1024);
  }
  m.heads = k.size({"mamba_n_heads"}, 128, 1, 1 << 20);
  if (const json* d = cfg.get("mamba_d_head"); d != nullptr && d->is_string()) {
    if (d->get<std::string>() != "auto") {
      fail(errc::kUnknownValue, cfg.child_path("mamba_d_head"),
           cfg.child_path("mamba_d_head") + " must be an integer or \"auto\"");
    }
    m.head_dim = m.inner / m.heads;
  } else if (d == nullptr) {
    spec.notes.push_back("mamba_d_head missing: FalconH1Config's \"auto\" (mamba_d_ssm / mamba_n_heads)");
    m.head_dim = m.inner / m.heads;
  } else {
    m.head_dim = k.size({"mamba_d_head"}, 0, 1, 1 << 20);
  }
  // FalconH1Mixer views the scan input (mamba_d_ssm wide) as heads x head_dim.
  if (m.heads * m.head_dim != m.inner) {
    fail(errc::kInconsistent, k.path({"mamba_n_heads"}),
         k.path({"mamba_n_heads"}) + " x mamba_d_head (" + std::to_string(m.heads) + " x " +
             std::to_string(m.head_dim) + ") must equal mamba_d_ssm (" + std::to_string(m.inner) + ")");
  }
  m.groups = k.size({"mamba_n_groups"}, 1, 1, 1 << 20);
  check_divisible(k.path({"mamba_n_heads"}), m.heads, k.path({"mamba_n_groups"}), m.groups);
  m.state = k.size({"mamba_d_state"}, 256);
  m.conv_kernel = k.size({"mamba_d_conv"}, 4, 1, 1024);
  m.bias = k.flag("mamba_proj_bias", false);
  m.out_bias = k.flag("projectors_bias", false);
  m.conv_bias = k.flag("mamba_conv_bias", true);
  m.gated_norm = k.flag("mamba_rms_norm", false);
  set_mamba2_stack(t, m, t.layers);
  t.ssm_with_attention = true;

  const bool attn_bias = k.flag("attention_bias", false);
  const bool mlp_bias = k.flag("mlp_bias", false);
  const int64_t L = t.layers, h = t.hidden;
  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  add_mamba2_mixer(spec, m, L, LayerSet::kEvery);
  add_linear(spec, "q_proj", comp::kAttention, "text", h, t.heads * t.head_dim, attn_bias, L);
  add_linear(spec, "k_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, attn_bias, L);
  add_linear(spec, "v_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, attn_bias, L);
  add_linear(spec, "o_proj", comp::kAttention, "text", t.heads * t.head_dim, h, attn_bias, L);
  add_linear(spec, "gate_proj", comp::kMlp, "text", h, t.intermediate, mlp_bias, L);
  add_linear(spec, "up_proj", comp::kMlp, "text", h, t.intermediate, mlp_bias, L);
  add_linear(spec, "down_proj", comp::kMlp, "text", t.intermediate, h, mlp_bias, L);
  add_norm(spec, "input_layernorm", "text", h, false, L);
  add_norm(spec, "pre_ff_layernorm", "text", h, false, L);
  add_norm(spec, "final_layernorm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

namespace {

// The MLP width (Lfm2MLP.__init__).
int64_t lfm2_mlp_width(const JsonReader& cfg, const ConfigKeys& k) {
  int64_t ff = cfg.has("block_ff_dim") ? cfg.int_or("block_ff_dim", 12288) : k.size({"intermediate_size"}, 12288);
  if (k.flag("block_auto_adjust_ff_dim", true)) {
    ff = 2 * ff / 3;
    if (!(cfg.has_key("block_ffn_dim_multiplier") && !cfg.has("block_ffn_dim_multiplier"))) {
      const double mult = cfg.num_or("block_ffn_dim_multiplier", 1.0, 1e-6, 1e6);
      const int64_t multiple = k.size({"block_multiple_of"}, 256);
      ff = static_cast<int64_t>(mult * static_cast<double>(ff));
      ff = multiple * ((ff + multiple - 1) / multiple);
    }
  }
  if (ff < 1) {
    fail(errc::kOutOfRange, k.path({"intermediate_size"}),
         "the LFM2 MLP width derived from " + k.path({"intermediate_size"}) + " is " + std::to_string(ff));
  }
  return ff;
}

// Which layers run a short convolution instead of attention: layer_types,
// else all but full_attn_idxs, else none (Lfm2Config).
std::vector<bool> lfm2_conv_at(const JsonReader& cfg, int64_t L, ModelSpec& spec) {
  if (cfg.get("layer_types") != nullptr) return listed_layer_kinds(cfg, L, "conv", "full_attention", "LFM2");
  std::vector<bool> conv(static_cast<size_t>(L), true);
  if (const json* idx = cfg.get("full_attn_idxs"); idx != nullptr) {
    const std::string p = cfg.child_path("full_attn_idxs");
    if (!idx->is_array()) fail(errc::kWrongType, p, p + " must be a list of layer indices");
    for (size_t i = 0; i < idx->size(); ++i) {
      const json& e = (*idx)[i];
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= L) {
        fail(errc::kOutOfRange, p + "[" + std::to_string(i) + "]",
             p + "[" + std::to_string(i) + "] must be a layer index in 0.." + std::to_string(L - 1));
      }
      conv[static_cast<size_t>(e.get<int64_t>())] = false;
    }
  } else {
    spec.notes.push_back("layer_types and full_attn_idxs missing: Lfm2Config makes every layer attention");
    conv.assign(static_cast<size_t>(L), false);
  }
  return conv;
}

// Lfm2Attention on the attention layers, Lfm2ShortConv on the others.
void add_lfm2_mixers(ModelSpec& spec, int64_t attn_layers, int64_t conv_layers, bool conv_bias) {
  const LayerStack& t = spec.text;
  const int64_t h = t.hidden;
  if (attn_layers > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "q_proj", comp::kAttention, "text", h, t.heads * t.head_dim, false, attn_layers);
    add_linear(spec, "k_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, false, attn_layers);
    add_linear(spec, "v_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, false, attn_layers);
    add_linear(spec, "out_proj", comp::kAttention, "text", t.heads * t.head_dim, h, false, attn_layers);
    add_norm(spec, "q_layernorm", "text", t.head_dim, false, attn_layers);
    add_norm(spec, "k_layernorm", "text", t.head_dim, false, attn_layers);
    mark_layers(spec, from, LayerSet::kAttention);
  }
  if (conv_layers > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "in_proj", comp::kSsm, "text", h, 3 * h, conv_bias, conv_layers);
    add_other(spec, "conv", comp::kSsm, "text", h * t.ssm_conv_kernel + (conv_bias ? h : 0), conv_layers);
    add_linear(spec, "out_proj", comp::kSsm, "text", h, h, conv_bias, conv_layers);
    mark_layers(spec, from, LayerSet::kSsm);
  }
}

}  // namespace

// Lfm2Config defaults (configuration_lfm2.py): vocab 65536, hidden 2560,
// intermediate_size 12288 (the config's "block_ff_dim" wins when present),
// 32 layers, 32 heads, 8 KV heads, 128000 positions, tie_word_embeddings True
// ("tie_embedding" wins when present), conv_bias False, conv_L_cache 3,
// block_multiple_of 256, block_ffn_dim_multiplier 1.0,
// block_auto_adjust_ff_dim True; layer_types, else "full_attention" on the
// full_attn_idxs layers and "conv" on the rest, else attention everywhere.
// modeling_lfm2.py Lfm2DecoderLayer: operator_norm and ffn_norm (hidden);
// Lfm2Attention (attention layers) q/k/v_proj, out_proj without bias and
// q_layernorm / k_layernorm over head_dim (head_dim when given, else hidden /
// heads); Lfm2ShortConv (conv layers) in_proj (hidden -> 3 x hidden), a
// depthwise conv (hidden x conv_L_cache) and out_proj, biases conv_bias;
// Lfm2MLP w1 / w3 / w2 without bias, of width int(2 x ff / 3), then
// int(multiplier x width) rounded up to block_multiple_of (when the
// multiplier is not None), when block_auto_adjust_ff_dim. Lfm2Model:
// embed_tokens, layers, embedding_norm (the final norm); lm_head tied only
// when tie_word_embeddings.
void build_lfm2(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "Lfm2Config (configuration_lfm2.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 65536);
  t.hidden = k.size({"hidden_size"}, 2560);
  t.layers = k.size({"num_hidden_layers"}, 32, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 32, 1, 1 << 20);
  t.kv_heads = k.size({"num_key_value_heads"}, 8, 1, 1 << 20);
  check_kv_heads(k.path({"num_key_value_heads"}), t.kv_heads, k.path({"num_attention_heads"}), t.heads);
  if (cfg.get("head_dim") != nullptr) {
    t.head_dim = k.size({"head_dim"}, 0, 1, 1 << 20);
  } else {
    check_divisible(k.path({"hidden_size"}), t.hidden, k.path({"num_attention_heads"}), t.heads);
    t.head_dim = t.hidden / t.heads;
  }
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;
  t.qk_norm = true;
  t.activation = "silu";
  t.position_encoding = "rope";
  spec.max_position_embeddings = k.size({"max_position_embeddings"}, 128000);
  spec.tie_word_embeddings =
      cfg.has("tie_embedding") ? cfg.bool_or("tie_embedding", true) : k.flag("tie_word_embeddings", true);
  read_dtype(cfg, spec);

  t.intermediate = lfm2_mlp_width(cfg, k);

  // Which layers attend.
  const int64_t L = t.layers, h = t.hidden;
  t.ssm_at = lfm2_conv_at(cfg, L, spec);
  int64_t conv_layers = 0;
  for (bool c : t.ssm_at) conv_layers += c ? 1 : 0;
  const int64_t attn_layers = L - conv_layers;
  const bool conv_bias = k.flag("conv_bias", false);
  t.ssm_kind = SsmKind::kShortConv;
  t.ssm_layers = conv_layers;
  t.ssm_inner = h;
  t.ssm_conv_dim = h;
  t.ssm_state = 0;
  t.ssm_conv_kernel = k.size({"conv_L_cache"}, 3, 1, 1024);
  t.ssm_state_layers = conv_layers > 0 ? L : 0;

  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  add_lfm2_mixers(spec, attn_layers, conv_layers, conv_bias);
  add_linear(spec, "w1", comp::kMlp, "text", h, t.intermediate, false, L);
  add_linear(spec, "w3", comp::kMlp, "text", h, t.intermediate, false, L);
  add_linear(spec, "w2", comp::kMlp, "text", t.intermediate, h, false, L);
  add_norm(spec, "operator_norm", "text", h, false, L);
  add_norm(spec, "ffn_norm", "text", h, false, L);
  add_norm(spec, "embedding_norm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace vram::detail

// Qwen3-Next (qwen3_next): a hybrid of gated DeltaNet linear attention and
// gated full attention (three of every four layers linear), every layer a
// 512-expert MoE with a gated shared expert. Sources: transformers
// src/transformers/models/qwen3_next/configuration_qwen3_next.py and
// modeling_qwen3_next.py.
#include <string>
#include <vector>

#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"
#include "vram/families.h"

namespace vram::detail {

namespace {

// Which layers run linear attention (Qwen3NextConfig.__post_init__): the
// config's layer_types, else all but every full_attention_interval-th layer.
std::vector<bool> linear_attention_at(const JsonReader& cfg, const ConfigKeys& k, int64_t L) {
  if (cfg.get("layer_types") != nullptr) {
    return listed_layer_kinds(cfg, L, "linear_attention", "full_attention", "Qwen3-Next");
  }
  std::vector<bool> at(static_cast<size_t>(L), false);
  const int64_t interval = k.size({"full_attention_interval"}, 4, 1, 100000);
  for (int64_t i = 0; i < L; ++i) at[static_cast<size_t>(i)] = (i + 1) % interval != 0;
  return at;
}

// Gated DeltaNet widths. The LayerStack's state-space fields: ssm_inner is
// the value width, ssm_state the key head width (state = value heads x key
// x value = ssm_inner x ssm_state), ssm_heads / ssm_groups the value / key
// heads, ssm_conv_dim the convolved q, k and v.
void read_gated_deltanet(const ConfigKeys& k, int64_t linear_layers, LayerStack& t) {
  const int64_t key_heads = k.size({"linear_num_key_heads"}, 16, 1, 1 << 20);
  const int64_t value_heads = k.size({"linear_num_value_heads"}, 32, 1, 1 << 20);
  const int64_t key_head_dim = k.size({"linear_key_head_dim"}, 128, 1, 1 << 20);
  const int64_t value_head_dim = k.size({"linear_value_head_dim"}, 128, 1, 1 << 20);
  if (linear_layers > 0 && value_heads % key_heads != 0) {
    fail(errc::kInconsistent, k.path({"linear_num_value_heads"}),
         k.path({"linear_num_value_heads"}) + " (" + std::to_string(value_heads) + ") must be a multiple of " +
             k.path({"linear_num_key_heads"}) + " (" + std::to_string(key_heads) +
             "): each key head serves a whole group of value heads");
  }
  const int64_t key_dim = key_heads * key_head_dim;
  const int64_t value_dim = value_heads * value_head_dim;
  const int64_t conv_dim = 2 * key_dim + value_dim;
  t.ssm_kind = SsmKind::kGatedDeltaNet;
  t.ssm_layers = linear_layers;
  t.ssm_inner = value_dim;
  t.ssm_state = key_head_dim;
  t.ssm_conv_dim = conv_dim;
  t.ssm_heads = value_heads;
  t.ssm_groups = key_heads;
  t.ssm_conv_kernel = k.size({"linear_conv_kernel_dim"}, 4, 1, 1024);
}

// The token mixers' parameters: gated attention on the full-attention
// layers, gated DeltaNet on the linear ones (widths from read_gated_deltanet).
void add_token_mixers(ModelSpec& spec, int64_t attn_layers, int64_t linear_layers, bool attn_bias) {
  const LayerStack& t = spec.text;
  const int64_t h = t.hidden;
  const int64_t key_dim = t.ssm_groups * t.ssm_state;
  const int64_t value_dim = t.ssm_inner;
  const int64_t value_heads = t.ssm_heads;
  const int64_t value_head_dim = value_dim / value_heads;
  const int64_t conv_dim = t.ssm_conv_dim;
  if (attn_layers > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "q_proj", comp::kAttention, "text", h, 2 * t.heads * t.head_dim, attn_bias, attn_layers);
    add_linear(spec, "k_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, attn_bias, attn_layers);
    add_linear(spec, "v_proj", comp::kAttention, "text", h, t.kv_heads * t.head_dim, attn_bias, attn_layers);
    add_linear(spec, "o_proj", comp::kAttention, "text", t.heads * t.head_dim, h, attn_bias, attn_layers);
    add_norm(spec, "q_norm", "text", t.head_dim, false, attn_layers);
    add_norm(spec, "k_norm", "text", t.head_dim, false, attn_layers);
    mark_layers(spec, from, LayerSet::kAttention);
  }
  if (linear_layers > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "in_proj_qkvz", comp::kSsm, "text", h, 2 * key_dim + 2 * value_dim, false, linear_layers);
    add_linear(spec, "in_proj_ba", comp::kSsm, "text", h, 2 * value_heads, false, linear_layers);
    add_other(spec, "conv1d", comp::kSsm, "text", conv_dim * t.ssm_conv_kernel, linear_layers);
    add_other(spec, "dt_bias", comp::kSsm, "text", value_heads, linear_layers);
    add_other(spec, "A_log", comp::kSsm, "text", value_heads, linear_layers);
    add_norm(spec, "norm", "text", value_head_dim, false, linear_layers);
    add_linear(spec, "out_proj", comp::kSsm, "text", value_dim, h, false, linear_layers);
    mark_layers(spec, from, LayerSet::kSsm);
  }
}

// The MLPs: Qwen2-MoE's sparse-layer rule picks the MoE layers (router,
// routed experts, gated shared expert); the rest are dense.
void add_mlps(const JsonReader& cfg, const ConfigKeys& k, ModelSpec& spec) {
  LayerStack& t = spec.text;
  const int64_t L = t.layers, h = t.hidden;
  const int64_t experts = cfg.int_or("num_experts", 512, 0, kMaxSize);
  const int64_t sparse = qwen_moe_sparse_layers(cfg, L, experts);
  const int64_t topk = sparse > 0 ? read_experts_per_token(cfg, "num_experts_per_tok", 10, experts, "num_experts") : 0;
  const int64_t moe_inter = k.size({"moe_intermediate_size"}, 512);
  const int64_t shared_inter = k.size({"shared_expert_intermediate_size"}, 512, 0, kMaxSize);
  if (L - sparse > 0) {
    const size_t from = spec.groups.size();
    add_linear(spec, "gate_proj", comp::kMlp, "text", h, t.intermediate, false, L - sparse);
    add_linear(spec, "up_proj", comp::kMlp, "text", h, t.intermediate, false, L - sparse);
    add_linear(spec, "down_proj", comp::kMlp, "text", t.intermediate, h, false, L - sparse);
    mark_layers(spec, from, LayerSet::kDense);
  }
  if (sparse > 0) {
    const size_t from = spec.groups.size();
    add_other(spec, "gate", comp::kRouter, "text", experts * h, sparse);
    add_routed_experts(spec, "gate_proj", "up_proj", "down_proj", h, moe_inter, experts, topk, sparse);
    if (shared_inter > 0) {
      add_linear(spec, "gate_proj", comp::kMlp, "text", h, shared_inter, false, sparse);
      add_linear(spec, "up_proj", comp::kMlp, "text", h, shared_inter, false, sparse);
      add_linear(spec, "down_proj", comp::kMlp, "text", shared_inter, h, false, sparse);
    }
    add_linear(spec, "shared_expert_gate", comp::kRouter, "text", h, 1, false, sparse);
    mark_layers(spec, from, LayerSet::kMoe);
  }
  t.moe_layers = sparse;
  t.experts = sparse > 0 ? experts : 0;
  t.experts_per_token = topk;
  t.expert_intermediate = sparse > 0 ? moe_inter : 0;
  t.shared_expert_intermediate = sparse > 0 ? shared_inter : 0;
}

}  // namespace

// Qwen3NextConfig defaults: vocab 151936, hidden 2048, intermediate 5632, 48
// layers, 16 heads, 2 KV heads, head_dim 256, 32768 positions, untied,
// attention_bias False, linear_conv_kernel_dim 4, linear_key_head_dim 128,
// linear_value_head_dim 128, linear_num_key_heads 16, linear_num_value_heads
// 32, decoder_sparse_step 1, moe_intermediate_size 512,
// shared_expert_intermediate_size 512, num_experts_per_tok 10, num_experts
// 512, mlp_only_layers []; layer_types, else "full_attention" on every
// full_attention_interval-th layer ((i + 1) % interval == 0, interval 4) and
// "linear_attention" on the rest; partial_rotary_factor 0.25 (no parameters).
// modeling_qwen3_next.py, per layer: input_layernorm and
// post_attention_layernorm (Qwen3NextRMSNorm, 1 + weight: one weight of
// hidden); the token mixer is
// - Qwen3NextAttention on full-attention layers: q_proj (hidden -> heads x
//   head_dim x 2: the query and an output gate), k_proj / v_proj (hidden ->
//   KV heads x head_dim), o_proj (heads x head_dim -> hidden), biases
//   attention_bias; q_norm / k_norm over head_dim; the output is multiplied
//   by sigmoid(gate) before o_proj;
// - Qwen3NextGatedDeltaNet on linear-attention layers: in_proj_qkvz (hidden
//   -> 2 x key_dim + 2 x value_dim) and in_proj_ba (hidden -> 2 x value
//   heads) without bias, conv1d (depthwise over conv_dim = 2 x key_dim +
//   value_dim, kernel linear_conv_kernel_dim, no bias), dt_bias and A_log
//   (value heads each), norm (Qwen3NextRMSNormGated over the value head
//   width) and out_proj (value_dim -> hidden, no bias);
// the MLP is a Qwen3NextSparseMoeBlock when the layer is not in
// mlp_only_layers, num_experts > 0 and (i + 1) % decoder_sparse_step == 0:
// `gate` (Qwen3NextTopKRouter: a bare experts x hidden nn.Parameter, softmax
// top-k), `experts` (gate_up_proj experts x 2 x moe_intermediate x hidden and
// down_proj experts x hidden x moe_intermediate: three matrices of
// moe_intermediate per expert), `shared_expert` (a gate/up/down MLP of
// shared_expert_intermediate_size) and `shared_expert_gate` (Linear hidden ->
// 1, no bias); else a dense Qwen3NextMLP of intermediate_size. Qwen3NextModel:
// embed_tokens, layers, norm; lm_head unless tied. The checkpoints' mtp.*
// tensors (multi-token prediction) are in _keys_to_ignore_on_load_unexpected.
void build_qwen3_next(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "Qwen3NextConfig (configuration_qwen3_next.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 151936);
  t.hidden = k.size({"hidden_size"}, 2048);
  t.intermediate = k.size({"intermediate_size"}, 5632);
  t.layers = k.size({"num_hidden_layers"}, 48, 1, 100000);
  t.heads = k.size({"num_attention_heads"}, 16, 1, 1 << 20);
  t.kv_heads = k.size({"num_key_value_heads"}, 2, 1, 1 << 20);
  check_kv_heads(k.path({"num_key_value_heads"}), t.kv_heads, k.path({"num_attention_heads"}), t.heads);
  t.head_dim = k.size({"head_dim"}, 256, 1, 1 << 20);
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;
  t.qk_norm = true;
  t.attn_output_gate = true;
  t.activation = k.str({"hidden_act"}, "silu");
  t.position_encoding = "rope";
  t.dropout = cfg.num_or("attention_dropout", 0.0, 0.0, 1.0);
  spec.max_position_embeddings = k.size({"max_position_embeddings"}, 32768);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", false);
  read_dtype(cfg, spec);
  const bool attn_bias = k.flag("attention_bias", false);

  // Which layers run linear attention (Qwen3NextConfig.__post_init__).
  const int64_t L = t.layers, h = t.hidden;
  t.ssm_at = linear_attention_at(cfg, k, L);
  int64_t linear_layers = 0;
  for (bool l : t.ssm_at) linear_layers += l ? 1 : 0;
  const int64_t attn_layers = L - linear_layers;

  read_gated_deltanet(k, linear_layers, t);
  if (linear_layers == 0) t.ssm_at.clear();

  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  add_token_mixers(spec, attn_layers, linear_layers, attn_bias);

  add_mlps(cfg, k, spec);

  add_norm(spec, "input_layernorm", "text", h, false, L);
  add_norm(spec, "post_attention_layernorm", "text", h, false, L);
  add_norm(spec, "norm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
  spec.notes.push_back(
      "Qwen3-Next checkpoints also store a multi-token-prediction module (mtp.*: one full-attention MoE layer, "
      "fc 2 x hidden -> hidden and three norms); transformers ignores it on load and it is not counted");
}

}  // namespace vram::detail

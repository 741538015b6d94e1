// OPT (modeling_opt.py): learned positions with an offset of 2, optional
// project_in/project_out around a narrower embedding, post- or pre-LayerNorm.
#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_opt.py: vocab_size=50272, hidden_size=768,
// num_hidden_layers=12, ffn_dim=3072, max_position_embeddings=2048,
// do_layer_norm_before=True, _remove_final_layer_norm=False,
// word_embed_proj_dim=None (= hidden_size), num_attention_heads=12,
// activation_function="relu", enable_bias=True,
// layer_norm_elementwise_affine=True, tie_word_embeddings (PretrainedConfig) True.
// modeling_opt.py OPTDecoder: embed_tokens (vocab x word_embed_proj_dim);
// OPTLearnedPositionalEmbedding adds 2 rows (offset) to max_position_embeddings;
// project_out (hidden -> proj) and project_in (proj -> hidden), no bias, only
// when word_embed_proj_dim != hidden_size; final_layer_norm only when
// do_layer_norm_before and not _remove_final_layer_norm. OPTDecoderLayer:
// q/k/v/out_proj and fc1/fc2 with bias = enable_bias, self_attn_layer_norm and
// final_layer_norm (weight and bias only with elementwise_affine).
// OPTForCausalLM: lm_head (word_embed_proj_dim -> vocab, no bias), tied.
void build_opt(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "OPTConfig (configuration_opt.py)");
  read_mha_layernorm_stack(k, cfg, spec, {50272, 768, "ffn_dim", 3072, 12, 12, "activation_function", "relu"});
  LayerStack& t = spec.text;
  t.position_encoding = "learned";
  t.dropout = cfg.num_or("dropout", 0.1, 0.0, 1.0);
  spec.max_position_embeddings = k.size({"max_position_embeddings"}, 2048);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  read_dtype(cfg, spec);
  const int64_t proj = cfg.int_or("word_embed_proj_dim", t.hidden);
  const bool bias = cfg.bool_or("enable_bias", true);
  const bool affine = cfg.bool_or("layer_norm_elementwise_affine", true);
  const bool pre_norm = k.flag("do_layer_norm_before", true);
  const bool final_norm = pre_norm && !cfg.bool_or("_remove_final_layer_norm", false);

  const int64_t L = t.layers, h = t.hidden;
  add_embedding(spec, "embed_tokens", "text", spec.vocab, proj);
  add_embedding(spec, "embed_positions", "text", spec.max_position_embeddings + 2, h);
  if (proj != h) {
    add_linear(spec, "project_out", comp::kEmbeddings, "text", h, proj, false, 1);
    add_linear(spec, "project_in", comp::kEmbeddings, "text", proj, h, false, 1);
  }
  add_linear(spec, "q_proj", comp::kAttention, "text", h, h, bias, L);
  add_linear(spec, "k_proj", comp::kAttention, "text", h, h, bias, L);
  add_linear(spec, "v_proj", comp::kAttention, "text", h, h, bias, L);
  add_linear(spec, "out_proj", comp::kAttention, "text", h, h, bias, L);
  add_linear(spec, "fc1", comp::kMlp, "text", h, t.intermediate, bias, L);
  add_linear(spec, "fc2", comp::kMlp, "text", t.intermediate, h, bias, L);
  if (affine) {
    add_norm(spec, "self_attn_layer_norm", "text", h, true, L);
    add_norm(spec, "final_layer_norm", "text", h, true, L);
    if (final_norm) add_norm(spec, "final_layer_norm", "text", h, true, 1);
  }
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", proj, spec.vocab, false, 1);
}

}  // namespace vram::detail

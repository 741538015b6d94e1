// GPT-2 and GPTBigCode (StarCoder, SantaCoder): pre-LayerNorm decoders with
// learned positions, biased projections and a tied head.
//
// GPT-2's projections are Conv1D modules (weight stored [in, out]); PEFT
// targets them like nn.Linear (fan_in_fan_out), so they are listed as linears
// with their in/out dims. GPTBigCode uses nn.Linear with the same names.
#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

namespace {

struct Gpt2Shape {
  const char* config_class;
  const char* activation;
  bool multi_query_default;  // GPTBigCodeConfig: multi_query=True; GPT-2 has no such key
  bool has_multi_query_key;
};

// Both config classes: vocab_size=50257, n_positions=1024, n_embd=768,
// n_layer=12, n_head=12, n_inner=None (= 4 * n_embd), resid_pdrop=0.1, and the
// attribute_map hidden_size -> n_embd, max_position_embeddings -> n_positions,
// num_attention_heads -> n_head, num_hidden_layers -> n_layer.
// tie_word_embeddings is PretrainedConfig's default True.
void build_gpt2_shaped(const JsonReader& cfg, ModelSpec& spec, const Gpt2Shape& shape) {
  ConfigKeys k(cfg, spec, shape.config_class);
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 50257);
  t.hidden = k.size({"n_embd", "hidden_size"}, 768);
  t.layers = k.size({"n_layer", "num_hidden_layers"}, 12, 1, 100000);
  t.heads = k.size({"n_head", "num_attention_heads"}, 12, 1, 1 << 20);
  spec.max_position_embeddings = k.size({"n_positions", "max_position_embeddings"}, 1024);
  check_divisible(k.path({"n_embd", "hidden_size"}), t.hidden, k.path({"n_head", "num_attention_heads"}), t.heads);
  // n_inner: null means 4 * n_embd (modeling_gpt2.py GPT2Block, modeling_gpt_bigcode.py GPTBigCodeBlock).
  t.intermediate = cfg.int_or("n_inner", 4 * t.hidden);
  t.head_dim = t.hidden / t.heads;
  t.v_head_dim = t.head_dim;
  const bool multi_query = shape.has_multi_query_key && k.flag("multi_query", shape.multi_query_default);
  t.kv_heads = multi_query ? 1 : t.heads;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kPlain;
  t.norm = NormKind::kLayerNorm;
  t.activation = k.str({"activation_function"}, shape.activation);
  t.position_encoding = "learned";
  t.dropout = cfg.num_or("resid_pdrop", 0.1, 0.0, 1.0);
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  read_dtype(cfg, spec);

  const bool cross = cfg.bool_or("add_cross_attention", false);
  if (cross && multi_query) {
    // modeling_gpt_bigcode.py raises NotImplementedError for this combination.
    fail(errc::kInconsistent, cfg.child_path("add_cross_attention"),
         cfg.child_path("add_cross_attention") +
             " cannot be combined with multi-query attention: transformers refuses it (" +
             cfg.child_path("multi_query") + " is true)");
  }
  t.cross_attention = cross;
  t.norms_per_layer = cross ? 3 : 2;

  const int64_t L = t.layers, h = t.hidden;
  add_embedding(spec, "wte", "text", spec.vocab, h);
  add_embedding(spec, "wpe", "text", spec.max_position_embeddings, h);
  // c_attn projects to q (h) plus k and v (h each, or one head_dim each under MQA).
  add_linear(spec, "c_attn", comp::kAttention, "text", h, h + 2 * t.kv_heads * t.head_dim, true, L);
  add_linear(spec, "c_proj", comp::kAttention, "text", h, h, true, L);
  if (cross) {
    // Cross-attention: c_attn -> k, v (2h), q_attn -> q (h), c_proj.
    add_linear(spec, "c_attn", comp::kAttention, "text", h, 2 * h, true, L);
    add_linear(spec, "q_attn", comp::kAttention, "text", h, h, true, L);
    add_linear(spec, "c_proj", comp::kAttention, "text", h, h, true, L);
    add_norm(spec, "ln_cross_attn", "text", h, true, L);
  }
  add_linear(spec, "c_fc", comp::kMlp, "text", h, t.intermediate, true, L);
  add_linear(spec, "c_proj", comp::kMlp, "text", t.intermediate, h, true, L);
  add_norm(spec, "ln_1", "text", h, true, L);
  add_norm(spec, "ln_2", "text", h, true, L);
  add_norm(spec, "ln_f", "text", h, true, 1);
  // GPT2LMHeadModel / GPTBigCodeForCausalLM: lm_head without bias.
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace

// configuration_gpt2.py: activation_function="gelu_new".
void build_gpt2(const JsonReader& cfg, ModelSpec& spec) {
  build_gpt2_shaped(cfg, spec, {"GPT2Config (configuration_gpt2.py)", "gelu_new", false, false});
}

// configuration_gpt_bigcode.py: activation_function="gelu_pytorch_tanh",
// multi_query=True. modeling_gpt_bigcode.py: c_attn is nn.Linear(embed_dim,
// embed_dim + 2 * kv_heads * head_dim) with kv_heads = 1 under multi_query.
void build_gpt_bigcode(const JsonReader& cfg, ModelSpec& spec) {
  build_gpt2_shaped(cfg, spec, {"GPTBigCodeConfig (configuration_gpt_bigcode.py)", "gelu_pytorch_tanh", true, true});
}

}  // namespace vram::detail

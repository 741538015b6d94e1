#include <algorithm>

#include "families/llama_like.h"
#include "memory/bytes.h"
#include "vram/families.h"

namespace vram::detail {

namespace {
constexpr const char* kParams = "the parameter count";
}  // namespace

void add_linear(ModelSpec& s, const std::string& module, const char* component, const std::string& stack, int64_t in,
                int64_t out, bool bias, int64_t instances) {
  ParamGroup g;
  g.module = module;
  g.component = component;
  g.stack = stack;
  g.kind = ModuleKind::kLinear;
  g.in_features = in;
  g.out_features = out;
  g.bias = bias;
  g.numel = bytes::add(bytes::mul(in, out, kParams), bias ? out : 0, kParams);
  g.instances = instances;
  bytes::mul(g.numel, instances, kParams);  // total() stays exact
  s.groups.push_back(g);
}

void add_embedding(ModelSpec& s, const std::string& module, const std::string& stack, int64_t rows, int64_t dim,
                   const char* component) {
  ParamGroup g;
  g.module = module;
  g.component = component;
  g.stack = stack;
  g.kind = ModuleKind::kEmbedding;
  g.in_features = rows;
  g.out_features = dim;
  g.numel = bytes::mul(rows, dim, kParams);
  s.groups.push_back(g);
}

void add_norm(ModelSpec& s, const std::string& module, const std::string& stack, int64_t dim, bool bias,
              int64_t instances) {
  ParamGroup g;
  g.module = module;
  g.component = comp::kNorms;
  g.stack = stack;
  g.kind = ModuleKind::kNorm;
  g.out_features = dim;
  g.bias = bias;
  g.numel = bytes::mul(dim, bias ? 2 : 1, kParams);
  g.instances = instances;
  bytes::mul(g.numel, instances, kParams);
  s.groups.push_back(g);
}

void add_other(ModelSpec& s, const std::string& module, const char* component, const std::string& stack, int64_t numel,
               int64_t instances) {
  ParamGroup g;
  g.module = module;
  g.component = component;
  g.stack = stack;
  g.kind = ModuleKind::kOther;
  g.numel = numel;
  g.instances = instances;
  bytes::mul(g.numel, instances, kParams);
  s.groups.push_back(g);
}

void check_heads(const JsonReader& cfg, const LayerStack& st, const char* heads_key, const char* kv_key,
                 bool head_dim_explicit) {
  if (!head_dim_explicit && st.hidden % st.heads != 0) {
    fail(errc::kInconsistent, cfg.child_path("hidden_size"),
         cfg.child_path("hidden_size") + " (" + std::to_string(st.hidden) + ") is not divisible by " +
             cfg.child_path(heads_key) + " (" + std::to_string(st.heads) + ")");
  }
  if (st.kv_heads > st.heads || st.heads % st.kv_heads != 0) {
    fail(errc::kInconsistent, cfg.child_path(kv_key),
         cfg.child_path(kv_key) + " (" + std::to_string(st.kv_heads) + ") must divide " + cfg.child_path(heads_key) +
             " (" + std::to_string(st.heads) + ")");
  }
}

AttnKind attention_kind(int64_t heads, int64_t kv_heads) {
  if (kv_heads == heads) return AttnKind::kMha;
  if (kv_heads == 1) return AttnKind::kMqa;
  return AttnKind::kGqa;
}

// LlamaForCausalLM and its close relatives (modeling_llama.py, modeling_mistral.py,
// modeling_qwen2.py, modeling_qwen3.py): embed_tokens; per layer q/k/v/o_proj,
// gate/up/down_proj, input_layernorm, post_attention_layernorm; final norm;
// lm_head unless tie_word_embeddings.
void build_llama_like(const JsonReader& cfg, ModelSpec& spec, const LlamaLikeDefaults& d) {
  LayerStack& t = spec.text;
  t.name = "text";
  auto note_default = [&](const char* key, int64_t v) {
    if (!cfg.has(key)) {
      spec.notes.push_back(std::string(key) + " missing: using " + d.config_class + " default " + std::to_string(v));
    }
  };
  note_default("vocab_size", d.vocab);
  note_default("hidden_size", d.hidden);
  note_default("intermediate_size", d.intermediate);
  note_default("num_hidden_layers", d.layers);
  note_default("num_attention_heads", d.heads);
  spec.vocab = cfg.int_or("vocab_size", d.vocab);
  t.hidden = cfg.int_or("hidden_size", d.hidden);
  t.intermediate = cfg.int_or("intermediate_size", d.intermediate);
  t.layers = cfg.int_or("num_hidden_layers", d.layers, 1, 100000);
  t.heads = cfg.int_or("num_attention_heads", d.heads, 1, 1 << 20);
  // num_key_value_heads=None means MHA in every one of these config classes.
  const int64_t kv_default = d.kv_heads > 0 ? d.kv_heads : t.heads;
  t.kv_heads = cfg.int_or("num_key_value_heads", kv_default, 1, 1 << 20);
  const bool head_dim_explicit = cfg.has("head_dim");
  // Qwen3Config defaults head_dim to 128; the others derive hidden / heads.
  t.head_dim = head_dim_explicit ? cfg.int_req("head_dim", 1, 1 << 20) : d.head_dim;
  detail::check_heads(cfg, t, "num_attention_heads", "num_key_value_heads", head_dim_explicit || t.head_dim > 0);
  if (t.head_dim == 0) t.head_dim = t.hidden / t.heads;
  t.v_head_dim = t.head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.mlp = MlpKind::kGated;
  t.norm = NormKind::kRmsNorm;
  t.activation = cfg.str_or("hidden_act", d.activation);
  t.qk_norm = d.qk_norm;
  spec.tie_word_embeddings = cfg.bool_or("tie_word_embeddings", d.tie);
  spec.max_position_embeddings = cfg.int_or("max_position_embeddings", d.max_positions);
  spec.torch_dtype = cfg.str_or("torch_dtype", cfg.str_or("dtype", ""));
  t.dropout = cfg.num_or("attention_dropout", 0.0, 0.0, 1.0);

  const bool qkv_bias = d.qkv_bias_always || cfg.bool_or("attention_bias", false);
  const bool o_bias = !d.qkv_bias_always && cfg.bool_or("attention_bias", false);
  const bool mlp_bias = d.has_mlp_bias && cfg.bool_or("mlp_bias", false);
  const int64_t L = t.layers;
  const int64_t h = t.hidden;
  const int64_t q_out = t.heads * t.head_dim;
  const int64_t kv_out = t.kv_heads * t.head_dim;

  add_embedding(spec, "embed_tokens", "text", spec.vocab, h);
  add_linear(spec, "q_proj", comp::kAttention, "text", h, q_out, qkv_bias, L);
  add_linear(spec, "k_proj", comp::kAttention, "text", h, kv_out, qkv_bias, L);
  add_linear(spec, "v_proj", comp::kAttention, "text", h, kv_out, qkv_bias, L);
  add_linear(spec, "o_proj", comp::kAttention, "text", q_out, h, o_bias, L);
  if (t.qk_norm) {
    add_norm(spec, "q_norm", "text", t.head_dim, false, L);
    add_norm(spec, "k_norm", "text", t.head_dim, false, L);
  }
  add_linear(spec, "gate_proj", comp::kMlp, "text", h, t.intermediate, mlp_bias, L);
  add_linear(spec, "up_proj", comp::kMlp, "text", h, t.intermediate, mlp_bias, L);
  add_linear(spec, "down_proj", comp::kMlp, "text", t.intermediate, h, mlp_bias, L);
  add_norm(spec, "input_layernorm", "text", h, false, L);
  add_norm(spec, "post_attention_layernorm", "text", h, false, L);
  add_norm(spec, "norm", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace vram::detail

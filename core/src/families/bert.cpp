// BERT (modeling_bert.py): a bidirectional post-LayerNorm encoder with word,
// position and token-type embeddings and a pooler.
#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

// configuration_bert.py: vocab_size=30522, hidden_size=768,
// num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
// hidden_act="gelu", hidden_dropout_prob=0.1, max_position_embeddings=512,
// type_vocab_size=2, position_embedding_type="absolute".
// modeling_bert.py BertModel: embeddings.word_embeddings, position_embeddings,
// token_type_embeddings, LayerNorm; per layer attention.self.query/key/value,
// attention.output.dense and attention.output.LayerNorm, intermediate.dense,
// output.dense and output.LayerNorm (all linears with bias); pooler.dense.
// With position_embedding_type "relative_key" / "relative_key_query" every
// self-attention also holds distance_embedding (2 * max_positions - 1 rows of
// head_dim).
//
// The inventory is BertModel, what AutoModel loads: the encoder plus the
// pooler. Task heads differ per class (BertForMaskedLM drops the pooler and
// adds cls.predictions) and are named in a note rather than guessed.
void build_bert(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "BertConfig (configuration_bert.py)");
  read_mha_layernorm_stack(k, cfg, spec, {30522, 768, "intermediate_size", 3072, 12, 12, "hidden_act", "gelu"});
  LayerStack& t = spec.text;
  // BertLMHeadModel-style decoders set is_decoder (causal self-attention) and
  // add_cross_attention (a second BertAttention per layer with its own
  // LayerNorm); both default to False in PretrainedConfig.
  t.causal = cfg.bool_or("is_decoder", false);
  const bool cross = cfg.bool_or("add_cross_attention", false);
  t.cross_attention = cross;
  t.norms_per_layer = cross ? 3 : 2;
  t.dropout = cfg.num_or("hidden_dropout_prob", 0.1, 0.0, 1.0);
  spec.max_position_embeddings = k.size({"max_position_embeddings"}, 512);
  const int64_t type_vocab = k.size({"type_vocab_size"}, 2, 0, kMaxSize);
  // BertModel has no output head: the embedding is not tied to anything here.
  spec.tie_word_embeddings = false;
  read_dtype(cfg, spec);
  const std::string pos_type = k.str({"position_embedding_type"}, "absolute");
  const bool relative = pos_type == "relative_key" || pos_type == "relative_key_query";
  if (pos_type != "absolute" && !relative) {
    fail(errc::kUnknownValue, cfg.child_path("position_embedding_type"),
         cfg.child_path("position_embedding_type") + " must be \"absolute\", \"relative_key\" or " +
             "\"relative_key_query\", got " + vram::quoted(pos_type));
  }
  t.position_encoding = relative ? "relative_bias" : "learned";

  const int64_t L = t.layers, h = t.hidden;
  add_embedding(spec, "word_embeddings", "text", spec.vocab, h);
  // BertEmbeddings always builds the absolute table, even for relative types.
  add_embedding(spec, "position_embeddings", "text", spec.max_position_embeddings, h);
  if (type_vocab > 0) add_embedding(spec, "token_type_embeddings", "text", type_vocab, h);
  add_norm(spec, "LayerNorm", "text", h, true, 1);
  add_linear(spec, "query", comp::kAttention, "text", h, h, true, L);
  add_linear(spec, "key", comp::kAttention, "text", h, h, true, L);
  add_linear(spec, "value", comp::kAttention, "text", h, h, true, L);
  if (relative) {
    add_other(spec, "distance_embedding", comp::kAttention, "text", (2 * spec.max_position_embeddings - 1) * t.head_dim,
              L);
  }
  add_linear(spec, "dense", comp::kAttention, "text", h, h, true, L);
  add_linear(spec, "dense", comp::kMlp, "text", h, t.intermediate, true, L);
  add_linear(spec, "dense", comp::kMlp, "text", t.intermediate, h, true, L);
  if (cross) {
    add_linear(spec, "query", comp::kAttention, "text", h, h, true, L);
    add_linear(spec, "key", comp::kAttention, "text", h, h, true, L);
    add_linear(spec, "value", comp::kAttention, "text", h, h, true, L);
    add_linear(spec, "dense", comp::kAttention, "text", h, h, true, L);
  }
  add_norm(spec, "LayerNorm", "text", h, true, t.norms_per_layer * L);
  // pooler.dense: PEFT matches it by its leaf name "dense" like the others.
  add_linear(spec, "dense", comp::kOther, "text", h, h, true, 1);
  if (!spec.architecture.empty() && spec.architecture != "BertModel") {
    spec.notes.push_back("counted as BertModel (encoder and pooler, what AutoModel loads); the " + spec.architecture +
                         " task head is not included");
  }
}

}  // namespace vram::detail

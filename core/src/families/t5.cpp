// T5 v1.0 / v1.1 / Flan-T5 (modeling_t5.py): an encoder-decoder sharing one
// input embedding, with relative position biases and bias-free RMS norms.
//
// The decoder is spec.text (it produces the logits); the encoder is
// extra_stacks "encoder".
#include <vector>

#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/registry_entries.h"

namespace vram::detail {

namespace {

// One T5Stack: per block a self-attention (q/k/v/o, no bias) with its
// layer_norm, in the decoder a cross-attention (EncDecAttention) with its
// layer_norm, and the feed-forward (wi or wi_0 + wi_1, then wo; no bias) with
// its layer_norm; block 0 alone owns relative_attention_bias (buckets x heads);
// then final_layer_norm. T5LayerNorm has a weight and no bias.
void add_t5_stack(ModelSpec& spec, const LayerStack& st, int64_t buckets, bool gated) {
  const int64_t L = st.layers, d = st.hidden, inner = st.heads * st.head_dim;
  const std::string& s = st.name;
  auto add_attention = [&] {
    add_linear(spec, "q", comp::kAttention, s, d, inner, false, L);
    add_linear(spec, "k", comp::kAttention, s, d, inner, false, L);
    add_linear(spec, "v", comp::kAttention, s, d, inner, false, L);
    add_linear(spec, "o", comp::kAttention, s, inner, d, false, L);
  };
  add_attention();
  add_embedding(spec, "relative_attention_bias", s, buckets, st.heads, comp::kAttention);
  spec.groups.back().layer_index = 0;
  if (st.cross_attention) add_attention();
  if (gated) {
    add_linear(spec, "wi_0", comp::kMlp, s, d, st.intermediate, false, L);
    add_linear(spec, "wi_1", comp::kMlp, s, d, st.intermediate, false, L);
  } else {
    add_linear(spec, "wi", comp::kMlp, s, d, st.intermediate, false, L);
  }
  add_linear(spec, "wo", comp::kMlp, s, st.intermediate, d, false, L);
  add_norm(spec, "layer_norm", s, d, false, st.norms_per_layer * L);
  add_norm(spec, "final_layer_norm", s, d, false, 1);
}

}  // namespace

// configuration_t5.py: vocab_size=32128, d_model=512, d_kv=64, d_ff=2048,
// num_layers=6, num_decoder_layers=None (= num_layers), num_heads=8,
// relative_attention_num_buckets=32, dropout_rate=0.1, feed_forward_proj="relu",
// tie_word_embeddings=True; attribute_map hidden_size -> d_model,
// num_attention_heads -> num_heads, num_hidden_layers -> num_layers,
// head_dim -> d_kv. feed_forward_proj is "<act>" or "gated-<act>"; anything
// else is a ValueError.
// modeling_t5.py T5ForConditionalGeneration: shared (vocab x d_model, also the
// encoder's and decoder's embed_tokens), encoder, decoder, lm_head (d_model ->
// vocab, no bias) tied to shared unless tie_word_embeddings is false.
// T5Model has no lm_head; T5EncoderModel has no decoder either.
void build_t5(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "T5Config (configuration_t5.py)");
  spec.vocab = k.size({"vocab_size"}, 32128);
  LayerStack enc;
  enc.name = "encoder";
  enc.hidden = k.size({"d_model", "hidden_size"}, 512);
  enc.head_dim = k.size({"d_kv", "head_dim"}, 64);
  enc.intermediate = k.size({"d_ff"}, 2048);
  enc.layers = k.size({"num_layers", "num_hidden_layers"}, 6, 1, 100000);
  enc.heads = k.size({"num_heads", "num_attention_heads"}, 8, 1, 1 << 20);
  const int64_t buckets = k.size({"relative_attention_num_buckets"}, 32);
  const std::string ff = k.str({"feed_forward_proj"}, "relu");
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t dash = ff.find('-', start);
    parts.push_back(ff.substr(start, dash == std::string::npos ? std::string::npos : dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  const bool gated = parts.size() == 2 && parts[0] == "gated";
  if (parts.size() > 2 || (parts.size() == 2 && !gated) || parts.back().empty()) {
    fail(errc::kUnknownValue, cfg.child_path("feed_forward_proj"),
         cfg.child_path("feed_forward_proj") + " must be \"<activation>\" or \"gated-<activation>\" (e.g. " +
             "\"relu\", \"gated-gelu\"), got " + vram::quoted(ff));
  }
  enc.kv_heads = enc.heads;
  enc.v_head_dim = enc.head_dim;
  enc.attention = AttnKind::kMha;
  enc.mlp = gated ? MlpKind::kGated : MlpKind::kPlain;
  enc.norm = NormKind::kRmsNorm;  // T5LayerNorm: scale only, no mean subtraction
  // T5Config maps "gated-gelu" to gelu_new for backward compatibility.
  enc.activation = ff == "gated-gelu" ? "gelu_new" : parts.back();
  enc.causal = false;
  enc.position_encoding = "relative_bias";
  enc.dropout = cfg.num_or("dropout_rate", 0.1, 0.0, 1.0);

  LayerStack dec = enc;
  dec.name = "text";
  dec.layers = cfg.int_or("num_decoder_layers", enc.layers, 1, 100000);
  dec.causal = true;
  dec.cross_attention = true;
  dec.norms_per_layer = 3;

  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  // Relative biases have no position table and no hard limit. The original
  // checkpoints' config.json carries n_positions 512, their pre-training length
  // (Raffel et al. 2020, §3.1.2); 512 stands in when it is absent.
  spec.max_position_embeddings = cfg.int_or("n_positions", 512);
  read_dtype(cfg, spec);
  const bool encoder_only = spec.architecture == "T5EncoderModel";
  const bool has_head = !encoder_only && spec.architecture != "T5Model";

  add_embedding(spec, "shared", encoder_only ? "encoder" : "text", spec.vocab, enc.hidden);
  add_t5_stack(spec, enc, buckets, gated);
  if (encoder_only) {
    spec.text = enc;
    return;
  }
  add_t5_stack(spec, dec, buckets, gated);
  if (has_head && !spec.tie_word_embeddings) {
    add_linear(spec, "lm_head", comp::kLmHead, "text", dec.hidden, spec.vocab, false, 1);
  }
  spec.text = dec;
  spec.extra_stacks.push_back(enc);
}

}  // namespace vram::detail

// Whisper (WhisperForConditionalGeneration): an audio encoder over log-mel
// frames and a text decoder that cross-attends to it.
//
// The decoder is spec.text (it produces the logits); the encoder is
// extra_stacks "encoder", as for T5.
#include "families/dense_helpers.h"
#include "families/registry_entries.h"

namespace vram::detail {

namespace {

// WhisperAttention (modeling_whisper.py): q_proj, v_proj and out_proj with a
// bias, k_proj without.
void add_whisper_attention(ModelSpec& spec, const std::string& stack, int64_t d, int64_t L) {
  add_linear(spec, "q_proj", comp::kAttention, stack, d, d, true, L);
  add_linear(spec, "k_proj", comp::kAttention, stack, d, d, false, L);
  add_linear(spec, "v_proj", comp::kAttention, stack, d, d, true, L);
  add_linear(spec, "out_proj", comp::kAttention, stack, d, d, true, L);
}

}  // namespace

// configuration_whisper.py (WhisperConfig): vocab 51865, num_mel_bins 80,
// encoder_layers / decoder_layers 4, encoder_attention_heads /
// decoder_attention_heads 6, encoder_ffn_dim / decoder_ffn_dim 1536, d_model
// 384, max_source_positions 1500, max_target_positions 448, gelu,
// tie_word_embeddings True (proj_out shares embed_tokens).
// modeling_whisper.py: WhisperEncoder: conv1 Conv1d(num_mel_bins, d_model, 3),
// conv2 Conv1d(d_model, d_model, 3, stride 2), both with bias;
// embed_positions nn.Embedding(max_source_positions, d_model) (frozen, still a
// parameter); per layer self_attn, self_attn_layer_norm, fc1 / fc2 with
// biases, final_layer_norm (LayerNorm with bias); layer_norm. WhisperDecoder:
// embed_tokens, embed_positions (max_target_positions x d_model); per layer
// self_attn, encoder_attn and their layer norms, fc1 / fc2, final_layer_norm;
// layer_norm. proj_out = nn.Linear(d_model, vocab, bias=False), tied.
// WhisperFeatureExtractor (feature_extraction_whisper.py): 30 s chunks at 16
// kHz with hop_length 160 give 3000 mel frames; conv2's stride 2 halves them
// to max_source_positions (1500) encoder positions, whatever the audio says.
void build_whisper(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "WhisperConfig (configuration_whisper.py)");
  spec.vocab = k.size({"vocab_size"}, 51865);
  const int64_t d = k.size({"d_model", "hidden_size"}, 384);
  const int64_t mels = k.size({"num_mel_bins"}, 80);
  const int64_t src = k.size({"max_source_positions"}, 1500);
  const int64_t tgt = k.size({"max_target_positions"}, 448);

  LayerStack enc;
  enc.name = "encoder";
  enc.hidden = d;
  enc.layers = k.size({"encoder_layers"}, 4, 1, 100000);
  enc.heads = k.size({"encoder_attention_heads"}, 6, 1, 1 << 20);
  enc.intermediate = k.size({"encoder_ffn_dim"}, 1536);
  LayerStack dec;
  dec.name = "text";
  dec.hidden = d;
  dec.layers = k.size({"decoder_layers"}, 4, 1, 100000);
  dec.heads = k.size({"decoder_attention_heads"}, 6, 1, 1 << 20);
  dec.intermediate = k.size({"decoder_ffn_dim"}, 1536);
  for (LayerStack* st : {&enc, &dec}) {
    st->kv_heads = st->heads;
    check_heads(cfg, *st, st == &enc ? "encoder_attention_heads" : "decoder_attention_heads",
                st == &enc ? "encoder_attention_heads" : "decoder_attention_heads", false);
    st->head_dim = d / st->heads;
    st->v_head_dim = st->head_dim;
    st->attention = AttnKind::kMha;
    st->mlp = MlpKind::kPlain;
    st->norm = NormKind::kLayerNorm;
    st->activation = k.str({"activation_function"}, "gelu");
    st->position_encoding = "learned";
    st->dropout = cfg.num_or("dropout", 0.0, 0.0, 1.0);
  }
  enc.causal = false;
  dec.causal = true;
  dec.cross_attention = true;
  dec.norms_per_layer = 3;
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  spec.max_position_embeddings = tgt;
  read_dtype(cfg, spec);

  // Encoder.
  add_other(spec, "conv1", comp::kEmbeddings, "encoder", mels * d * 3 + d, 1);
  add_other(spec, "conv2", comp::kEmbeddings, "encoder", d * d * 3 + d, 1);
  add_embedding(spec, "embed_positions", "encoder", src, d);
  add_whisper_attention(spec, "encoder", d, enc.layers);
  add_linear(spec, "fc1", comp::kMlp, "encoder", d, enc.intermediate, true, enc.layers);
  add_linear(spec, "fc2", comp::kMlp, "encoder", enc.intermediate, d, true, enc.layers);
  add_norm(spec, "layer_norm", "encoder", d, true, 2 * enc.layers + 1);
  // Decoder.
  add_embedding(spec, "embed_tokens", "text", spec.vocab, d);
  add_embedding(spec, "embed_positions", "text", tgt, d);
  add_whisper_attention(spec, "text", d, 2 * dec.layers);  // self_attn and encoder_attn
  add_linear(spec, "fc1", comp::kMlp, "text", d, dec.intermediate, true, dec.layers);
  add_linear(spec, "fc2", comp::kMlp, "text", dec.intermediate, d, true, dec.layers);
  add_norm(spec, "layer_norm", "text", d, true, 3 * dec.layers + 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "proj_out", comp::kLmHead, "text", d, spec.vocab, false, 1);

  spec.text = dec;
  spec.extra_stacks.push_back(enc);
  spec.encoder_positions = src;
  spec.notes.push_back("audio: the encoder always sees " + std::to_string(src) +
                       " positions (30 s of 16 kHz audio = 3000 mel frames, halved by conv2); the decoder's "
                       "cross-attention caches them per sequence whatever the context");
}

}  // namespace vram::detail

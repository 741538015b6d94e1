// The model: an exact inventory of weight tensors plus the architecture facts
// that activation, KV-cache and sharding estimates need.
//
// A family adapter (families.h) turns an HF config.json into a ModelSpec the
// way transformers' modeling code builds the module tree: every nn.Linear,
// nn.Embedding and norm weight is one ParamGroup entry, repeated `instances`
// times (layers x experts). params_total() equals
// sum(p.numel() for p in model.parameters()) with tied weights counted once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vram {

namespace gguf {
struct Model;  // a GGUF file as llama.cpp loads it (core/src/gguf/model.h)
}  // namespace gguf

// Breakdown buckets shown to the user (issue 3).
namespace comp {
inline constexpr const char* kEmbeddings = "embeddings";
inline constexpr const char* kAttention = "attention";
inline constexpr const char* kMlp = "mlp";
inline constexpr const char* kExperts = "experts";  // routed MoE experts
inline constexpr const char* kRouter = "router";
inline constexpr const char* kNorms = "norms";
inline constexpr const char* kLmHead = "lm_head";
inline constexpr const char* kVision = "vision_tower";
inline constexpr const char* kProjector = "projector";
inline constexpr const char* kAudio = "audio_tower";  // audio encoder (Gemma 3n USM)
inline constexpr const char* kSsm = "ssm";            // state-space mixers (Mamba in_proj, conv1d, x/dt/out_proj, A, D)
inline constexpr const char* kOther = "other";        // outside the buckets above (BERT pooler)
}  // namespace comp

// Which decoder layers a per-layer text group repeats over. Mixture-of-experts
// models mix sparse and dense layers (DeepSeek first_k_dense_replace, Qwen-MoE
// mlp_only_layers), so pipeline stages, freezing by layer and ZeRO-3 / FSDP
// units need to know which layers carry the group.
enum class LayerSet {
  kEvery,  // every layer of the stack (instances = layers x copies)
  kMoe,    // the sparse layers only (router, routed and shared experts)
  kDense,  // the dense layers only (their MLP)
  // Hybrid stacks (Jamba, LFM2): the layers that run the state-space /
  // convolution mixer, and those that run attention (LayerStack::carries).
  kSsm,
  kAttention,
};

enum class ModuleKind {
  kLinear,     // nn.Linear: quantizable (bnb replaces it), LoRA-targetable
  kEmbedding,  // nn.Embedding (token, position, type)
  kNorm,       // LayerNorm / RMSNorm weight (+ bias)
  kOther,      // conv patch embedding, class token, scalars
};

struct ParamGroup {
  std::string module;     // HF leaf module name used by PEFT target_modules ("q_proj", "c_attn")
  std::string component;  // one of comp::*
  std::string stack;      // which LayerStack it belongs to ("text", "vision", "encoder", "projector")
  ModuleKind kind = ModuleKind::kOther;
  int64_t in_features = 0;   // kLinear only: weight is [out_features, in_features]
  int64_t out_features = 0;  // kLinear only
  bool bias = false;         // kLinear / kNorm: has a bias vector
  int64_t numel = 0;         // parameters of one instance, bias included
  int64_t instances = 1;     // copies in the model (layers, layers x experts)
  // Per token only a fraction of routed experts is used: active copies per layer
  // = instances * active_num / active_den. 1/1 for everything that is not routed.
  int64_t active_num = 1;
  int64_t active_den = 1;
  int64_t layer_index = -1;  // >= 0 when the group belongs to one specific layer only
  LayerSet layers = LayerSet::kEvery;

  int64_t total() const { return numel * instances; }
};

enum class MlpKind { kGated, kPlain };  // SwiGLU/GeGLU (gate*up) vs fc1-act-fc2
enum class NormKind { kRmsNorm, kLayerNorm };
enum class AttnKind { kMha, kGqa, kMqa, kMla };
// Which recurrent mixer a state-space layer runs.
enum class SsmKind {
  kMamba,       // selective scan, x_proj / dt_proj (Gu & Dao 2023)
  kJambaMamba,  // Jamba's Mamba: the same mixer with RMSNorms on dt, B and C, run unfused
  kMamba2,      // SSD with per-head scalar A, grouped B / C, gated RMSNorm (Dao & Gu 2024)
  kShortConv,   // LFM2: in_proj -> B, C, x; causal depthwise conv of B*x; C * conv; out_proj
  // Gated DeltaNet (Yang et al. 2024; Qwen3-Next's linear attention):
  // in_proj_qkvz / in_proj_ba; a causal depthwise conv over q, k and v; the
  // chunked gated delta rule with a heads x key x value recurrent state; a
  // gated RMSNorm by z; out_proj.
  kGatedDeltaNet,
};

// One transformer stack (decoder, vision encoder, T5 encoder).
struct LayerStack {
  std::string name;  // "text", "vision", "encoder"
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;      // q/k head dim (MLA: nope + rope)
  int64_t v_head_dim = 0;    // value head dim (== head_dim except MLA)
  int64_t intermediate = 0;  // dense MLP intermediate size
  MlpKind mlp = MlpKind::kGated;
  NormKind norm = NormKind::kRmsNorm;
  AttnKind attention = AttnKind::kMha;
  std::string activation;  // hidden_act ("silu", "gelu_pytorch_tanh")
  bool causal = true;
  bool parallel_block = false;  // attention and MLP read the same input (GPT-J/NeoX/Phi/Falcon)
  bool qk_norm = false;         // per-head q/k norms (Qwen3, Gemma3)
  // The attention output is multiplied by sigmoid(gate) before o_proj, the
  // gate coming from q_proj's second half (Qwen3-Next Qwen3NextAttention).
  bool attn_output_gate = false;
  int64_t norms_per_layer = 2;   // norm sites per layer (Gemma2/3 use 4)
  bool cross_attention = false;  // T5 decoder
  // Image cross-attention layers (Mllama cross_attention_layers): of the
  // `layers`, these attend only to the vision tokens, not to the text, so they
  // cache keys/values of the images (VisionInput::cross_tokens_per_image
  // each) instead of the context's.
  int64_t image_cross_layers = 0;
  // How positions enter the model: "rope", "alibi" (BLOOM, Falcon-RW: a per-head
  // bias added to the attention scores, which rules out some fused kernels),
  // "learned" (GPT-2, OPT, BERT: a position embedding table), "relative_bias"
  // (T5: bucketed bias embedding). "" when the adapter does not say.
  std::string position_encoding;

  // Mixture of experts. moe_layers of the `layers` are sparse.
  int64_t moe_layers = 0;
  int64_t experts = 0;
  int64_t experts_per_token = 0;
  int64_t expert_intermediate = 0;
  int64_t shared_expert_intermediate = 0;  // total width of always-on shared experts (0 = none)
  // The router runs in fp32 on an fp32 copy of the hidden state and scores
  // with a sigmoid (DeepseekV3TopkRouter, Glm4MoeTopkRouter:
  // F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))
  // then .sigmoid()), instead of a Linear in the model dtype and a softmax.
  bool router_fp32 = false;

  // Multi-head latent attention (DeepSeek V2/V3).
  int64_t q_lora_rank = 0;  // 0 = direct q_proj
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;

  // Gemma 2 soft-caps its attention scores and its output logits (cap *
  // tanh(x / cap); configuration_gemma2.py attn_logit_softcapping=50.0,
  // final_logit_softcapping=30.0): tanh keeps its output for backward, one
  // more tensor the size of the scores (under eager attention) or the logits.
  bool attn_softcap = false;
  bool final_softcap = false;

  // Sliding-window attention: `sliding_layers` of the layers attend to at most
  // `sliding_window` previous tokens (0 = none).
  int64_t sliding_window = 0;
  int64_t sliding_layers = 0;

  // State-space mixers (Mamba, modeling_mamba.py MambaMixer; Mamba-2,
  // modeling_mamba2.py Mamba2Mixer; LFM2's gated short convolution,
  // modeling_lfm2.py Lfm2ShortConv): `ssm_layers` of the layers mix tokens
  // with a recurrent mixer instead of attention (or beside it, see
  // ssm_with_attention); each keeps a fixed-size state per sequence (a conv
  // window of conv_kernel inputs over ssm_conv_dim channels and an inner x
  // state matrix) instead of a KV cache.
  SsmKind ssm_kind = SsmKind::kMamba;
  int64_t ssm_layers = 0;
  int64_t ssm_inner = 0;        // intermediate_size (expand x hidden); LFM2: hidden
  int64_t ssm_state = 0;        // state_size N (0: a convolution alone, LFM2)
  int64_t ssm_conv_kernel = 0;  // conv_kernel (LFM2: conv_L_cache)
  int64_t ssm_dt_rank = 0;      // time_step_rank (Mamba only)
  // Channels of the depthwise conv and of its cached window: Mamba and LFM2
  // convolve the inner width; Mamba-2 convolves x, B and C together
  // (intermediate + 2 x n_groups x state_size). 0 = ssm_inner.
  int64_t ssm_conv_dim = 0;
  int64_t ssm_heads = 0;   // Mamba-2 num_heads (dt, A, D per head); gated DeltaNet value heads
  int64_t ssm_groups = 0;  // Mamba-2 n_groups (B and C per group); gated DeltaNet key heads
  // Every SSM layer also runs attention in parallel on the same input
  // (Falcon-H1): those layers keep a KV cache as well. Otherwise the
  // attention layers are the `layers - ssm_layers` others.
  bool ssm_with_attention = false;
  // Layers whose cache holds the conv / SSM state, when not the SSM layers:
  // transformers' Lfm2HybridConvCache allocates a conv window on every layer,
  // attention layers included. 0 = ssm_layers.
  int64_t ssm_state_layers = 0;
  // Per layer, whether it runs the SSM mixer (hybrids that interleave them:
  // Jamba's attn_layer_period, LFM2's layer_types). Empty: the SSM layers are
  // the top ssm_layers of the stack (all of them in a pure SSM model).
  std::vector<bool> ssm_at;
  int64_t conv_dim() const { return ssm_conv_dim > 0 ? ssm_conv_dim : ssm_inner; }
  int64_t state_layers() const { return ssm_state_layers > 0 ? ssm_state_layers : ssm_layers; }
  // Layers that keep keys and values.
  int64_t attention_layers() const;
  bool ssm_layer(int64_t l) const;
  // Whether layer `l` holds the groups of `set` (MoE layers are the top
  // moe_layers, as everywhere in the estimator).
  bool carries(LayerSet set, int64_t l) const;
  // How many of the layers [begin, begin + n) hold the groups of `set`.
  int64_t count(LayerSet set, int64_t begin, int64_t n) const;

  // Gemma 3n (modeling_gemma3n.py Gemma3nTextDecoderLayer): the residual
  // stream is carried as altup_inputs stacked copies of the hidden state
  // (Gemma3nTextAltUp, 0 = a single stream); LAuReL's low-rank residual of
  // laurel_rank (Gemma3nTextLaurelBlock); each layer mixes in its slice of
  // the per-layer embeddings, per_layer_input wide (hidden_size_per_layer_input);
  // sparse_mlp_layers of the layers keep a gaussian top-k of the gate
  // (activation_sparsity_pattern > 0, Gemma3nTextMLP._gaussian_topk).
  int64_t altup_inputs = 0;
  int64_t laurel_rank = 0;
  int64_t per_layer_input = 0;
  int64_t sparse_mlp_layers = 0;
  // KV sharing (Gemma3nTextAttention.is_kv_shared_layer): the last
  // kv_shared_layers layers reuse the keys and values of the last earlier
  // layer of their attention type and cache none of their own;
  // kv_shared_sliding of them are sliding-window layers.
  int64_t kv_shared_layers = 0;
  int64_t kv_shared_sliding = 0;

  double dropout = 0.0;  // attention / residual dropout probability used in training
  // Megatron sequence parallel on a tensor-parallel rank: norms, residual
  // dropouts and layer inputs are split across this many ranks (1 = none).
  int64_t hidden_split = 1;
};

struct VisionInput {
  int64_t image_size = 0;
  int64_t patch_size = 0;
  int64_t tokens_per_image = 0;          // tokens the language model sees per image
  int64_t encoder_tokens_per_image = 0;  // tokens inside the vision tower
  // Qwen2-VL style native resolution: tokens depend on each image's size, so
  // image_size and both token counts stay 0. An H x W image gives
  // (H/patch_size)*(W/patch_size) tower tokens; the merger folds
  // spatial_merge^2 of them into one language-model token.
  bool dynamic_resolution = false;
  int64_t spatial_merge = 1;
  // Cross-attention VLMs (Mllama): vision tokens each image-cross-attention
  // layer keeps keys/values of, per image (tiles x patches incl. CLS).
  int64_t cross_tokens_per_image = 0;
};

// What a safetensors checkpoint holds, from its tensor list (vram/checkpoint.h):
// the bytes and elements as stored, the parameters they stand for once
// dequantised, and what the inventory could not place. `present` is false for
// a model built from config.json alone.
struct CheckpointSummary {
  bool present = false;
  int64_t tensors = 0;
  int64_t stored_bytes = 0;     // sum of every tensor's bytes as stored (scales, zero points, buffers included)
  int64_t stored_elements = 0;  // sum of every tensor's elements (the Hub's per-dtype "parameters")
  std::map<std::string, int64_t> elements_by_dtype;
  int64_t params = 0;        // dequantised parameters (packed 4-bit values unpacked; scales and buffers not counted)
  std::string quantization;  // "", "gptq", "awq", "fp8", "mxfp4", "bnb_4bit", "bnb_8bit", "compressed_tensors"
  // Tensor parallel splits Linear and embedding weights and replicates the rest
  // (vLLM ColumnParallelLinear / RowParallelLinear / VocabParallelEmbedding).
  int64_t split_bytes = 0;
  int64_t replicated_bytes = 0;
  std::vector<std::string> unplaced;  // tensor names no naming pattern placed
  int64_t unplaced_params = 0;
  std::vector<std::string> buffers;  // stored buffers (not parameters): rotary inv_freq, routing-bias corrections
  int64_t buffer_elements = 0;
  int64_t extra_layer_params = 0;          // layers past config num_hidden_layers (multi-token-prediction heads)
  int64_t declared_total_size = -1;        // index metadata.total_size, -1 if absent
  int64_t declared_total_parameters = -1;  // index metadata.total_parameters, -1 if absent
};

struct ModelSpec {
  std::string model_type;    // config.json model_type
  std::string family;        // adapter that built it
  std::string architecture;  // architectures[0] or the class transformers would pick
  std::string torch_dtype;   // checkpoint dtype, "" if unknown
  // config.json quantization_config: how the checkpoint's weights are stored
  // ("fp8", "awq", "gptq", "mxfp4", "compressed-tensors", ...; "" = not
  // quantised), and for compressed-tensors the weights' bits and type.
  std::string quant_method;
  int64_t quant_bits = 0;
  bool quant_float = false;

  bool exact = true;                 // the count is exact for this config
  std::vector<std::string> inexact;  // why not, when exact == false
  std::vector<std::string> notes;    // defaults applied, assumptions

  int64_t vocab = 0;
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 0;

  LayerStack text;                       // the language model (decoder or encoder-only)
  std::vector<LayerStack> extra_stacks;  // vision tower, T5 encoder
  VisionInput vision;                    // set for VLMs
  // Encoder-decoders whose encoder input has a fixed length (Whisper: 1500
  // audio positions for a 30 s window): the decoder's cross-attention caches
  // that many positions per sequence, whatever the prompt. 0 = the encoder
  // reads the prompt (T5).
  int64_t encoder_positions = 0;

  // Inputs whose tower activations the estimator does not model (Gemma 3n's
  // timm MobileNetV5 and USM audio encoder): a request with images then fails
  // with `unsupported` and this reason instead of leaving the tower out.
  std::string media_unsupported;

  std::vector<ParamGroup> groups;
  CheckpointSummary checkpoint;  // set when the request carries model.safetensors or model.gguf
  // The request's model.gguf as llama.cpp loads it, and its model.mmproj
  // (a vision projector file); null otherwise.
  std::shared_ptr<const gguf::Model> gguf;
  std::shared_ptr<const gguf::Model> mmproj;

  int64_t params_total() const;
  int64_t params_active() const;  // per token (MoE: routed experts scaled)
  std::map<std::string, int64_t> params_by_component() const;
  // Parameters of nn.Linear modules whose leaf name is in `names` (or all
  // linears but lm_head for "all-linear"), restricted to `stack` when non-empty.
  const LayerStack* stack(const std::string& name) const;
  // Layers of the text stack a per-layer group repeats over (all, the sparse or
  // the dense ones); 0 for groups that are not per layer (embeddings, final
  // norm, lm_head, other stacks, single-layer groups). A group holds
  // instances / layer_span(g) copies per layer it covers.
  int64_t layer_span(const ParamGroup& g) const;
};

}  // namespace vram

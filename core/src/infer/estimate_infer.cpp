// Serving a model: weights in their serving format, the KV cache, prefill
// activations and logits (DESIGN.md §3 "Inference"; research §7), for
// transformers' generate (dynamic cache), LitGPT's generate (preallocated
// cache) or a paged engine (vLLM), on one GPU or sharded with tensor
// parallelism.
#include "infer/estimate_infer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "format.h"
#include "memory/bytes.h"
#include "memory/overheads.h"
#include "vram/gpus.h"
#include "vram/status.h"

namespace vram::infer {

namespace {

using memory::ceil_div;
// Whole bytes of a fractional figure, checked (memory/bytes.h).
int64_t ceil_bytes(double x, std::string_view what = "a memory figure") { return bytes::ceil(x, what); }
constexpr const char* kKv = "the KV cache";
constexpr const char* kWeights = "the weights";

struct Format {
  const char* name;
  double linear_bytes;  // bytes per Linear weight value
  int64_t group;        // values per scale group (0: one scale per output row)
  double scale_bytes;   // bytes per group (scale + zero point)
  const char* source;
  bool experts_only = false;  // quantises the routed experts only (the rest stays 16-bit)
  // bitsandbytes 4-bit: a multi-token forward dequantises the whole weight
  // (bitsandbytes/autograd/_functions.py matmul_4bit: gemv_4bit only when
  // A.numel() == A.shape[-1], i.e. one token; otherwise MatMul4Bit.forward
  // runs F.linear(A, F.dequantize_4bit(B, quant_state).to(A.dtype).t())).
  bool bnb4 = false;
};

// Serving formats.
// - fp8: float8_e4m3 weights with one fp32 scale per output row (vLLM
//   Fp8LinearMethod per-channel; per-tensor scales are smaller still).
// - int8: bitsandbytes LLM.int8 Int8Params keeps CB (int8) and SCB (one fp32
//   absmax per output row).
// - GPTQ/AWQ int4: packed 4-bit values plus an fp16 scale and a 4-bit zero
//   point per group of 128 (AutoGPTQ / AutoAWQ default group_size).
// - NF4: one fp32 absmax per 64 values; double quantisation 8-bit absmax plus
//   an fp32 scale per 256 blocks (QLoRA paper §3).
const Format kFormats[] = {
    {"fp32", 4.0, 0, 0.0, "fp32"},
    {"bf16", 2.0, 0, 0.0, "bf16"},
    {"fp16", 2.0, 0, 0.0, "fp16"},
    {"fp8", 1.0, 0, 4.0, "fp8 e4m3 + fp32 scale per row"},
    {"int8", 1.0, 0, 4.0, "LLM.int8: int8 + fp32 absmax per row"},
    {"int4", 0.5, 128, 2.5, "4-bit, group 128: fp16 scale + 4-bit zero"},
    {"gptq", 0.5, 128, 2.5, "GPTQ 4-bit, group 128"},
    {"awq", 0.5, 128, 2.5, "AWQ 4-bit, group 128"},
    {"nf4", 0.5, 64, 4.0, "NF4, fp32 absmax per 64", false, true},
    {"nf4-dq", 0.5, 64, 1.0 + 4.0 / 256.0, "NF4 + double-quantised absmax", false, true},
    // - MXFP4 (OCP Microscaling spec v1.0): blocks of 32 e2m1 values (16 B)
    //   with one e8m0 scale byte, 4.25 bits per value. The gpt-oss checkpoints
    //   store only the MoE experts' weights this way ("we quantize the MoE
    //   weights to MXFP4 format ... 4.25 bits per parameter", OpenAI gpt-oss
    //   model card; transformers integrations/mxfp4.py loads `*_blocks` /
    //   `*_scales` and keeps them packed with the Triton kernels), attention,
    //   router, embeddings and biases in bf16.
    {"mxfp4", 0.5, 32, 1.0, "MXFP4 experts (e2m1 + e8m0 scale per 32), the rest bf16", true},
    // The checkpoint's own tensors, byte for byte (model.safetensors): sized
    // from its stored bytes, not per value (weights_per_gpu).
    {"checkpoint", 0.0, 0, 0.0, "as the checkpoint stores them"},
};

const Format* find_format(const std::string& n) {
  for (const auto& f : kFormats) {
    if (n == f.name) return &f;
  }
  if (n == "bfloat16") return find_format("bf16");
  if (n == "float16") return find_format("fp16");
  if (n == "float32") return find_format("fp32");
  return nullptr;
}

std::string names() {
  std::string s;
  for (const auto& f : kFormats) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

double kv_elem_bytes(const std::string& n) {
  if (n == "bf16" || n == "fp16" || n == "auto") return 2;
  if (n == "fp32") return 4;
  if (n == "fp8" || n == "fp8_e4m3" || n == "fp8_e5m2" || n == "int8") return 1;
  if (n == "int4") return 0.5;
  return -1;
}

// Everything that does not depend on the batch and the context.
struct Fixed {
  int64_t weights = 0;
  int64_t cublas = 0;
  int64_t context = 0;
  int64_t graphs = 0;  // CUDA graphs (vLLM)
  int64_t nccl = 0;    // non-torch memory of tensor parallelism
};

}  // namespace

double kv_bytes_per_token(const ModelSpec& m, double kv_elem, bool hf_decompressed, int64_t context) {
  const LayerStack& t = m.text;
  double per_layer_full = 0;
  if (t.attention == AttnKind::kMla && !hf_decompressed) {
    per_layer_full = static_cast<double>(t.kv_lora_rank + t.qk_rope_head_dim) * kv_elem;
  } else if (t.attention == AttnKind::kMla) {
    per_layer_full = static_cast<double>(t.heads) * (t.head_dim + t.v_head_dim) * kv_elem;
  } else {
    per_layer_full = 2.0 * t.kv_heads * t.head_dim * kv_elem;
  }
  // Sliding-window layers keep at most `window` tokens: averaged per token of
  // a `context`-long sequence.
  // Gemma 3n's KV-shared layers (Gemma3nTextAttention: is_kv_shared_layer
  // layers skip past_key_values.update and read the shared_layers entry of
  // the last earlier layer of their type) cache nothing of their own.
  const int64_t shared = std::min(t.kv_shared_layers, t.layers);
  const int64_t sliding =
      t.sliding_window > 0 ? std::max<int64_t>(std::min(t.sliding_layers, t.layers) - t.kv_shared_sliding, 0) : 0;
  const double sliding_share =
      context > 0 ? std::min<double>(1.0, static_cast<double>(t.sliding_window) / static_cast<double>(context)) : 1.0;
  // State-space layers (Mamba) cache no keys or values; Falcon-H1's run
  // attention beside the mixer and do (LayerStack::attention_layers); image
  // cross-attention layers (Mllama) cache the images' instead
  // (image_serving).
  const int64_t attn_layers = t.attention_layers() - std::min(t.image_cross_layers, t.attention_layers()) -
                              std::min(shared, t.attention_layers());
  return per_layer_full * (static_cast<double>(attn_layers - sliding) + static_cast<double>(sliding) * sliding_share);
}

double ssm_state_bytes_per_sequence(const ModelSpec& m, double elem) {
  // transformers MambaCache (cache_utils.py): per layer conv_states
  // [batch, intermediate, conv_kernel] and ssm_states [batch, intermediate,
  // state_size], both in the model's dtype, allocated once for the batch and
  // updated in place; their size does not grow with the context (Gu & Dao
  // 2023 §3.4: constant-size recurrent state at inference).
  // Mamba2Cache (modeling_mamba2.py): conv_states [layers, batch,
  // intermediate + 2 x n_groups x state_size, conv_kernel] and ssm_states
  // [layers, batch, num_heads, head_dim, state_size] in the model's dtype;
  // num_heads x head_dim = intermediate, so the SSM state is again
  // intermediate x state_size. The conv window spans conv_dim channels.
  // Lfm2HybridConvCache (modeling_lfm2.py) allocates conv_cache [batch,
  // hidden, conv_L_cache] for each of num_hidden_layers, attention layers
  // included (LayerStack::state_layers), in the model's dtype.
  // Gated DeltaNet (modeling_qwen3_next.py Qwen3NextGatedDeltaNet): the
  // conv window over q, k and v (conv_dim x conv_kernel, F.pad of the model
  // dtype input) and a recurrent state of value heads x key x value per
  // layer, which the chunk kernel returns in fp32 (torch_chunk_gated_delta_rule
  // computes it in float32; fla's chunk_gated_delta_rule returns final_state
  // in fp32) and the cache keeps as returned: ssm_inner (value width) x
  // ssm_state (key head width) x 4 B.
  const LayerStack& t = m.text;
  const double state_elem = t.ssm_kind == SsmKind::kGatedDeltaNet ? 4.0 : elem;
  return static_cast<double>(t.state_layers()) *
         (static_cast<double>(t.conv_dim()) * static_cast<double>(t.ssm_conv_kernel) * elem +
          static_cast<double>(t.ssm_inner) * static_cast<double>(t.ssm_state) * state_elem);
}

double ssm_prefill_bytes_per_token(const LayerStack& t, int64_t tp) {
  // One mixer's working set while a prompt runs through it (no grad), in
  // 16-bit; in_proj is column parallel, so the inner widths split by tp.
  const double I = static_cast<double>(t.ssm_inner) / static_cast<double>(tp);
  const double h2 = 2.0 * (2.0 * static_cast<double>(t.hidden));  // the layer input and the norm output
  switch (t.ssm_kind) {
    case SsmKind::kMamba:
    case SsmKind::kJambaMamba:
      // mamba_ssm selective_scan_fn through HF's cuda_kernels_forward:
      // in_proj's xz (2 x intermediate), the conv output, dt and the scan
      // output (intermediate each) and x_proj's output.
      return h2 + 2.0 * (5.0 * I + static_cast<double>(t.ssm_dt_rank + 2 * t.ssm_state));
    case SsmKind::kMamba2: {
      // modeling_mamba2.py cuda_kernels_forward (no cache or generation):
      // in_proj's zxbcdt (intermediate + conv_dim + heads), the conv output
      // over conv_dim (causal_conv1d_fn), mamba_chunk_scan_combined's output
      // and the gated norm's output (intermediate each).
      const double conv = static_cast<double>(t.conv_dim()) / static_cast<double>(tp);
      const double heads = static_cast<double>(t.ssm_heads) / static_cast<double>(tp);
      return h2 + 2.0 * ((I + conv + heads) + conv + 2.0 * I);
    }
    case SsmKind::kShortConv:
      // modeling_lfm2.py Lfm2ShortConv.cuda_kernels_forward: in_proj's BCx
      // (3 x hidden), B * x, the conv output and C * conv_out (hidden each).
      return h2 + 2.0 * (3.0 * I + 3.0 * I);
    case SsmKind::kGatedDeltaNet: {
      // modeling_qwen3_next.py Qwen3NextGatedDeltaNet.forward: in_proj_qkvz's
      // and in_proj_ba's outputs (conv_dim + value width + 2 x value heads),
      // the concatenated q/k/v and the conv output (conv_dim each), q and k
      // repeated to the value heads and l2-normalised in the kernel (2 x 2 x
      // value heads x key width), the kernel output, the gate copy and the
      // gated norm's output (value width each).
      const double conv = static_cast<double>(t.conv_dim()) / static_cast<double>(tp);
      const double heads = static_cast<double>(t.ssm_heads) / static_cast<double>(tp);
      const double qk = 2.0 * heads * static_cast<double>(t.ssm_state);
      return h2 + 2.0 * ((conv + I + 2.0 * heads) + 2.0 * conv + 2.0 * qk + 3.0 * I);
    }
  }
  return h2;
}

namespace {

// The serving job's costs that do not depend on the batch and the context,
// and the per-token ones: weights per GPU, KV / cross-attention / prefill
// bytes per token, what lives outside the tensors.
struct Serving {
  const Format* fmt = nullptr;
  double kv_elem = 2;
  int64_t tp = 1;
  bool vllm = false;
  bool litgpt = false;      // LitGPT generate/base.py
  bool quant_head = false;  // lm_head quantised with the other Linears
  bool hf_mla = false;      // transformers caches MLA's decompressed heads
  ModelSpec sharded;        // heads and KV heads of one tensor-parallel rank
  double kv_tok_full = 0;
  double cross_tok = 0;
  double pre_tok = 0;
  double ssm_seq = 0;        // state-space cache bytes per sequence (Mamba), on one rank
  double image_seq = 0;      // image cross-attention keys/values per sequence (Mllama), on one rank
  int64_t image_tokens = 0;  // language-model tokens the prompt's images add to each sequence
  double vision_pre = 0;     // the vision / audio encoder's prefill working set per sequence
  // bitsandbytes 4-bit: 16-bit copies of the largest quantised weight that a
  // multi-token forward holds while it dequantises (0 for other formats).
  int64_t dequant = 0;
  Fixed fx;
  double frag = 0;
  const GpuInfo* gpu = nullptr;
  double kv_tok_at(int64_t ctx) const { return kv_bytes_per_token(sharded, kv_elem, hf_mla, ctx); }
};

// Weights per GPU. Tensor parallel splits every Linear (column / row
// parallel) and the vocabulary-parallel embeddings and lm_head; norms are
// replicated (Megatron-LM; vLLM ColumnParallelLinear / RowParallelLinear /
// VocabParallelEmbedding).
int64_t weights_per_gpu(const ModelSpec& m, const Format& fmt, int64_t tp, bool quant_head) {
  if (std::string(fmt.name) == "checkpoint") {
    if (!m.checkpoint.present) {
      fail(errc::kInconsistent, "infer.weights_dtype",
           "infer.weights_dtype \"checkpoint\" sizes the weights as a checkpoint stores them: it needs "
           "model.safetensors (the checkpoint's tensor list)");
    }
    return ceil_div(m.checkpoint.split_bytes, tp) + m.checkpoint.replicated_bytes;
  }
  const int64_t hp = fmt.linear_bytes >= 2.0 ? static_cast<int64_t>(fmt.linear_bytes) : 2;
  int64_t weights = 0;
  for (const auto& g : m.groups) {
    const bool split = g.kind == ModuleKind::kLinear || g.kind == ModuleKind::kEmbedding;
    const int64_t share = split ? tp : 1;
    const bool quant = fmt.linear_bytes < 2.0 && g.kind == ModuleKind::kLinear &&
                       (quant_head || g.component != std::string(comp::kLmHead)) &&
                       (!fmt.experts_only || g.component == std::string(comp::kExperts));
    if (!quant) {
      weights = bytes::add(weights, ceil_div(bytes::mul(hp, g.total(), kWeights), share), kWeights);
      continue;
    }
    const int64_t values = bytes::mul(g.in_features, g.out_features, kWeights);
    const int64_t groups = fmt.group > 0 ? ceil_div(values, fmt.group) : g.out_features;
    const int64_t one =
        ceil_bytes(static_cast<double>(values) * fmt.linear_bytes + static_cast<double>(groups) * fmt.scale_bytes,
                   kWeights) +
        (g.bias ? 2 * g.out_features : 0);
    weights = bytes::add(weights, ceil_div(bytes::mul(one, g.instances, kWeights), share), kWeights);
  }
  return weights;
}

// Images in the prompt (infer.images_per_prompt). Mllama's cross-attention
// layers (modeling_mllama.py MllamaTextCrossAttention) project the vision
// tokens to keys and values once, at prefill, and keep them in the cache
// (past_key_value.update for the layer) for every decoding step: per sequence
// images x cross_tokens_per_image x image_cross_layers x 2 x kv heads x
// head_dim, whatever the context length. The vision tower runs once per
// image at prefill; its largest layer's working set over the image's tower
// tokens (residual, norm output, q/k/v/out and fc1 / activation outputs in
// 16-bit; SDPA, no score matrix) is held while it runs.
void image_serving(const Request& req, Serving& sv) {
  const ModelSpec& m = req.model;
  const int64_t images = req.infer.images_per_prompt;
  if (images <= 0) return;
  if (!m.media_unsupported.empty()) {
    fail(errc::kUnsupported, "infer.images_per_prompt",
         "infer.images_per_prompt (" + std::to_string(images) + ") with " + vram::quoted(m.model_type) + ": " +
             m.media_unsupported + "; estimate text-only prompts (images_per_prompt 0)");
  }
  const LayerStack* vs = m.stack("vision");
  if (vs == nullptr) {
    fail(errc::kInconsistent, "infer.images_per_prompt",
         "infer.images_per_prompt (" + std::to_string(images) + ") needs a vision-language model; " +
             vram::quoted(m.model_type) + " has no vision tower");
  }
  const LayerStack& t = m.text;
  if (t.image_cross_layers > 0) {
    if (sv.vllm || sv.litgpt) {
      fail(errc::kUnsupported, "infer.engine",
           "infer.engine " + vram::quoted(req.infer.engine) +
               " with image cross-attention layers (Mllama) is not modelled: use infer.engine \"hf\"");
    }
    sv.image_seq = static_cast<double>(images) * static_cast<double>(m.vision.cross_tokens_per_image) *
                   static_cast<double>(t.image_cross_layers) * 2.0 * static_cast<double>(sv.sharded.text.kv_heads) *
                   static_cast<double>(t.head_dim) * sv.kv_elem;
  }
  // Token-prefix VLMs (LLaVA, PaliGemma, Gemma 3, Idefics3): each image
  // becomes tokens_per_image language-model tokens in the prompt, on top of
  // context_len's text; dynamic-resolution towers (Qwen2-VL) give a count
  // that depends on each image's size, so the request counts them itself.
  sv.image_tokens = bytes::mul(images, m.vision.tokens_per_image, "image tokens per sequence");
  const int64_t tower_tokens = m.vision.encoder_tokens_per_image;
  const double vis_tok =
      2.0 * (6.0 * static_cast<double>(vs->hidden)) + 2.0 * 2.0 * static_cast<double>(vs->intermediate);
  sv.vision_pre = vis_tok * static_cast<double>(tower_tokens) * static_cast<double>(images);
}

// Validates the serving fields (Failure names the field) and computes the costs.
Serving serving(const Request& req) {
  const ModelSpec& m = req.model;
  const InferOptions& o = req.infer;
  const LayerStack& t = m.text;
  Serving sv;
  sv.fmt = find_format(o.weights_dtype);
  if (sv.fmt == nullptr) {
    fail(errc::kUnknownValue, "infer.weights_dtype",
         "infer.weights_dtype " + vram::quoted(o.weights_dtype) + " is not one of: " + names());
  }
  if (sv.fmt->experts_only && t.experts == 0) {
    fail(errc::kInconsistent, "infer.weights_dtype",
         "infer.weights_dtype " + vram::quoted(o.weights_dtype) +
             " stores the routed experts in 4 bits (as gpt-oss ships); this model has no experts");
  }
  sv.kv_elem = kv_elem_bytes(o.kv_dtype);
  if (sv.kv_elem < 0) {
    fail(errc::kUnknownValue, "infer.kv_dtype",
         "infer.kv_dtype " + vram::quoted(o.kv_dtype) + " is not one of: bf16, fp16, fp32, fp8, int8, int4");
  }
  sv.tp = req.parallel.tp;
  const int64_t tp = sv.tp;
  if (t.heads % tp != 0) {
    fail(errc::kInconsistent, "parallel.tp",
         "parallel.tp (" + std::to_string(tp) + ") must divide the attention heads (" + std::to_string(t.heads) + ")");
  }
  sv.vllm = o.engine == "vllm";
  sv.litgpt = o.engine == "litgpt";
  // transformers' bitsandbytes integration keeps lm_head in 16-bit
  // (integrations/bitsandbytes.py get_keys_to_not_convert: the output
  // embeddings); Lightning's BitsandbytesPrecision, which LitGPT uses for
  // --quantize, replaces every torch.nn.Linear, lm_head included
  // (lightning_fabric/plugins/precision/bitsandbytes.py module_init_context:
  // _ClassReplacementContextManager({"torch.nn.Linear": linear_cls})).
  sv.quant_head = sv.litgpt;
  sv.fx.weights = weights_per_gpu(m, *sv.fmt, tp, sv.quant_head);
  if (sv.fmt->bnb4) {
    // The largest quantised Linear of one tensor-parallel rank, dequantised
    // to 16 bits. LitGPT quantises through Lightning's _Linear4bit.quantize,
    // which casts the weight to fp16 first (weight.contiguous().to(device,
    // dtype=torch.half)), so quant_state.dtype is fp16 and MatMul4Bit's
    // .to(A.dtype) makes a second, bf16 copy while the fp16 one is alive:
    // two copies. bitsandbytes >= 0.42 Params4bit._quantize keeps the
    // weight's own dtype (w = self.data.contiguous().to(device)), so under
    // transformers the cast is a no-op: one copy.
    int64_t largest = 0;
    for (const auto& g : m.groups) {
      if (g.kind != ModuleKind::kLinear) continue;
      if (!sv.quant_head && g.component == std::string(comp::kLmHead)) continue;
      largest = std::max(largest, ceil_div(g.in_features * g.out_features, tp));
    }
    sv.dequant = (sv.litgpt ? 2 : 1) * 2 * largest;
  }
  // KV heads per rank: max(1, kv_heads / tp) (vLLM get_num_kv_heads: heads
  // are replicated when tp exceeds them). MLA's latent is replicated.
  sv.sharded = m;
  sv.sharded.text.kv_heads = std::max<int64_t>(1, t.kv_heads / tp);
  sv.sharded.text.heads = t.heads / tp;
  sv.hf_mla = !sv.vllm && t.attention == AttnKind::kMla;
  sv.kv_tok_full = kv_bytes_per_token(sv.sharded, sv.kv_elem, sv.hf_mla, 0);
  // Encoder-decoder: every decoder layer caches the encoder's keys and
  // values for cross-attention (T5 past_key_values, 4 tensors per layer).
  sv.cross_tok =
      t.cross_attention ? 2.0 * (t.heads / tp) * t.head_dim * sv.kv_elem * static_cast<double>(t.layers) : 0.0;
  // Prefill working set of one layer (the forward frees each layer's
  // intermediates): residual + norm output + q/k/v/out + the MLP's
  // gate/up/act outputs, in 16-bit.
  const int64_t inter = std::max(t.intermediate, t.expert_intermediate * std::max<int64_t>(t.experts_per_token, 1));
  sv.pre_tok = 2.0 * (2.0 * t.hidden + 2.0 * t.heads / tp * t.head_dim + 2.0 * sv.sharded.text.kv_heads * t.head_dim) +
               2.0 * 3.0 * static_cast<double>(inter) / static_cast<double>(tp);
  if (t.ssm_layers > 0) {
    if (sv.vllm) {
      fail(errc::kUnsupported, "infer.engine",
           "infer.engine \"vllm\" with state-space (Mamba) layers is not modelled yet: vLLM keeps their states in "
           "its own cache blocks; use infer.engine \"hf\"");
    }
    // A state-space layer's prefill working set (ssm_prefill_bytes_per_token);
    // a hybrid's attention layers may need more.
    const double ssm_tok = ssm_prefill_bytes_per_token(t, tp);
    sv.pre_tok = std::max(t.attention_layers() > 0 ? sv.pre_tok : 0.0, ssm_tok);
    const double elem = sv.fmt->linear_bytes >= 2.0 ? sv.fmt->linear_bytes : 2.0;
    sv.sharded.text.ssm_inner = memory::ceil_div(t.ssm_inner, tp);
    sv.sharded.text.ssm_conv_dim = memory::ceil_div(t.conv_dim(), tp);
    sv.ssm_seq = ssm_state_bytes_per_sequence(sv.sharded, elem);
  }
  image_serving(req, sv);
  // A fixed-length encoder (Whisper) runs once per sequence at prefill over
  // its encoder_positions; its largest layer's working set as for a tower.
  if (const LayerStack* es = m.stack("encoder"); es != nullptr && m.encoder_positions > 0) {
    const double enc_tok =
        2.0 * (6.0 * static_cast<double>(es->hidden)) + 2.0 * 2.0 * static_cast<double>(es->intermediate);
    sv.vision_pre = std::max(sv.vision_pre, enc_tok * static_cast<double>(m.encoder_positions));
  }
  // ---- outside the tensors ------------------------------------------------
  sv.gpu = req.gpu.name.empty() ? nullptr : find_gpu(req.gpu.name);
  sv.fx.cublas = memory::cublas_bytes(req, 1);
  sv.fx.context = memory::context_bytes(req);
  // llm-d config_explorer on H100 measured vLLM's non-torch memory at
  // 0.13 GiB for TP=1 and 0.55 GiB for TP=2 (research §2.4, §7.4): the
  // difference is NCCL's buffers.
  if (tp > 1) sv.fx.nccl = req.overheads.nccl_bytes.value_or((int64_t{55} << 30) / 100 - (int64_t{13} << 30) / 100);
  // CUDA graphs captured after vLLM's profiling: llm-d measured -0.45 to
  // +0.39 GiB across three models; 256 MiB is the prior.
  if (sv.vllm && o.cuda_graphs) sv.fx.graphs = int64_t{256} << 20;
  sv.frag = req.overheads.fragmentation.value_or(0.0);
  return sv;
}

Phase make_phase(const Request& req, const Serving& sv, const char* key, const char* label,
                 std::map<std::string, int64_t> parts, int64_t outside_extra) {
  const Fixed& fx = sv.fx;
  Phase p;
  p.key = key;
  p.label = label;
  p.parts = std::move(parts);
  p.parts["cublas_workspace"] = fx.cublas;
  p.parts["misc"] = req.overheads.misc_bytes;
  constexpr const char* kPhase = "the memory of one phase";
  for (const auto& [k, v] : p.parts) p.allocated_bytes = bytes::add(p.allocated_bytes, v, kPhase);
  p.reserved_bytes =
      bytes::add(p.allocated_bytes, ceil_bytes(sv.frag * static_cast<double>(p.allocated_bytes), kPhase), kPhase);
  p.parts["allocator"] = p.reserved_bytes - p.allocated_bytes;
  p.parts["cuda_context"] = fx.context;
  if (fx.nccl > 0) p.parts["nccl"] = fx.nccl;
  if (outside_extra > 0) p.parts["cuda_graphs"] = outside_extra;
  p.device_bytes =
      bytes::add(bytes::add(p.reserved_bytes, fx.context, kPhase), bytes::add(fx.nccl, outside_extra, kPhase), kPhase);
  return p;
}

struct Sizes {
  int64_t kv = 0;
  int64_t ssm = 0;  // state-space cache (Mamba): fixed per sequence
  int64_t prefill = 0;
  int64_t logits = 0;
  int64_t mask = 0;  // LitGPT's causal mask cache
};

// bitsandbytes 4-bit weights dequantised by a forward over `tokens` tokens
// per sequence: one token per sequence at batch 1 takes gemv_4bit, anything
// larger dequantises (matmul_4bit; see Format::bnb4).
int64_t dequant_bytes(const Serving& sv, int64_t batch, int64_t tokens) { return batch * tokens > 1 ? sv.dequant : 0; }

// transformers generate: a dynamic cache grows to the full context;
// DynamicLayer.update concatenates, so one layer's cache is briefly held
// twice. Prefill runs the whole prompt at once; the logits of the last
// position only (logits_to_keep=1), upcast to fp32 for sampling.
Sizes hf_generate(Estimate& e, const Request& req, const Serving& sv) {
  const InferOptions& o = req.infer;
  const int64_t B = o.batch;
  const int64_t ctx = o.context_len + sv.image_tokens;
  const int64_t prompt = (o.prompt_len > 0 ? o.prompt_len : o.context_len) + sv.image_tokens;
  Sizes z;
  const int64_t tokens = bytes::mul(B, ctx, "tokens in the KV cache");
  const int64_t prompt_tokens = bytes::mul(B, prompt, "prompt tokens");
  // The encoder's length: the prompt (T5), or fixed (Whisper's 1500 audio positions).
  const int64_t enc_len = req.model.encoder_positions > 0 ? req.model.encoder_positions : prompt;
  z.kv = ceil_bytes((sv.kv_tok_at(ctx) * static_cast<double>(ctx) + sv.cross_tok * static_cast<double>(enc_len)) *
                        static_cast<double>(B),
                    kKv);
  z.ssm = ceil_bytes(sv.ssm_seq * static_cast<double>(B), "the state-space cache");
  const int64_t image_kv = ceil_bytes(sv.image_seq * static_cast<double>(B), kKv);
  z.kv = bytes::add(z.kv, image_kv, kKv);
  const int64_t cat_copy = ceil_bytes(
      // one layer's share; image cross-attention layers (Mllama) hold no text
      sv.kv_tok_full /
          static_cast<double>(std::max<int64_t>(req.model.text.layers - req.model.text.image_cross_layers, 1)) *
          static_cast<double>(tokens),
      kKv);
  z.prefill =
      ceil_bytes(std::max(sv.pre_tok * static_cast<double>(prompt_tokens), sv.vision_pre * static_cast<double>(B)),
                 "the prefill activations");
  z.logits = bytes::mul(B, ceil_div(req.model.vocab, sv.tp), 2 + 4, "the logits");
  const int64_t W = sv.fx.weights;
  e.phases.push_back(make_phase(req, sv, "weights_loaded", "weights loaded", {{"weights", W}}, 0));
  e.phases.push_back(make_phase(
      req, sv, "prefill", "prefill (prompt through the model)",
      {{"weights", W},
       {"kv_cache",
        bytes::add(ceil_bytes(sv.kv_tok_at(prompt) * static_cast<double>(prompt_tokens), kKv), image_kv, kKv)},
       {"ssm_state", z.ssm},
       {"activations", z.prefill},
       {"dequant", dequant_bytes(sv, B, prompt)},
       {"logits", z.logits}},
      0));
  e.phases.push_back(make_phase(req, sv, "decode", "decoding at full context",
                                {{"weights", W},
                                 {"kv_cache", bytes::add(z.kv, cat_copy, kKv)},
                                 {"ssm_state", z.ssm},
                                 {"dequant", dequant_bytes(sv, B, 1)},
                                 {"logits", z.logits}},
                                0));
  return z;
}

// LitGPT generate/base.py: GPT.set_kv_cache allocates every layer's KVCache
// (torch.zeros of batch x kv heads x max_seq_length x head_dim) before the
// prompt runs, and updates it in place with index_copy_, so there is no
// concatenation copy; max_seq_length is the prompt plus max_new_tokens.
// set_kv_cache also builds the causal mask cache (litgpt/model.py
// build_mask_cache: torch.tril of a max_seq_length^2 bool tensor, both alive
// while tril runs). GPT.forward applies lm_head to every prompt position, so
// the prefill's logits are batch x prompt x V in 16-bit; sample() takes the
// last position (counted in fp32 as transformers does, an upper bound).
Sizes litgpt_generate(Estimate& e, const Request& req, const Serving& sv) {
  const InferOptions& o = req.infer;
  const int64_t B = o.batch;
  const int64_t ctx = o.context_len + sv.image_tokens;
  const int64_t prompt = (o.prompt_len > 0 ? o.prompt_len : o.context_len) + sv.image_tokens;
  const int64_t vocab = ceil_div(req.model.vocab, sv.tp);
  Sizes z;
  z.kv = ceil_bytes(sv.kv_tok_at(ctx) * static_cast<double>(ctx) * static_cast<double>(B), kKv);
  z.mask = bytes::mul(ctx, ctx, "the mask cache");
  z.prefill = ceil_bytes(sv.pre_tok * static_cast<double>(bytes::mul(B, prompt)), "the prefill activations");
  const int64_t prefill_logits = bytes::add(bytes::mul(bytes::mul(B, prompt, "the logits"), vocab, 2, "the logits"),
                                            bytes::mul(B, vocab, 4), "the logits");
  z.logits = bytes::mul(B, vocab, 2 + 4, "the logits");
  const int64_t W = sv.fx.weights;
  e.phases.push_back(
      make_phase(req, sv, "kv_cache_allocated", "KV cache and mask cache allocated",
                 {{"weights", W}, {"kv_cache", z.kv}, {"mask_cache", bytes::mul(2, z.mask, "the mask cache")}}, 0));
  e.phases.push_back(make_phase(req, sv, "prefill", "prefill (prompt through the model)",
                                {{"weights", W},
                                 {"kv_cache", z.kv},
                                 {"mask_cache", z.mask},
                                 {"activations", z.prefill},
                                 {"dequant", dequant_bytes(sv, B, prompt)},
                                 {"logits", prefill_logits}},
                                0));
  e.phases.push_back(make_phase(req, sv, "decode", "decoding at full context",
                                {{"weights", W},
                                 {"kv_cache", z.kv},
                                 {"mask_cache", z.mask},
                                 {"dequant", dequant_bytes(sv, B, 1)},
                                 {"logits", z.logits}},
                                0));
  z.logits = std::max(z.logits, prefill_logits);
  return z;
}

// vLLM (vllm/v1/worker/gpu_worker.py determine_available_memory): requested
// = total x gpu_memory_utilization; the profile run's peak activations (a
// max_num_batched_tokens prefill and the sampler over max_num_seqs) and the
// non-torch increase are subtracted; the rest becomes KV blocks of
// block_size tokens.
Sizes vllm_serving(Estimate& e, const Request& req, const Serving& sv) {
  const InferOptions& o = req.infer;
  const ModelSpec& m = req.model;
  if (sv.gpu == nullptr && !req.gpu.memory_gib) {
    fail(errc::kMissingField, "gpu.name",
         "gpu.name or gpu.memory_gib is required with infer.engine \"vllm\": its KV cache fills the GPU");
  }
  const int64_t total = sv.gpu != nullptr
                            ? sv.gpu->usable_bytes()
                            : static_cast<int64_t>(*req.gpu.memory_gib * 1073741824.0 * (1.0 - kDriverReserveFraction));
  const int64_t requested = static_cast<int64_t>(static_cast<double>(total) * o.gpu_memory_utilization);
  Sizes z;
  z.prefill = ceil_bytes(sv.pre_tok * static_cast<double>(o.max_num_batched_tokens), "the prefill activations");
  // The profiling dummy run computes fp32 logits for every one of its
  // max_num_batched_tokens tokens. Check against llm-d's measured "peak
  // activation" on H100 (research §7.4): Llama-3.1-8B 4.76 GiB (8192 x
  // 128,256 x 4 B = 3.91 GiB of it), Qwen3-0.6B 5.56 GiB (8192 x 151,936 x
  // 4 B = 4.64 GiB).
  z.logits = bytes::mul(std::max(o.max_num_batched_tokens, o.max_num_seqs), ceil_div(m.vocab, sv.tp), 4, "the logits");
  const int64_t non_kv =
      bytes::add(bytes::add(sv.fx.weights, z.prefill), bytes::add(z.logits, sv.fx.cublas + sv.fx.nccl));
  const int64_t pool = std::max<int64_t>(requested - non_kv, 0);
  const int64_t page = ceil_bytes(sv.kv_tok_full * static_cast<double>(o.block_size), kKv);
  const int64_t blocks = page > 0 ? pool / page : 0;
  z.kv = blocks * page;
  const int64_t ctx = o.context_len + sv.image_tokens;
  const int64_t B = o.batch;
  const int64_t blocks_per_seq = ceil_div(ctx, o.block_size);
  // max_context_len never exceeds the model's max_position_embeddings
  // (vLLM's max_model_len default).
  const int64_t model_max = m.max_position_embeddings > 0 ? m.max_position_embeddings : kMaxSize;
  e.facts.push_back({"kv_blocks", blocks});
  e.facts.push_back({"kv_block_bytes", page});
  e.facts.push_back({"max_concurrent_sequences", std::min(o.max_num_seqs, blocks / blocks_per_seq)});
  e.facts.push_back({"max_context_len", std::min(blocks / std::max<int64_t>(B, 1) * o.block_size, model_max)});
  const int64_t W = sv.fx.weights;
  e.phases.push_back(make_phase(req, sv, "weights_loaded", "weights loaded", {{"weights", W}}, 0));
  e.phases.push_back(make_phase(req, sv, "profile", "profiling run (max_num_batched_tokens prefill + sampler)",
                                {{"weights", W}, {"activations", z.prefill}, {"logits", z.logits}}, 0));
  e.phases.push_back(make_phase(req, sv, "serving", "serving (KV cache allocated, CUDA graphs captured)",
                                {{"weights", W}, {"kv_cache", z.kv}, {"activations", z.prefill}, {"logits", z.logits}},
                                sv.fx.graphs));
  if (blocks < blocks_per_seq) {
    e.warnings.push_back("vLLM cannot start: the KV cache holds " + std::to_string(blocks * o.block_size) +
                         " tokens, fewer than one sequence of " + std::to_string(ctx) +
                         " (lower context_len, raise gpu_memory_utilization or add GPUs)");
  } else if (blocks / blocks_per_seq < B) {
    e.warnings.push_back("only " + std::to_string(blocks / blocks_per_seq) + " sequences of " + std::to_string(ctx) +
                         " tokens fit at once; the rest wait in the queue");
  }
  return z;
}

void serving_components(Estimate& e, const Request& req, const Serving& sv, const Sizes& z) {
  const InferOptions& o = req.infer;
  const Fixed& fx = sv.fx;
  const bool vllm = sv.vllm;
  const int64_t B = o.batch;
  const int64_t ctx = o.context_len + sv.image_tokens;
  const int64_t prompt = (o.prompt_len > 0 ? o.prompt_len : o.context_len) + sv.image_tokens;
  const std::string tp_note = sv.tp > 1 ? " / tp " + std::to_string(sv.tp) : "";
  e.components.push_back({"weights", "Weights", fx.weights,
                          fmt_int(req.model.params_total()) + " params; linears as " + sv.fmt->source + tp_note,
                          Pool::kAllocated});
  e.components.push_back(
      {"kv_cache", "KV cache", z.kv,
       vllm ? "blocks of " + std::to_string(o.block_size) + " tokens filling gpu_memory_utilization " +
                  std::to_string(o.gpu_memory_utilization).substr(0, 4)
            : fmt_int(ceil_bytes(sv.kv_tok_at(ctx), kKv)) + " B/token x batch " + std::to_string(B) + " x context " +
                  std::to_string(ctx) +
                  (sv.image_seq > 0 ? " + images " + fmt_int(ceil_bytes(sv.image_seq, kKv)) + " B/sequence x batch " +
                                          std::to_string(B)
                                    : "") +
                  (sv.cross_tok > 0 && req.model.encoder_positions > 0
                       ? " + cross-attention " + fmt_int(ceil_bytes(sv.cross_tok, kKv)) + " B/encoder position x " +
                             std::to_string(req.model.encoder_positions) + " x batch " + std::to_string(B)
                       : ""),
       Pool::kAllocated});
  if (req.model.text.ssm_layers > 0) {
    const LayerStack& t = req.model.text;
    const LayerStack& st = sv.sharded.text;
    e.components.push_back(
        {"ssm_state", t.ssm_state > 0 ? "State-space cache (conv + SSM states)" : "Convolution cache (conv states)",
         z.ssm,
         std::to_string(t.state_layers()) + " layers x (conv " + fmt_int(st.conv_dim()) + " x " +
             std::to_string(t.ssm_conv_kernel) +
             (t.ssm_state > 0 ? std::string(t.ssm_kind == SsmKind::kGatedDeltaNet ? " + fp32 state " : " + state ") +
                                    fmt_int(st.ssm_inner) + " x " + std::to_string(t.ssm_state)
                              : "") +
             ") x batch " + std::to_string(B) + ", fixed whatever the context",
         Pool::kAllocated});
  }
  // The vision / audio encoder's working set when it is the larger (image_serving).
  const bool tower_prefill =
      !vllm && sv.vision_pre * static_cast<double>(B) > sv.pre_tok * static_cast<double>(bytes::mul(B, prompt));
  e.components.push_back({"activations", "Prefill activations (one layer)", z.prefill,
                          tower_prefill
                              ? "vision / audio encoder at prefill: " + fmt_int(ceil_bytes(sv.vision_pre)) +
                                    " B per sequence x batch " + std::to_string(B)
                              : "per token " + fmt_int(ceil_bytes(sv.pre_tok)) + " B x " +
                                    std::to_string(vllm ? o.max_num_batched_tokens : bytes::mul(B, prompt)) + " tokens",
                          Pool::kAllocated});
  if (sv.dequant > 0) {
    e.components.push_back({"dequant", "4-bit weights dequantised by a multi-token forward", sv.dequant,
                            std::string(sv.litgpt ? "2 x" : "1 x") +
                                " 16-bit copy of the largest quantised Linear (bitsandbytes MatMul4Bit" +
                                (sv.litgpt ? "; Lightning quantises from fp16, then .to(bf16))" : ")"),
                            Pool::kAllocated});
  }
  if (z.mask > 0) {
    e.components.push_back({"mask_cache", "Causal mask cache (LitGPT)", z.mask,
                            "context^2 bool (build_mask_cache); twice that while torch.tril runs", Pool::kAllocated});
  }
  e.components.push_back({"logits",
                          vllm        ? "Profiling logits (fp32, every batched token)"
                          : sv.litgpt ? "Logits (every prompt position, 16-bit; fp32 sampling copy)"
                                      : "Logits (last position, fp32 copy)",
                          z.logits,
                          vllm        ? "max_num_batched_tokens x V x 4 B"
                          : sv.litgpt ? "batch x prompt x V x 2 B + batch x V x 4 B"
                                      : "batch x V x (2 + 4) B",
                          Pool::kAllocated});
  e.components.push_back({"cublas_workspace", "cuBLAS/cuBLASLt workspaces", fx.cublas, "one handle", Pool::kAllocated});
  if (fx.nccl > 0) {
    e.components.push_back({"nccl", "NCCL buffers (tensor parallel)", fx.nccl,
                            req.overheads.nccl_bytes ? "overheads.nccl_bytes (given)"
                                                     : "0.55 - 0.13 GiB non-torch at TP=2 vs TP=1 (llm-d, H100)",
                            Pool::kOutside});
  }
  if (fx.graphs > 0) {
    e.components.push_back(
        {"cuda_graphs", "CUDA graphs", fx.graphs, "256 MiB prior (llm-d: -0.45 to +0.39 GiB)", Pool::kOutside});
  }
  e.components.push_back(
      {"cuda_context", "CUDA context", fx.context,
       req.overheads.cuda_context_bytes ? "overheads.cuda_context_bytes" : "512 MiB lazy-loading prior (research §2.1)",
       Pool::kOutside});
}

void serving_assumptions(Estimate& e, const Request& req, const Serving& sv) {
  const LayerStack& t = req.model.text;
  e.assumptions.push_back(sv.vllm     ? "engine: vLLM paged KV cache (V1 worker memory profiling)"
                          : sv.litgpt ? "engine: LitGPT generate with a KV cache preallocated to the full context"
                                      : "engine: transformers generate with a dynamic cache grown to the full context");
  if (sv.dequant > 0) {
    e.assumptions.push_back(sv.litgpt ? "bitsandbytes 4-bit via Lightning: every Linear incl. lm_head quantised from "
                                        "fp16; a prompt dequantises the largest one to fp16 and then bf16"
                                      : "bitsandbytes 4-bit: lm_head kept 16-bit; a multi-token forward dequantises "
                                        "the largest quantised Linear to 16-bit");
  }
  if (sv.hf_mla) e.assumptions.push_back("MLA: transformers caches decompressed keys and values, not the latent");
  if (t.ssm_layers > 0) {
    const char* what = t.ssm_kind == SsmKind::kShortConv ? " short-convolution layers keep a fixed conv window"
                       : t.ssm_kind == SsmKind::kMamba2  ? " Mamba-2 layers keep a fixed conv + SSM state"
                       : t.ssm_kind == SsmKind::kGatedDeltaNet
                           ? " gated DeltaNet layers keep a fixed conv window and an fp32 "
                             "recurrent state (value heads x key x value)"
                           : " state-space layers keep a fixed conv + SSM state";
    e.assumptions.push_back(std::to_string(t.ssm_layers) + what + " per sequence" +
                            (t.ssm_kind == SsmKind::kGatedDeltaNet ? "" : " in the model dtype") +
                            (t.ssm_with_attention ? " beside their attention's KV cache"
                             : t.attention_layers() > 0
                                 ? "; only the " + std::to_string(t.attention_layers()) + " attention layers cache keys"
                                 : std::string(", no KV cache")) +
                            (t.ssm_kind == SsmKind::kGatedDeltaNet
                                 ? "; prefill through the flash-linear-attention / causal_conv1d kernels"
                                 : "; prefill through the mamba_ssm / causal_conv1d kernels"));
  }
  if (sv.vllm && t.attention == AttnKind::kMla) e.assumptions.push_back("MLA: vLLM caches the compressed latent");
  if (t.image_cross_layers > 0) {
    const VisionInput& vi = req.model.vision;
    e.assumptions.push_back(
        req.infer.images_per_prompt > 0
            ? std::to_string(t.image_cross_layers) + " image cross-attention layers cache keys/values of " +
                  std::to_string(req.infer.images_per_prompt) + " image(s) x " +
                  std::to_string(vi.cross_tokens_per_image) +
                  " vision tokens per sequence, whatever the context (no text keys/values in those layers)"
            : "infer.images_per_prompt 0 (default): text-only prompts, so the " + std::to_string(t.image_cross_layers) +
                  " image cross-attention layers cache nothing; set it for prompts with images");
  }
  if (sv.image_tokens > 0) {
    e.assumptions.push_back(std::to_string(req.infer.images_per_prompt) + " image(s) per prompt add " +
                            std::to_string(sv.image_tokens) + " tokens to each sequence's prompt and context (" +
                            std::to_string(req.model.vision.tokens_per_image) + " per image)");
  } else if (req.infer.images_per_prompt > 0 && req.model.vision.dynamic_resolution) {
    e.assumptions.push_back(
        "dynamic-resolution vision tower: an image's tokens depend on its size "
        "((H/patch) x (W/patch) / merge^2), so they are not added: count them in context_len");
  }
  if (req.model.encoder_positions > 0) {
    e.assumptions.push_back(
        "encoder-decoder with a fixed-length encoder: " + std::to_string(req.model.encoder_positions) +
        " encoder positions per sequence (Whisper: 30 s of audio), cached by every decoder layer's "
        "cross-attention whatever the context; the encoder's working set at prefill is the larger "
        "of it and the decoder's");
  } else if (sv.vision_pre > 0) {
    e.assumptions.push_back("vision tower at prefill: " + std::to_string(req.infer.images_per_prompt) +
                            " image(s) per sequence x " + std::to_string(req.model.vision.encoder_tokens_per_image) +
                            " tower tokens; prefill activations are the larger of it and the text prefill");
  }
  if (t.sliding_window > 0 && t.sliding_layers > 0) {
    e.assumptions.push_back(std::to_string(t.sliding_layers) + " sliding-window layers cache at most " +
                            std::to_string(t.sliding_window) + " tokens");
  }
}

}  // namespace

Result<Estimate> estimate_infer(const Request& req) {
  return attempt<Estimate>([&]() -> Result<Estimate> {
    // The input blamed when a figure exceeds limits::kMaxBytes: the larger
    // factor of the cached tokens.
    const bytes::Driver driver(req.infer.batch > req.infer.context_len ? "infer.batch" : "infer.context_len");
    const Serving sv = serving(req);
    Estimate e;
    e.engine = req.infer.engine;
    const Sizes z = sv.vllm     ? vllm_serving(e, req, sv)
                    : sv.litgpt ? litgpt_generate(e, req, sv)
                                : hf_generate(e, req, sv);
    for (const auto& p : e.phases) {
      if (p.device_bytes > e.peak_bytes) {
        e.peak_bytes = p.device_bytes;
        e.peak_phase = p.key;
      }
      e.peak_allocated_bytes = std::max(e.peak_allocated_bytes, p.allocated_bytes);
      e.peak_reserved_bytes = std::max(e.peak_reserved_bytes, p.reserved_bytes);
    }
    // vLLM's device use is its budget, whatever the cache holds.
    if (sv.vllm && !e.phases.empty() && e.warnings.empty()) e.peak_phase = "serving";
    // Per layer that caches keys: a hybrid's state-space layers and
    // Mllama's cross-attention layers (a fixed cache of their own) hold none.
    const int64_t kv_layers =
        req.model.text.attention_layers() - req.model.text.image_cross_layers - req.model.text.kv_shared_layers;
    const int64_t layers =
        std::max<int64_t>(kv_layers > 0 ? kv_layers : req.model.text.layers - req.model.text.image_cross_layers, 1);
    e.facts.insert(e.facts.begin(), {"kv_bytes_per_token", ceil_bytes(sv.kv_tok_full, kKv)});
    e.facts.insert(e.facts.begin() + 1,
                   {"kv_bytes_per_token_per_layer", ceil_bytes(sv.kv_tok_full / static_cast<double>(layers), kKv)});
    e.facts.push_back({"kv_cache_bytes", z.kv});
    if (z.ssm > 0) e.facts.push_back({"ssm_state_bytes", z.ssm});
    e.facts.push_back({"tp", sv.tp});
    serving_components(e, req, sv, z);
    serving_assumptions(e, req, sv);
    e.tokens_per_micro_batch =
        bytes::mul(req.infer.batch, req.infer.context_len + sv.image_tokens, "tokens in the KV cache");
    return e;
  });
}

}  // namespace vram::infer

// The serving costs (infer/serving.h): formats, weights per GPU, KV and
// prefill bytes per token, and the checks of the serving fields.
#include "infer/serving.h"

#include <algorithm>
#include <cmath>

#include "decimal.h"
#include "memory/overheads.h"
#include "vram/releases.h"
#include "vram/status.h"

namespace vram::infer {

using memory::ceil_div;

namespace {

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

}  // namespace

const Format* find_format(const std::string& n) {
  for (const auto& f : kFormats) {
    if (n == f.name) return &f;
  }
  if (n == "bfloat16") return find_format("bf16");
  if (n == "float16") return find_format("fp16");
  if (n == "float32") return find_format("fp32");
  return nullptr;
}

std::string format_names() {
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

// Weights per GPU. Tensor parallel splits every Linear (column / row
// parallel) and the vocabulary-parallel embeddings and lm_head; norms are
// replicated (Megatron-LM; vLLM ColumnParallelLinear / RowParallelLinear /
// VocabParallelEmbedding).
bool quantized(const ParamGroup& g, const Format& fmt, bool quant_head) {
  return fmt.linear_bytes < 2.0 && g.kind == ModuleKind::kLinear &&
         (quant_head || g.component != std::string(comp::kLmHead)) &&
         (!fmt.experts_only || g.component == std::string(comp::kExperts));
}

int64_t quantized_bytes(const ParamGroup& g, const Format& fmt) {
  const int64_t values = bytes::mul(g.in_features, g.out_features, kWeights);
  const int64_t groups = fmt.group > 0 ? ceil_div(values, fmt.group) : g.out_features;
  return ceil_bytes(static_cast<double>(values) * fmt.linear_bytes + static_cast<double>(groups) * fmt.scale_bytes,
                    kWeights);
}

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
    if (!quantized(g, fmt, quant_head)) {
      weights = bytes::add(weights, ceil_div(bytes::mul(hp, g.total(), kWeights), share), kWeights);
      continue;
    }
    const int64_t one = quantized_bytes(g, fmt) + (g.bias ? 2 * g.out_features : 0);
    weights = bytes::add(weights, ceil_div(bytes::mul(one, g.instances, kWeights), share), kWeights);
  }
  return weights;
}

namespace {

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
    if (sv.paged || sv.litgpt) {
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

}  // namespace

// Validates the serving fields (Failure names the field) and computes the costs.
namespace {

// The serving fields' own checks: the format, the KV dtype, the heads.
// The serving format of a checkpoint config.json says is quantised, which
// vLLM and SGLang load as stored (vLLM ModelConfig._verify_quantization and
// SGLang ModelConfig._verify_quantization read quantization_config): "" when
// it is not. compressed-tensors keeps the scheme in config_groups.
std::string stored_format(const ModelSpec& m) {
  const std::string& q = m.quant_method;
  if (q.empty()) return "";
  if (q == "fp8" || q == "mxfp4" || q == "awq" || q == "gptq") return q;
  if (q == "bitsandbytes") return "nf4";
  if (q == "compressed-tensors" && m.quant_bits == 8) return m.quant_float ? "fp8" : "int8";
  if (q == "compressed-tensors" && m.quant_bits == 4 && !m.quant_float) return "int4";
  fail(errc::kUnsupported, "infer.weights_dtype",
       "the checkpoint is quantised with " + vram::quoted(q) +
           ", which is not modelled: name the closest infer.weights_dtype (" + format_names() + ")");
}

void check_serving_fields(const Request& req, Serving& sv) {
  const InferOptions& o = req.infer;
  const LayerStack& t = req.model.text;
  std::string name = o.weights_dtype;
  if (!o.weights_dtype_given && (o.engine == "vllm" || o.engine == "sglang") && !req.model.quant_method.empty()) {
    name = stored_format(req.model);
    sv.format_note = "infer.weights_dtype " + name + ": the checkpoint's quantization_config (" +
                     req.model.quant_method + "), which the engine loads as stored";
  }
  sv.fmt = find_format(name);
  if (sv.fmt == nullptr) {
    fail(errc::kUnknownValue, "infer.weights_dtype",
         "infer.weights_dtype " + vram::quoted(o.weights_dtype) + " is not one of: " + format_names());
  }
  if (sv.fmt->experts_only && t.experts == 0) {
    fail(errc::kInconsistent, "infer.weights_dtype",
         "infer.weights_dtype " + vram::quoted(name) +
             " stores the routed experts in 4 bits (as gpt-oss ships); this model has no experts");
  }
  sv.kv_elem = kv_elem_bytes(o.kv_dtype);
  if (sv.kv_elem < 0) {
    fail(errc::kUnknownValue, "infer.kv_dtype",
         "infer.kv_dtype " + vram::quoted(o.kv_dtype) + " is not one of: bf16, fp16, fp32, fp8, int8, int4");
  }
  sv.tp = req.parallel.tp;
  if (t.heads % sv.tp != 0) {
    fail(errc::kInconsistent, "parallel.tp",
         "parallel.tp (" + std::to_string(sv.tp) + ") must divide the attention heads (" + std::to_string(t.heads) +
             ")");
  }
}

// The weights per GPU and, for bitsandbytes 4-bit, the 16-bit copy a
// multi-token forward dequantises.
void serving_weights(const ModelSpec& m, Serving& sv) {
  const int64_t tp = sv.tp;
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
}

// Per-token and per-sequence costs of one tensor-parallel rank: the KV cache,
// cross-attention, the prefill working set, state-space caches.
void serving_per_token(const Request& req, Serving& sv) {
  const ModelSpec& m = req.model;
  const LayerStack& t = m.text;
  const int64_t tp = sv.tp;
  // KV heads per rank: max(1, kv_heads / tp) (vLLM get_num_kv_heads: heads
  // are replicated when tp exceeds them). MLA's latent is replicated.
  sv.sharded = m;
  sv.sharded.text.kv_heads = std::max<int64_t>(1, t.kv_heads / tp);
  sv.sharded.text.heads = t.heads / tp;
  sv.hf_mla = !sv.paged && t.attention == AttnKind::kMla;
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
    if (sv.paged) {
      fail(errc::kUnsupported, "infer.engine",
           "infer.engine " + vram::quoted(req.infer.engine) +
               " with state-space (Mamba) layers is not modelled yet: the engine keeps their states in its own "
               "cache; use infer.engine \"hf\"");
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
}

}  // namespace

Serving serving(const Request& req) {
  const InferOptions& o = req.infer;
  const int64_t tp = req.parallel.tp;
  Serving sv;
  check_serving_fields(req, sv);
  sv.vllm = o.engine == "vllm";
  sv.sglang = o.engine == "sglang";
  sv.paged = sv.vllm || sv.sglang;
  sv.litgpt = o.engine == "litgpt";
  serving_weights(req.model, sv);
  serving_per_token(req, sv);
  // ---- outside the tensors ------------------------------------------------
  sv.gpu = req.gpu.name.empty() ? nullptr : find_gpu(req.gpu.name);
  sv.fx.cublas = memory::cublas_bytes(req, 1);
  sv.fx.context = memory::context_bytes(req);
  // llm-d config_explorer on H100 measured vLLM's non-torch memory at
  // 0.13 GiB for TP=1 and 0.55 GiB for TP=2 (research §2.4, §7.4): the
  // difference is NCCL's buffers.
  if (tp > 1 && !sv.paged)
    sv.fx.nccl = req.overheads.nccl_bytes.value_or((int64_t{55} << 30) / 100 - (int64_t{13} << 30) / 100);
  // CUDA graphs captured after vLLM's profiling: llm-d measured -0.45 to
  // +0.39 GiB across three models; 256 MiB is the prior.
  if (sv.paged && o.cuda_graphs) sv.fx.graphs = int64_t{256} << 20;
  return sv;
}

// bitsandbytes 4-bit weights dequantised by a forward over `tokens` tokens
// per sequence: one token per sequence at batch 1 takes gemv_4bit, anything
// larger dequantises (matmul_4bit; see Format::bnb4).
int64_t dequant_bytes(const Serving& sv, int64_t batch, int64_t tokens) { return batch * tokens > 1 ? sv.dequant : 0; }

std::string engine_release(Estimate& e, const InferOptions& o, const char* newest) {
  if (o.engine_version) return *o.engine_version;
  e.assumptions.push_back(o.engine + " " + newest + " rules (infer.engine_version absent: the newest modelled)");
  return newest;
}

bool at_least(const std::string& release, const char* bound) { return compare_versions(release, bound) >= 0; }

int64_t rotary_cache_bytes(const ModelSpec& m, int64_t elem) {
  const LayerStack& t = m.text;
  // "" is a Llama-shaped adapter's: rotary (family adapters name the other schemes).
  const std::string& pe = t.position_encoding;
  if ((pe != "rope" && !pe.empty()) || m.max_position_embeddings <= 0) return 0;
  // MLA ropes only the qk_rope_head_dim part of each head.
  const int64_t dim = t.attention == AttnKind::kMla && t.qk_rope_head_dim > 0 ? t.qk_rope_head_dim : t.head_dim;
  return bytes::mul(bytes::mul(m.max_position_embeddings, dim, "the rotary cache"), elem, "the rotary cache");
}

int64_t cuda_total_bytes(const Request& req, const Serving& sv, const char* engine) {
  if (sv.gpu == nullptr && !req.gpu.memory_gib) {
    fail(errc::kMissingField, "gpu.name",
         std::string("gpu.name or gpu.memory_gib is required with infer.engine \"") + engine +
             "\": its KV cache fills the GPU");
  }
  return sv.gpu != nullptr ? sv.gpu->usable_bytes()
                           : static_cast<int64_t>(*req.gpu.memory_gib * 1073741824.0 * (1.0 - kDriverReserveFraction));
}

std::string gib2(double bytes) { return fixed(bytes / 1073741824.0, 2); }  // "%.2f" (decimal.h)

std::string commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace vram::infer

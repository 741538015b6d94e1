// The serving estimate's components and assumptions (infer/serving.h).
#include "format.h"
#include "infer/serving.h"

namespace vram::infer {

void serving_components(Estimate& e, const Request& req, const Serving& sv, const Sizes& z) {
  const InferOptions& o = req.infer;
  const Fixed& fx = sv.fx;
  const int64_t B = o.batch;
  const int64_t ctx = o.context_len + sv.image_tokens;
  const int64_t prompt = (o.prompt_len > 0 ? o.prompt_len : o.context_len) + sv.image_tokens;
  const std::string tp_note = sv.tp > 1 ? " / tp " + std::to_string(sv.tp) : "";
  e.components.push_back({"weights", "Weights", fx.weights,
                          fmt_int(req.model.params_total()) + " params; linears as " + sv.fmt->source + tp_note,
                          Pool::kAllocated});
  e.components.push_back(
      {"kv_cache", "KV cache", z.kv,
       fmt_int(ceil_bytes(sv.kv_tok_at(ctx), kKv)) + " B/token x batch " + std::to_string(B) + " x context " +
           std::to_string(ctx) +
           (sv.image_seq > 0
                ? " + images " + fmt_int(ceil_bytes(sv.image_seq, kKv)) + " B/sequence x batch " + std::to_string(B)
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
      sv.vision_pre * static_cast<double>(B) > sv.pre_tok * static_cast<double>(bytes::mul(B, prompt));
  e.components.push_back({"activations", "Prefill activations (one layer)", z.prefill,
                          tower_prefill ? "vision / audio encoder at prefill: " + fmt_int(ceil_bytes(sv.vision_pre)) +
                                              " B per sequence x batch " + std::to_string(B)
                                        : "per token " + fmt_int(ceil_bytes(sv.pre_tok)) + " B x " +
                                              std::to_string(bytes::mul(B, prompt)) + " tokens",
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
  e.components.push_back(
      {"logits",
       sv.litgpt ? "Logits (every prompt position, 16-bit; fp32 sampling copy)" : "Logits (last position, fp32 copy)",
       z.logits, sv.litgpt ? "batch x prompt x V x 2 B + batch x V x 4 B" : "batch x V x (2 + 4) B", Pool::kAllocated});
  e.components.push_back({"cublas_workspace", "cuBLAS/cuBLASLt workspaces", fx.cublas, "one handle", Pool::kAllocated});
  for (const Phase& p : e.phases) {
    if (z.allocator.empty() || p.key != e.peak_phase) continue;
    e.components.push_back({"allocator", "Allocator cache (reserved - allocated)", p.parts.at("allocator"), z.allocator,
                            Pool::kAllocated});
  }
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
                          : sv.sglang ? "engine: SGLang token pool sized by mem_fraction_static"
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
  if (sv.paged && t.attention == AttnKind::kMla) {
    e.assumptions.push_back("MLA: " + std::string(sv.vllm ? "vLLM" : "SGLang") + " caches the compressed latent");
  }
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

}  // namespace vram::infer

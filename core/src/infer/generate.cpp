// transformers generate and LitGPT generate: the KV cache at full context,
// the prompt's prefill and one decoding step (infer/serving.h).
#include <algorithm>

#include "infer/serving.h"
#include "memory/overheads.h"

namespace vram::infer {

using memory::ceil_div;

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

}  // namespace vram::infer

// transformers generate and LitGPT generate: the KV cache at full context,
// the prompt's prefill and one decoding step (infer/serving.h).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "format.h"
#include "infer/replay.h"
#include "infer/serving.h"
#include "memory/overheads.h"

namespace vram::infer {

using memory::ceil_div;

namespace {

// Decoding steps replayed through the caching allocator: one every `stride`
// tokens, where a step grows each K or V tensor by at most kBandBytes, so
// that no segment size is skipped: the allocator sizes segments of 10 MiB
// and more in 2 MiB steps (CUDACachingAllocator.cpp kRoundLarge) and packs
// smaller requests in 20 MiB segments, so a tensor that grows by less than
// 1 MiB a step meets the same segments as one that grows by a token a step
// (Llama-2-7B at batch 1, 1,024 to 4,096 tokens: 13.281 GiB of K/V
// segments replayed token by token and every 12, 48 or 96 tokens; 13.135
// GiB every 192). At most kDecodeSteps of them (an assumption says when
// that coarsens the steps), so that a long generation costs the page a
// bounded replay.
constexpr int64_t kBandBytes = int64_t{1} << 20;
constexpr int64_t kDecodeSteps = 64;
// And at most this many K and V tensors allocated by them in all (64 steps
// of an 80-layer model's 160), so that a model of tens of thousands of
// layers replays a step or two, not 64 (100,000 layers from a 1-token prompt
// to 4,096: 1.26 s and 550 MB natively before, 0.74 s and 326 MB).
constexpr int64_t kDecodeAllocs = 64 * 160;

// The K and V tensors of every layer that caches keys (a hybrid's
// state-space layers and Mllama's image cross-attention layers hold none; a
// model without such layers keeps its cache in one pair): the cache's bytes
// spread evenly over them, the last one taking the remainder, so that the
// tensors add up to the cache's exact figure.
struct KvTensors {
  std::vector<memory::Timeline::Id> ids;
  int64_t share(int64_t total, size_t i) const {
    const auto n = static_cast<int64_t>(ids.size());
    const int64_t each = total / n;
    return i + 1 < ids.size() ? each : total - each * (n - 1);
  }
};

size_t kv_tensor_count(const LayerStack& t) {
  const int64_t kv_layers = t.attention_layers() - t.image_cross_layers - t.kv_shared_layers;
  return static_cast<size_t>(2 * std::max<int64_t>(kv_layers > 0 ? kv_layers : t.layers - t.image_cross_layers, 1));
}

// One decoding step of transformers' DynamicCache: every layer's
// DynamicLayer.update concatenates the new token's keys, then its values,
// onto the cache (transformers src/transformers/cache_utils.py @004999d9
// DynamicLayer.update: self.keys = torch.cat([self.keys, key_states],
// dim=-2)): torch.cat allocates the larger tensor before the old one is
// released, so each step allocates a new K and V per layer and frees the old
// ones; the caching allocator can reuse a freed block only for a request no
// larger than it, which is what makes the growing cache expensive in
// reserved memory. The step's logits are allocated after the last layer.
void decode_step(memory::Timeline& tl, KvTensors& kv, int64_t total, int64_t logits) {
  for (size_t i = 0; i < kv.ids.size(); ++i) {
    const memory::Timeline::Id grown = tl.alloc("kv_cache", i % 2 == 0 ? "keys" : "values", kv.share(total, i));
    tl.free(kv.ids[i]);
    kv.ids[i] = grown;
  }
  tl.free(tl.alloc("logits", "logits", logits));
}

// Prefill, layer by layer: each layer's activations (and bitsandbytes'
// dequantised weight) while it runs, then its keys and values, `cache`
// bytes over all layers (none with a negative `cache`: a preallocated cache). Returns the last layer's activations and
// dequantised weight, still live: the moment counted is the last layer's,
// with the whole cache.
std::pair<memory::Timeline::Id, memory::Timeline::Id> prefill_layers(memory::Timeline& tl, KvTensors& kv, int64_t cache,
                                                                     int64_t act_bytes, int64_t dequant) {
  memory::Timeline::Id act = -1;
  memory::Timeline::Id deq = -1;
  for (size_t i = 0; i < kv.ids.size(); ++i) {
    if (i % 2 == 0) {
      if (act >= 0) {
        tl.free(act);
        tl.free(deq);
      }
      act = tl.alloc("activations", "prefill activations (one layer)", act_bytes);
      deq = tl.alloc("dequant", "dequantised 4-bit weight", dequant);
    }
    if (cache >= 0) kv.ids[i] = tl.alloc("kv_cache", i % 2 == 0 ? "keys" : "values", kv.share(cache, i));
  }
  return {act, deq};
}

// The decoding steps replayed: how many tokens they add, one replayed step
// every `stride` tokens, `band` the stride that keeps every segment size.
struct Growth {
  int64_t steps = 0;
  int64_t stride = 1;
  int64_t band = 1;
  int64_t per_token = 1;  // a token's growth of every K and V tensor, bytes
};

// The self-attention cache grown from `prompt` to `ctx` tokens per sequence
// (`cache_at(len)` bytes over all layers at `len`; `per_token_all` bytes a
// token over all of them), `full` bytes at the end.
template <typename CacheAt>
Growth grow_cache(memory::Timeline& tl, KvTensors& kv, int64_t prompt, int64_t ctx, int64_t per_token_all,
                  const CacheAt& cache_at, int64_t full, int64_t logits) {
  Growth g;
  g.steps = ctx - prompt;
  g.per_token = std::max<int64_t>(per_token_all / static_cast<int64_t>(kv.ids.size()), 1);
  g.band = std::max<int64_t>(kBandBytes / g.per_token, 1);
  const int64_t most = std::clamp<int64_t>(kDecodeAllocs / static_cast<int64_t>(kv.ids.size()), 1, kDecodeSteps);
  g.stride = std::max(g.band, ceil_div(g.steps, most));
  for (int64_t len = prompt + g.stride; len < ctx; len += g.stride) decode_step(tl, kv, cache_at(len), logits);
  if (g.steps > 0) decode_step(tl, kv, full, logits);
  return g;
}

}  // namespace

// transformers generate: a dynamic cache grows to the full context;
// DynamicLayer.update concatenates, so one layer's cache is briefly held
// twice. Prefill runs the whole prompt at once, layer by layer (one layer's
// activations at a time; bitsandbytes 4-bit dequantises a weight in each);
// the logits of the last position only (logits_to_keep=1), upcast to fp32
// for sampling. The request as a timeline (infer/replay.h): the load, the
// prefill, the decoding steps from the prompt to the full context (at most
// kDecodeSteps of them replayed, evenly spaced), and the last step's
// concatenation at full context.
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
  const int64_t image_kv = ceil_bytes(sv.image_seq * static_cast<double>(B), kKv);
  // The cache holding `len` tokens of each sequence (the encoder's keys
  // once the decoder runs past the prompt).
  auto cache_at = [&](int64_t len, bool with_cross) {
    const double text =
        sv.kv_tok_at(len) * static_cast<double>(len) + (with_cross ? sv.cross_tok * static_cast<double>(enc_len) : 0.0);
    return bytes::add(ceil_bytes(text * static_cast<double>(B), kKv), image_kv, kKv);
  };
  z.kv = cache_at(ctx, true);
  z.ssm = ceil_bytes(sv.ssm_seq * static_cast<double>(B), "the state-space cache");
  const int64_t cat_copy = ceil_bytes(
      // one layer's share; image cross-attention layers (Mllama) hold no text
      sv.kv_tok_full /
          static_cast<double>(std::max<int64_t>(req.model.text.layers - req.model.text.image_cross_layers, 1)) *
          static_cast<double>(tokens),
      kKv);
  z.prefill =
      ceil_bytes(std::max(sv.pre_tok * static_cast<double>(prompt_tokens), sv.vision_pre * static_cast<double>(B)),
                 "the prefill activations");
  const int64_t vocab = ceil_div(req.model.vocab, sv.tp);
  z.logits = bytes::mul(B, vocab, 2 + 4, "the logits");
  const std::vector<memory::Piece> logit_pieces = {{bytes::mul(B, vocab, 4), 1}, {bytes::mul(B, vocab, 2), 1}};
  ServingTimeline st = serving_load(req, sv);
  memory::Timeline& tl = st.tl;
  const memory::Timeline::Id ssm = tl.alloc("ssm_state", "state-space cache", z.ssm);
  KvTensors kv;
  kv.ids.resize(kv_tensor_count(req.model.text));
  const int64_t prefill_kv =
      bytes::add(ceil_bytes(sv.kv_tok_at(prompt) * static_cast<double>(prompt_tokens), kKv), image_kv, kKv);
  auto [act, deq] = prefill_layers(tl, kv, prefill_kv, z.prefill, dequant_bytes(sv, B, prompt));
  memory::Timeline::Id logits = tl.alloc("logits", "logits", z.logits, logit_pieces);
  st.mark("prefill", "prefill (prompt through the model)");
  tl.free(act);
  tl.free(deq);
  tl.free(logits);
  // Decoding: the self-attention cache grows from the prompt to the full
  // context; the rest of the full cache (the encoder's keys and values,
  // which each cross-attention layer computes once into tensors of its own,
  // transformers EncoderDecoderCache) is allocated when decoding starts.
  const int64_t grown = ctx > prompt ? cache_at(ctx, false) : prefill_kv;
  const int64_t rest = z.kv - grown;
  KvTensors cross;
  cross.ids.resize(rest > 0 ? kv.ids.size() : 0);
  for (size_t i = 0; i < cross.ids.size(); ++i) {
    cross.ids[i] = tl.alloc("kv_cache", "cross-attention keys and values", cross.share(rest, i));
  }
  const Growth g = grow_cache(
      tl, kv, prompt, ctx, ceil_bytes(sv.kv_tok_full * static_cast<double>(B), kKv),
      [&](int64_t len) { return cache_at(len, false); }, grown, z.logits);
  // A per-token figure rounded at two lengths can leave the cache a byte
  // over the full context's.
  if (rest < 0) kv.ids.back() = tl.resize(kv.ids.back(), kv.share(grown, kv.ids.size() - 1) + rest);
  kv.ids.insert(kv.ids.end(), cross.ids.begin(), cross.ids.end());
  deq = tl.alloc("dequant", "dequantised 4-bit weight", dequant_bytes(sv, B, 1));
  const memory::Timeline::Id copy = tl.alloc("kv_cache", "concatenated layer", cat_copy, {{cat_copy / 2, 2}});
  logits = tl.alloc("logits", "logits", z.logits, logit_pieces);
  st.mark("decode", "decoding at full context");
  for (const memory::Timeline::Id id : {deq, copy, logits, ssm}) tl.free(id);
  for (const memory::Timeline::Id id : kv.ids) tl.free(id);
  z.allocator = timeline_phases(e, req, sv, st);
  if (g.stride > g.band) {
    e.assumptions.push_back("allocator replay: the " + std::to_string(g.steps) + " decoding steps' growing cache in " +
                            std::to_string(ceil_div(g.steps, g.stride)) + " steps of " + std::to_string(g.stride) +
                            " tokens (a token's growth of every K and V tensor is " + fmt_int(g.per_token) + " B)");
  }
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
  const int64_t prompt_logits = bytes::mul(bytes::mul(B, prompt, "the logits"), vocab, 2, "the logits");
  const int64_t sample = bytes::mul(B, vocab, 4);
  const int64_t prefill_logits = bytes::add(prompt_logits, sample, "the logits");
  z.logits = bytes::mul(B, vocab, 2 + 4, "the logits");
  ServingTimeline st = serving_load(req, sv);
  memory::Timeline& tl = st.tl;
  // set_kv_cache: every layer's K and V (torch.zeros), then the mask cache,
  // torch.ones and its torch.tril both alive.
  KvTensors kv;
  kv.ids.resize(kv_tensor_count(req.model.text));
  for (size_t i = 0; i < kv.ids.size(); ++i) {
    kv.ids[i] = tl.alloc("kv_cache", i % 2 == 0 ? "keys" : "values", kv.share(z.kv, i));
  }
  const memory::Timeline::Id ones = tl.alloc("mask_cache", "torch.ones of the mask", z.mask);
  const memory::Timeline::Id mask = tl.alloc("mask_cache", "mask cache (torch.tril)", z.mask);
  st.mark("kv_cache_allocated", "KV cache and mask cache allocated");
  tl.free(ones);
  // Prefill, layer by layer, into the preallocated cache (index_copy_).
  KvTensors layers;
  layers.ids.resize(kv.ids.size());
  auto [act, deq] = prefill_layers(tl, layers, -1, z.prefill, dequant_bytes(sv, B, prompt));
  memory::Timeline::Id logits = tl.alloc("logits", "logits", prefill_logits, {{prompt_logits, 1}, {sample, 1}});
  st.mark("prefill", "prefill (prompt through the model)");
  for (const memory::Timeline::Id id : {act, deq, logits}) tl.free(id);
  deq = tl.alloc("dequant", "dequantised 4-bit weight", dequant_bytes(sv, B, 1));
  logits = tl.alloc("logits", "logits", z.logits, {{sample, 1}, {bytes::mul(B, vocab, 2), 1}});
  st.mark("decode", "decoding at full context");
  for (const memory::Timeline::Id id : {deq, logits, mask}) tl.free(id);
  for (const memory::Timeline::Id id : kv.ids) tl.free(id);
  z.allocator = timeline_phases(e, req, sv, st);
  z.logits = std::max(z.logits, prefill_logits);
  return z;
}

}  // namespace vram::infer

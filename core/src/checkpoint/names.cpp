// Tensor names -> roles, by the module names transformers' modeling files use.
// Each list cites the files whose attribute names it holds; a name matching no
// list is "unplaced" and the estimate says so.
#include "checkpoint/names.h"

#include <algorithm>
#include <cctype>

namespace vram::detail {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool numeric(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    out.push_back(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

bool in(const std::string& s, std::initializer_list<const char*> list) {
  return std::any_of(list.begin(), list.end(), [&](const char* x) { return s == x; });
}

// Quantisation side tensors, stored next to the weight they describe:
// - GPTQ (auto_gptq nn_modules/qlinear QuantLinear buffers): qzeros, scales, g_idx;
//   AWQ (autoawq modules/linear/gemm.py WQLinear_GEMM): qzeros, scales.
// - FP8 (transformers integrations/finegrained_fp8.py FP8Linear: weight_scale_inv;
//   compressed-tensors / vLLM Fp8LinearMethod: weight_scale, input_scale; KV
//   scales k_scale / v_scale).
// - compressed-tensors pack-quantized: weight_scale, weight_zero_point,
//   weight_g_idx, weight_shape.
// - bitsandbytes 8-bit (bitsandbytes nn/modules.py Int8Params): SCB, weight_format.
const std::initializer_list<const char*> kQuantMeta = {"qzeros",
                                                       "scales",
                                                       "g_idx",
                                                       "weight_scale",
                                                       "weight_scale_inv",
                                                       "input_scale",
                                                       "output_scale",
                                                       "k_scale",
                                                       "v_scale",
                                                       "q_scale",
                                                       "weight_zero_point",
                                                       "weight_g_idx",
                                                       "weight_shape",
                                                       "weight_global_scale",
                                                       "input_global_scale",
                                                       "SCB",
                                                       "weight_format",
                                                       "zeros"};

// Buffers some checkpoints save: rotary inv_freq (older Llama conversions),
// DeepSeek-V3's router e_score_correction_bias (modeling_deepseek_v3.py
// DeepseekV3TopkRouter register_buffer), GPT-2's masked_bias and causal-mask
// `attn.bias` (4-D, modeling_gpt2.py register_buffer), position_ids, BatchNorm
// running statistics in vision towers.
const std::initializer_list<const char*> kBuffers = {
    "inv_freq",    "e_score_correction_bias", "masked_bias", "position_ids", "running_mean",
    "running_var", "num_batches_tracked"};

}  // namespace

NameParts split_name(const std::string& name, int64_t rank, const std::set<std::string>& names) {
  NameParts p;
  // bitsandbytes 4-bit saves the QuantState next to the packed weight as
  // weight.absmax, weight.quant_map, weight.nested_absmax,
  // weight.nested_quant_map, weight.quant_state.bitsandbytes__nf4
  // (transformers quantizers/quantizer_bnb_4bit.py bnb_keys;
  // bitsandbytes functional.py QuantState.as_dict(packed=True)).
  if (const size_t w = name.find(".weight."); w != std::string::npos) {
    p.module = name.substr(0, w);
    p.attr = name.substr(w + 8);  // "absmax", "quant_state.bitsandbytes__nf4", ...
    p.kind = Attr::kQuantMeta;
    return p;
  }
  const size_t dot = name.rfind('.');
  p.module = dot == std::string::npos ? "" : name.substr(0, dot);
  p.attr = dot == std::string::npos ? name : name.substr(dot + 1);
  const std::string prefix = p.module.empty() ? "" : p.module + ".";
  if (p.attr == "weight") {
    p.kind = Attr::kWeight;
  } else if (p.attr == "bias") {
    // GPT-2's causal mask buffer is also called attn.bias, a [1, 1, n, n] tensor.
    p.kind = rank == 4 ? Attr::kBuffer : Attr::kBias;
  } else if (p.attr == "qweight" || p.attr == "weight_packed") {
    p.kind = Attr::kPacked;
  } else if (ends_with(p.attr, "_blocks")) {
    // MXFP4 (transformers integrations/mxfp4.py, the gpt-oss checkpoints):
    // experts.gate_up_proj_blocks / _scales hold the fused expert parameter
    // experts.gate_up_proj; it is the module here.
    p.module = prefix + p.attr.substr(0, p.attr.size() - 7);
    p.attr = "blocks";
    p.kind = Attr::kBlocks;
  } else if (ends_with(p.attr, "_scales") && names.count(prefix + p.attr.substr(0, p.attr.size() - 7) + "_blocks")) {
    p.module = prefix + p.attr.substr(0, p.attr.size() - 7);
    p.attr = "scales";
    p.kind = Attr::kQuantMeta;
  } else if (ends_with(p.attr, "_bias") && p.attr != "e_score_correction_bias" &&
             (names.count(prefix + p.attr.substr(0, p.attr.size() - 5)) ||
              names.count(prefix + p.attr.substr(0, p.attr.size() - 5) + "_blocks"))) {
    // gpt-oss / Llama 4 fused experts: gate_up_proj and gate_up_proj_bias.
    p.module = prefix + p.attr.substr(0, p.attr.size() - 5);
    p.attr = "bias";
    p.kind = Attr::kBias;
  } else if (in(p.attr, kQuantMeta)) {
    p.kind = Attr::kQuantMeta;
  } else if (in(p.attr, kBuffers)) {
    p.kind = Attr::kBuffer;
  } else {
    p.module = prefix + p.attr;
    p.kind = Attr::kRaw;
  }
  return p;
}

namespace {

// Which stack a module sits in (its first four segments decide).
// Projectors between a tower and the language model: LLaVA / Gemma 3 /
// Llama 4 multi_modal_projector, Qwen2-VL visual.merger, Idefics3 connector,
// LLaVA-1.5 original mm_projector, Gemma 3n embed_vision / embed_audio.
// Towers: vision_tower (LLaVA, Gemma 3, Llama 4, PaliGemma), vision_model
// (Idefics3, Mllama, SigLIP), visual (Qwen2-VL / 2.5-VL), audio_tower
// (Qwen2-Audio, Gemma 3n, Voxtral).
std::string stack_of(const std::vector<std::string>& low, bool encoder_decoder) {
  std::string stack = "text";
  for (size_t i = 0; i < low.size() && i < 4; ++i) {
    const std::string& s = low[i];
    if (in(s, {"multi_modal_projector", "mm_projector", "connector", "merger", "embed_vision", "embed_audio",
               "vision_projection", "audio_projector"})) {
      stack = "projector";
      break;
    }
    if (in(s, {"vision_tower", "vision_model", "visual", "vision_encoder", "image_encoder", "vision"})) {
      stack = "vision_tower";
      // Qwen2-VL's merger sits inside `visual`: keep looking for it.
      continue;
    }
    if (in(s, {"audio_tower", "audio_model", "audio_encoder", "audio"})) {
      stack = "audio_tower";
      continue;
    }
    // Encoder-decoder models (T5 encoder.block, Whisper / BART model.encoder).
    if (stack == "text" && encoder_decoder && i < 2 && s == "encoder") stack = "encoder";
  }
  return stack;
}

// The layer and expert numbers, the canonical path (numbers as '*') and the
// leaf.
// Layer containers: layers (Llama, Mistral, Qwen, Gemma, OPT, Whisper), h
// (GPT-2, BLOOM, Falcon), blocks / block (T5 block, vision towers), layer
// (BERT encoder.layer).
void number_segments(const std::vector<std::string>& segs, const std::vector<std::string>& low, Placement& pl) {
  std::string canonical;
  for (size_t i = 0; i < segs.size(); ++i) {
    std::string part = segs[i];
    if (i > 0 && numeric(segs[i])) {
      const std::string& prev = low[i - 1];
      if (pl.layer < 0 && in(prev, {"layers", "h", "blocks", "block", "layer"})) {
        pl.layer = std::stoll(segs[i]);
        part = "*";
      } else if (prev == "experts") {
        pl.expert = std::stoll(segs[i]);
        part = "*";
      } else {
        part = "*";  // T5's block.N.layer.M, ModuleList indices inside a layer
      }
    }
    canonical += (canonical.empty() ? "" : ".") + part;
  }
  pl.canonical = canonical;
  // The leaf: the last non-numeric segment.
  for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
    if (!numeric(*it)) {
      pl.leaf = *it;
      break;
    }
  }
}

// The role, from the leaf and the containers the module sits in.
Role role_of(const Placement& pl, const std::string& leaf, const std::vector<std::string>& low) {
  auto has = [&](std::initializer_list<const char*> list) {
    return std::any_of(low.begin(), low.end(), [&](const std::string& s) { return in(s, list); });
  };
  if (leaf.find("norm") != std::string::npos || leaf.rfind("ln_", 0) == 0 || leaf == "ln") {
    // input_layernorm, post_attention_layernorm, norm (Llama); ln_1, ln_2,
    // ln_f (GPT-2); LayerNorm (BERT); layer_norm / final_layer_norm (T5,
    // Whisper); q_norm, k_norm (Qwen3, OLMo 2); q_a_layernorm (DeepSeek).
    return Role::kNorm;
  } else if (pl.layer < 0 && pl.stack == "text" &&
             in(leaf, {"lm_head", "embed_out", "output", "score", "classifier", "proj_out"})) {
    // lm_head (most *ForCausalLM), embed_out (GPT-NeoX), output (InternLM2),
    // score (*ForSequenceClassification), proj_out (Whisper).
    return Role::kHead;
  } else if (pl.layer < 0 && in(leaf, {"embed_tokens", "wte", "wpe", "word_embeddings", "embed_in", "tok_embeddings",
                                       "shared", "position_embeddings", "embed_positions", "token_type_embeddings",
                                       "embedding", "embeddings", "position_embedding", "embed_tokens_per_layer"})) {
    // embed_tokens (Llama), wte / wpe (GPT-2), word_embeddings (BLOOM, BERT),
    // embed_in (GPT-NeoX), tok_embeddings (InternLM2), shared (T5),
    // embed_positions (OPT, Whisper), token_type_embeddings (BERT).
    return Role::kEmbedding;
  } else if (in(leaf, {"router", "gating", "shared_expert_gate"}) ||
             (leaf == "gate" && has({"mlp", "block_sparse_moe", "feed_forward", "moe", "ffn"}))) {
    // mlp.gate (Qwen2-MoE, DeepSeek, OLMoE), block_sparse_moe.gate (Mixtral),
    // mlp.router (gpt-oss), feed_forward.router (Llama 4).
    return Role::kRouter;
  } else if (has({"shared_expert", "shared_experts", "shared_mlp"})) {
    // Qwen2-MoE mlp.shared_expert, DeepSeek mlp.shared_experts, Llama 4 shared_expert.
    return Role::kSharedMlp;
  } else if (has({"experts"})) {
    // Mixtral block_sparse_moe.experts.N.w1, Qwen-MoE / DeepSeek mlp.experts.N.gate_proj,
    // gpt-oss mlp.experts.gate_up_proj (fused, [experts, hidden, 2 x expert width]).
    return Role::kExperts;
  } else if (has({"self_attn", "attn", "attention", "self_attention", "selfattention", "encdecattention",
                  "encoder_attn", "cross_attn", "crossattention"}) ||
             in(leaf, {"q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "query_key_value", "c_attn", "wqkv", "query",
                       "key", "value", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"})) {
    // self_attn.{q,k,v,o}_proj (Llama), attn.c_attn / c_proj (GPT-2),
    // self_attention.query_key_value / dense (BLOOM, Falcon), attention.wqkv /
    // wo (InternLM2), SelfAttention.{q,k,v,o} and EncDecAttention (T5),
    // attention.self.{query,key,value} (BERT), encoder_attn (Whisper),
    // self_attn.sinks (gpt-oss).
    return Role::kAttention;
  } else if (has({"mlp", "feed_forward", "ffn", "densereludense", "block_sparse_moe", "intermediate", "output"}) ||
             in(leaf, {"gate_proj", "up_proj", "down_proj", "fc1", "fc2", "c_fc", "w1", "w2", "w3", "dense_h_to_4h",
                       "dense_4h_to_h", "gate_up_proj", "wi", "wi_0", "wi_1"})) {
    // mlp.{gate,up,down}_proj (Llama), mlp.c_fc / c_proj (GPT-2),
    // mlp.dense_h_to_4h (GPT-NeoX, BLOOM), fc1 / fc2 (OPT, Phi, Whisper),
    // feed_forward.w1..w3 (InternLM2, Mixtral experts), DenseReluDense.wi / wo
    // (T5), intermediate.dense and output.dense (BERT).
    return Role::kMlp;
  } else if (pl.stack != "text" && pl.stack != "encoder") {
    return Role::kTower;  // inside a tower or projector: placed there whatever its name
  }
  return Role::kUnplaced;
}

}  // namespace

const char* role_name(Role r) {
  switch (r) {
    case Role::kEmbedding:
      return "embeddings";
    case Role::kAttention:
      return "attention";
    case Role::kMlp:
      return "mlp";
    case Role::kSharedMlp:
      return "shared_experts";
    case Role::kExperts:
      return "experts";
    case Role::kRouter:
      return "router";
    case Role::kNorm:
      return "norms";
    case Role::kHead:
      return "lm_head";
    case Role::kTower:
      return "tower";
    case Role::kUnplaced:
      return "unplaced";
  }
  return "?";
}

Placement place(const std::string& module, bool encoder_decoder) {
  Placement pl;
  std::vector<std::string> segs = split(module);
  std::vector<std::string> low;
  for (const auto& s : segs) low.push_back(lower(s));

  // Qwen3-Next keeps its multi-token-prediction module at the top level
  // (mtp.fc, mtp.layers.0.*; modeling_qwen3_next.py drops "^mtp.*" on load).
  pl.mtp = !low.empty() && (low[0] == "mtp" || (low.size() > 1 && low[0] == "model" && low[1] == "mtp"));
  pl.stack = stack_of(low, encoder_decoder);
  number_segments(segs, low, pl);
  const std::string leaf = lower(pl.leaf);
  pl.output_side =
      in(leaf, {"o_proj", "down_proj", "dense", "c_proj", "wo", "out_proj", "fc2", "dense_4h_to_h", "w2", "o", "down"});
  pl.role = role_of(pl, leaf, low);
  return pl;
}

}  // namespace vram::detail

// gpt-oss: a mixture-of-experts decoder with attention sinks, biases on every
// projection and alternating sliding-window / full attention layers.
// Sources: transformers at commit 02b8f42b4240dddea1b27c45d2dc95fb2682f841,
// src/transformers/models/gpt_oss/configuration_gpt_oss.py and
// modeling_gpt_oss.py.

#include "families/dense_helpers.h"
#include "families/llama_like.h"
#include "families/moe_vlm_common.h"
#include "families/registry_entries.h"
#include "vram/families.h"

namespace vram::detail {

// configuration_gpt_oss.py (GptOssConfig): 36 layers, num_local_experts 128
// (alias num_experts), vocab 201088, hidden 2880, intermediate 2880, head_dim
// 64, 64 heads, 8 KV heads, sliding_window 128, untied, 131072 positions,
// num_experts_per_tok 4, attention_bias True; layer_types defaults to
// "sliding_attention" on even layers (i + 1 odd) and "full_attention" on odd.
// modeling_gpt_oss.py, per layer:
// - GptOssAttention: q/k/v/o_proj with bias = attention_bias, and `sinks`, one
//   learned logit per attention head that joins every softmax;
// - GptOssMLP: router (GptOssTopKRouter: weight [experts, hidden], bias
//   [experts]) and experts (GptOssExperts: gate_up_proj [experts, hidden,
//   2 x intermediate] with gate_up_proj_bias, down_proj [experts, intermediate,
//   hidden] with down_proj_bias), no shared expert;
// - input_layernorm and post_attention_layernorm (RMSNorm).
// The published checkpoints store the experts' weight matrices in MXFP4
// (`*_blocks` / `*_scales`, quantization_config.quant_method "mxfp4");
// transformers dequantises them on load unless the Triton kernels are present.
void build_gpt_oss(const JsonReader& cfg, ModelSpec& spec) {
  LlamaLikeDefaults d;
  d.config_class = "GptOssConfig";
  d.vocab = 201088;
  d.hidden = 2880;
  d.intermediate = 2880;
  d.layers = 36;
  d.heads = 64;
  d.kv_heads = 8;
  d.head_dim = 64;
  d.max_positions = 131072;
  d.has_mlp_bias = false;
  build_llama_like(cfg, spec, d);
  LayerStack& t = spec.text;
  t.position_encoding = "rope";
  // attention_bias defaults to True here (False in LlamaConfig).
  const bool attn_bias = cfg.bool_or("attention_bias", true);
  for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj"}) set_text_linear_bias(spec, m, attn_bias);
  add_other(spec, "sinks", comp::kAttention, "text", t.heads, t.layers);

  const std::string experts_key = cfg.has("num_local_experts") ? "num_local_experts" : "num_experts";
  const int64_t experts = cfg.int_or(experts_key, 128, 1, kMaxSize);
  const int64_t k = read_experts_per_token(cfg, "num_experts_per_tok", 4, experts, experts_key.c_str());
  keep_dense_mlp_on(spec, 0);
  const size_t router = spec.groups.size();
  add_linear(spec, "router", comp::kRouter, "text", t.hidden, experts, true, t.layers);
  mark_layers(spec, router, LayerSet::kMoe);
  // gate_up_proj is one fused tensor; its gate and up halves are counted as
  // two groups of the same size (with their halves of gate_up_proj_bias).
  add_routed_experts(spec, "gate_up_proj", "gate_up_proj", "down_proj", t.hidden, t.intermediate, experts, k, t.layers,
                     true);
  t.moe_layers = t.layers;
  t.experts = experts;
  t.experts_per_token = k;
  t.expert_intermediate = t.intermediate;

  if (cfg.has_key("sliding_window") && !cfg.has("sliding_window")) {
    t.sliding_window = 0;
  } else {
    t.sliding_window = cfg.int_or("sliding_window", 128, 1, kMaxSize);
  }
  t.sliding_layers = listed_sliding_layers(cfg, t.layers).value_or((t.layers + 1) / 2);
  if (t.sliding_window == 0) t.sliding_layers = 0;

  if (const json* q = cfg.get("quantization_config");
      q != nullptr && q->is_object() && q->value("quant_method", std::string()) == "mxfp4") {
    spec.notes.push_back(
        "the checkpoint stores the experts' weights in MXFP4 (4-bit e2m1 values and one 8-bit scale per 32); "
        "this count is the dequantised parameter count; infer.weights_dtype \"mxfp4\" sizes the weights as "
        "stored (experts at 4.25 bits, the rest bf16), other dtypes size every weight at that dtype");
  }
}

}  // namespace vram::detail

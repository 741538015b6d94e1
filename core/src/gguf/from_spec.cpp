// An HF config + a llama-quantize preset -> the GGUF Model llama.cpp would
// load (gguf/model.h): the tensors llama.cpp's converter writes for the
// model's modules (convert_hf_to_gguf.py; GGUF names from llama-arch.cpp
// LLM_TENSOR_NAMES, ggml's dimension order), their source types (1-D
// tensors, norms, the MoE router and biases F32, the rest 16-bit:
// convert_hf_to_gguf.py ModelBase.prepare_tensors), then the preset's types
// (gguf/quant_preset.cpp). The language model only: llama.cpp keeps a VLM's
// vision tower in a separate mmproj file.
#include "gguf/from_spec.h"

#include <algorithm>
#include <map>

#include "gguf/quant_preset.h"

namespace vram::gguf {

namespace {

// transformers model_type -> llama.cpp architecture (convert_hf_to_gguf.py
// @ModelBase.register classes and their model_arch; llama-arch.cpp names).
const std::map<std::string, std::string>& archs() {
  static const std::map<std::string, std::string> kArchs = {
      {"llama", "llama"},
      {"mistral", "llama"},
      {"mixtral", "llama"},
      {"qwen2", "qwen2"},
      {"qwen2_moe", "qwen2moe"},
      {"qwen3", "qwen3"},
      {"qwen3_moe", "qwen3moe"},
      {"gemma", "gemma"},
      {"gemma2", "gemma2"},
      {"gemma3", "gemma3"},
      {"gemma3_text", "gemma3"},
      {"phi3", "phi3"},
      {"phi", "phi2"},
      {"deepseek_v2", "deepseek2"},
      {"deepseek_v3", "deepseek2"},
      {"gpt_oss", "gpt-oss"},
      {"cohere", "command-r"},
      {"cohere2", "cohere2"},
      {"olmo2", "olmo2"},
      {"olmoe", "olmoe"},
      {"granite", "granite"},
      {"granitemoe", "granitemoe"},
      {"glm4_moe", "glm4moe"},
      {"glm4", "glm4"},
      {"exaone4", "exaone4"},
      {"smollm3", "smollm3"},
      {"starcoder2", "starcoder2"},
      {"falcon", "falcon"},
      {"gpt2", "gpt2"},
      {"bloom", "bloom"},
      {"stablelm", "stablelm"},
      {"internlm2", "internlm2"},
      {"llama4", "llama4"},
      {"llama4_text", "llama4"},
      {"mistral3", "llama"},
      {"gpt_neox", "gptneox"},
      {"starcoder", "starcoder"},
      {"gpt_bigcode", "starcoder"},
      {"exaone", "exaone"},
  };
  return kArchs;
}

// The GGUF name (within blk.N.) of a transformers module of the language model.
std::string block_name(const ParamGroup& g, bool shared) {
  const std::string& m = g.module;
  auto is = [&](std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return m == n; });
  };
  const std::string c = g.component;
  if (c == comp::kNorms) {
    if (is({"input_layernorm", "ln_1", "attention_norm"})) return "attn_norm";
    if (is({"post_attention_layernorm", "ln_2", "ffn_norm"})) return "ffn_norm";
    if (is({"q_norm", "q_layernorm"})) return "attn_q_norm";
    if (is({"k_norm", "k_layernorm"})) return "attn_k_norm";
    if (is({"q_a_layernorm"})) return "attn_q_a_norm";
    if (is({"kv_a_layernorm"})) return "attn_kv_a_norm";
    if (is({"pre_feedforward_layernorm"})) return "ffn_norm";
    if (is({"post_feedforward_layernorm"})) return "post_ffw_norm";
    return m + "_norm";
  }
  if (c == comp::kAttention) {
    if (is({"q_proj", "wq", "query"})) return "attn_q";
    if (is({"k_proj", "wk", "key"})) return "attn_k";
    if (is({"v_proj", "wv", "value"})) return "attn_v";
    if (is({"o_proj", "wo", "dense", "c_proj", "out_proj", "o"})) return "attn_output";
    if (is({"qkv_proj", "query_key_value", "c_attn", "Wqkv", "wqkv", "qkv"})) return "attn_qkv";
    if (is({"q_a_proj"})) return "attn_q_a";
    if (is({"q_b_proj"})) return "attn_q_b";
    if (is({"kv_a_proj_with_mqa"})) return "attn_kv_a_mqa";
    if (is({"kv_b_proj"})) return "attn_kv_b";
    if (is({"sinks"})) return "attn_sinks";
    return "attn_" + m;
  }
  if (c == comp::kRouter) return "ffn_gate_inp";
  const std::string suffix = c == comp::kExperts ? "_exps" : shared ? "_shexp" : "";
  if (is({"gate_proj", "w1", "wi_0"})) return "ffn_gate" + suffix;
  if (is({"up_proj", "w3", "c_fc", "fc1", "wi_1", "dense_h_to_4h", "wi", "gate_up_proj"})) return "ffn_up" + suffix;
  if (is({"down_proj", "w2", "c_proj", "fc2", "dense_4h_to_h", "wo"})) return "ffn_down" + suffix;
  return "ffn_" + m;
}

// Source type of a tensor: F32 for 1-D tensors, norms, the router and biases,
// 16-bit for the other weights (ModelBase.prepare_tensors).
const GgmlType* source_type(const std::string& name, int64_t dims) {
  const bool f32 = dims <= 1 || name.find("_norm.weight") != std::string::npos ||
                   name.find("ffn_gate_inp") != std::string::npos || name.find("position_embd") != std::string::npos ||
                   name.size() < 7 || name.compare(name.size() - 7, 7, ".weight") != 0;
  return ggml_type(f32 ? 0 : 1);
}

void add(Model& m, std::string name, std::vector<int64_t> ne, int32_t layer, Part part) {
  Tensor t;
  t.name = std::move(name);
  t.ne = std::move(ne);
  t.elements = 1;
  for (int64_t n : t.ne) t.elements *= n;
  t.type = source_type(t.name,
                       static_cast<int64_t>(std::count_if(t.ne.begin(), t.ne.end(), [](int64_t n) { return n > 1; })));
  t.bytes = t.elements * t.type->bytes;
  t.layer = layer;
  t.part = part;
  m.tensors.push_back(std::move(t));
}

// A norm's tensors: its weight and, for a LayerNorm with a bias (GPT-NeoX,
// Falcon, Phi-2, StarCoder, GPT-2, BLOOM, ...), its F32 bias, which the
// converter writes as NAME.bias and llama.cpp loads beside the weight
// (llama-model.cpp load_tensors, e.g. LLM_ARCH_GPTNEOX: attn_norm_b =
// create_tensor(tn(LLM_TENSOR_ATTN_NORM, "bias", i), {n_embd})).
void add_norm(Model& m, const std::string& name, const ParamGroup& g, int32_t layer, Part part) {
  const int64_t dim = g.out_features > 0 ? g.out_features : g.numel;
  add(m, name + ".weight", {dim}, layer, part);
  if (g.bias && g.out_features > 0) add(m, name + ".bias", {dim}, layer, part);
}

// One group's tensors in block `l` (`copies` of them: experts).
void add_block_group(Model& m, const ModelSpec& spec, const ParamGroup& g, int32_t l, int64_t copies) {
  const bool shared = g.component == std::string(comp::kMlp) && g.layers == LayerSet::kMoe && spec.text.experts > 0;
  const std::string base = "blk." + std::to_string(l) + "." + block_name(g, shared);
  if (g.kind == ModuleKind::kNorm) {
    add_norm(m, base, g, l, Part::kLayer);
    return;
  }
  if (g.kind != ModuleKind::kLinear) {
    add(m, base + ".weight", {g.numel}, l, Part::kLayer);
    return;
  }
  auto linear = [&](const std::string& name, int64_t out) {
    std::vector<int64_t> ne = {g.in_features, out};
    if (g.component == std::string(comp::kExperts)) ne.push_back(copies);
    add(m, name + ".weight", ne, l, Part::kLayer);
    if (g.bias) {
      std::vector<int64_t> b = {out};
      if (g.component == std::string(comp::kExperts)) b.push_back(copies);
      add(m, name + ".bias", b, l, Part::kLayer);
    }
  };
  if (g.component == std::string(comp::kExperts) && g.module == "gate_up_proj") {
    // gpt-oss: the converter splits the fused experts into gate and up.
    linear("blk." + std::to_string(l) + ".ffn_gate_exps", g.out_features / 2);
    linear("blk." + std::to_string(l) + ".ffn_up_exps", g.out_features / 2);
    return;
  }
  linear(base, g.out_features);
}

void add_tensors(Model& m, const ModelSpec& spec) {
  const LayerStack& t = spec.text;
  for (const auto& g : spec.groups) {
    if (g.stack != "text" || spec.layer_span(g) > 0 || g.layer_index >= 0) continue;
    if (g.kind == ModuleKind::kEmbedding) {
      const bool pos = g.module.find("pos") != std::string::npos || g.module == "wpe";
      add(m, pos ? "position_embd.weight" : "token_embd.weight", {g.out_features, g.in_features}, -1, Part::kInput);
    } else if (g.component == std::string(comp::kLmHead)) {
      add(m, "output.weight", {g.in_features, g.out_features}, -1, Part::kOutput);
    } else if (g.kind == ModuleKind::kNorm) {
      add_norm(m, "output_norm", g, -1, Part::kOutput);
    }
  }
  for (int32_t l = 0; l < t.layers; ++l) {
    for (const auto& g : spec.groups) {
      if (g.stack != "text") continue;
      const int64_t span = spec.layer_span(g);
      if (g.layer_index >= 0 ? g.layer_index == l : span > 0 && t.carries(g.layers, l)) {
        const int64_t copies = g.layer_index >= 0 ? g.instances : g.instances / span;
        add_block_group(m, spec, g, l, copies);
      }
    }
  }
}

Hparams hparams_of(const ModelSpec& spec, const std::string& arch) {
  const LayerStack& t = spec.text;
  Hparams hp;
  hp.arch = arch;
  hp.n_layer = t.layers;
  hp.n_embd = t.hidden;
  hp.n_vocab = spec.vocab;
  hp.n_ctx_train = spec.max_position_embeddings;
  hp.n_head.assign(static_cast<size_t>(t.layers), t.heads);
  hp.head_k = t.head_dim;
  hp.head_v = t.v_head_dim > 0 ? t.v_head_dim : t.head_dim;
  int64_t kv = t.kv_heads;
  if (t.attention == AttnKind::kMla) {
    // MLA as convert_hf_to_gguf.py DeepseekV2Model writes it: one KV head of
    // kv_lora_rank + qk_rope_head_dim keys and kv_lora_rank values.
    kv = 1;
    hp.head_k = t.kv_lora_rank + t.qk_rope_head_dim;
    hp.head_v = t.kv_lora_rank;
  }
  hp.n_head_kv.assign(static_cast<size_t>(t.layers), kv);
  for (int64_t l = 0; l < t.layers; ++l) {
    if (!t.carries(LayerSet::kAttention, l)) hp.n_head_kv[static_cast<size_t>(l)] = 0;
  }
  hp.n_ff.assign(static_cast<size_t>(t.layers), t.intermediate);
  hp.n_expert = t.experts;
  hp.n_expert_used = t.experts_per_token;
  hp.n_ff_exp = t.expert_intermediate;
  return hp;
}

}  // namespace

Model model_from_spec(const ModelSpec& spec, const Preset& preset, const std::string& path,
                      std::vector<std::string>& assumptions) {
  const auto it = archs().find(spec.model_type);
  const std::string arch = it == archs().end() ? spec.model_type : it->second;
  if (it == archs().end()) {
    assumptions.push_back("model_type \"" + spec.model_type +
                          "\" has no llama.cpp architecture in this table: its GGUF is assumed to be named as "
                          "llama.cpp names Llama's tensors");
  }
  if (spec.text.ssm_layers > 0) {
    fail(errc::kUnsupported, path,
         "model_type \"" + spec.model_type +
             "\" keeps a recurrent state in llama.cpp (llama-memory-recurrent.cpp), which the llama.cpp estimate "
             "does not model yet");
  }
  Model m;
  m.file = spec.model_type + " " + preset.name;
  m.hp = hparams_of(spec, arch);
  add_tensors(m, spec);
  // read_swa's rules for this architecture (gguf/hparams.cpp) through the
  // metadata a converted file would carry.
  json meta = {
      {"general.architecture", arch}, {arch + ".block_count", m.hp.n_layer}, {arch + ".embedding_length", m.hp.n_embd}};
  if (spec.text.sliding_window > 0) meta[arch + ".attention.sliding_window"] = spec.text.sliding_window;
  const Hparams swa = read_hparams(meta, {}, path);
  m.hp.swa = swa.swa;
  m.hp.n_swa = swa.n_swa;
  m.hp.chunked = swa.chunked;
  m.hp.kv_from_start = swa.kv_from_start;
  m.has_output =
      std::any_of(m.tensors.begin(), m.tensors.end(), [](const Tensor& t) { return t.name == "output.weight"; });
  // llama-model.cpp load_hparams: an 80-layer Llama (grouped-query), Deci,
  // Qwen2 or OLMo is LLM_TYPE_70B.
  const bool seventy_b =
      m.hp.n_layer == 80 && ((arch == "llama" && spec.text.heads != spec.text.kv_heads && spec.text.experts == 0) ||
                             arch == "deci" || arch == "qwen2" || arch == "olmo");
  apply_preset(m, preset, seventy_b);
  return m;
}

}  // namespace vram::gguf

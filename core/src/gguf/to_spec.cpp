// A GGUF tensor list becomes a model the way a safetensors list does
// (checkpoint/build.cpp build_from_tensors): each GGUF tensor name is put
// back under the transformers module name llama.cpp's converter took it from
// (convert_hf_to_gguf.py via gguf-py tensor_mapping.py; the GGUF names are
// llama-arch.cpp LLM_TENSOR_NAMES), its shape in transformers' order (ggml
// lists ne0 first), its bytes as the file stores them; the metadata stands in
// for config.json.
#include <algorithm>
#include <cctype>
#include <map>

#include "checkpoint/inventory.h"
#include "gguf/model.h"
#include "gguf/quant_preset.h"
#include "vram/checkpoint.h"

namespace vram::gguf {

namespace {

// GGUF block tensor (blk.N.<name>) -> the module under model.layers.N.
const std::map<std::string, std::string>& block_names() {
  static const std::map<std::string, std::string> kNames = {
      {"attn_norm", "input_layernorm"},
      {"attn_norm_2", "input_layernorm_2"},
      {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},
      {"attn_qkv", "self_attn.qkv_proj"},
      {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"},
      {"attn_k_norm", "self_attn.k_norm"},
      {"attn_q_a", "self_attn.q_a_proj"},
      {"attn_q_a_norm", "self_attn.q_a_layernorm"},
      {"attn_q_b", "self_attn.q_b_proj"},
      {"attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"},
      {"attn_kv_a_norm", "self_attn.kv_a_layernorm"},
      {"attn_kv_b", "self_attn.kv_b_proj"},
      {"attn_k_b", "self_attn.k_b_proj"},
      {"attn_v_b", "self_attn.v_b_proj"},
      {"attn_sinks", "self_attn.sinks"},
      {"attn_output_norm", "attn_output_layernorm"},
      {"attn_sub_norm", "self_attn.sub_norm"},
      {"post_attention_norm", "post_attention_norm"},
      {"ffn_norm", "post_attention_layernorm"},
      {"post_ffw_norm", "post_feedforward_layernorm"},
      {"layer_output_norm", "layer_output_norm"},
      {"ffn_sub_norm", "mlp.sub_norm"},
      {"ffn_gate", "mlp.gate_proj"},
      {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
      {"ffn_gate_inp", "mlp.gate"},
      {"ffn_gate_inp_shexp", "mlp.shared_expert_gate"},
      {"ffn_gate_exps", "mlp.experts.gate_proj"},
      {"ffn_up_exps", "mlp.experts.up_proj"},
      {"ffn_down_exps", "mlp.experts.down_proj"},
      {"ffn_gate_up_exps", "mlp.experts.gate_up_proj"},
      {"ffn_gate_shexp", "mlp.shared_expert.gate_proj"},
      {"ffn_up_shexp", "mlp.shared_expert.up_proj"},
      {"ffn_down_shexp", "mlp.shared_expert.down_proj"},
      {"exp_probs_b", "mlp.gate.e_score_correction"},
  };
  return kNames;
}

// GGUF tensors outside the blocks.
const std::map<std::string, std::string>& outer_names() {
  static const std::map<std::string, std::string> kNames = {
      {"token_embd", "model.embed_tokens"},
      {"output_norm", "model.norm"},
      {"output", "lm_head"},
      {"position_embd", "model.embed_positions"},
      {"token_types", "model.token_type_embeddings"},
      {"token_embd_norm", "model.embed_layer_norm"},
      {"per_layer_token_embd", "model.embed_tokens_per_layer"},
  };
  return kNames;
}

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight".
std::string hf_name(const Tensor& t) {
  const std::string& n = t.name;
  const size_t dot = n.rfind('.');
  std::string base = dot == std::string::npos ? n : n.substr(0, dot);
  std::string attr = dot == std::string::npos ? "weight" : n.substr(dot + 1);
  if (base == "rope_freqs") return "model.rotary_emb.inv_freq";  // a buffer, as transformers keeps it
  if (t.part == Part::kLayer) {
    const std::string prefix = "blk." + std::to_string(t.layer) + ".";
    std::string inner = base.substr(prefix.size());
    if (inner == "exp_probs_b") return "model.layers." + std::to_string(t.layer) + ".mlp.gate.e_score_correction_bias";
    auto it = block_names().find(inner);
    return "model.layers." + std::to_string(t.layer) + "." + (it == block_names().end() ? inner : it->second) + "." +
           attr;
  }
  auto it = outer_names().find(base);
  return (it == outer_names().end() ? "model." + base : it->second) + "." + attr;
}

std::string upper(const char* s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The metadata as the config.json keys build_from_tensors reads.
json as_config(const Hparams& hp) {
  json c = {{"model_type", hp.arch},
            {"num_hidden_layers", hp.n_layer - hp.n_nextn},
            {"hidden_size", hp.n_embd},
            {"vocab_size", hp.n_vocab}};
  const int64_t heads = hp.n_head.empty() ? 0 : *std::max_element(hp.n_head.begin(), hp.n_head.end());
  if (heads > 0) c["num_attention_heads"] = heads;
  if (!hp.n_head_kv.empty() && hp.n_head_kv[0] > 0) c["num_key_value_heads"] = hp.n_head_kv[0];
  if (hp.head_k > 0) c["head_dim"] = hp.head_k;
  if (hp.n_expert_used > 0) c["num_experts_per_tok"] = hp.n_expert_used;
  if (hp.n_ctx_train > 0) c["max_position_embeddings"] = hp.n_ctx_train;
  return c;
}

}  // namespace

Result<ModelSpec> model_from_gguf(const json& inventory, const std::string& path) {
  return attempt<ModelSpec>([&]() -> ModelSpec {
    auto model = std::make_shared<Model>(read_model(inventory, path));
    if (model->projector) {
      fail(errc::kInconsistent, path,
           path +
               " is a multimodal projector (general.architecture \"clip\"): give it as model.mmproj, next to the "
               "language model's model.gguf");
    }
    ModelSpec spec;
    CheckpointSummary& sum = spec.checkpoint;
    sum.present = true;
    std::vector<detail::TensorIn> tensors;
    for (const Tensor& t : model->tensors) {
      if (t.skipped) continue;
      detail::TensorIn x;
      x.name = hf_name(t);
      x.dtype = upper(t.type->name);
      x.shape.assign(t.ne.rbegin(), t.ne.rend());
      x.numel = t.elements;
      x.bytes = t.bytes;
      sum.tensors += 1;
      sum.stored_elements += t.elements;
      sum.stored_bytes += t.bytes;
      sum.elements_by_dtype[x.dtype] += t.elements;
      tensors.push_back(std::move(x));
    }
    const Hparams& hp = model->hp;
    const json config = as_config(hp);
    spec.family = "gguf";
    spec.model_type = hp.arch;
    spec.architecture = model->name.empty() ? "from the GGUF file's tensors" : model->name;
    detail::build_from_tensors(tensors, &config, path, spec);
    sum.quantization = ftype_name(model->file_type);
    // What the shapes cannot say: llama.cpp's sliding-window layers.
    spec.notes.erase(std::remove_if(spec.notes.begin(), spec.notes.end(),
                                    [](const std::string& n) { return n.rfind("head_dim not in the config", 0) == 0; }),
                     spec.notes.end());
    if (hp.any_swa()) {
      spec.text.sliding_window = hp.n_swa;
      spec.text.sliding_layers = static_cast<int64_t>(std::count(hp.swa.begin(), hp.swa.end(), true));
    }
    for (const auto& n : model->notes) spec.notes.push_back(n);
    spec.gguf = std::move(model);
    return spec;
  });
}

Result<ModelSpec> model_from_sources(const json& model, const std::string& path) {
  return attempt<ModelSpec>([&]() -> ModelSpec {
    JsonReader m(model, path);
    ModelSpec spec;
    if (m.has("gguf")) {
      auto r = model_from_gguf(*m.get("gguf"), m.child_path("gguf"));
      if (!r.ok()) fail(r.error());
      spec = std::move(r.value());
      for (const char* other : {"config", "custom", "size", "safetensors"}) {
        if (m.has(other)) {
          spec.notes.push_back(m.child_path(other) + " is not read: the GGUF file (" + m.child_path("gguf") +
                               ") is the model llama.cpp runs");
        }
      }
    } else {
      json rest = model;
      rest.erase("mmproj");
      auto r = vram::model_from_sources(rest, path);
      if (!r.ok()) fail(r.error());
      spec = std::move(r.value());
    }
    if (m.has("mmproj")) {
      auto proj = std::make_shared<Model>(read_model(*m.get("mmproj"), m.child_path("mmproj")));
      if (!proj->projector) {
        fail(errc::kInconsistent, m.child_path("mmproj"),
             m.child_path("mmproj") + " is not a multimodal projector (general.architecture is \"" + proj->hp.arch +
                 "\", an mmproj file's is \"clip\")");
      }
      spec.mmproj = std::move(proj);
    }
    return spec;
  });
}

}  // namespace vram::gguf

// Which parameters train, and in which dtype (research/memory-internals.md §3.4, §6).
#include <algorithm>
#include <set>

#include "memory/recipe.h"
#include "vram/status.h"

namespace vram::memory {

Dtypes dtypes_for(const Request& req) {
  Dtypes d;
  const Precision p = req.train.method == Method::kQlora ? Precision::kBf16 : req.train.precision;
  switch (p) {
    case Precision::kFp32:
      d = {4, 4, 4, 0, 4, 4, false, 0};
      break;
    case Precision::kBf16:
    case Precision::kFp16:
      // Pure low precision: torch optimizers create zeros_like(param) states,
      // so states are bf16 too (torch/optim/adam.py _init_group).
      d = {2, 2, 2, 0, 2, 2, false, 0};
      break;
    case Precision::kAmpBf16:
    case Precision::kAmpFp16:
      // fp32 weights + autocast: grads and states fp32; autocast caches one
      // low-precision copy of every fp32 leaf weight it casts, until the
      // outermost autocast region exits (aten/src/ATen/autocast_mode.cpp
      // cached_cast). The residual stream stays fp32 (fp32 embeddings + adds).
      d = {4, 4, 4, 0, 2, 4, true, 2};
      break;
    case Precision::kMixedBf16:
      // bf16 model + fp32 master weights and states: 2 + 2 + 12 B/param
      // (ZeRO paper, arXiv:1910.02054 §5, K = 12).
      d = {2, 2, 4, 4, 2, 2, false, 0};
      break;
  }
  if (req.train.method == Method::kQlora && req.train.quant.prepare_kbit) {
    // peft prepare_model_for_kbit_training casts every non-4-bit parameter to
    // fp32 (peft/utils/other.py), so embeddings, norms and lm_head are fp32 and
    // the residual stream (fp32 embedding output + adds) is fp32.
    d.residual = 4;
  }
  if (d.autocast && !req.parallel.fsdp.empty() && req.parallel.fsdp_param_bytes > 0 &&
      req.parallel.fsdp_param_bytes <= d.autocast_cache) {
    // FSDP MixedPrecision(param_dtype=bf16) / FSDP2 MixedPrecisionPolicy
    // hands the forward low-precision unsharded parameters, so autocast has
    // no fp32 leaf weight to cast and caches nothing (autocast_mode.cpp
    // cached_cast caches only fp32 leaves that require grad); the gathered
    // copies are parallel_buffers' gathered parameters. torchtitan
    // (parallelize.py apply_fsdp) trains this way.
    d.autocast_cache = 0;
    // The same 16-bit parameters make the residual stream 16-bit:
    // nn.Embedding returns its weight's dtype, the residual adds of two
    // 16-bit tensors stay 16-bit, and the norms return their weight's dtype
    // (transformers LlamaRMSNorm: weight * hidden_states.to(input_dtype);
    // torchtitan RMSNorm: _norm(x.float()).type_as(x) * weight). So the layer
    // inputs, norm outputs and the tensors the projections save are 16-bit,
    // not the fp32 of autocast over fp32 weights. torchtitan (no autocast
    // under FSDP: torchtitan/distributed/utils.py maybe_enable_amp) and
    // accelerate's FSDP (autocast over MixedPrecision params) both run so.
    d.residual = req.parallel.fsdp_param_bytes;
    d.low_precision_params = true;
  }
  // peft autocast_adapter_dtype=True keeps adapters in fp32; the same
  // prepare_model_for_kbit_training cast makes QLoRA's non-4-bit frozen
  // weights fp32.
  d.adapter = (req.train.lora.adapter_fp32 || d.weight == 4) ? 4 : d.weight;
  d.frozen = (req.train.method == Method::kQlora && req.train.quant.prepare_kbit) ? 4 : d.weight;
  return d;
}

namespace {

// peft utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING.
std::vector<std::string> default_lora_targets(const ModelSpec& m) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kDefaults = {
      {"gpt2", {"c_attn"}},
      {"gpt_bigcode", {"c_attn"}},
      {"gpt_neox", {"query_key_value"}},
      {"falcon", {"query_key_value"}},
      {"bloom", {"query_key_value"}},
      {"t5", {"q", "v"}},
      {"bert", {"query", "value"}},
      {"phi3", {"qkv_proj"}},
  };
  for (const auto& [type, targets] : kDefaults) {
    if (m.model_type == type) return targets;
  }
  // llama, mistral, qwen2/3, gemma, opt, phi, mixtral, ...: q_proj and v_proj.
  // Families without a peft default and without those names (DeepSeek MLA)
  // get every attention linear that exists, as PEFT users then list them.
  std::vector<std::string> out;
  for (const char* n : {"q_proj", "v_proj"}) {
    for (const auto& g : m.groups) {
      if (g.module == n && g.kind == ModuleKind::kLinear) {
        out.emplace_back(n);
        break;
      }
    }
  }
  if (out.size() == 2) return out;
  out.clear();
  for (const auto& g : m.groups) {
    // Mamba's mixer linears (in_proj, x_proj, dt_proj, out_proj) stand in for attention.
    const bool mixer = g.component == std::string(comp::kAttention) || g.component == std::string(comp::kSsm);
    if (g.kind == ModuleKind::kLinear && mixer && g.stack == "text" &&
        std::find(out.begin(), out.end(), g.module) == out.end()) {
      out.push_back(g.module);
    }
  }
  return out;
}

// Copies of a per-layer group that sit on the selected layers. Sparse (MoE)
// layers are the top moe_layers of the stack, as everywhere in the estimator.
int64_t instances_on_layers(const ModelSpec& m, const ParamGroup& g, const std::set<int64_t>& layers) {
  const int64_t span = m.layer_span(g);
  if (span == 0) return 0;
  int64_t hit = 0;
  for (int64_t l : layers) {
    if (m.text.carries(g.layers, l)) ++hit;
  }
  return g.instances / span * hit;
}

}  // namespace

namespace {

// The output layer as PEFT finds it: the nn.Linear that
// get_output_embeddings() returns (transformers modeling_*.py
// *ForCausalLM.lm_head; GPTNeoXForCausalLM.embed_out). An untied head is a
// ParamGroup of the model; a tied one shares embed_tokens' weight but is
// still an nn.Linear module of its own, which PEFT wraps (peft
// tuners_utils.py BaseTuner.inject_adapter only warns about
// tied_target_modules). Encoder-only models (BERT) and T5Model have no LM head.
struct OutputHead {
  bool exists = false;
  bool tied = false;
  std::string module;
  int64_t in = 0;
  int64_t out = 0;
};

OutputHead output_head(const ModelSpec& m) {
  OutputHead h;
  for (const auto& g : m.groups) {
    if (g.kind == ModuleKind::kLinear && g.component == std::string(comp::kLmHead)) {
      return {true, false, g.module, g.in_features, g.out_features};
    }
  }
  if (!m.tie_word_embeddings || !m.text.causal || m.model_type == "bert" || m.architecture == "T5Model") return h;
  h.exists = true;
  h.tied = true;
  h.module = m.model_type == "gpt_neox" ? "embed_out" : "lm_head";
  h.in = m.text.hidden;
  // OPTForCausalLM's lm_head reads word_embed_proj_dim, project_out's output (families/opt.cpp).
  for (const auto& g : m.groups) {
    if (g.kind == ModuleKind::kLinear && g.module == "project_out") h.in = g.out_features;
  }
  h.out = m.vocab;  // vocab / tp on a tensor-parallel rank (train/layout.cpp rank_request)
  return h;
}

// Why the fused loss cannot take a LoRA head: both fused kernels read the
// head's weight, not its output. Liger's lce_forward passes
// lm_head_weight=self.lm_head.weight to LigerForCausalLMLoss
// (liger_kernel/transformers/model/llama.py), Unsloth's CausalLM_fast_forward
// lm_head = self.lm_head.weight to unsloth_fused_ce_loss (unsloth
// unsloth/models/llama.py at 015bdef0), and on a PEFT lora.Linear `.weight` is
// the base layer's (peft tuners_utils.py BaseTunerLayer.weight): the adapter
// would be skipped and never train.
void check_head_lora(const Request& req, const OutputHead& head, const std::string& path) {
  const TrainOptions& t = req.train;
  const auto from_framework = [&](const char* field) {
    for (const auto& d : req.framework_defaults) {
      // train.loss "fused" is train.fused_loss.
      if (d.path == field || (std::string(field) == "train.fused_loss" && d.path == "train.loss")) {
        return " (the " + req.framework + " framework's default)";
      }
    }
    return std::string();
  };
  if (t.fused_loss) {
    fail(errc::kInconsistent, path,
         path + " " + vram::quoted(head.module) + " (LoRA on the output layer) cannot be combined with " +
             "train.fused_loss" + from_framework("train.fused_loss") +
             ": the fused linear cross-entropy (Liger, Unsloth) multiplies the hidden states by lm_head.weight, "
             "the frozen base weight, so the adapter would be bypassed and never train; set train.fused_loss to "
             "false or drop " +
             head.module + " from the targets");
  }
  if (head.tied && req.framework == "torchtune") {
    // torchtune models/llama3_2/_component_builders.py lora_llama3_2 raises
    // for apply_lora_to_output when the output projection is tied.
    fail(errc::kUnsupported, path,
         path + " " + vram::quoted(head.module) +
             ": torchtune does not apply LoRA to a tied output projection (apply_lora_to_output raises when "
             "tie_word_embeddings is true, models/llama3_2/_component_builders.py)");
  }
}

// The input projections of attention (the families' names for q, k, v).
bool qkv(const std::string& name) {
  static const std::set<std::string> kNames = {
      "q_proj", "k_proj", "v_proj", "qkv_proj", "query_key_value", "c_attn",
      "Wqkv",   "query",  "key",    "value",    "q_a_proj",        "kv_a_proj_with_mqa"};
  return kNames.count(name) != 0;
}

// Recipes that name roles rather than modules (LitGPT's lora_projection /
// lora_mlp, torchtune's output_proj and apply_lora_to_mlp, imported as the
// Llama names o_proj and gate/up/down_proj) on a model whose modules are
// named otherwise (Phi: dense, fc1, fc2): a role name the model lacks becomes
// the text stack's linears of that role. o_proj: the attention's linear that
// returns to the hidden size; up/gate_proj: the MLP's linears from the hidden
// size; down_proj: the MLP's linear back to it; q_proj / k_proj / v_proj: the
// fused q/k/v projection (Falcon's and GPT-NeoX's query_key_value, Phi-3's
// qkv_proj), where LitGPT's LoRAQKVLinear adapts the enabled parts of the one
// fused output (its lora_B covers those widths only; the whole output's
// adapter is counted, a few MiB more at r 32). Any other name stays as given.
std::vector<std::string> by_role(const ModelSpec& m, const std::vector<std::string>& targets,
                                 const std::set<std::string>& linear_names) {
  std::vector<std::string> out;
  const auto add = [&](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  const int64_t h = m.text.hidden;
  for (const std::string& name : targets) {
    const bool o = name == "o_proj", up = name == "up_proj" || name == "gate_proj", down = name == "down_proj";
    const bool q_k_v = name == "q_proj" || name == "k_proj" || name == "v_proj";
    if (linear_names.count(name) != 0 || !(o || up || down || q_k_v)) {
      add(name);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& g : m.groups) {
      if (g.kind != ModuleKind::kLinear || g.stack != "text") continue;
      const bool role = q_k_v ? g.component == std::string(comp::kAttention) && g.in_features == h && qkv(g.module)
                        : o   ? g.component == std::string(comp::kAttention) && g.out_features == h && !qkv(g.module)
                            : g.component == std::string(comp::kMlp) && (up ? g.in_features == h : g.out_features == h);
      if (role && std::find(found.begin(), found.end(), g.module) == found.end()) found.push_back(g.module);
    }
    if (found.empty()) {
      add(name);  // the caller names the field and lists the modules
    } else {
      for (const std::string& f : found) add(f);
    }
  }
  return out;
}

// LoRA's target modules: PEFT's "all-linear" (every Linear but the output
// layer: tuners_utils.py _maybe_include_all_linear_layers removes the
// get_output_embeddings() module), the request's names, or the family's
// default; a name that matches no Linear is an error naming the field. The
// output layer is a target only when named ("lm_head"); `head` says so.
std::vector<std::string> lora_targets(const Request& req, bool holds_head, HeadLora& head) {
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  std::set<std::string> linear_names;
  for (const auto& g : m.groups) {
    if (g.kind == ModuleKind::kLinear && g.component != std::string(comp::kLmHead)) linear_names.insert(g.module);
  }
  if (t.lora.all_linear) return {linear_names.begin(), linear_names.end()};
  std::vector<std::string> targets = t.lora.targets.empty() ? default_lora_targets(m) : t.lora.targets;
  if (!t.lora.targets.empty()) targets = by_role(m, targets, linear_names);
  const OutputHead out = output_head(m);
  for (size_t i = 0; i < targets.size(); ++i) {
    if (linear_names.count(targets[i]) != 0) continue;
    const std::string path =
        t.lora.targets.empty() ? "train.lora.targets" : "train.lora.targets[" + std::to_string(i) + "]";
    // A pipeline rank before the last holds no head; the last stage checks the name.
    const bool head_name =
        out.exists ? targets[i] == out.module : !holds_head && (targets[i] == "lm_head" || targets[i] == "embed_out");
    if (head_name) {
      if (out.exists) {
        check_head_lora(req, out, path);
        head.tied = out.tied;
        head.module = out.module;
        head.in = out.in;
        head.out = out.out;
      }
      head.targeted = true;
      continue;
    }
    std::string avail;
    for (const auto& n : linear_names) avail += (avail.empty() ? "" : ", ") + n;
    if (out.exists) avail += "; output layer: " + out.module;
    fail(errc::kUnknownValue, path,
         path + " " + vram::quoted(targets[i]) + " matches no linear module of this " + m.model_type +
             " model; linear modules: " + avail);
  }
  return targets;
}

// Freeze: "layers.N" selects every per-layer group of text layer N; other
// names select modules by leaf name in every layer.
void freeze_selection(const Request& req, std::set<int64_t>& train_layers, std::set<std::string>& train_names) {
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  for (size_t i = 0; i < t.trainable_modules.size(); ++i) {
    const std::string& s = t.trainable_modules[i];
    if (s.rfind("layers.", 0) == 0) {
      const std::string num = s.substr(7);
      const bool digits =
          !num.empty() && std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; });
      const int64_t n = digits && num.size() < 9 ? std::stoll(num) : -1;
      if (n < 0 || n >= m.text.layers) {
        const std::string path = "train.trainable_modules[" + std::to_string(i) + "]";
        fail(errc::kOutOfRange, path,
             path + " " + vram::quoted(s) + " must name a layer from layers.0 to layers." +
                 std::to_string(m.text.layers - 1));
      }
      train_layers.insert(n);
    } else {
      const bool known =
          std::any_of(m.groups.begin(), m.groups.end(), [&](const ParamGroup& g) { return g.module == s; });
      if (!known) {
        const std::string path = "train.trainable_modules[" + std::to_string(i) + "]";
        fail(errc::kUnknownValue, path, path + " " + vram::quoted(s) + " matches no module of this model");
      }
      train_names.insert(s);
    }
  }
}

}  // namespace

TrainablePlan plan_trainable(const Request& req, bool holds_head) {
  const ModelSpec& m = req.model;
  const TrainOptions& t = req.train;
  TrainablePlan plan;
  plan.groups.resize(m.groups.size());
  if (t.method == Method::kLora || t.method == Method::kQlora) {
    plan.lora_targets = lora_targets(req, holds_head, plan.head_lora);
  }
  HeadLora& head = plan.head_lora;
  if (head.targeted && holds_head && head.out > 0) {
    // peft tuners/lora/layer.py LoraLayer.update_layer: lora_A [r, in],
    // lora_B [out, r]; DoRA adds a magnitude vector of out_features.
    head.on = true;
    head.params = t.lora.rank * (head.in + head.out) + (t.lora.use_dora ? head.out : 0);
    plan.lora_params += head.params;
    plan.any_text_trainable = true;
  }
  std::set<int64_t> train_layers;
  std::set<std::string> train_names;
  freeze_selection(req, train_layers, train_names);

  plan.first_grad_layer = m.text.layers;
  const std::set<std::string> targets(plan.lora_targets.begin(), plan.lora_targets.end());
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const ParamGroup& g = m.groups[i];
    GroupPlan& gp = plan.groups[i];
    switch (t.method) {
      case Method::kFull:
        gp.trainable = true;
        gp.trainable_instances = g.instances;
        break;
      case Method::kFreeze:
        if (train_names.count(g.module) != 0) {
          gp.trainable = true;
          gp.trainable_instances = g.instances;
        } else if (const int64_t n = instances_on_layers(m, g, train_layers); n > 0) {
          gp.trainable = true;
          gp.trainable_instances = n;
        }
        break;
      case Method::kLora:
      case Method::kQlora:
        break;
    }
    // QLoRA: bitsandbytes replaces every nn.Linear but the output layer
    // (transformers get_keys_to_not_convert keeps lm_head in high precision).
    // Lightning's BitsandbytesPrecision (LitGPT --quantize) replaces every
    // torch.nn.Linear it sees, lm_head included
    // (lightning_fabric/plugins/precision/bitsandbytes.py
    // module_init_context: _ClassReplacementContextManager).
    gp.quantized = t.method == Method::kQlora && g.kind == ModuleKind::kLinear &&
                   (t.quant.lightning || g.component != std::string(comp::kLmHead));
    if ((t.method == Method::kLora || t.method == Method::kQlora) && g.kind == ModuleKind::kLinear &&
        targets.count(g.module) != 0 && g.component != std::string(comp::kLmHead)) {
      gp.lora = true;
      // peft tuners/lora/layer.py: lora_A [r, in] + lora_B [out, r]; DoRA adds
      // a magnitude vector of out_features.
      gp.lora_params =
          (t.lora.rank * (g.in_features + g.out_features) + (t.lora.use_dora ? g.out_features : 0)) * g.instances;
      plan.lora_params += gp.lora_params;
    }
    if (gp.trainable) plan.base_trainable += g.numel * gp.trainable_instances;
    const bool grad_here = gp.trainable || gp.lora;
    if (grad_here && g.stack == "text") {
      plan.any_text_trainable = true;
      if (g.kind == ModuleKind::kEmbedding) {
        plan.first_grad_layer = 0;
      } else if (m.layer_span(g) > 0) {
        // The lowest layer whose copy of this group takes a gradient.
        auto carries = [&](int64_t l) { return m.text.carries(g.layers, l); };
        int64_t first = 0;
        while (first < m.text.layers && !carries(first)) ++first;
        if (t.method == Method::kFreeze && train_names.count(g.module) == 0 && !train_layers.empty()) {
          first = m.text.layers;
          for (int64_t l : train_layers) {
            if (carries(l)) {
              first = l;
              break;
            }
          }
        }
        plan.first_grad_layer = std::min(plan.first_grad_layer, first);
      }
    }
    if (grad_here && g.stack != "text") plan.vision_needs_grad = true;
  }
  // HF + peft with gradient checkpointing call enable_input_require_grads, so
  // the embedding output requires grad and every layer saves its input.
  if (t.checkpointing != Checkpointing::kNone && t.method != Method::kFull) plan.first_grad_layer = 0;
  // Only the head trains and this pipeline rank does not hold it: the other
  // ranks still run the step (the last one trains).
  if (plan.base_trainable == 0 && plan.lora_params == 0 && !head.targeted) {
    fail(errc::kInconsistent, "train.method", "nothing would train: choose trainable modules or LoRA targets");
  }
  return plan;
}

}  // namespace vram::memory

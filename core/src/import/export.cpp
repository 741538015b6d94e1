// Export (issue 15): from a request, the file each framework reads to run
// that job, written with the same key meanings the importer reads
// (kinds.cpp), so an exported file imported again gives the same request.
#include <algorithm>
#include <cctype>
#include <regex>

#include "guarded.h"
#include "vram/api.h"
#include "vram/import.h"
#include "vram/request.h"

namespace vram {

namespace {

// ---- a small YAML writer: block mappings, flow lists of scalars. Strings
// that YAML 1.2's core schema would read as something else are written as
// JSON strings (a valid YAML double-quoted scalar).
std::string yaml_scalar(const json& v) {
  if (!v.is_string()) return v.dump();
  const std::string s = v.get<std::string>();
  static const std::regex kPlain(R"(^[A-Za-z_][A-Za-z0-9_./-]*$)");
  static const std::regex kSpecial(R"(^(true|false|null|True|False|TRUE|FALSE|Null|NULL|~)$)");
  if (std::regex_match(s, kPlain) && !std::regex_match(s, kSpecial)) return s;
  return v.dump();
}

void yaml_write(const json& obj, int indent, std::string& out) {
  for (const auto& [k, v] : obj.items()) {
    out += std::string(static_cast<size_t>(indent), ' ') + k + ":";
    if (v.is_object()) {
      out += "\n";
      yaml_write(v, indent + 2, out);
    } else if (v.is_array()) {
      out += " [";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + yaml_scalar(v[i]);
      out += "]\n";
    } else {
      out += " " + yaml_scalar(v) + "\n";
    }
  }
}

std::string yaml_text(const std::string& header, const json& obj) {
  std::string out = header;
  yaml_write(obj, 0, out);
  return out;
}

// 16.0 -> 16: what a person writes (and what JSON.stringify gives).
json number(double d) {
  if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  return d;
}

bool bf16_recipe(Precision p) {
  return p == Precision::kBf16 || p == Precision::kAmpBf16 || p == Precision::kMixedBf16;
}
bool fp16_recipe(Precision p) { return p == Precision::kFp16 || p == Precision::kAmpFp16; }

// The LoRA targets as the request holds them, or "all-linear".
json lora_targets(const Request& r) {
  if (r.train.lora.all_linear) return "all-linear";
  json out = json::array();
  for (const auto& t : r.train.lora.targets) out.push_back(t);
  return out;
}

bool adapters(const Request& r) { return r.train.method == Method::kLora || r.train.method == Method::kQlora; }

// DeepSpeed's config JSON (deepspeed/runtime/zero/config.py names).
json deepspeed_object(const Request& r) {
  const ParallelOptions& p = r.parallel;
  json z = {{"stage", p.zero}};
  if (p.zero >= 1) z["offload_optimizer"] = {{"device", p.offload_optimizer ? "cpu" : "none"}};
  if (p.zero == 3) z["offload_param"] = {{"device", p.offload_params ? "cpu" : "none"}};
  if (p.overlap_comm_given) z["overlap_comm"] = p.overlap_comm;
  z["contiguous_gradients"] = p.contiguous_gradients;
  z["reduce_bucket_size"] = p.reduce_bucket_size;
  if (p.zero == 3) {
    z["stage3_prefetch_bucket_size"] = p.stage3_prefetch_bucket_size;
    z["stage3_param_persistence_threshold"] = p.stage3_param_persistence_threshold;
    z["stage3_max_live_parameters"] = p.stage3_max_live_parameters;
  }
  json ds = {{"train_micro_batch_size_per_gpu", r.train.micro_batch},
             {"gradient_accumulation_steps", r.train.grad_accum},
             // deepspeed/runtime/config.py: train_batch_size = micro x accumulation x data-parallel size.
             {"train_batch_size", r.train.micro_batch * r.train.grad_accum * p.dp},
             {"zero_optimization", z}};
  // bf16 / fp16 modes keep fp32 master weights: the request's mixed_bf16.
  // Other half-precision recipes leave it to the Trainer ("auto",
  // transformers integrations/deepspeed.py); fp32 turns it off.
  if (r.train.precision == Precision::kMixedBf16) {
    ds["bf16"] = {{"enabled", true}};
  } else if (r.train.precision == Precision::kFp32) {
    ds["bf16"] = {{"enabled", false}};
  } else {
    ds["bf16"] = {{"enabled", "auto"}};
  }
  return ds;
}

std::string fsdp_strategy_upper(const std::string& s) {
  std::string u = s;
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

json export_deepspeed(const Request& r) {
  if (r.parallel.zero == 0) {
    fail(errc::kInconsistent, "parallel.zero", "a DeepSpeed config needs ZeRO (parallel.zero 1-3)");
  }
  return {{"file", "ds_config.json"}, {"text", deepspeed_object(r).dump(2) + "\n"}};
}

// accelerate/commands/config/cluster.py ClusterConfig names.
json export_accelerate(const Request& r) {
  const ParallelOptions& p = r.parallel;
  json a;
  const std::string mp = bf16_recipe(r.train.precision) ? "bf16" : fp16_recipe(r.train.precision) ? "fp16" : "no";
  if (p.zero > 0) {
    a["distributed_type"] = "DEEPSPEED";
    a["deepspeed_config"] = {{"zero_stage", p.zero},
                             {"gradient_accumulation_steps", r.train.grad_accum},
                             {"offload_optimizer_device", p.offload_optimizer ? "cpu" : "none"},
                             {"offload_param_device", p.offload_params ? "cpu" : "none"}};
  } else if (!p.fsdp.empty()) {
    a["distributed_type"] = "FSDP";
    a["fsdp_config"] = {{"fsdp_sharding_strategy", fsdp_strategy_upper(p.fsdp)},
                        {"fsdp_offload_params", p.offload_params},
                        {"fsdp_version", p.fsdp_version},
                        {"fsdp_sync_module_states", p.fsdp_sync_module_states},
                        {"fsdp_activation_checkpointing", r.train.checkpointing != Checkpointing::kNone},
                        {"fsdp_auto_wrap_policy", "TRANSFORMER_BASED_WRAP"}};
  } else {
    a["distributed_type"] = p.gpus > 1 ? "MULTI_GPU" : "NO";
  }
  a["mixed_precision"] = mp;
  a["num_processes"] = p.gpus;
  a["num_machines"] = p.nodes;
  return {{"file", "accelerate_config.yaml"},
          {"text", yaml_text("# accelerate launch --config_file accelerate_config.yaml train.py\n", a)}};
}

// transformers TrainingArguments / TRL SFTConfig keys (training_args.py, sft_config.py).
json export_trainer(const Request& r) {
  const TrainOptions& t = r.train;
  json a = {{"per_device_train_batch_size", t.micro_batch},
            {"gradient_accumulation_steps", t.grad_accum},
            {"max_length", t.seq_len},
            {"bf16", bf16_recipe(t.precision)},
            {"fp16", fp16_recipe(t.precision)},
            {"optim", t.optimizer},
            {"gradient_checkpointing", t.checkpointing != Checkpointing::kNone},
            {"torch_compile", t.compile}};
  if (t.fused_loss) a["use_liger_kernel"] = true;
  if (r.parallel.zero > 0) a["deepspeed"] = deepspeed_object(r);
  if (!r.parallel.fsdp.empty()) {
    a["fsdp"] = r.parallel.fsdp + " auto_wrap" + (r.parallel.offload_params ? " offload" : "");
    a["fsdp_config"] = {{"fsdp_version", r.parallel.fsdp_version}};
  }
  return {{"file", "training_args.json"}, {"text", a.dump(2) + "\n"}};
}

std::string model_id(const json& input) {
  if (input.contains("export") && input["export"].contains("model_id") && input["export"]["model_id"].is_string()) {
    return input["export"]["model_id"].get<std::string>();
  }
  const json* cfg = input.contains("model") && input["model"].contains("config") ? &input["model"]["config"] : nullptr;
  if (cfg != nullptr && cfg->contains("_name_or_path") && (*cfg)["_name_or_path"].is_string()) {
    return (*cfg)["_name_or_path"].get<std::string>();
  }
  return "your-org/your-model";
}

const char* attention_flag(AttentionImpl a) {
  return a == AttentionImpl::kFlash2 ? "flash_attention" : a == AttentionImpl::kSdpa ? "sdp_attention" : "";
}

// Axolotl (src/axolotl/utils/schemas/config.py).
json export_axolotl(const Request& r, const json& input) {
  const TrainOptions& t = r.train;
  json a = {{"base_model", model_id(input)}};
  if (t.method == Method::kFreeze) fail(errc::kUnsupported, "train.method", "Axolotl has no freeze method");
  if (adapters(r)) {
    a["adapter"] = t.method == Method::kQlora ? "qlora" : "lora";
    if (t.method == Method::kQlora) a["load_in_4bit"] = true;
    a["lora_r"] = t.lora.rank;
    a["lora_alpha"] = number(t.lora.alpha);
    a["lora_dropout"] = number(t.lora.dropout);
    const json targets = lora_targets(r);
    if (targets.is_string()) {
      a["lora_target_linear"] = true;
    } else if (!targets.empty()) {
      a["lora_target_modules"] = targets;
    }
  }
  a["sequence_len"] = t.seq_len;
  a["micro_batch_size"] = t.micro_batch;
  a["gradient_accumulation_steps"] = t.grad_accum;
  a["optimizer"] = t.optimizer;
  a["bf16"] = bf16_recipe(t.precision);
  a["gradient_checkpointing"] = t.checkpointing != Checkpointing::kNone;
  if (*attention_flag(t.attention)) a[attention_flag(t.attention)] = true;
  if (t.fused_loss) {
    a["plugins"] = json::array({"axolotl.integrations.liger.LigerPlugin"});
    a["liger_fused_linear_cross_entropy"] = true;
    a["liger_rms_norm"] = t.fused_norm;
  }
  if (t.compile) a["torch_compile"] = true;
  return {{"file", "axolotl.yml"}, {"text", yaml_text("# axolotl train axolotl.yml\n", a)}};
}

// LLaMA-Factory (src/llamafactory/hparams/*.py).
json export_llama_factory(const Request& r, const json& input) {
  const TrainOptions& t = r.train;
  json a = {{"model_name_or_path", model_id(input)}, {"stage", "sft"}, {"do_train", true}};
  a["finetuning_type"] = t.method == Method::kFreeze ? "freeze" : adapters(r) ? "lora" : "full";
  if (t.method == Method::kQlora) {
    a["quantization_bit"] = 4;
    a["quantization_method"] = "bitsandbytes";
    a["double_quantization"] = t.quant.double_quant;
  }
  if (adapters(r)) {
    a["lora_rank"] = t.lora.rank;
    a["lora_alpha"] = number(t.lora.alpha);
    a["lora_dropout"] = number(t.lora.dropout);
    const json targets = lora_targets(r);
    if (targets.is_string()) {
      a["lora_target"] = "all";
    } else if (!targets.empty()) {
      std::string list;
      for (const auto& x : targets) list += (list.empty() ? "" : ",") + x.get<std::string>();
      a["lora_target"] = list;
    }
  }
  a["cutoff_len"] = t.seq_len;
  a["per_device_train_batch_size"] = t.micro_batch;
  a["gradient_accumulation_steps"] = t.grad_accum;
  a["bf16"] = bf16_recipe(t.precision);
  a["optim"] = t.optimizer;
  a["disable_gradient_checkpointing"] = t.checkpointing == Checkpointing::kNone;
  a["flash_attn"] = t.attention == AttentionImpl::kFlash2 ? "fa2"
                    : t.attention == AttentionImpl::kSdpa ? "sdpa"
                                                          : "disabled";
  if (t.fused_loss) a["enable_liger_kernel"] = true;
  return {{"file", "llama_factory.yaml"}, {"text", yaml_text("# llamafactory-cli train llama_factory.yaml\n", a)}};
}

// torchtune: a recipe config with the keys the recipes read
// (recipes/lora_finetune_single_device.py, full_finetune_single_device.py);
// the header gives the same values as `tune run` command-line overrides.
json export_torchtune(const Request& r, const json& input) {
  const TrainOptions& t = r.train;
  json a;
  const std::string id = model_id(input);
  // torchtune builders by the Hub id they load (kinds.cpp kTorchtuneBuilders, reversed).
  static const std::vector<std::pair<std::string, std::string>> kBuilders = {
      {"meta-llama/Llama-3.1-8B", "llama3_1.llama3_1_8b"},
      {"meta-llama/Llama-3.2-1B", "llama3_2.llama3_2_1b"},
      {"meta-llama/Llama-3.2-3B", "llama3_2.llama3_2_3b"},
      {"meta-llama/Llama-2-7b-hf", "llama2.llama2_7b"},
      {"mistralai/Mistral-7B-v0.1", "mistral.mistral_7b"},
      {"google/gemma-2b", "gemma.gemma_2b"},
      {"google/gemma-7b", "gemma.gemma_7b"},
      {"google/gemma-2-2b", "gemma2.gemma2_2b"},
      {"Qwen/Qwen2.5-7B", "qwen2_5.qwen2_5_7b_base"},
      {"microsoft/Phi-3-mini-4k-instruct", "phi3.phi3_mini"}};
  std::string module = "REPLACE", builder = "REPLACE";
  for (const auto& [hub, b] : kBuilders) {
    if (hub == id) {
      module = b.substr(0, b.find('.'));
      builder = b.substr(b.find('.') + 1);
    }
  }
  const std::string prefix = t.method == Method::kQlora ? "qlora_" : adapters(r) ? "lora_" : "";
  if (t.method == Method::kFreeze) fail(errc::kUnsupported, "train.method", "torchtune has no freeze recipe");
  json m = {{"_component_", "torchtune.models." + module + "." + prefix + builder}};
  if (adapters(r)) {
    const json targets = lora_targets(r);
    json attn = json::array();
    bool mlp = targets.is_string(), head = false;
    for (const auto& [hf, tt] : std::vector<std::pair<std::string, std::string>>{
             {"q_proj", "q_proj"}, {"k_proj", "k_proj"}, {"v_proj", "v_proj"}, {"o_proj", "output_proj"}}) {
      if (targets.is_string() || std::find(targets.begin(), targets.end(), hf) != targets.end()) attn.push_back(tt);
    }
    if (!targets.is_string()) {
      for (const auto& x : targets) {
        const std::string n = x.get<std::string>();
        if (n == "gate_proj" || n == "up_proj" || n == "down_proj") mlp = true;
        if (n == "lm_head") head = true;
      }
    }
    m["lora_attn_modules"] = attn;
    m["apply_lora_to_mlp"] = mlp;
    m["apply_lora_to_output"] = head;
    m["lora_rank"] = t.lora.rank;
    m["lora_alpha"] = number(t.lora.alpha);
    m["lora_dropout"] = number(t.lora.dropout);
  }
  a["model"] = m;
  a["tokenizer"] = {{"max_seq_len", t.seq_len}};
  a["batch_size"] = t.micro_batch;
  a["gradient_accumulation_steps"] = t.grad_accum;
  static const std::vector<std::pair<std::string, std::string>> kOptimizers = {
      {"adamw_torch_fused", "torch.optim.AdamW"},
      {"adamw_torch", "torch.optim.AdamW"},
      {"paged_adamw_8bit", "bitsandbytes.optim.PagedAdamW8bit"},
      {"paged_adamw_32bit", "bitsandbytes.optim.PagedAdamW"},
      {"adamw_bnb_8bit", "bitsandbytes.optim.AdamW8bit"},
      {"sgd", "torch.optim.SGD"}};
  const auto opt =
      std::find_if(kOptimizers.begin(), kOptimizers.end(), [&](const auto& p) { return p.first == t.optimizer; });
  if (opt == kOptimizers.end()) {
    fail(errc::kUnsupported, "train.optimizer", "torchtune has no config name for optimizer " + t.optimizer);
  }
  a["optimizer"] = {{"_component_", opt->second}};
  if (t.optimizer == "adamw_torch_fused") a["optimizer"]["fused"] = true;
  a["optimizer_in_bwd"] = t.optimizer_in_backward;
  if (t.precision != Precision::kBf16 && t.precision != Precision::kFp32) {
    fail(errc::kUnsupported, "train.precision", "torchtune's dtype is bf16 or fp32");
  }
  a["dtype"] = t.precision == Precision::kBf16 ? "bf16" : "fp32";
  a["enable_activation_checkpointing"] = t.checkpointing != Checkpointing::kNone;
  a["enable_activation_offloading"] = t.activation_offload;
  a["compile"] = t.compile;
  std::string overrides;
  const json cli = {{"batch_size", t.micro_batch},
                    {"gradient_accumulation_steps", t.grad_accum},
                    {"tokenizer.max_seq_len", t.seq_len},
                    {"enable_activation_checkpointing", a["enable_activation_checkpointing"]}};
  for (const auto& [k, v] : cli.items()) {
    overrides += " " + k + "=" + (v.is_boolean() ? (v.get<bool>() ? "True" : "False") : v.dump());
  }
  const std::string recipe = adapters(r) ? "lora_finetune_single_device" : "full_finetune_single_device";
  return {
      {"file", "torchtune.yaml"},
      {"text",
       yaml_text("# tune run " + recipe + " --config torchtune.yaml\n# or, on a stock config:" + overrides + "\n", a)}};
}

json export_impl(const json& input) {
  if (!input.is_object() || !input.contains("export") || !input["export"].is_object() ||
      !input["export"].contains("format") || !input["export"]["format"].is_string()) {
    fail(errc::kMissingField, "export.format",
         "export.format is required: deepspeed, accelerate, trainer, axolotl, llama_factory or torchtune");
  }
  const std::string format = input["export"]["format"].get<std::string>();
  json request = input;
  request.erase("export");
  auto parsed = parse_request(request);
  if (!parsed.ok()) fail(parsed.error());
  const Request& r = parsed.value();
  if (r.task != Task::kTrain) fail(errc::kUnsupported, "task", "export writes training configs (task train)");
  json out;
  if (format == "deepspeed") {
    out = export_deepspeed(r);
  } else if (format == "accelerate") {
    out = export_accelerate(r);
  } else if (format == "trainer") {
    out = export_trainer(r);
  } else if (format == "axolotl") {
    out = export_axolotl(r, input);
  } else if (format == "llama_factory") {
    out = export_llama_factory(r, input);
  } else if (format == "torchtune") {
    out = export_torchtune(r, input);
  } else {
    fail(errc::kUnknownValue, "export.format",
         "export.format \"" + format +
             "\" is not one of: deepspeed, accelerate, trainer, axolotl, llama_factory, torchtune");
  }
  out["format"] = format;
  return out;
}

}  // namespace

json export_config(const json& input) {
  return guarded([&] { return export_impl(input); });
}

std::string export_json(const std::string& input_text) {
  return guarded([&] { return export_config(parse_json_text(input_text, "")).dump(2); });
}

}  // namespace vram

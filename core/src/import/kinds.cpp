// Each kind of file, key by key (import.h). Every rule names the framework
// source that gives the key its meaning; keys with no rule are reported by
// FileContext::finish, as irrelevant (the kind's list below) or not understood.
#include <algorithm>
#include <array>
#include <sstream>
#include <string_view>

#include "import/import_context.h"
#include "vram/fields.h"
#include "vram/optimizers.h"

namespace vram::import {

namespace {

// A predicate over top-level keys: exact names, or prefixes ending in '*'.
std::function<bool(const std::string&)> keys(std::vector<std::string> names) {
  return [names = std::move(names)](const std::string& k) {
    for (const auto& n : names) {
      if (!n.empty() && n.back() == '*') {
        if (k.rfind(n.substr(0, n.size() - 1), 0) == 0) return true;
      } else if (k == n) {
        return true;
      }
    }
    return false;
  };
}

std::string str(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A number that is not finite, as the readers keep it (vram/import.h:
// YAML .inf / .nan, a JSON 1e400): an error naming the key.
void finite_at(const std::string& key, const json* v) {
  if (v != nullptr && is_nonfinite(*v)) {
    fail(errc::kOutOfRange, key,
         key + " is " + v->get<std::string>() +
             ", not a finite number (YAML .inf / .nan, or a number beyond a double such as 1e400)");
  }
}

// An integer at `key`, or a failure naming the key.
int64_t int_at(const FileContext& ctx, const std::string& key) {
  const json* v = ctx.at(key);
  finite_at(key, v);
  const auto i = v != nullptr ? as_int(*v) : std::nullopt;
  if (!i) fail(errc::kWrongType, key, key + " must be an integer, got " + (v ? v->dump() : "nothing"));
  return *i;
}

double num_at(const FileContext& ctx, const std::string& key) {
  const json* v = ctx.at(key);
  finite_at(key, v);
  if (v == nullptr || !v->is_number()) {
    fail(errc::kWrongType, key, key + " must be a number, got " + (v ? v->dump() : "nothing"));
  }
  return v->get<double>();
}

// Sets `field` from an integer key unless it is absent, null or "auto".
void set_int(FileContext& ctx, const std::string& key, const std::string& field) {
  const json* v = ctx.at(key);
  if (v == nullptr || v->is_null()) return;
  if (is_auto(*v)) {
    ctx.use_auto(key, field);
    return;
  }
  ctx.set(key, field, int_at(ctx, key));
}

void set_num(FileContext& ctx, const std::string& key, const std::string& field) {
  if (!ctx.has(key)) return;
  num_at(ctx, key);  // a number, or a failure naming the key
  ctx.set(key, field, *ctx.at(key));
}

void set_bool(FileContext& ctx, const std::string& key, const std::string& field) {
  const json* v = ctx.at(key);
  if (v == nullptr || v->is_null()) return;
  ctx.set(key, field, ctx.flag(key));
}

// An HF Trainer optim name (training_args.py OptimizerNames), as the core knows them.
void set_optimizer(FileContext& ctx, const std::string& key) {
  if (!ctx.has(key)) return;
  const std::string name = lower(str(*ctx.at(key)));
  if (find_optimizer(name) == nullptr) {
    ctx.not_understood(key, "optimizer " + name + " is not one the estimate models");
    return;
  }
  ctx.set(key, "train.optimizer", name);
}

// An attention implementation name, through the request field's aliases.
void set_attention(FileContext& ctx, const std::string& key, const std::string& name) {
  if (const auto c = field("train.attention").canonical(name)) {
    ctx.set(key, "train.attention", *c);
  } else {
    ctx.not_understood(key, "attention " + name + " is not one the estimate models");
  }
}

void set_checkpointing(FileContext& ctx, const std::string& key) {
  if (!ctx.has(key)) return;
  const json& v = *ctx.at(key);
  if (v.is_string() && !as_flag(v)) {
    // Axolotl's "unsloth" / "offload" (schemas/training.py gradient_checkpointing): checkpoints kept on the CPU.
    ctx.not_understood(key, "gradient checkpointing " + v.get<std::string>() + " is not modelled (true or false is)");
    return;
  }
  ctx.set(key, "train.grad_checkpointing", ctx.flag(key) ? "full" : "none");
}

// 4-bit and 8-bit base weights at once: transformers' BitsAndBytesConfig
// refuses it ("load_in_4bit and load_in_8bit are both True, but only one can
// be used at the same time", src/transformers/utils/quantization_config.py at
// 142576881d), as TRL's ModelConfig.__post_init__ does. An error naming the
// 8-bit key, never a QLoRA estimate.
void refuse_both_bit_widths(const FileContext& ctx, const std::string& key4, const std::string& key8) {
  if (ctx.has(key4) && ctx.has(key8) && ctx.flag(key4) && ctx.flag(key8)) {
    fail(errc::kInconsistent, key8,
         key4 + " and " + key8 + " are both true: bitsandbytes loads the weights in 4 bits or in 8, not both");
  }
}

// LoRA targets: a list of leaf names or PEFT's "all-linear".
void set_targets(FileContext& ctx, const std::string& key) {
  const json* v = ctx.at(key);
  if (v == nullptr || v->is_null()) return;
  if (v->is_string()) {
    const std::string s = v->get<std::string>();
    if (s == "all-linear" || s == "all") {
      ctx.set(key, "train.lora.targets", "all-linear");
    } else {
      ctx.not_understood(key, "a regular expression of modules (" + s + "); give the module names as a list");
    }
    return;
  }
  if (!v->is_array()) fail(errc::kWrongType, key, key + " must be a list of module names");
  json out = json::array();
  for (const auto& t : *v) {
    if (!t.is_string()) fail(errc::kWrongType, key, key + " must be a list of module names");
    out.push_back(t);
  }
  ctx.set(key, "train.lora.targets", out);
}

// HF Trainer bf16 / fp16 (training_args.py): autocast on whatever dtype the
// model was loaded in; the framework's recipe (frameworks.cpp) says that
// dtype, so bf16 confirms it and fp16 swaps the half type.
void trainer_precision(FileContext& ctx, const std::string& bf16, const std::string& fp16) {
  const bool b = ctx.has(bf16) && (is_auto(*ctx.at(bf16)) || ctx.flag(bf16));
  const bool f = ctx.has(fp16) && (is_auto(*ctx.at(fp16)) || ctx.flag(fp16));
  if (ctx.at(bf16) != nullptr) ctx.use(bf16, b ? "bf16 autocast: the precision of the framework's recipe" : "");
  if (f && !b) {
    ctx.not_understood(fp16,
                       "fp16 autocast: the estimate counts fp16 as bf16 (the same bytes); its GradScaler "
                       "state is not modelled");
  } else if (ctx.at(fp16) != nullptr) {
    ctx.use(fp16);
  }
}

// torchtune lora_attn_modules and LitGPT lora_* names -> the HF leaf names
// the core's families use (q_proj, k_proj, v_proj, o_proj, gate/up/down_proj, lm_head).
const std::vector<std::pair<std::string, std::string>> kTorchtuneAttn = {
    {"q_proj", "q_proj"}, {"k_proj", "k_proj"}, {"v_proj", "v_proj"}, {"output_proj", "o_proj"}};

// FSDP settings as accelerate names them (fsdp_ prefixed, accelerate
// utils/dataclasses.py FullyShardedDataParallelPlugin) or bare (Axolotl's and
// HF TrainingArguments' fsdp_config).
void map_fsdp_config(FileContext& ctx, const std::string& base) {
  auto k = [&](const std::string& name) {
    const std::string with = base + ".fsdp_" + name;
    return ctx.at(with) != nullptr ? with : base + "." + name;
  };
  std::string strategy;
  if (ctx.has(k("sharding_strategy"))) {
    const json& v = *ctx.at(k("sharding_strategy"));
    // accelerate FSDP_SHARDING_STRATEGY: 1 FULL_SHARD, 2 SHARD_GRAD_OP, 3 NO_SHARD, 4 HYBRID_SHARD.
    static const std::array<const char*, 5> kByNumber = {"", "full_shard", "shard_grad_op", "no_shard", "hybrid_shard"};
    if (const auto n = as_int(v); n && *n >= 1 && *n <= 4) {
      strategy = kByNumber[static_cast<size_t>(*n)];
    } else {
      strategy = lower(str(v));
    }
    if (strategy == "_hybrid_shard_zero2") {
      ctx.not_understood(k("sharding_strategy"), "HYBRID_SHARD_ZERO2 is not modelled");
      strategy.clear();
    } else {
      ctx.set(k("sharding_strategy"), "parallel.fsdp", strategy);
    }
  }
  if (ctx.has(k("reshard_after_forward"))) {
    // FSDP2 (fully_shard): reshard_after_forward=False keeps parameters
    // gathered between forward and backward, SHARD_GRAD_OP's behaviour.
    const json& v = *ctx.at(k("reshard_after_forward"));
    const std::string s = v.is_boolean() ? (v.get<bool>() ? "full_shard" : "shard_grad_op") : lower(str(v));
    ctx.set(k("reshard_after_forward"), "parallel.fsdp", s);
  }
  if (ctx.has(k("version"))) ctx.set(k("version"), "parallel.fsdp_version", int_at(ctx, k("version")));
  if (ctx.has(k("offload_params")) && ctx.flag(k("offload_params"))) {
    // torch CPUOffload(offload_params=True): parameters and gradients live on
    // the CPU and the optimizer steps there.
    ctx.set(k("offload_params"), "parallel.offload_params", true);
    ctx.set(k("offload_params"), "parallel.offload_optimizer", true);
  } else if (ctx.at(k("offload_params")) != nullptr) {
    ctx.use(k("offload_params"));
  }
  if (ctx.has(k("activation_checkpointing"))) set_checkpointing(ctx, k("activation_checkpointing"));
  if (ctx.has(k("sync_module_states"))) {
    ctx.set(k("sync_module_states"), "parallel.fsdp_sync_module_states", ctx.flag(k("sync_module_states")));
  }
  for (const char* n :
       {"auto_wrap_policy", "backward_prefetch", "forward_prefetch", "state_dict_type", "use_orig_params",
        "cpu_ram_efficient_loading", "transformer_layer_cls_to_wrap", "min_num_params", "limit_all_gathers", "xla",
        "xla_fsdp_grad_ckpt", "xla_fsdp_v2", "cpu_offload_pin_memory"}) {
    if (ctx.at(k(n)) != nullptr) ctx.ignore(k(n));
  }
}

}  // namespace

// ---------------------------------------------------------------- detection

std::string detect_kind(const json& r) {
  auto has = [&](const char* k) { return r.contains(k); };
  auto component = [&](const char* k) { return r.contains(k) && r[k].is_object() && r[k].contains("_component_"); };
  if (has("zero_optimization") || has("train_micro_batch_size_per_gpu") || has("train_batch_size") ||
      (has("fp16") && r["fp16"].is_object()) || (has("bf16") && r["bf16"].is_object())) {
    return "deepspeed";
  }
  if (has("distributed_type") || has("compute_environment")) return "accelerate";
  if (has("peft_type")) return "peft";
  if (component("model") || component("optimizer") || component("tokenizer")) return "torchtune";
  if (has("checkpoint_dir") || (has("train") && r["train"].is_object() && r["train"].contains("global_batch_size"))) {
    return "litgpt";
  }
  if (has("finetuning_type") || (has("model_name_or_path") && (has("cutoff_len") || has("template") || has("stage")))) {
    return "llama_factory";
  }
  if (has("base_model") || has("micro_batch_size") || has("sequence_len") || has("adapter")) return "axolotl";
  if (has("per_device_train_batch_size") || has("gradient_accumulation_steps") || has("optim")) return "trainer";
  if (has("model_type") && (has("architectures") || has("hidden_size") || has("text_config") || has("d_model"))) {
    return "model_config";
  }
  if (has("quant_method") || has("load_in_4bit") || has("bnb_4bit_quant_type")) return "bitsandbytes";
  return "";
}

// ---------------------------------------------------------------- DeepSpeed

namespace {

// DeepSpeed keys with no effect on GPU memory: learning-rate schedule,
// logging, clipping, monitors.
std::function<bool(const std::string&)> deepspeed_irrelevant() {
  return keys({"optimizer", "scheduler", "steps_per_print", "wall_clock_breakdown", "gradient_clipping",
               "prescale_gradients", "gradient_predivide_factor", "zero_allow_untested_optimizer",
               "zero_force_ds_cpu_optimizer", "flops_profiler", "tensorboard", "wandb", "csv_monitor", "comms_logger",
               "dump_state", "sparse_gradients", "memory_breakdown", "checkpoint", "seed"});
}

// DeepSpeed's offload device (runtime/zero/offload_config.py
// OffloadDeviceEnum: none, cpu, nvme): cpu and nvme both take the state off
// the GPU; any other name is refused, as DeepSpeed's config model refuses it.
bool offloads(const FileContext& ctx, const std::string& key) {
  const std::string dev = lower(str(*ctx.at(key)));
  if (dev != "none" && dev != "cpu" && dev != "nvme") {
    fail(errc::kUnknownValue, key,
         key + " " + quoted(dev) + " is not one of none, cpu, nvme (DeepSpeed's offload devices)");
  }
  return dev != "none";
}

// zero_optimization (deepspeed/runtime/zero/config.py DeepSpeedZeroConfig), keys under `z`.
void deepspeed_zero(FileContext& ctx, const std::string& z) {
  if (ctx.has(z + "stage") && !is_auto(*ctx.at(z + "stage"))) {
    const int64_t stage = int_at(ctx, z + "stage");
    if (stage < 0 || stage > 3)
      fail(errc::kOutOfRange, z + "stage", z + "stage " + std::to_string(stage) + " must be 0-3");
    ctx.set(z + "stage", "parallel.zero", stage);
  }
  for (const char* what : {"offload_optimizer", "offload_param"}) {
    const std::string key = z + what + ".device";
    const std::string field =
        std::string("parallel.") + (what == std::string("offload_optimizer") ? "offload_optimizer" : "offload_params");
    if (ctx.has(key)) ctx.set(key, field, offloads(ctx, key));
    for (const char* host : {"pin_memory", "nvme_path", "buffer_count", "buffer_size", "max_in_cpu", "fast_init",
                             "pipeline_read", "pipeline_write", "pipeline", "ratio"}) {
      if (ctx.at(z + what + "." + host) != nullptr) ctx.ignore(z + what + "." + host);
    }
  }
  for (const char* name : {"reduce_bucket_size", "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold"}) {
    const std::string key = z + name;
    const json* v = ctx.at(key);
    if (v == nullptr) continue;
    if (is_auto(*v)) {
      ctx.use_auto(key, std::string("parallel.") + name);
      ctx.refer(key, "auto_bucket");  // from the model's hidden size when a config.json is imported
    } else if (std::string_view(name) == "reduce_bucket_size" && as_int(*v) && *as_int(*v) < 1) {
      ctx.not_understood(key, "a bucket of " + v->dump() +
                                  " elements: the request's smallest is 1, so the "
                                  "estimate keeps DeepSpeed's default");
    } else {
      set_int(ctx, key, std::string("parallel.") + name);
    }
  }
  set_int(ctx, z + "stage3_max_live_parameters", "parallel.stage3_max_live_parameters");
  set_bool(ctx, z + "overlap_comm", "parallel.overlap_comm");
  set_bool(ctx, z + "contiguous_gradients", "parallel.contiguous_gradients");
  if (ctx.at(z + "sub_group_size") != nullptr) {
    ctx.not_understood(z + "sub_group_size", "the optimizer step's per-group fp32 buffers are not modelled");
  }
  if (ctx.at(z + "stage3_max_reuse_distance") != nullptr) {
    ctx.not_understood(z + "stage3_max_reuse_distance",
                       "parameters kept gathered for reuse are not modelled (bounded by stage3_max_live_parameters)");
  }
  if (ctx.at(z + "allgather_bucket_size") != nullptr) {
    ctx.not_understood(z + "allgather_bucket_size", "the ZeRO-1/2 all-gather bucket is not modelled");
  }
  for (const char* n :
       {"stage3_gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save",
        "gather_16bit_weights_on_model_save", "allgather_partitions", "reduce_scatter", "round_robin_gradients", "aio",
        "elastic_checkpoint", "load_from_fp32_weights", "ignore_unused_parameters", "memory_efficient_linear",
        "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_gradients", "mics_shard_size"}) {
    if (ctx.at(z + n) != nullptr) {
      if (std::string_view(n) == "zero_hpz_partition_size" || std::string_view(n) == "zero_quantized_weights" ||
          std::string_view(n) == "zero_quantized_gradients" || std::string_view(n) == "mics_shard_size") {
        ctx.not_understood(z + n, "ZeRO++ / MiCS partitioning is not modelled");
      } else {
        ctx.ignore(z + n);
      }
    }
  }
}

}  // namespace

// DeepSpeed's config JSON (deepspeed/runtime/config.py, zero/config.py). Its
// "auto" values are the HF integration's (transformers
// integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_process):
// they take the Trainer's / the form's value, so the importer leaves them to
// the other files and the form. `prefix` is "" for a file of its own, or
// "deepspeed." when a TrainingArguments JSON carries it inline.
void map_deepspeed(FileContext& ctx, const std::string& p) {
  deepspeed_zero(ctx, p + "zero_optimization.");
  set_int(ctx, p + "train_micro_batch_size_per_gpu", "train.micro_batch");
  set_int(ctx, p + "gradient_accumulation_steps", "train.grad_accum");
  if (ctx.at(p + "train_batch_size") != nullptr) {
    const json& t = *ctx.at(p + "train_batch_size");
    const json* mb = ctx.at(p + "train_micro_batch_size_per_gpu");
    const json* ga = ctx.at(p + "gradient_accumulation_steps");
    if (is_auto(t)) {
      ctx.use_auto(p + "train_batch_size", "parallel.gpus");
    } else if (mb && ga && as_int(*mb) && as_int(*ga)) {
      // deepspeed/runtime/config.py _batch_assertion: all three > 0, and train_batch_size =
      // micro x accumulation x world size. A product past int64 matches no train_batch_size.
      const int64_t micro = *as_int(*mb);
      const int64_t accumulation = *as_int(*ga);
      const int64_t tbs = int_at(ctx, p + "train_batch_size");
      int64_t per = 0;
      if (micro < 1 || accumulation < 1 || tbs < 1 || __builtin_mul_overflow(micro, accumulation, &per) ||
          tbs % per != 0) {
        fail(errc::kInconsistent, p + "train_batch_size",
             p + "train_batch_size " + std::to_string(tbs) + " is not micro-batch (" + std::to_string(micro) +
                 ") x accumulation (" + std::to_string(accumulation) + ") x GPUs");
      }
      ctx.set(p + "train_batch_size", "parallel.gpus", tbs / per);
    } else {
      ctx.use(p + "train_batch_size", "with the micro-batch and accumulation from the other files, the GPU count");
    }
  }
  // bf16 / fp16 modes keep fp32 master weights and states (deepspeed/runtime/bf16_optimizer.py,
  // fp16/fused_optimizer.py): the request's mixed_bf16 recipe; "auto" follows the Trainer.
  for (const char* mode : {"bf16", "fp16"}) {
    const std::string key = p + mode + ".enabled";
    const json* v = ctx.at(key);
    if (v == nullptr) continue;
    if (is_auto(*v)) {
      ctx.use_auto(key, "train.precision");
    } else if (ctx.flag(key)) {
      ctx.set(key, "train.precision", "mixed_bf16");
    } else {
      ctx.use(key);
    }
    for (const char* n : {"loss_scale", "loss_scale_window", "initial_scale_power", "hysteresis", "min_loss_scale",
                          "consecutive_hysteresis", "auto_cast", "immediate_grad_update"}) {
      if (ctx.at(p + mode + "." + n) != nullptr) ctx.ignore(p + mode + "." + n);
    }
  }
  if (ctx.has(p + "amp.enabled") && ctx.flag(p + "amp.enabled")) {
    ctx.not_understood(p + "amp", "Apex AMP is not modelled");
  }
  // DeepSpeed's own Adam / AdamW (FusedAdam, or DeepSpeedCPUAdam with offload): the framework's optimizer.
  if (ctx.has(p + "optimizer.type")) {
    const std::string t = lower(str(*ctx.at(p + "optimizer.type")));
    if (t == "adam" || t == "adamw") {
      ctx.use(p + "optimizer.type", "Adam states, as the estimate's AdamW");
    } else {
      ctx.not_understood(p + "optimizer.type", "DeepSpeed optimizer " + t + " is not modelled");
    }
  }
  if (ctx.at(p + "activation_checkpointing") != nullptr) {
    ctx.not_understood(p + "activation_checkpointing",
                       "DeepSpeed's activation checkpointing API (partition / CPU checkpoints) is not modelled; "
                       "HF models checkpoint through gradient_checkpointing");
  }
  if (ctx.at(p + "communication_data_type") != nullptr) {
    ctx.not_understood(p + "communication_data_type", "the reduction dtype of ZeRO buckets is not modelled");
  }
  // Inside a TrainingArguments JSON, map_trainer's finish reports the rest.
  if (p.empty()) ctx.finish(deepspeed_irrelevant());
}

// ---------------------------------------------------------------- accelerate

// `accelerate config` YAML (accelerate/commands/config/cluster.py ClusterConfig).
void map_accelerate(FileContext& ctx) {
  const std::string type = ctx.has("distributed_type") ? str(*ctx.at("distributed_type")) : "NO";
  ctx.use("distributed_type");
  set_int(ctx, "num_processes", "parallel.gpus");
  if (ctx.has("num_machines") && int_at(ctx, "num_machines") > 1) {
    set_int(ctx, "num_machines", "parallel.nodes");
  } else {
    ctx.use("num_machines");
  }
  if (ctx.has("mixed_precision")) {
    const std::string mp = lower(str(*ctx.at("mixed_precision")));
    if (mp == "fp8") {
      ctx.not_understood("mixed_precision", "fp8 training is not modelled");
    } else {
      ctx.use("mixed_precision",
              mp == "no" ? "no autocast" : "autocast in " + mp + ": the precision of the framework's recipe");
    }
  }
  if (type == "DEEPSPEED") {
    const std::string d = "deepspeed_config.";
    set_int(ctx, d + "zero_stage", "parallel.zero");
    set_int(ctx, d + "gradient_accumulation_steps", "train.grad_accum");
    for (const auto& [key, field] : {std::pair{d + "offload_optimizer_device", "parallel.offload_optimizer"},
                                     std::pair{d + "offload_param_device", "parallel.offload_params"}}) {
      if (ctx.has(key)) ctx.set(key, field, offloads(ctx, key));
    }
    if (ctx.has(d + "deepspeed_config_file")) ctx.refer(d + "deepspeed_config_file", "deepspeed");
    if (ctx.has(d + "gradient_clipping")) ctx.ignore(d + "gradient_clipping");
  }
  if (type == "FSDP") map_fsdp_config(ctx, "fsdp_config");
  if (ctx.has("dynamo_config.dynamo_backend")) {
    const std::string b = lower(str(*ctx.at("dynamo_config.dynamo_backend")));
    ctx.set("dynamo_config.dynamo_backend", "train.compile", b != "no");
  }
  ctx.finish(keys({"compute_environment",
                   "debug",
                   "machine_rank",
                   "main_training_function",
                   "rdzv_backend",
                   "same_network",
                   "tpu_*",
                   "use_cpu",
                   "downcast_bf16",
                   "main_process_ip",
                   "main_process_port",
                   "gpu_ids",
                   "enable_cpu_affinity",
                   "dynamo_config",
                   "deepspeed_config",
                   "fsdp_config",
                   "megatron_lm_config",
                   "ipex_config",
                   "mpirun_config",
                   "num_cpu_threads_per_process"}));
}

// ---------------------------------------------------------------- Axolotl

namespace {

// Axolotl keys with no effect on GPU memory: data, logging, schedules, saving, evaluation, hub.
std::function<bool(const std::string&)> axolotl_irrelevant() {
  return keys({"datasets",
               "dataset_*",
               "val_set_size",
               "output_dir",
               "wandb_*",
               "num_epochs",
               "lr_scheduler*",
               "learning_rate",
               "warmup_*",
               "evals_per_epoch",
               "saves_per_epoch",
               "weight_decay",
               "special_tokens",
               "logging_steps",
               "resume_from_checkpoint",
               "loss_watchdog_*",
               "hub_*",
               "strict",
               "chat_template*",
               "tokens",
               "seed",
               "max_grad_norm",
               "save_*",
               "eval_*",
               "early_stopping_patience",
               "local_rank",
               "train_on_inputs",
               "group_by_length",
               "debug",
               "auto_resume_from_checkpoints",
               "tf32",
               "max_steps",
               "shuffle_*",
               "test_datasets",
               "is_*_derived_model",
               "trust_remote_code",
               "tokenizer_*",
               "model_type",
               "lora_model_dir",
               "lora_fan_in_fan_out",
               "eval_sample_packing",
               "gptq",
               "lora_on_cpu",
               "ddp_*",
               "dataloader_*",
               "remove_unused_columns",
               "adam_*",
               "cosine_*",
               "lr_div_factor",
               "log_*",
               "profiler_steps",
               "use_tensorboard",
               "mlflow_*",
               "comet_*",
               "include_*",
               "skip_prepare_dataset",
               "default_system_message",
               "rl",
               "trl",
               "sample_packing_*",
               "gradient_checkpointing_kwargs",
               "base_model_config",
               "bnb_config_kwargs"});
}

}  // namespace

// Axolotl YAML (axolotl src/axolotl/utils/schemas/config.py AxolotlInputConfig,
// model.py, peft.py, training.py).
void map_axolotl(FileContext& ctx) {
  ctx.framework("axolotl");
  if (ctx.has("base_model")) ctx.name_model("base_model", str(*ctx.at("base_model")));
  const std::string adapter = ctx.has("adapter") ? lower(str(*ctx.at("adapter"))) : "";
  if (adapter == "lora" || adapter == "qlora") {
    ctx.set("adapter", "#adapter", "lora");
    if (adapter == "qlora") ctx.set("adapter", "#quant4", true);
  } else if (!adapter.empty()) {
    ctx.not_understood("adapter", "adapter " + adapter + " is not modelled (LoRA and QLoRA are)");
  } else {
    ctx.set("adapter", "#adapter", "full");
  }
  refuse_both_bit_widths(ctx, "load_in_4bit", "load_in_8bit");
  if (ctx.has("load_in_4bit")) ctx.set("load_in_4bit", "#quant4", ctx.flag("load_in_4bit"));
  if (ctx.has("load_in_8bit") && ctx.flag("load_in_8bit")) {
    ctx.not_understood("load_in_8bit", "8-bit base weights (LLM.int8) are not modelled");
  } else if (ctx.at("load_in_8bit") != nullptr) {
    ctx.use("load_in_8bit");
  }
  set_int(ctx, "sequence_len", "train.seq_len");
  set_int(ctx, "micro_batch_size", "train.micro_batch");
  set_int(ctx, "gradient_accumulation_steps", "train.grad_accum");
  // axolotl core/builders/causal.py: packed samples fill sequence_len;
  // pad_to_sequence_len pads every batch to it; otherwise its collator
  // (DataCollatorForSeq2Seq, padding=True) pads to the longest in the batch.
  if (ctx.has("sample_packing") && ctx.flag("sample_packing")) {
    ctx.set("sample_packing", "train.padding", "packed");
    if (ctx.at("pad_to_sequence_len") != nullptr) ctx.use("pad_to_sequence_len", "packed batches fill sequence_len");
  } else if (ctx.has("pad_to_sequence_len") && ctx.flag("pad_to_sequence_len")) {
    ctx.set("pad_to_sequence_len", "train.padding", "max_length");
    if (ctx.at("sample_packing") != nullptr) ctx.use("sample_packing");
  } else if (ctx.has("sample_packing") || ctx.has("pad_to_sequence_len")) {
    const char* k = ctx.has("sample_packing") ? "sample_packing" : "pad_to_sequence_len";
    ctx.set(k, "train.padding", "longest");
    for (const char* other : {"sample_packing", "pad_to_sequence_len"}) {
      if (std::string(other) != k && ctx.at(other) != nullptr) ctx.use(other);
    }
  } else {
    for (const char* k : {"sample_packing", "pad_to_sequence_len"}) {
      if (ctx.at(k) != nullptr) ctx.use(k);
    }
  }
  set_int(ctx, "lora_r", "train.lora.rank");
  set_num(ctx, "lora_alpha", "train.lora.alpha");
  set_num(ctx, "lora_dropout", "train.lora.dropout");
  if (ctx.has("lora_target_linear") && ctx.flag("lora_target_linear")) {
    // axolotl loaders/adapter.py: lora_target_linear adds every linear but the head (find_all_linear_names).
    ctx.set("lora_target_linear", "train.lora.targets", "all-linear");
    if (ctx.has("lora_target_modules")) ctx.use("lora_target_modules", "lora_target_linear covers them");
  } else {
    set_targets(ctx, "lora_target_modules");
  }
  set_bool(ctx, "peft_use_dora", "train.lora.use_dora");
  if (ctx.has("lora_modules_to_save")) {
    ctx.not_understood("lora_modules_to_save", "fully trained modules next to the adapters are not modelled");
  }
  set_optimizer(ctx, "optimizer");
  trainer_precision(ctx, "bf16", "fp16");
  set_checkpointing(ctx, "gradient_checkpointing");
  if (ctx.has("flash_attention") && ctx.flag("flash_attention")) {
    set_attention(ctx, "flash_attention", "flash_attention_2");
  } else if (ctx.has("sdp_attention") && ctx.flag("sdp_attention")) {
    set_attention(ctx, "sdp_attention", "sdpa");
  } else if (ctx.has("xformers_attention") && ctx.flag("xformers_attention")) {
    ctx.not_understood("xformers_attention", "xformers attention is not modelled (counted as SDPA would be)");
  }
  if (ctx.has("attn_implementation")) set_attention(ctx, "attn_implementation", str(*ctx.at("attn_implementation")));
  for (const char* k : {"flash_attention", "sdp_attention", "xformers_attention"}) {
    if (ctx.at(k) != nullptr) ctx.use(k);
  }
  // axolotl integrations/liger and cut_cross_entropy: fused linear cross-entropy and RMSNorm kernels.
  set_bool(ctx, "liger_fused_linear_cross_entropy", "train.fused_loss");
  set_bool(ctx, "cut_cross_entropy", "train.fused_loss");
  set_bool(ctx, "liger_rms_norm", "train.fused_norm");
  for (const char* k : {"liger_glu_activation", "liger_rope", "liger_layer_norm", "liger_cross_entropy"}) {
    if (ctx.at(k) != nullptr) ctx.use(k, "elementwise kernels: no saved tensor the estimate counts changes");
  }
  if (ctx.has("plugins")) ctx.use("plugins");
  set_bool(ctx, "torch_compile", "train.compile");
  if (ctx.has("activation_offloading")) set_bool(ctx, "activation_offloading", "train.activation_offload");
  if (ctx.has("deepspeed")) ctx.refer("deepspeed", "deepspeed");
  if (ctx.has("fsdp_config")) map_fsdp_config(ctx, "fsdp_config");
  if (ctx.has("fsdp_version")) ctx.set("fsdp_version", "parallel.fsdp_version", int_at(ctx, "fsdp_version"));
  if (ctx.has("fsdp")) ctx.use("fsdp", "FSDP on: fsdp_config says how");
  if (ctx.has("bnb_config_kwargs")) map_bnb(ctx, "bnb_config_kwargs.");
  ctx.finish(axolotl_irrelevant());
}

// ---------------------------------------------------------------- LLaMA-Factory

namespace {

// LLaMA-Factory keys with no effect on GPU memory: data, logging, schedules, saving, evaluation, export.
std::function<bool(const std::string&)> llama_factory_irrelevant() {
  return keys({"do_train",
               "do_eval",
               "do_predict",
               "dataset",
               "dataset_dir",
               "eval_dataset",
               "template",
               "max_samples",
               "overwrite_cache",
               "preprocessing_num_workers",
               "output_dir",
               "logging_*",
               "save_*",
               "plot_loss",
               "overwrite_output_dir",
               "learning_rate",
               "num_train_epochs",
               "lr_scheduler_type",
               "warmup_*",
               "ddp_timeout",
               "val_size",
               "per_device_eval_batch_size",
               "eval_*",
               "report_to",
               "resume_from_checkpoint",
               "trust_remote_code",
               "seed",
               "tokenized_path",
               "dataloader_*",
               "max_grad_norm",
               "weight_decay",
               "run_name",
               "predict_with_generate",
               "export_*",
               "infer_*",
               "max_new_tokens",
               "adapter_name_or_path",
               "new_special_tokens",
               "streaming",
               "buffer_size",
               "mix_strategy",
               "max_steps",
               "ddp_find_unused_parameters",
               "image_max_pixels",
               "video_max_pixels",
               "freeze_vision_tower",
               "train_mm_proj_only",
               "default_system",
               "enable_thinking",
               "create_new_adapter",
               "loraplus_lr_ratio",
               "use_rslora",
               "pissa_*",
               "use_swanlab",
               "swanlab_*",
               "include_*",
               "hub_*",
               "push_to_hub",
               "ray_*",
               "quantization_type",
               "disable_shuffling",
               "upcast_layernorm",
               "upcast_lmhead_output"});
}

}  // namespace

namespace {

void llama_factory_lora_target(FileContext& ctx) {
  if (ctx.has("lora_target")) {
    // finetuning_args.py: lora_target "all" = every linear but the head; else comma-separated names.
    const json& v = *ctx.at("lora_target");
    if (v.is_string() && v.get<std::string>() != "all") {
      json list = json::array();
      std::string s = v.get<std::string>();
      size_t start = 0;
      while (start <= s.size()) {
        const size_t comma = s.find(',', start);
        std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        item.erase(0, item.find_first_not_of(' '));
        item.erase(item.find_last_not_of(' ') + 1);
        if (!item.empty()) list.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      ctx.set("lora_target", "train.lora.targets", list);
    } else {
      set_targets(ctx, "lora_target");
    }
  }
}

}  // namespace

// LLaMA-Factory YAML (src/llamafactory/hparams/model_args.py,
// finetuning_args.py, data_args.py, plus transformers' Seq2SeqTrainingArguments).
void map_llama_factory(FileContext& ctx) {
  ctx.framework("llama_factory");
  if (ctx.has("model_name_or_path")) ctx.name_model("model_name_or_path", str(*ctx.at("model_name_or_path")));
  const std::string stage = ctx.has("stage") ? lower(str(*ctx.at("stage"))) : "sft";
  if (stage == "sft" || stage == "pt") {
    if (ctx.at("stage") != nullptr) ctx.use("stage");
  } else {
    ctx.not_understood("stage", "stage " + stage + " keeps a reference or value model the estimate does not count");
  }
  // finetuning_args.py FinetuningArguments.finetuning_type: default "lora".
  const std::string ft = ctx.has("finetuning_type") ? lower(str(*ctx.at("finetuning_type"))) : "lora";
  if (ft == "lora" || ft == "full" || ft == "freeze") {
    ctx.set("finetuning_type", "#adapter", ft);
  } else {
    ctx.not_understood("finetuning_type", "finetuning_type " + ft + " is not modelled");
  }
  if (ctx.has("quantization_bit")) {
    const int64_t bits = int_at(ctx, "quantization_bit");
    // model_args.py quantization_method: QuantizationMethod.BNB ("bnb",
    // extras/constants.py at ff6d4d12); releases before 2025 spelt it
    // "bitsandbytes". Both load the base with BitsAndBytesConfig(load_in_4bit)
    // (model/model_utils/quantization.py): that recipe is QLoRA.
    const std::string method = ctx.has("quantization_method") ? lower(str(*ctx.at("quantization_method"))) : "bnb";
    if (bits == 4 && (method == "bnb" || method == "bitsandbytes")) {
      ctx.set("quantization_bit", "#quant4", true);
      if (ctx.at("quantization_method") != nullptr) ctx.use("quantization_method");
    } else {
      ctx.not_understood("quantization_bit", std::to_string(bits) + "-bit " + method +
                                                 " quantisation is not modelled (4-bit bitsandbytes is)");
      ctx.use("quantization_method");
    }
  }
  set_bool(ctx, "double_quantization", "train.quant.double_quant");
  set_int(ctx, "cutoff_len", "train.seq_len");
  set_int(ctx, "per_device_train_batch_size", "train.micro_batch");
  set_int(ctx, "gradient_accumulation_steps", "train.grad_accum");
  set_int(ctx, "lora_rank", "train.lora.rank");
  set_num(ctx, "lora_alpha", "train.lora.alpha");
  set_num(ctx, "lora_dropout", "train.lora.dropout");
  set_bool(ctx, "use_dora", "train.lora.use_dora");
  llama_factory_lora_target(ctx);
  if (ctx.has("additional_target"))
    ctx.not_understood("additional_target", "fully trained extra modules are not modelled");
  trainer_precision(ctx, "bf16", "fp16");
  if (ctx.has("pure_bf16") && ctx.flag("pure_bf16")) ctx.set("pure_bf16", "train.precision", "bf16");
  set_optimizer(ctx, "optim");
  if (ctx.has("disable_gradient_checkpointing")) {
    ctx.set("disable_gradient_checkpointing", "train.grad_checkpointing",
            ctx.flag("disable_gradient_checkpointing") ? "none" : "full");
  }
  if (ctx.has("flash_attn")) {
    // model_args.py AttentionFunction: auto, disabled (eager), sdpa, fa2.
    const std::string f = lower(str(*ctx.at("flash_attn")));
    if (f == "auto") {
      ctx.use("flash_attn", "the framework's attention");
    } else {
      set_attention(ctx, "flash_attn", f == "disabled" ? "eager" : f);
    }
  }
  if (ctx.has("enable_liger_kernel")) {
    set_bool(ctx, "enable_liger_kernel", "train.fused_loss");
    set_bool(ctx, "enable_liger_kernel", "train.fused_norm");
  }
  if (ctx.has("use_unsloth") && ctx.flag("use_unsloth")) {
    ctx.not_understood("use_unsloth", "Unsloth inside LLaMA-Factory: choose the unsloth framework instead");
  }
  set_bool(ctx, "torch_compile", "train.compile");
  // LLaMA-Factory data/collator.py: packed (or neat-packed) samples fill
  // cutoff_len; unpacked batches are padded to their longest sample.
  if (ctx.has("neat_packing") && ctx.flag("neat_packing")) {
    ctx.set("neat_packing", "train.padding", "packed");
    if (ctx.at("packing") != nullptr) ctx.use("packing", "neat_packing packs");
  } else {
    if (ctx.has("packing")) {
      ctx.set("packing", "train.padding", ctx.flag("packing") ? "packed" : "longest");
    } else if (ctx.at("packing") != nullptr) {
      ctx.use("packing");
    }
    if (ctx.at("neat_packing") != nullptr) ctx.use("neat_packing");
  }
  if (ctx.has("deepspeed")) ctx.refer("deepspeed", "deepspeed");
  ctx.finish(llama_factory_irrelevant());
}

// ---------------------------------------------------------------- torchtune

namespace {

// torchtune model builders (torchtune/models/*/_model_builders.py) and the
// Hub repositories whose weights they load (the `tune download` line of each
// recipe config).
struct Builder {
  const char* name;
  const char* hub;
};
constexpr std::array<Builder, 22> kTorchtuneBuilders = {{
    {"llama2_7b", "meta-llama/Llama-2-7b-hf"},
    {"llama2_13b", "meta-llama/Llama-2-13b-hf"},
    {"llama2_70b", "meta-llama/Llama-2-70b-hf"},
    {"llama3_8b", "meta-llama/Meta-Llama-3-8B"},
    {"llama3_70b", "meta-llama/Meta-Llama-3-70B"},
    {"llama3_1_8b", "meta-llama/Llama-3.1-8B"},
    {"llama3_1_70b", "meta-llama/Llama-3.1-70B"},
    {"llama3_1_405b", "meta-llama/Llama-3.1-405B"},
    {"llama3_2_1b", "meta-llama/Llama-3.2-1B"},
    {"llama3_2_3b", "meta-llama/Llama-3.2-3B"},
    {"llama3_3_70b", "meta-llama/Llama-3.3-70B-Instruct"},
    {"mistral_7b", "mistralai/Mistral-7B-v0.1"},
    {"gemma_2b", "google/gemma-2b"},
    {"gemma_7b", "google/gemma-7b"},
    {"gemma2_2b", "google/gemma-2-2b"},
    {"gemma2_9b", "google/gemma-2-9b"},
    {"phi3_mini", "microsoft/Phi-3-mini-4k-instruct"},
    {"phi4_14b", "microsoft/phi-4"},
    {"qwen2_5_7b_base", "Qwen/Qwen2.5-7B"},
    {"qwen2_5_7b_instruct", "Qwen/Qwen2.5-7B-Instruct"},
    {"qwen3_0_6b_base", "Qwen/Qwen3-0.6B-Base"},
    {"qwen3_0_6b_instruct", "Qwen/Qwen3-0.6B"},
}};

}  // namespace

namespace {

// torchtune recipe keys with no effect on GPU memory (or read above by their sub-keys).
std::function<bool(const std::string&)> torchtune_irrelevant() {
  return keys({"tokenizer",
               "checkpointer",
               "resume_from_checkpoint",
               "save_adapter_weights_only",
               "dataset",
               "seed",
               "shuffle",
               "lr_scheduler",
               "optimizer",
               "epochs",
               "max_steps_per_epoch",
               "output_dir",
               "metric_logger",
               "log_every_n_steps",
               "log_peak_memory_stats",
               "device",
               "profiler",
               "low_cpu_ram",
               "clip_grad_norm",
               "log_level",
               "custom_sharded_layers",
               "model",
               "run_val_every_n_steps",
               "dataset_val",
               "batch_size_val",
               "collate_fn"});
}

}  // namespace

namespace {

// The model builder (model._component_: the method from its lora_ / qlora_
// prefix, the Hub model from its name) and the LoRA targets
// (lora_attn_modules + apply_lora_to_mlp (w1, w2, w3) + apply_lora_to_output).
void torchtune_model(FileContext& ctx) {
  if (ctx.has("model._component_")) {
    const std::string comp = str(*ctx.at("model._component_"));
    std::string builder = comp.substr(comp.rfind('.') + 1);
    std::string method = "full";
    for (const char* prefix : {"qlora_", "lora_"}) {
      if (builder.rfind(prefix, 0) == 0) {
        method = prefix == std::string("qlora_") ? "qlora" : "lora";
        builder = builder.substr(std::string(prefix).size());
        break;
      }
    }
    const auto it = std::find_if(kTorchtuneBuilders.begin(), kTorchtuneBuilders.end(),
                                 [&](const Builder& b) { return builder == b.name; });
    if (it == kTorchtuneBuilders.end()) {
      // Reported before the method is taken from its prefix, so the key is listed as not understood,
      // never as used (issue 33).
      ctx.not_understood("model._component_", "model builder " + builder +
                                                  " names no Hub model the importer knows: pass the model's "
                                                  "config.json as another file (the " +
                                                  (method == "full" ? std::string("full") : method + "_") +
                                                  " prefix still sets train.method)");
    }
    ctx.set("model._component_", "#adapter", method == "full" ? "full" : "lora");
    if (method == "qlora") ctx.set("model._component_", "#quant4", true);
    if (it != kTorchtuneBuilders.end()) ctx.name_model("model._component_", it->hub);
  }
  if (ctx.has("model.quantize_base")) ctx.set("model.quantize_base", "#quant4", ctx.flag("model.quantize_base"));
  if (ctx.has("model.lora_attn_modules")) {
    json targets = json::array();
    const json& attn = *ctx.at("model.lora_attn_modules");
    if (!attn.is_array()) fail(errc::kWrongType, "model.lora_attn_modules", "model.lora_attn_modules must be a list");
    for (const auto& m : attn) {
      const auto it = std::find_if(kTorchtuneAttn.begin(), kTorchtuneAttn.end(),
                                   [&](const auto& p) { return m.is_string() && p.first == m.get<std::string>(); });
      if (it == kTorchtuneAttn.end())
        fail(errc::kUnknownValue, "model.lora_attn_modules", "unknown module " + m.dump());
      targets.push_back(it->second);
    }
    if (ctx.has("model.apply_lora_to_mlp") && ctx.flag("model.apply_lora_to_mlp")) {
      for (const char* m : {"gate_proj", "up_proj", "down_proj"}) targets.push_back(m);
    }
    if (ctx.has("model.apply_lora_to_output") && ctx.flag("model.apply_lora_to_output")) {
      targets.push_back("lm_head");
    }
    ctx.set("model.lora_attn_modules", "train.lora.targets", targets);
    ctx.use("model.apply_lora_to_mlp");
    ctx.use("model.apply_lora_to_output");
  }
}

}  // namespace

// torchtune recipe YAML (recipes/configs/*; the recipes read these keys in
// recipes/lora_finetune_single_device.py, full_finetune_single_device.py and
// their _distributed twins).
void map_torchtune(FileContext& ctx) {
  ctx.framework("torchtune");
  torchtune_model(ctx);
  set_int(ctx, "model.lora_rank", "train.lora.rank");
  set_num(ctx, "model.lora_alpha", "train.lora.alpha");
  set_num(ctx, "model.lora_dropout", "train.lora.dropout");
  set_bool(ctx, "model.use_dora", "train.lora.use_dora");
  set_int(ctx, "batch_size", "train.micro_batch");
  set_int(ctx, "gradient_accumulation_steps", "train.grad_accum");
  if (ctx.at("tokenizer.max_seq_len") != nullptr) {
    if (ctx.has("tokenizer.max_seq_len")) {
      set_int(ctx, "tokenizer.max_seq_len", "train.seq_len");
    } else {
      ctx.use("tokenizer.max_seq_len", "no cap: the sequence length comes from the form");
    }
  }
  // torchtune recipes: packed datasets fill max_seq_len (padded_collate_packed);
  // otherwise padded_collate_sft pads to the longest sample of the batch.
  if (ctx.has("dataset.packed")) {
    ctx.set("dataset.packed", "train.padding", ctx.flag("dataset.packed") ? "packed" : "longest");
  }
  if (ctx.has("optimizer._component_")) {
    // torch.optim.AdamW (fused: True -> the fused kernel), bitsandbytes.optim.*.
    const std::string o = str(*ctx.at("optimizer._component_"));
    std::string name;
    if (o == "torch.optim.AdamW" || o == "torch.optim.Adam") {
      name = ctx.has("optimizer.fused") && ctx.flag("optimizer.fused") ? "adamw_torch_fused" : "adamw_torch";
      ctx.use("optimizer.fused");
    } else if (o == "bitsandbytes.optim.PagedAdamW8bit") {
      name = "paged_adamw_8bit";
    } else if (o == "bitsandbytes.optim.PagedAdamW" || o == "bitsandbytes.optim.PagedAdamW32bit") {
      name = "paged_adamw_32bit";
    } else if (o == "bitsandbytes.optim.AdamW8bit") {
      name = "adamw_bnb_8bit";
    } else if (o == "torch.optim.SGD") {
      name = "sgd";
    }
    if (name.empty()) {
      ctx.not_understood("optimizer._component_", "optimizer " + o + " is not one the estimate models");
    } else {
      ctx.set("optimizer._component_", "train.optimizer", name);
    }
  }
  set_bool(ctx, "optimizer_in_bwd", "train.optimizer_in_backward");
  if (ctx.has("loss._component_")) {
    const std::string l = str(*ctx.at("loss._component_"));
    if (l == "torch.nn.CrossEntropyLoss") {
      ctx.set("loss._component_", "train.loss", "standard");
    } else if (l.find("CEWithChunkedOutputLoss") != std::string::npos) {
      // torchtune/modules/loss/ce_chunked_output_loss.py: num_output_chunks
      // (default 8) chunks of the sequence, each upcast to fp32.
      ctx.set("loss._component_", "train.loss", "chunked");
      set_int(ctx, "loss.num_output_chunks", "train.loss_chunks");
    } else if (l.find("LinearCrossEntropyLoss") != std::string::npos) {
      ctx.not_understood("loss._component_",
                         "LinearCrossEntropyLoss (torchtune main after v0.6.1: the output projection inside the "
                         "loss, by chunk of the tokens that are not ignored) is not modelled; set train.loss "
                         "chunked for an upper bound");
    } else {
      ctx.not_understood("loss._component_", "loss " + l + " is not modelled");
    }
  }
  if (ctx.has("dtype")) {
    // torchtune training/precision.py PRECISION_STR_TO_DTYPE: bf16, fp32 (fp16 is refused by the recipes).
    const std::string d = lower(str(*ctx.at("dtype")));
    ctx.set("dtype", "train.precision", d == "fp32" ? "fp32" : d);
  }
  set_checkpointing(ctx, "enable_activation_checkpointing");
  set_bool(ctx, "enable_activation_offloading", "train.activation_offload");
  set_bool(ctx, "compile", "train.compile");
  // Distributed recipes (full_finetune_distributed.py, lora_finetune_distributed.py): FSDP2 fully_shard.
  if (ctx.at("fsdp_cpu_offload") != nullptr || ctx.at("fsdp_reshard_after_forward") != nullptr) {
    ctx.set(ctx.at("fsdp_reshard_after_forward") != nullptr ? "fsdp_reshard_after_forward" : "fsdp_cpu_offload",
            "parallel.fsdp",
            ctx.has("fsdp_reshard_after_forward") && !ctx.flag("fsdp_reshard_after_forward") ? "shard_grad_op"
                                                                                             : "full_shard");
    ctx.set("fsdp_cpu_offload", "parallel.fsdp_version", 2);
    if (ctx.has("fsdp_cpu_offload") && ctx.flag("fsdp_cpu_offload")) {
      // torch CPUOffloadPolicy: parameters, gradients and the optimizer step on the CPU.
      ctx.set("fsdp_cpu_offload", "parallel.offload_params", true);
      ctx.set("fsdp_cpu_offload", "parallel.offload_optimizer", true);
    }
  }
  ctx.finish(torchtune_irrelevant());
}

// ---------------------------------------------------------------- LitGPT

namespace {

// devices, num_nodes and the global batch (litgpt/utils.py parse_devices,
// litgpt/args.py TrainArgs.gradient_accumulation_iters).
void litgpt_gpus_and_batches(FileContext& ctx) {
  // litgpt/utils.py parse_devices: a positive count, or -1 / "auto" for every visible GPU; anything else
  // is a ValueError. A node count below 1 is no run either, and both divide the global batch below.
  const json* dev = ctx.at("devices");
  int64_t devices = 1;
  if (dev != nullptr && as_int(*dev) && *as_int(*dev) != -1) {
    devices = *as_int(*dev);
    if (devices < 1) {
      fail(errc::kOutOfRange, "devices",
           "devices " + std::to_string(devices) + " must be a positive GPU count, -1 or \"auto\"");
    }
    ctx.set("devices", "parallel.gpus", devices);
    if (devices > 1) {
      // litgpt/finetune/{full,lora,adapter}.py setup() (43c44323 .. v0.5.13; lora.py only to v0.5.7, then
      // torch.nn.Linear units and from v0.5.11 FSDP2: README Known gaps): with devices > 1 the Fabric strategy is
      // FSDPStrategy(auto_wrap_policy={Block}, activation_checkpointing_policy={Block}, limit_all_gathers=True,
      // cpu_offload=False): FSDP1 FULL_SHARD, every Block checkpointed.
      ctx.set("devices", "parallel.fsdp", "full_shard");
      ctx.set("devices", "parallel.fsdp_version", 1);
      ctx.set("devices", "train.grad_checkpointing", "full");
    }
  } else if (dev != nullptr) {
    ctx.use("devices", "every visible GPU: the form's GPU count");
  }
  int64_t nodes = 1;
  if (ctx.has("num_nodes")) {
    nodes = int_at(ctx, "num_nodes");
    if (nodes < 1) {
      fail(errc::kOutOfRange, "num_nodes", "num_nodes " + std::to_string(nodes) + " must be at least 1");
    }
    if (nodes > 1) {
      ctx.set("num_nodes", "parallel.nodes", nodes);
    } else {
      ctx.use("num_nodes");
    }
  }
  set_int(ctx, "train.micro_batch_size", "train.micro_batch");
  if (ctx.has("train.global_batch_size") && ctx.has("train.micro_batch_size")) {
    // litgpt/args.py TrainArgs.gradient_accumulation_iters: global // (devices x nodes) // micro, and
    // TrainArgs asserts both the per-rank batch and the accumulation are > 0. Dividing by devices,
    // then by nodes, gives the same floor for positive counts without the product's overflow.
    const int64_t global = int_at(ctx, "train.global_batch_size");
    const int64_t micro = int_at(ctx, "train.micro_batch_size");
    if (micro < 1) {
      fail(errc::kOutOfRange, "train.micro_batch_size",
           "train.micro_batch_size " + std::to_string(micro) + " must be at least 1");
    }
    const int64_t accumulation = global / devices / nodes / micro;
    if (global < 1 || accumulation < 1) {
      fail(errc::kOutOfRange, "train.global_batch_size",
           "train.global_batch_size " + std::to_string(global) + " is less than devices (" + std::to_string(devices) +
               ") x nodes (" + std::to_string(nodes) + ") x train.micro_batch_size (" + std::to_string(micro) +
               "): LitGPT asserts at least one accumulation step");
    }
    ctx.set("train.global_batch_size", "train.grad_accum", accumulation);
  }
}

}  // namespace

// LitGPT config_hub YAML (litgpt/finetune/lora.py and full.py setup(), litgpt/args.py TrainArgs).
void map_litgpt(FileContext& ctx) {
  ctx.framework("litgpt");
  if (ctx.has("checkpoint_dir")) {
    std::string id = str(*ctx.at("checkpoint_dir"));
    if (id.rfind("checkpoints/", 0) == 0) id = id.substr(12);
    while (!id.empty() && id.back() == '/') id.pop_back();
    ctx.name_model("checkpoint_dir", id);
  }
  const bool lora = ctx.at("lora_r") != nullptr || ctx.at("lora_query") != nullptr;
  ctx.set(lora ? "lora_r" : "checkpoint_dir", "#adapter", lora ? "lora" : "full");
  if (ctx.has("precision")) {
    const std::string p = str(*ctx.at("precision"));
    if (const auto c = field("train.precision").canonical(p)) {
      ctx.set("precision", "train.precision", *c);
    } else {
      ctx.not_understood("precision", "precision " + p + " is not modelled");
    }
  }
  if (ctx.has("quantize")) {
    // litgpt/utils.py: bnb.nf4, bnb.nf4-dq, bnb.fp4, bnb.fp4-dq, bnb.int8.
    const std::string q = str(*ctx.at("quantize"));
    if (q == "bnb.nf4" || q == "bnb.nf4-dq" || q == "bnb.fp4" || q == "bnb.fp4-dq") {
      ctx.set("quantize", "#quant4", true);
      ctx.set("quantize", "train.quant.double_quant", q.size() > 3 && q.substr(q.size() - 3) == "-dq");
    } else {
      ctx.not_understood("quantize", "quantize " + q + " is not modelled (4-bit bitsandbytes is)");
    }
  }
  set_int(ctx, "lora_r", "train.lora.rank");
  set_num(ctx, "lora_alpha", "train.lora.alpha");
  set_num(ctx, "lora_dropout", "train.lora.dropout");
  if (lora) {
    json targets = json::array();
    const std::vector<std::pair<const char*, std::vector<const char*>>> flags = {
        {"lora_query", {"q_proj"}},
        {"lora_key", {"k_proj"}},
        {"lora_value", {"v_proj"}},
        {"lora_projection", {"o_proj"}},
        {"lora_mlp", {"gate_proj", "up_proj", "down_proj"}},
        {"lora_head", {"lm_head"}}};
    // litgpt/finetune/lora.py setup() defaults: query and value True, the rest False.
    for (const auto& [flag, mods] : flags) {
      const bool on =
          ctx.has(flag) ? ctx.flag(flag) : (std::string(flag) == "lora_query" || std::string(flag) == "lora_value");
      if (on) {
        for (const char* m : mods) targets.push_back(m);
      }
    }
    const std::string key = ctx.at("lora_query") != nullptr ? "lora_query" : "lora_r";
    ctx.set(key, "train.lora.targets", targets);
    for (const auto& [flag, mods] : flags) {
      if (ctx.at(flag) != nullptr) ctx.use(flag);
    }
  }
  litgpt_gpus_and_batches(ctx);
  if (ctx.at("train.max_seq_length") != nullptr) {
    if (ctx.has("train.max_seq_length")) {
      set_int(ctx, "train.max_seq_length", "train.seq_len");
    } else {
      ctx.use("train.max_seq_length", "no cap: the sequence length comes from the form");
    }
  }
  if (ctx.has("optimizer")) {
    const json& o = *ctx.at("optimizer");
    const std::string cls = o.is_string()
                                ? o.get<std::string>()
                                : (ctx.has("optimizer.class_path") ? str(*ctx.at("optimizer.class_path")) : "");
    const std::string key = o.is_string() ? "optimizer" : "optimizer.class_path";
    if (cls == "AdamW" || cls == "torch.optim.AdamW" || cls == "Adam" || cls == "torch.optim.Adam") {
      // litgpt/finetune/lora.py: with --quantize bnb.* the optimizer becomes bitsandbytes' PagedAdamW
      // (instantiate_bnb_optimizer); frameworks.cpp litgpt sets it for qlora.
      ctx.use(key, "AdamW; with quantize, bitsandbytes PagedAdamW (the framework's recipe)");
    } else {
      ctx.not_understood(key, "optimizer " + cls + " is not one the estimate models");
    }
  }
  ctx.finish(keys({"out_dir", "data", "train", "eval", "logger_name", "seed", "optimizer", "access_token", "resume",
                   "initial_checkpoint_dir", "tokenizer_dir", "log"}));
}

// ---------------------------------------------------------------- HF Trainer

// TRL's ModelConfig (trl/trainer/model_config.py), which TrlParser reads from
// the same YAML as SFTConfig (`trl sft --config recipe.yaml`; the
// alignment-handbook recipes): how the model is loaded and its LoRA.
static void map_trl_model_config(FileContext& ctx) {
  if (ctx.has("model_name_or_path")) ctx.name_model("model_name_or_path", str(*ctx.at("model_name_or_path")));
  if (ctx.has("use_peft")) ctx.set("use_peft", "#adapter", ctx.flag("use_peft") ? "lora" : "full");
  refuse_both_bit_widths(ctx, "load_in_4bit", "load_in_8bit");
  if (ctx.has("load_in_4bit")) ctx.set("load_in_4bit", "#quant4", ctx.flag("load_in_4bit"));
  if (ctx.has("load_in_8bit") && ctx.flag("load_in_8bit")) {
    ctx.not_understood("load_in_8bit", "8-bit base weights (LLM.int8) are not modelled for training");
  } else if (ctx.at("load_in_8bit") != nullptr) {
    ctx.use("load_in_8bit");
  }
  // ModelConfig's own LoRA defaults (r 16, alpha 32, dropout 0.05) apply only
  // with use_peft; keys given are used as given.
  set_int(ctx, "lora_r", "train.lora.rank");
  set_num(ctx, "lora_alpha", "train.lora.alpha");
  set_num(ctx, "lora_dropout", "train.lora.dropout");
  set_targets(ctx, "lora_target_modules");
  set_bool(ctx, "use_dora", "train.lora.use_dora");
  set_bool(ctx, "use_bnb_nested_quant", "train.quant.double_quant");
  if (ctx.at("use_rslora") != nullptr)
    ctx.use("use_rslora", "rsLoRA changes the adapter's scaling, not what is stored");
  if (ctx.at("bnb_4bit_quant_type") != nullptr) {
    ctx.use("bnb_4bit_quant_type", "nf4 and fp4 store the same 4 bits and one absmax per block");
  }
  if (ctx.has("lora_modules_to_save")) {
    ctx.not_understood("lora_modules_to_save", "fully trained modules next to the adapters are not modelled");
  }
  if (ctx.has("attn_implementation")) set_attention(ctx, "attn_implementation", str(*ctx.at("attn_implementation")));
  // torch_dtype (dtype in newer TRL): the dtype the weights are loaded in.
  for (const char* k : {"torch_dtype", "dtype"}) {
    if (!ctx.has(k)) continue;
    const std::string d = lower(str(*ctx.at(k)));
    const bool bf16 = ctx.has("bf16") && ctx.flag("bf16");
    if (d == "bfloat16" || d == "auto") {
      ctx.use(k, "16-bit weights: the hf recipe's dtype");
    } else if (d == "float32") {
      ctx.set(k, "train.precision", bf16 ? "amp_bf16" : "fp32");
    } else if (d == "float16") {
      ctx.set(k, "train.precision", "fp16");
    } else {
      ctx.not_understood(k, "weights dtype " + d + " is not one the estimate models");
    }
  }
}

// TrainingArguments.fsdp (transformers training_args.py __post_init__): true
// is full_shard, a string is split on spaces, and each word must be an
// FSDPOption (trainer_utils.py: full_shard, shard_grad_op, no_shard,
// hybrid_shard, hybrid_shard_zero2, offload, auto_wrap) or FSDPOption()
// raises ValueError; so does the importer, naming the key.
static void map_trainer_fsdp(FileContext& ctx) {
  const json& f = *ctx.at("fsdp");
  std::vector<std::string> words;
  if (f.is_boolean()) {
    if (f.get<bool>()) words.push_back("full_shard");
  } else if (f.is_string() || f.is_array()) {
    std::istringstream in(f.is_string() ? f.get<std::string>() : std::string());
    for (std::string w; in >> w;) words.push_back(w);
    if (f.is_array()) {
      for (const auto& o : f) words.push_back(str(o));
    }
  } else {
    fail(errc::kWrongType, "fsdp",
         "fsdp must be true, false or FSDP options (\"full_shard auto_wrap\"), got " + f.dump());
  }
  for (const std::string& w : words) {
    if (w == "full_shard" || w == "shard_grad_op" || w == "hybrid_shard" || w == "no_shard") {
      ctx.set("fsdp", "parallel.fsdp", w);
    } else if (w == "offload") {
      ctx.set("fsdp", "parallel.offload_params", true);
      ctx.set("fsdp", "parallel.offload_optimizer", true);
    } else if (w == "hybrid_shard_zero2") {
      ctx.not_understood("fsdp", "HYBRID_SHARD_ZERO2 is not modelled");
    } else if (w != "auto_wrap") {
      fail(errc::kUnknownValue, "fsdp",
           "fsdp option " + quoted(w) +
               " is not one of full_shard, shard_grad_op, no_shard, hybrid_shard, hybrid_shard_zero2, offload, "
               "auto_wrap (transformers FSDPOption)");
    }
  }
  ctx.use("fsdp");
}

// transformers TrainingArguments.to_json_string() (training_args.py), TRL
// SFTConfig (trl/trainer/sft_config.py) and Seq2SeqTrainingArguments keys.
void map_trainer(FileContext& ctx) {
  ctx.framework("hf");
  set_int(ctx, "per_device_train_batch_size", "train.micro_batch");
  set_int(ctx, "gradient_accumulation_steps", "train.grad_accum");
  trainer_precision(ctx, "bf16", "fp16");
  set_optimizer(ctx, "optim");
  if (ctx.has("adafactor") && ctx.flag("adafactor")) ctx.set("adafactor", "train.optimizer", "adafactor");
  set_checkpointing(ctx, "gradient_checkpointing");
  set_bool(ctx, "torch_compile", "train.compile");
  // SFTConfig: max_length (TRL >= 0.20, default 1024) or max_seq_length (older).
  for (const char* k : {"max_length", "max_seq_length"}) set_int(ctx, k, "train.seq_len");
  // TRL SFTConfig: packing fills max_length; padding_free concatenates the
  // batch's samples without padding (its length varies with the batch);
  // otherwise the collator pads to the longest sample of the batch.
  if (ctx.has("packing") && ctx.flag("packing")) {
    ctx.set("packing", "train.padding", "packed");
    if (ctx.at("padding_free") != nullptr) ctx.use("padding_free", "packed batches fill max_length");
  } else if (ctx.has("padding_free") && ctx.flag("padding_free")) {
    ctx.set("padding_free", "train.padding", "longest");
    if (ctx.at("packing") != nullptr) ctx.use("packing");
  } else if (ctx.has("packing")) {
    ctx.set("packing", "train.padding", "longest");
    if (ctx.at("padding_free") != nullptr) ctx.use("padding_free");
  } else if (ctx.at("padding_free") != nullptr) {
    ctx.use("padding_free");
  }
  if (ctx.has("use_liger_kernel")) {
    set_bool(ctx, "use_liger_kernel", "train.fused_loss");
    set_bool(ctx, "use_liger_kernel", "train.fused_norm");
  }
  set_bool(ctx, "activation_offloading", "train.activation_offload");
  if (ctx.has("deepspeed")) {
    if (ctx.at("deepspeed")->is_object()) {
      map_deepspeed(ctx, "deepspeed.");
    } else {
      ctx.refer("deepspeed", "deepspeed");
    }
  }
  if (ctx.has("fsdp")) map_trainer_fsdp(ctx);
  if (ctx.has("fsdp_config")) map_fsdp_config(ctx, "fsdp_config");
  if (ctx.has("ddp_bucket_cap_mb")) {
    ctx.not_understood("ddp_bucket_cap_mb", "DDP's bucket size is modelled at torch's default (25 MiB)");
  }
  map_trl_model_config(ctx);
  if (ctx.has("model_init_kwargs")) {
    ctx.not_understood("model_init_kwargs",
                       "how the model is loaded (torch_dtype, quantization) belongs in its "
                       "config.json or a quantization_config file");
  }
  const auto ds = deepspeed_irrelevant();
  const auto own =
      keys({"output_dir", "overwrite_output_dir", "do_*", "eval*", "prediction_loss_only", "per_device_eval_batch_size",
            "per_gpu_*", "learning_rate", "weight_decay", "adam_*", "max_grad_norm", "num_train_epochs", "max_steps",
            "lr_scheduler*", "warmup_*", "log_*", "logging_*", "save_*", "no_cuda", "use_cpu", "use_mps_device", "seed",
            "data_seed", "jit_mode_eval", "use_ipex", "fp16_opt_level", "half_precision_backend", "bf16_full_eval",
            "fp16_full_eval", "tf32", "local_rank", "ddp_backend", "tpu_*", "debug", "dataloader_*", "past_index",
            "run_name", "disable_tqdm", "remove_unused_columns", "label_*", "load_best_model_at_end",
            "metric_for_best_model", "greater_is_better", "ignore_data_skip", "fsdp_min_num_params",
            "fsdp_transformer_layer_cls_to_wrap", "accelerator_config", "optim_args", "group_by_length",
            "length_column_name", "report_to", "ddp_find_unused_parameters", "ddp_broadcast_buffers",
            "skip_memory_metrics", "use_legacy_prediction_loop", "push_to_hub*", "resume_from_checkpoint", "hub_*",
            "gradient_checkpointing_kwargs", "include_*", "fp16_backend", "mp_parameters", "auto_find_batch_size",
            "full_determinism", "torchdynamo", "ray_scope", "ddp_timeout", "torch_compile_*", "dispatch_batches",
            "split_batches", "neftune_noise_alpha", "optim_target_modules", "batch_eval_metrics",
            "restore_callback_states_from_checkpoint", "average_tokens_across_devices", "use_liger",
            "liger_kernel_config", "torch_empty_cache_steps", "sortish_sampler", "predict_with_generate",
            "generation_*", "dataset_*", "model_init_kwargs", "chat_template_path", "completion_only_loss",
            "assistant_only_loss", "eos_token", "pad_token", "pad_to_multiple_of", "num_of_sequences",
            "chars_per_token", "use_cache", "trackio_*", "project", "parallelism_config", "fsdp_config", "tp_size",
            // TRL ModelConfig / ScriptArguments and the alignment-handbook's
            // data arguments: where the model and data come from.
            "model_revision", "trust_remote_code", "lora_task_type", "chat_template",
            "gradient_checkpointing_use_reentrant", "ignore_bias_buffers"});
  ctx.finish([&](const std::string& k) {
    // An inline DeepSpeed config: its own list, by the key under "deepspeed.".
    if (k.rfind("deepspeed.", 0) == 0) {
      const std::string rest = k.substr(10);
      return ds(rest.substr(0, rest.find('.')));
    }
    return k != "deepspeed" && own(k);
  });
}

// ---------------------------------------------------------------- PEFT

// PEFT adapter_config.json (peft/tuners/lora/config.py LoraConfig).
void map_peft(FileContext& ctx) {
  const std::string type = str(*ctx.at("peft_type"));
  if (type != "LORA") {
    ctx.not_understood("peft_type", "PEFT " + type + " is not modelled (LoRA is)");
    ctx.finish(keys({"*"}));
    return;
  }
  ctx.set("peft_type", "#adapter", "lora");
  if (ctx.has("base_model_name_or_path")) {
    ctx.name_model("base_model_name_or_path", str(*ctx.at("base_model_name_or_path")));
  }
  set_int(ctx, "r", "train.lora.rank");
  set_num(ctx, "lora_alpha", "train.lora.alpha");
  set_num(ctx, "lora_dropout", "train.lora.dropout");
  set_targets(ctx, "target_modules");
  set_bool(ctx, "use_dora", "train.lora.use_dora");
  if (ctx.has("bias") && str(*ctx.at("bias")) != "none") {
    ctx.not_understood("bias", "trainable biases are not modelled");
  } else if (ctx.at("bias") != nullptr) {
    ctx.use("bias");
  }
  if (ctx.has("lora_bias") && ctx.flag("lora_bias")) {
    ctx.not_understood("lora_bias", "a bias on lora_B is not modelled");
  } else if (ctx.at("lora_bias") != nullptr) {
    ctx.use("lora_bias");
  }
  for (const char* k : {"modules_to_save", "layers_to_transform", "exclude_modules", "layer_replication",
                        "trainable_token_indices", "rank_pattern", "alpha_pattern"}) {
    const json* v = ctx.at(k);
    if (v == nullptr) continue;
    if (v->is_null() || (v->is_object() && v->empty()) || (v->is_array() && v->empty())) {
      ctx.use(k);
    } else {
      ctx.not_understood(k, std::string(k) + " changes which modules train; not modelled");
    }
  }
  ctx.finish(
      keys({"auto_mapping", "fan_in_fan_out",     "inference_mode",    "init_lora_weights", "layers_pattern",
            "loftq_config", "megatron_config",    "megatron_core",     "revision",          "task_type",
            "use_rslora",   "eva_config",         "corda_config",      "lora_dtype",        "target_parameters",
            "use_qalora",   "qalora_group_size",  "layer_replication", "runtime_config",    "alora_invocation_tokens",
            "arrow_config", "ensure_weight_tying"}));
}

// ---------------------------------------------------------------- bitsandbytes

// transformers BitsAndBytesConfig.to_dict() (utils/quantization_config.py),
// alone or as config.json's quantization_config.
void map_bnb(FileContext& ctx, const std::string& p) {
  if (ctx.has(p + "quant_method") && str(*ctx.at(p + "quant_method")) != "bitsandbytes") {
    ctx.not_understood(p + "quant_method", str(*ctx.at(p + "quant_method")) + " weights are not modelled for training");
    return;
  }
  if (ctx.at(p + "quant_method") != nullptr) ctx.use(p + "quant_method");
  refuse_both_bit_widths(ctx, p + "load_in_4bit", p + "load_in_8bit");
  refuse_both_bit_widths(ctx, p + "_load_in_4bit", p + "_load_in_8bit");
  for (const char* k : {"load_in_4bit", "_load_in_4bit"}) {
    if (ctx.has(p + k)) ctx.set(p + k, "#quant4", ctx.flag(p + k));
  }
  for (const char* k : {"load_in_8bit", "_load_in_8bit"}) {
    if (ctx.has(p + k) && ctx.flag(p + k)) {
      ctx.not_understood(p + k, "8-bit base weights (LLM.int8) are not modelled");
    } else if (ctx.at(p + k) != nullptr) {
      ctx.use(p + k);
    }
  }
  set_bool(ctx, p + "bnb_4bit_use_double_quant", "train.quant.double_quant");
  if (ctx.at(p + "bnb_4bit_quant_type") != nullptr) {
    ctx.use(p + "bnb_4bit_quant_type", "nf4 and fp4 store the same 4 bits and one absmax per block");
  }
  if (ctx.at(p + "bnb_4bit_compute_dtype") != nullptr) {
    ctx.use(p + "bnb_4bit_compute_dtype", "the dequantised weight is a temporary in the compute dtype");
  }
  if (ctx.has(p + "bnb_4bit_quant_storage") && lower(str(*ctx.at(p + "bnb_4bit_quant_storage"))) != "uint8") {
    ctx.not_understood(p + "bnb_4bit_quant_storage", "4-bit weights stored as " +
                                                         str(*ctx.at(p + "bnb_4bit_quant_storage")) +
                                                         " (the FSDP-QLoRA recipe) are counted as uint8 storage");
  } else if (ctx.at(p + "bnb_4bit_quant_storage") != nullptr) {
    ctx.use(p + "bnb_4bit_quant_storage");
  }
  if (ctx.has(p + "llm_int8_skip_modules")) {
    ctx.not_understood(p + "llm_int8_skip_modules", "modules kept unquantised beyond the head are not modelled");
  }
  for (const char* k : {"llm_int8_threshold", "llm_int8_has_fp16_weight", "llm_int8_enable_fp32_cpu_offload",
                        "llm_int8_skip_modules"}) {
    if (ctx.at(p + k) != nullptr) ctx.ignore(p + k);
  }
  if (p.empty()) ctx.finish(keys({}));
}

// ---------------------------------------------------------------- config.json

// An HF config.json: the model itself (request model.config), and its
// quantization_config when it has one.
void map_model_config(FileContext& ctx) {
  // The whole file (but its quantization_config) is the model; the merge puts it in model.config.
  ctx.use("model_type", "the whole file is the model's config.json (model.config)");
  for (const auto& [k, v] : ctx.root().items()) {
    if (k != "quantization_config") ctx.cover(k);
  }
  if (ctx.has("quantization_config")) map_bnb(ctx, "quantization_config.");
  ctx.finish(keys({}));
}

}  // namespace vram::import

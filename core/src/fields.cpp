// The table of request fields (vram/fields.h). One entry per field of
// docs/schema.md's request section, in its order; the defaults and limits are
// the constants of fields.h, where their sources are cited.
#include "vram/fields.h"

#include <algorithm>
#include <cstdlib>

#include "table_def.h"
#include "vram/api.h"
#include "vram/optimizers.h"
#include "vram/releases.h"

#ifndef VRAM_VERSION
#define VRAM_VERSION "0.0.0"
#endif

namespace vram {

const char* to_string(FieldType t) {
  switch (t) {
    case FieldType::kInt:
      return "int";
    case FieldType::kNumber:
      return "number";
    case FieldType::kBool:
      return "bool";
    case FieldType::kString:
      return "string";
    case FieldType::kEnum:
      return "enum";
    case FieldType::kList:
      return "list";
    case FieldType::kObject:
      return "object";
  }
  return "?";
}

std::optional<std::string> FieldSpec::canonical(const std::string& name) const {
  if (std::find(values.begin(), values.end(), name) != values.end()) return name;
  for (const auto& [alias, value] : aliases) {
    if (alias == name) return value;
  }
  return std::nullopt;
}

std::vector<std::string> FieldSpec::accepted() const {
  std::vector<std::string> out = values;
  for (const auto& [alias, _] : aliases) out.push_back(alias);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// The table is data (issue 18): built as code, the vector of FieldSpec was
// 43 KB of WebAssembly code (a --profiling-funcs link); as constexpr rows
// vram_core.wasm went from 814,084 to 776,939 bytes, 302,474 to 291,135 gzip
// -9 (2026-11-28, -Oz + LTO). One Row per field, turned into FieldSpec once, on
// the first request_fields().
// Enum values and aliases are '|'-separated lists ("train|infer",
// "trl=hf|accelerate=hf").

using detail::Def;

// Where a field shows up outside the request: its label, flag and URL key.
struct Face {
  const char* label;
  const char* cli;
  const char* url;
  const char* doc;
};

// A field's place in the fields table and the CLI (kFaces).
struct Described {
  const char* path;
  Face face;
};

struct Row {
  const char* path;
  FieldType type;
  Def def;
  bool limited = false;  // int / number: lo and hi apply
  double lo = 0, hi = 0;
  const char* values = "";   // enum: canonical values, '|'-separated
  const char* aliases = "";  // enum: alias=value pairs, '|'-separated
  bool optimizers = false;   // enum: the values and aliases of vram/optimizers.h
  double cli_unit = 0;
  bool internal = false;  // FieldSpec::internal
};

constexpr Row make(const char* path, FieldType type, Def def) { return Row{path, type, def}; }

constexpr Row integer(const char* path, Def def, int64_t lo, int64_t hi) {
  Row r = make(path, FieldType::kInt, def);
  r.limited = true;
  r.lo = static_cast<double>(lo);
  r.hi = static_cast<double>(hi);
  return r;
}

constexpr Row number(const char* path, Def def, double lo, double hi) {
  Row r = make(path, FieldType::kNumber, def);
  r.limited = true;
  r.lo = lo;
  r.hi = hi;
  return r;
}

constexpr Row boolean(const char* path, Def def) { return make(path, FieldType::kBool, def); }

constexpr Row choice(const char* path, Def def, const char* values, const char* aliases) {
  Row r = make(path, FieldType::kEnum, def);
  r.values = values;
  r.aliases = aliases;
  return r;
}

constexpr Row optimizer_choice(const char* path, Def def) {
  Row r = make(path, FieldType::kEnum, def);
  r.optimizers = true;
  return r;
}

constexpr Row bytes(const char* path, double cli_unit) {
  Row r = integer(path, nullptr, 0, limits::kMaxOverhead);
  r.cli_unit = cli_unit;
  return r;
}

constexpr Row with_default(Row r, Def def) {
  r.def = def;
  return r;
}

// A consequence of a framework release or library version (FieldSpec::internal).
constexpr Row internal(Row r) {
  r.internal = true;
  return r;
}

constexpr double kGiB = 1073741824.0;
constexpr double kMiB = 1048576.0;

// HF Trainer bf16=True, Lightning's precision names (bf16-true, bf16-mixed,
// 16-mixed) and torch dtype names, onto the core's recipes.
constexpr const char* kPrecisionAliases =
    "float32=fp32|32-true=fp32|bfloat16=bf16|bf16-true=bf16|float16=fp16|fp16-true=fp16|bf16-mixed=amp_bf16|"
    "16-mixed=amp_fp16|fp16-mixed=amp_fp16";

// attn_implementation spellings; FlashAttention 3 saves what FA2 saves.
constexpr const char* kAttentionAliases =
    "flash_attention_3=flash_attention_2|fa2=flash_attention_2|flash=flash_attention_2";

// torch.distributed.fsdp.ShardingStrategy names (parallel.fsdp, and
// parallel.sharding's FSDP values): a literal so the two lists concatenate at
// compile time.
#define VRAM_FSDP_STRATEGIES "full_shard|shard_grad_op|hybrid_shard|no_shard"

namespace d = defaults;
namespace l = limits;
using T = FieldType;

constexpr Row kRows[] = {
    // ---- model -------------------------------------------------------------
    make("model.config", T::kObject, nullptr),
    make("model.custom", T::kObject, nullptr),
    make("model.size", T::kString, nullptr),
    make("model.safetensors", T::kObject, nullptr),
    make("model.gguf", T::kObject, nullptr),
    make("model.mmproj", T::kObject, nullptr),
    boolean("model.allow_generic", false),
    choice("task", d::kTask, "train|infer", ""),
    // ---- train -------------------------------------------------------------
    choice("train.method", d::kMethod, "full|lora|qlora|freeze", ""),
    choice("train.framework", d::kFramework,
           "hf|torchtune|litgpt|unsloth|axolotl|llama_factory|torchtitan|megatron|deepspeed|fsdp_qlora",
           "trl=hf|accelerate=hf|llamafactory=llama_factory|llama-factory=llama_factory"),
    integer("train.micro_batch", d::kMicroBatch, 1, l::kMaxBatch),
    integer("train.seq_len", d::kSeqLen, 1, l::kMaxSeq),
    integer("train.grad_accum", d::kGradAccum, 1, l::kMaxGradAccum),
    internal(boolean("train.zero_grad_set_to_none", d::kZeroGradSetToNone)),
    internal(boolean("train.softmax_saves_input", d::kSoftmaxSavesInput)),
    internal(boolean("train.keeps_previous_logits", d::kKeepsPreviousLogits)),
    internal(boolean("train.loss_shift_copy", d::kLossShiftCopy)),
    internal(boolean("train.logits_upcast_in_model", d::kLogitsUpcastInModel)),
    internal(boolean("train.keeps_logits", d::kKeepsLogits)),
    internal(boolean("train.outputs_fp32", d::kOutputsFp32)),
    internal(boolean("train.keeps_fused_qkv", d::kKeepsFusedQkv)),
    internal(boolean("train.returns_kv_cache", d::kReturnsKvCache)),
    choice("train.precision", d::kPrecision, "fp32|bf16|fp16|amp_bf16|amp_fp16|mixed_bf16", kPrecisionAliases),
    optimizer_choice("train.optimizer", d::kOptimizer),
    choice("train.grad_checkpointing", d::kCheckpointing, "none|full|selective|selective_op", ""),
    choice("train.attention", d::kAttention, "eager|sdpa|flash_attention_2|xformers", kAttentionAliases),
    internal(choice("train.kernels", d::kKernels, "standard|unsloth", "")),
    choice("train.padding", d::kPadding, "max_length|packed|longest",
           "pad_to_max_length=max_length|packing=packed|pad_to_longest=longest"),
    boolean("train.fused_loss", false),
    choice("train.loss", "standard", "standard|chunked|fused", "chunked_output=chunked|fused_linear=fused"),
    integer("train.loss_chunks", d::kLossChunks, 1, l::kMaxLossChunks),
    integer("train.loss_chunk_size", nullptr, 1, l::kMaxSeq),
    internal(boolean("train.loss_upcast", d::kLossUpcast)),
    boolean("train.fused_norm", false),
    internal(boolean("train.sdpa_gqa_native", false)),
    integer("train.lora.rank", d::kLoraRank, 1, l::kMaxLoraRank),
    make("train.lora.targets", T::kList, nullptr),
    number("train.lora.alpha", d::kLoraAlpha, 0.0, 1e9),
    number("train.lora.dropout", d::kLoraDropout, 0.0, 1.0),
    internal(boolean("train.lora.adapter_fp32", d::kLoraAdapterFp32)),
    boolean("train.lora.use_dora", d::kLoraUseDora),
    internal(boolean("train.lora.fused_qkv", d::kLoraFusedQkv)),
    boolean("train.quant.double_quant", d::kDoubleQuant),
    integer("train.quant.blocksize", d::kQuantBlocksize, 16, 4096),
    internal(boolean("train.quant.prepare_kbit", d::kPrepareKbit)),
    internal(choice("train.quant.quantizer", d::kQuantizer,
                    "bitsandbytes|torchao|torchao_unchunked|lightning_bitsandbytes", "")),
    internal(boolean("train.quant.saves_input", d::kQuantSavesInput)),
    make("train.trainable_modules", T::kList, Def::list("")),
    integer("train.images_per_sample", 0, 0, 1024),
    boolean("train.activation_offload", false),
    boolean("train.optimizer_in_backward", false),
    boolean("train.compile", d::kCompile),
    number("train.dropout", nullptr, -1.0, 1.0),
    // ---- versions (vram/releases.h: absent = the framework release's) ------
    make("versions.torch", T::kString, nullptr),
    make("versions.transformers", T::kString, nullptr),
    make("versions.peft", T::kString, nullptr),
    make("versions.trl", T::kString, nullptr),
    make("versions.bitsandbytes", T::kString, nullptr),
    make("versions.torchao", T::kString, nullptr),
    make("versions.flash_attn", T::kString, nullptr),
    // ---- infer -------------------------------------------------------------
    integer("infer.batch", d::kInferBatch, 1, l::kMaxBatch),
    integer("infer.context_len", d::kContextLen, 1, l::kMaxSeq),
    choice("infer.weights_dtype", d::kWeightsDtype,
           "bf16|fp16|fp32|fp8|int8|int4|gptq|awq|nf4|nf4-dq|mxfp4|checkpoint|Q4_0|Q4_1|Q5_0|Q5_1|Q8_0|Q2_K|Q2_K_S|"
           "Q3_K_S|Q3_K_M|Q3_K_L|Q4_K_S|Q4_K_M|Q5_K_S|Q5_K_M|Q6_K|IQ1_S|IQ1_M|IQ2_XXS|IQ2_XS|IQ2_S|IQ2_M|IQ3_XXS|"
           "IQ3_XS|IQ3_S|IQ3_M|IQ4_NL|IQ4_XS|TQ1_0|TQ2_0|MXFP4_MOE|F16|BF16|F32",
           ""),
    choice("infer.kv_dtype", d::kKvDtype, "bf16|fp16|fp32|fp8|int8|int4", ""),
    integer("infer.prompt_len", nullptr, 1, l::kMaxSeq),
    integer("infer.images_per_prompt", 0, 0, 1024),
    choice("infer.engine", d::kEngine, "hf|vllm|sglang|litgpt|llama_cpp|ollama|lmstudio",
           "llama.cpp=llama_cpp|llamacpp=llama_cpp|llama-server=llama_cpp|lm_studio=lmstudio|lm-studio=lmstudio"),
    choice("infer.entrypoint", d::kEntrypoint, "server|offline", ""),
    number("infer.gpu_memory_utilization", d::kGpuMemoryUtilization, 0.01, 1.0),
    integer("infer.block_size", d::kBlockSize, 1, 4096),
    integer("infer.max_num_seqs", nullptr, 1, l::kMaxBatch),
    integer("infer.max_num_batched_tokens", nullptr, 1, l::kMaxSeq),
    boolean("infer.enforce_eager", d::kEnforceEager),
    integer("infer.ctx_size", nullptr, 0, l::kMaxSeq),
    integer("infer.n_gpu_layers", nullptr, -1, 100000),
    integer("infer.n_batch", nullptr, 1, l::kMaxSeq),
    integer("infer.n_ubatch", d::kNUbatch, 1, l::kMaxSeq),
    choice("infer.flash_attn", nullptr, "on|off|auto", "true=on|false=off|1=on|0=off|enabled=on|disabled=off"),
    choice("infer.cache_type_k", d::kCacheType, "f32|f16|bf16|q8_0|q4_0|q4_1|iq4_nl|q5_0|q5_1", ""),
    choice("infer.cache_type_v", nullptr, "f32|f16|bf16|q8_0|q4_0|q4_1|iq4_nl|q5_0|q5_1", ""),
    boolean("infer.kv_unified", nullptr),
    boolean("infer.swa_full", nullptr),
    boolean("infer.fit", nullptr),
    boolean("infer.kv_offload", d::kKvOffload),
    boolean("infer.mmap", d::kMmap),
    choice("infer.split_mode", d::kSplitMode, "layer|row|none", ""),
    make("infer.tensor_split", T::kList, nullptr),
    make("infer.engine_version", T::kString, nullptr),
    number("infer.mem_fraction_static", nullptr, 0.01, 1.0),
    integer("infer.chunked_prefill_size", nullptr, 1, l::kMaxSeq),
    integer("infer.cuda_graph_max_bs", nullptr, 1, l::kMaxBatch),
    // ---- parallel ----------------------------------------------------------
    integer("parallel.gpus", d::kGpus, 1, l::kMaxGpus),
    integer("parallel.dp", nullptr, 1, l::kMaxGpus),
    integer("parallel.tp", 1, 1, l::kMaxSmallDegree),
    integer("parallel.pp", 1, 1, l::kMaxDegree),
    integer("parallel.zero", 0, 0, 3),
    choice("parallel.fsdp", "", "|" VRAM_FSDP_STRATEGIES, ""),
    boolean("parallel.offload_optimizer", false),
    integer("parallel.cp", 1, 1, l::kMaxDegree),
    boolean("parallel.offload_params", false),
    boolean("parallel.sequence_parallel", false),
    integer("parallel.gpus_per_node", d::kGpusPerNode, 1, l::kMaxSmallDegree),
    boolean("parallel.gradient_as_bucket_view", d::kGradientAsBucketView),
    boolean("parallel.overlap_comm", nullptr),
    integer("parallel.ep", 1, 1, l::kMaxDegree),
    integer("parallel.vp", 1, 1, l::kMaxSmallDegree),
    choice("parallel.sharding", nullptr, "ddp|zero1|zero2|zero3|" VRAM_FSDP_STRATEGIES "|distributed_optimizer",
           "none=ddp"),
    boolean("parallel.distributed_optimizer", false),
    boolean("parallel.main_grads_fp32", d::kMainGradsFp32),
    integer("parallel.fsdp_version", d::kFsdpVersion, 1, 2),
    choice("parallel.fsdp_param_dtype", nullptr, "bf16|fp16|fp32", ""),
    choice("parallel.fsdp_reduce_dtype", nullptr, "bf16|fp16|fp32", ""),
    boolean("parallel.fsdp_sync_module_states", false),
    internal(boolean("parallel.fsdp_adapter_units", d::kFsdpAdapterUnits)),
    integer("parallel.nodes", nullptr, 1, l::kMaxNodes),
    integer("parallel.nccl_channels", d::kNcclChannels, 1, l::kMaxNcclChannels),
    boolean("parallel.nvls", nullptr),
    integer("parallel.stage3_param_persistence_threshold", d::kStage3ParamPersistenceThreshold, 0, l::kMaxElems),
    integer("parallel.stage3_prefetch_bucket_size", d::kStage3PrefetchBucketSize, 0, l::kMaxElems),
    integer("parallel.stage3_max_live_parameters", d::kStage3MaxLiveParameters, 0, l::kMaxElems),
    integer("parallel.reduce_bucket_size", d::kReduceBucketSize, 1, l::kMaxElems),
    boolean("parallel.contiguous_gradients", d::kContiguousGradients),
    make("deepspeed", T::kObject, nullptr),
    // ---- gpu and overheads -------------------------------------------------
    make("gpu.name", T::kString, nullptr),
    number("gpu.memory_gib", nullptr, 0.25, 65536.0),
    bytes("overheads.cuda_context_bytes", kGiB),
    bytes("overheads.cublas_workspace_bytes", kMiB),
    number("overheads.fragmentation", nullptr, 0.0, 4.0),
    with_default(bytes("overheads.misc_bytes", kGiB), defaults::kMiscBytes),
    bytes("overheads.nccl_bytes", 0),
    // PYTORCH_CUDA_ALLOC_CONF (c10/cuda/CUDAAllocatorConfig.cpp), replayed by
    // the caching-allocator model (core/src/memory/caching_allocator.h).
    make("allocator.conf", T::kString, ""),
    boolean("allocator.expandable_segments", false),
    integer("allocator.max_split_size_mb", nullptr, 21, l::kMaxSplitSizeMb),
    number("calibration.attention", nullptr, 0.0, 100.0),
    number("calibration.mlp", nullptr, 0.0, 100.0),
    number("calibration.logits", nullptr, 0.0, 100.0),
    number("calibration.checkpointing", nullptr, 0.0, 100.0),
    // ---- time and hardware (the time model, core/src/speed) -----------------
    boolean("time.enabled", true),
    integer("time.tokens", nullptr, 1, l::kMaxRunTokens),
    integer("time.samples", nullptr, 1, l::kMaxRunTokens),
    integer("time.mean_len", nullptr, 1, l::kMaxSeq),
    number("time.epochs", d::kEpochs, 0.001, 1e6),
    number("time.gpu_hour_usd", nullptr, 0.0, l::kMaxPrice),
    make("time.prices", T::kObject, nullptr),
    choice("hardware.link", nullptr, "nvlink5|nvlink4|nvlink3|nvlink2|nvlink_bridge|xgmi|pcie5|pcie4|pcie3",
           "nvlink=nvlink4|pcie=pcie4|infinity_fabric=xgmi"),
    number("hardware.network_gbps", nullptr, 1.0, l::kMaxRate),
    number("hardware.host_memory_gbs", nullptr, 1.0, l::kMaxRate),
    number("hardware.matmul_tflops", nullptr, 0.01, l::kMaxRate),
    number("hardware.memory_gbs", nullptr, 1.0, l::kMaxRate),
};

// Where each field shows up outside the request, by path, in kRows' order:
// only request_fields() (the fields table, the CLI's flags) reads these, so a
// build that never calls it (the first-visit WASM module, whose parser reads
// kRows through find_field) carries none of their text.
constexpr Described kFaces[] = {
    {"model.config", {"config.json", "--model-config", "", "an HF config.json object (the flag takes its file)"}},
    {"model.custom", {"custom model", "", "", "a Llama-shaped decoder from explicit sizes"}},
    {"model.size",
     {"model size", "--model-size", "size",
      "quick sizing: a Llama-3-shaped decoder of this many parameters (7B, 1.5B, 350M); approximate"}},
    {"model.safetensors",
     {"safetensors tensors", "--safetensors", "",
      "the checkpoint's tensor list {tensors: [{name, dtype, shape}], metadata} (the flag takes an "
      "index.json, a directory or a .safetensors file): an exact estimate for any architecture, and the "
      "cross-check of a known one"}},
    {"model.gguf",
     {"GGUF file", "--gguf", "",
      "a GGUF file's header {file, metadata, tensors: [{name, shape, type, offset}]} (the flag takes a .gguf "
      "file and reads only its header): every tensor's ggml type and bytes, the hyperparameters llama.cpp "
      "reads; the model of the llama_cpp, ollama and lmstudio engines"}},
    {"model.mmproj",
     {"mmproj file", "--mmproj", "",
      "a multimodal projector GGUF's header (llama.cpp --mmproj): its weights on the first GPU"}},
    {"model.allow_generic",
     {"allow_generic", "--allow-generic", "", "estimate an unknown model_type as a Llama-shaped decoder"}},
    {"task",
     {"Task", "--task", "task",
      "training or inference (absent: infer when the request sets infer.* or model.gguf and no train.*)"}},
    {"train.method", {"Method", "--method", "method", "LLaMA-Factory finetuning_type, plus QLoRA"}},
    {"train.framework",
     {"Framework", "--framework", "fw",
      "the training framework, optionally at a release (torchtune@0.2, unsloth@2024.8, hf@4.44): its "
      "memory-relevant defaults and the rules of its library versions fill the fields left out "
      "(vram/frameworks.h, vram/releases.h); absent release: the newest"}},
    {"train.micro_batch", {"per_device_train_batch_size", "--per-device-batch", "mb", "sequences per GPU per step"}},
    {"train.seq_len", {"max_seq_length", "--seq-len", "seq", "tokens per sample (VLMs: with image tokens)"}},
    {"train.grad_accum",
     {"gradient_accumulation_steps", "--grad-accum", "ga", "> 1 keeps gradients alive through forward"}},
    {"train.zero_grad_set_to_none",
     {"zero_grad(set_to_none)", "", "",
      "false (PyTorch < 2.0's default) keeps every gradient allocated, zeroed, between steps"}},
    {"train.softmax_saves_input",
     {"softmax keeps its input (PyTorch <= 1.10)", "", "",
      "PyTorch <= 1.10 softmax / log_softmax also saved their input: one more score matrix per eager "
      "attention layer"}},
    {"train.keeps_previous_logits",
     {"loop keeps the previous step's logits", "", "",
      "LitGPT: the previous step's logits, and with train.quant.saves_input every 4-bit Linear's input, "
      "stay allocated through the next forward"}},
    {"train.loss_shift_copy",
     {"loss shifts a copy of the logits", "", "",
      "transformers < 4.49: the causal-LM loss makes a contiguous fp32 copy of the logits shifted by one "
      "(logits[..., :-1, :].contiguous()), alive next to the upcast logits until log_softmax has run"}},
    {"train.logits_upcast_in_model",
     {"model returns fp32 logits", "", "",
      "transformers <= 4.45: the model's forward upcasts its logits to fp32 and returns them; its own-dtype "
      "logits are freed before the loss"}},
    {"train.keeps_logits",
     {"loop keeps the logits through backward", "", "",
      "LitGPT fit(): `logits = model(...)` stays referenced while fabric.backward(loss) runs, so the logits "
      "are alive through the loss backward (torchtune deletes them first; the HF Trainer never returns them)"}},
    {"train.outputs_fp32",
     {"wrapper returns fp32 outputs", "", "",
      "Lightning Fabric bf16-true / 16-true / bnb (LitGPT): _FabricModule.forward converts the model's "
      "floating outputs, the logits, to fp32 (precision.convert_output) before the loss"}},
    {"train.keeps_fused_qkv",
     {"attention keeps the fused q/k/v output", "", "",
      "LitGPT, multi-head attention: v reaches SDPA as a view of the fused q/k/v projection output, so "
      "the whole output (q, k and v widths) is kept for backward, not v alone"}},
    {"train.returns_kv_cache",
     {"model() returns the key/value cache in training", "", "",
      "Unsloth before 2024.2 (use_cache from the config, not turned off in training): each layer's keys and "
      "values stay allocated until the loss returns, and under fp16 / bf16 the Trainer's Accelerate wrapper "
      "copies them to fp32 (modelled with train.kernels unsloth)"}},
    {"train.precision", {"Precision", "--dtype", "prec", "the named precision recipe"}},
    {"train.optimizer", {"optim", "--optimizer", "optim", "HF Trainer optim name"}},
    {"train.grad_checkpointing",
     {"gradient_checkpointing", "--grad-checkpoint", "gc", "also a bool: true = full, false = none"}},
    {"train.attention",
     {"attn_implementation", "--attention", "attn",
      "the attention kernel (xformers: memory-efficient attention, as Unsloth runs it without FlashAttention)"}},
    {"train.kernels",
     {"Layer kernels", "--kernels", "",
      "standard: HF modules + PEFT LoRA layers; unsloth: Unsloth's fused LoRA "
      "MLP/QKV/O autograd functions, Triton RMSNorm, in-place RoPE and cross-entropy (Llama-family layers)"}},
    {"train.padding",
     {"padding / packing", "--padding", "pad",
      "max_length or packed: every step is micro_batch x seq_len; longest: padded to the longest sample "
      "of each batch, so steps vary in length (up to seq_len) and the allocator caches the blocks of each"}},
    {"train.fused_loss",
     {"Fused cross-entropy", "--fused-loss", "fused", "Liger fused linear cross-entropy (= train.loss fused)"}},
    {"train.loss",
     {"Loss", "--loss", "loss",
      "standard: full logits, then the cross-entropy; chunked: the output layer and an fp32 cross-entropy per "
      "chunk of the sequence (torchtune CEWithChunkedOutputLoss, LitGPT chunked_cross_entropy); fused: a fused "
      "linear cross-entropy (Liger)"}},
    {"train.loss_chunks",
     {"num_output_chunks", "--loss-chunks", "lchunks", "chunked loss: chunks of the sequence (torchtune: 8)"}},
    {"train.loss_chunk_size",
     {"lm_head_chunk_size", "", "", "chunked loss: tokens per chunk instead of a count (LitGPT: 128)"}},
    {"train.loss_upcast",
     {"chunk upcast to fp32", "", "",
      "chunked loss: each chunk's logits cast to fp32 before the cross-entropy (torchtune: yes; LitGPT "
      "bf16-true: no)"}},
    {"train.fused_norm", {"Fused RMSNorm", "", "", "Liger / apex fused RMSNorm (--liger sets it)"}},
    {"train.sdpa_gqa_native", {"enable_gqa", "", "", "SDPA's enable_gqa path: K/V not repeated to every head"}},
    {"train.lora.rank", {"LoRA r", "--lora-rank", "r", "PEFT r"}},
    {"train.lora.targets",
     {"target_modules", "--lora-target-modules", "targets",
      "leaf module names or \"all-linear\"; absent: PEFT's default for the family"}},
    {"train.lora.alpha", {"lora_alpha", "--lora-alpha", "alpha", "PEFT lora_alpha; absent: r"}},
    {"train.lora.dropout",
     {"lora_dropout", "--lora-dropout", "", "PEFT lora_dropout (a mask per adapter input when > 0)"}},
    {"train.lora.adapter_fp32", {"autocast_adapter_dtype", "", "", "adapters upcast to fp32"}},
    {"train.lora.use_dora", {"use_dora", "", "", "DoRA's magnitude vectors"}},
    {"train.lora.fused_qkv",
     {"q/k/v LoRA fused (LitGPT)", "", "",
      "one dropout and one lora_A over the shared input of q, k and v (LitGPT LoRAQKVLinear); PEFT "
      "wraps each projection with its own"}},
    {"train.quant.double_quant", {"bnb_4bit_use_double_quant", "", "", "QLoRA: quantised quantisation constants"}},
    {"train.quant.blocksize", {"blocksize", "", "", "bitsandbytes 4-bit block size"}},
    {"train.quant.prepare_kbit", {"prepare_model_for_kbit_training", "", "", "fp32 casts of the non-4-bit parameters"}},
    {"train.quant.quantizer",
     {"4-bit quantiser", "", "",
      "who quantises the 4-bit base at load: bitsandbytes' kernel, or torchao's NF4Tensor (torchtune; "
      "torchao_unchunked = torchao before 0.2, whose (numel x 16) temporaries the caching allocator keeps), "
      "or Lightning's BitsandbytesPrecision (LitGPT: every Linear incl. lm_head, quantised from fp16)"}},
    {"train.quant.saves_input",
     {"4-bit Linear keeps its input (bitsandbytes < 0.43.2)", "", "",
      "bitsandbytes 0.41-0.43.1 MatMul4Bit saved every 4-bit Linear's input for backward"}},
    {"train.trainable_modules",
     {"Trainable modules", "--trainable-modules", "", "method freeze: leaf names or layers.N"}},
    {"train.images_per_sample",
     {"Images per sample", "--images-per-sample", "imgs", "VLMs: images through the vision tower"}},
    {"train.activation_offload",
     {"Offload activations to CPU", "--activation-offload", "aoff", "saved activations in host memory"}},
    {"train.optimizer_in_backward",
     {"Optimizer step in backward", "--optimizer-in-backward", "oib", "per-parameter step in backward hooks"}},
    {"train.compile",
     {"torch_compile", "--compile", "compile",
      "torch.compile (HF torch_compile, torchtune compile): not modelled, the estimate stays eager mode's"}},
    {"train.dropout", {"dropout", "", "", "overrides the config's dropout; absent: the model's own"}},
    {"versions.torch", {"PyTorch version", "--torch-version", "vtorch", "torch.__version__; absent: the release's"}},
    {"versions.transformers",
     {"transformers version", "--transformers-version", "vtf", "transformers.__version__; absent: the release's"}},
    {"versions.peft", {"PEFT version", "--peft-version", "vpeft", "peft.__version__; absent: the release's"}},
    {"versions.trl", {"TRL version", "--trl-version", "vtrl", "trl.__version__; absent: the release's"}},
    {"versions.bitsandbytes",
     {"bitsandbytes version", "--bitsandbytes-version", "vbnb", "bitsandbytes.__version__; absent: the release's"}},
    {"versions.torchao", {"torchao version", "--torchao-version", "vao", "torchao.__version__; absent: the release's"}},
    {"versions.flash_attn",
     {"flash-attn version", "--flash-attn-version", "vfa", "flash_attn.__version__; absent: the release's"}},
    {"infer.batch", {"Concurrent sequences", "--batch", "bs", "sequences generated at once"}},
    {"infer.context_len", {"Context length", "--context-len", "ctx", "tokens per sequence (prompt + generated)"}},
    {"infer.weights_dtype",
     {"Weights dtype", "--weights-dtype", "wdt",
      "serving dtype or quantisation of the weights; checkpoint: as model.safetensors stores them (its "
      "default when given)"}},
    {"infer.kv_dtype", {"kv_cache_dtype", "--kv-dtype", "kvdt", "KV-cache dtype"}},
    {"infer.prompt_len", {"Prompt length", "--prompt-len", "prompt", "tokens prefilled at once; absent: context_len"}},
    {"infer.images_per_prompt",
     {"Images per prompt", "--images-per-prompt", "img",
      "VLMs: images in each sequence's prompt (Mllama: their keys/values in the cross-attention layers; "
      "the vision tower's prefill)"}},
    {"infer.engine",
     {"Engine", "--engine", "eng",
      "transformers generate, vLLM or SGLang as they size themselves, LitGPT generate (preallocated cache; "
      "with bitsandbytes 4-bit, lm_head quantised too), or llama.cpp and its presets Ollama and LM Studio (GGUF); "
      "NAME@RELEASE (vllm@0.11.1) is an alias of infer.engine_version"}},
    {"infer.entrypoint",
     {"vLLM entrypoint", "--entrypoint", "entry", "server: vllm serve; offline: the LLM class (other defaults)"}},
    {"infer.gpu_memory_utilization",
     {"gpu_memory_utilization", "--gpu-memory-utilization", "gmu", "vLLM's share of the GPU"}},
    {"infer.block_size", {"block_size", "--block-size", "blk", "vLLM KV block, tokens"}},
    {"infer.max_num_seqs",
     {"max_num_seqs", "--max-num-seqs", "seqs", "vLLM sequences per step; absent: vLLM's default by GPU"}},
    {"infer.max_num_batched_tokens",
     {"max_num_batched_tokens", "--max-num-batched-tokens", "mbt",
      "vLLM tokens per step; absent: vLLM's default by GPU"}},
    {"infer.enforce_eager",
     {"enforce_eager", "--enforce-eager", "eager",
      "vLLM without CUDA graphs (SGLang's --disable-cuda-graph); on the CLI a switch, as vLLM's"}},
    {"infer.ctx_size",
     {"--ctx-size", "--ctx-size", "nctx",
      "llama.cpp -c: KV cells for all sequences together (split between --parallel slots unless --kv-unified); "
      "0: the model's context_length; absent: the release's default. Ollama: num_ctx is infer.context_len"}},
    {"infer.n_gpu_layers",
     {"--n-gpu-layers", "--n-gpu-layers", "ngl",
      "llama.cpp -ngl: the last N blocks (and, past n_layer, the output layer) on the GPUs; absent: the "
      "release's default (all from 2025-10, 0 before)"}},
    {"infer.n_batch", {"--batch-size", "--batch-size", "nb", "llama.cpp -b (absent: 2048; Ollama num_batch 512)"}},
    {"infer.n_ubatch",
     {"--ubatch-size", "--ubatch-size", "nub",
      "llama.cpp -ub: tokens per compute graph, which sizes the compute buffer"}},
    {"infer.flash_attn",
     {"--flash-attn", "--flash-attn", "fa",
      "llama.cpp -fa on|off|auto (absent: the release's default; Ollama: OLLAMA_FLASH_ATTENTION)"}},
    {"infer.cache_type_k",
     {"--cache-type-k", "--cache-type-k", "ctk", "llama.cpp -ctk (Ollama: OLLAMA_KV_CACHE_TYPE, K and V)"}},
    {"infer.cache_type_v",
     {"--cache-type-v", "--cache-type-v", "ctv",
      "llama.cpp -ctv; a quantized V cache needs Flash Attention (absent: f16; Ollama: as cache_type_k)"}},
    {"infer.kv_unified",
     {"--kv-unified", "--kv-unified", "kvu",
      "llama.cpp: one KV buffer shared by all sequences (absent: off; llama-server 2025-12 without --parallel: on)"}},
    {"infer.swa_full",
     {"--swa-full", "--swa-full", "swaf",
      "llama.cpp: full-size cache for sliding-window layers (absent: false; Ollama's runner: true)"}},
    {"infer.fit",
     {"--fit", "--fit", "fit",
      "llama.cpp 2025-12 --fit on|off: what you leave unset (context, -ngl) shrinks until each GPU keeps 1 GiB "
      "free (absent: on)"}},
    {"infer.kv_offload",
     {"KV offload", "--kv-offload", "kvo", "false = llama.cpp --no-kv-offload: the whole KV cache in host memory"}},
    {"infer.mmap", {"mmap", "--mmap", "mmap", "false = llama.cpp --no-mmap: CPU weights in allocated host memory"}},
    {"infer.split_mode", {"--split-mode", "--split-mode", "sm", "llama.cpp -sm: layers across GPUs, rows, or one GPU"}},
    {"infer.tensor_split",
     {"--tensor-split", "--tensor-split", "ts", "llama.cpp -ts 3,1: each GPU's share of the layers (absent: equal)"}},
    {"infer.engine_version",
     {"Engine release", "--engine-version", "ev",
      "the engine's release whose rules apply (absent: the newest modelled): vLLM 0.11.1 (default), SGLang "
      "0.5.4 (default); llama.cpp 2025-12 (default), 2025-10 or 2025-05, the source; Ollama its version "
      "(0.6.7), which sets num_ctx, OLLAMA_NUM_PARALLEL and flash attention defaults; also infer.engine "
      "NAME@RELEASE"}},
    {"infer.mem_fraction_static",
     {"mem_fraction_static", "--mem-fraction-static", "mfs",
      "SGLang's weights + KV pool share of the GPU; absent: SGLang's default by GPU"}},
    {"infer.chunked_prefill_size",
     {"chunked_prefill_size", "--chunked-prefill-size", "cps", "SGLang prefill chunk; absent: its default by GPU"}},
    {"infer.cuda_graph_max_bs",
     {"cuda_graph_max_bs", "--cuda-graph-max-bs", "cgbs", "SGLang's largest CUDA graph batch; absent: by GPU"}},
    {"parallel.gpus", {"Number of GPUs", "--gpus", "gpus", "dp x tp x pp x cp = gpus"}},
    {"parallel.dp", {"Data parallel", "--dp", "", "absent: gpus / (tp x pp x cp)"}},
    {"parallel.tp", {"Tensor parallel", "--tp", "tp", "tensor_parallel_size"}},
    {"parallel.pp", {"Pipeline parallel", "--pp", "pp", "pipeline_parallel_size"}},
    {"parallel.zero", {"ZeRO stage", "--zero", "zero", "DeepSpeed zero_optimization.stage"}},
    {"parallel.fsdp", {"FSDP", "--fsdp", "fsdp", "FSDP sharding_strategy; \"\" = off"}},
    {"parallel.offload_optimizer",
     {"Offload optimizer states", "--offload-optimizer", "offload", "ZeRO / FSDP optimizer offload to CPU"}},
    {"parallel.cp", {"Context parallel", "--cp", "cp", "context_parallel_size"}},
    {"parallel.offload_params",
     {"Offload parameters", "--offload-params", "offp", "ZeRO-3 / FSDP parameter offload to CPU"}},
    {"parallel.sequence_parallel",
     {"Sequence parallel", "--sequence-parallel", "sp", "Megatron SP: norms and dropouts split over tp"}},
    {"parallel.gpus_per_node",
     {"GPUs per node", "--gpus-per-node", "gpn", "nproc_per_node; HYBRID_SHARD's shard group"}},
    {"parallel.gradient_as_bucket_view", {"gradient_as_bucket_view", "", "", "DDP gradients as views of its buckets"}},
    {"parallel.overlap_comm", {"overlap_comm", "", "", "DeepSpeed overlap_comm; absent: on for ZeRO-3 only"}},
    {"parallel.ep", {"Expert parallel", "--ep", "ep", "expert_model_parallel_size (MoE)"}},
    {"parallel.vp", {"Virtual pipeline stages", "--vp", "vp", "virtual_pipeline_model_parallel_size (pp > 1)"}},
    {"parallel.sharding", {"sharding", "", "", "one field for zero / fsdp / distributed_optimizer"}},
    {"parallel.distributed_optimizer",
     {"Distributed optimizer (Megatron)", "--distributed-optimizer", "dopt", "use_distributed_optimizer"}},
    {"parallel.main_grads_fp32",
     {"fp32 main gradients", "--main-grads-fp32", "mgf32", "accumulate_allreduce_grads_in_fp32"}},
    {"parallel.fsdp_version", {"FSDP version", "--fsdp-version", "fsdpv", "1 FlatParameter, 2 fully_shard"}},
    {"parallel.fsdp_param_dtype",
     {"mixed_precision.param_dtype", "", "", "FSDP gathered copy; absent: the weights' dtype"}},
    {"parallel.fsdp_reduce_dtype",
     {"FSDP reduce dtype", "--fsdp-reduce-dtype", "rdt", "FSDP reduce-scatter dtype; absent: param dtype"}},
    {"parallel.fsdp_sync_module_states",
     {"FSDP1 sync_module_states", "--fsdp-sync-module-states", "fsync",
      "FSDP1 broadcasts each unit from rank 0 while it is built"}},
    {"parallel.fsdp_adapter_units",
     {"FSDP1 wraps each LoRA matrix", "", "", "false: whole decoder layers (LitGPT's Block policy)"}},
    {"parallel.nodes", {"Nodes", "--nodes", "nodes", "nnodes; absent: gpus / gpus_per_node, rounded up"}},
    {"parallel.nccl_channels", {"NCCL channels", "--nccl-channels", "nccl", "NCCL_MAX_NCHANNELS per communicator"}},
    {"parallel.nvls", {"NVLink SHARP", "--nvls", "nvls", "NCCL_NVLS_ENABLE buffers; absent: by GPU"}},
    {"parallel.stage3_param_persistence_threshold",
     {"stage3_param_persistence_threshold", "", "", "ZeRO-3: smaller tensors stay whole"}},
    {"parallel.stage3_prefetch_bucket_size", {"stage3_prefetch_bucket_size", "", "", "ZeRO-3 prefetch, elements"}},
    {"parallel.stage3_max_live_parameters",
     {"stage3_max_live_parameters", "", "", "ZeRO-3 gathered-parameter cap, elements"}},
    {"parallel.reduce_bucket_size", {"reduce_bucket_size", "", "", "DeepSpeed reduce bucket, elements"}},
    {"parallel.contiguous_gradients", {"contiguous_gradients", "", "", "DeepSpeed contiguous gradient buffer"}},
    {"deepspeed", {"DeepSpeed config", "--deepspeed-config", "ds", "a ds_config.json (the flag takes its file)"}},
    {"gpu.name", {"GPU", "--gpu", "gpu", "a catalog name or alias"}},
    {"gpu.memory_gib", {"GPU memory", "--gpu-mem", "gib", "any other card, GiB"}},
    {"overheads.cuda_context_bytes",
     {"CUDA context (measured)", "--cuda-context-gib", "cudactx", "absent: the 512 MiB prior"}},
    {"overheads.cublas_workspace_bytes",
     {"cuBLAS workspace", "--cublas-workspace-mib", "", "absent: by GPU generation"}},
    {"overheads.fragmentation", {"fragmentation", "--fragmentation", "", "extra reserved / allocated; absent: 0"}},
    {"overheads.misc_bytes", {"misc overhead", "--misc-overhead-gib", "", "a cushion added to every phase"}},
    {"overheads.nccl_bytes", {"NCCL memory per GPU (measured)", "", "ncclb", "absent: the modelled NCCL buffers"}},
    {"allocator.conf",
     {"PYTORCH_CUDA_ALLOC_CONF", "--alloc-conf", "aconf",
      "the environment variable's text, e.g. expandable_segments:True,max_split_size_mb:128"}},
    {"allocator.expandable_segments",
     {"expandable_segments", "--expandable-segments", "xseg",
      "PYTORCH_CUDA_ALLOC_CONF expandable_segments:True (wins over allocator.conf)"}},
    {"allocator.max_split_size_mb",
     {"max_split_size_mb", "--max-split-size-mb", "msplit",
      "blocks this large are never split; absent: unlimited (wins over allocator.conf)"}},
    {"calibration.attention",
     {"attention factor", "--attn-act-factor", "", "seed 000 factor on attention activations; absent: off"}},
    {"calibration.mlp", {"MLP factor", "--mlp-act-factor", "", "seed 000 factor on MLP activations; absent: off"}},
    {"calibration.logits",
     {"logits factor", "--logits-factor", "", "seed 000 factor on the loss buffers; absent: off"}},
    {"calibration.checkpointing",
     {"checkpointing factor", "--grad-ckpt-factor", "", "seed 000 factor on checkpointed inputs; absent: off"}},
    {"time.enabled",
     {"time and cost", "--time", "",
      "the result's time object (step time, tokens/s, cost); false leaves it out (the page's first estimate)"}},
    {"time.tokens",
     {"tokens to train on", "--run-tokens", "rtok", "the run's tokens; absent: samples x mean_len x epochs"}},
    {"time.samples", {"samples", "--samples", "samples", "the dataset's samples (with time.mean_len and time.epochs)"}},
    {"time.mean_len", {"mean sample length", "--mean-len", "mlen", "mean tokens per sample; absent: train.seq_len"}},
    {"time.epochs", {"epochs", "--epochs", "epochs", "passes over the samples"}},
    {"time.gpu_hour_usd",
     {"price per GPU-hour (USD)", "--gpu-hour-usd", "usd", "the card's price; absent: the default table's"}},
    {"time.prices",
     {"prices per GPU-hour", "", "prices", "{card name: USD per GPU-hour}: overrides of the default price table"}},
    {"hardware.link",
     {"GPU link", "--link", "link", "the link between a node's GPUs (NVLink generation, PCIe, xGMI); absent: by GPU"}},
    {"hardware.network_gbps",
     {"network per node (Gbit/s)", "--network-gbps", "net",
      "the node's backend network, summed over its NICs; absent: by GPU"}},
    {"hardware.host_memory_gbs",
     {"host memory bandwidth (GB/s)", "--host-memory-gbs", "hostbw",
      "CPU RAM bandwidth (CPU offload, llama.cpp layers on the CPU); absent: dual-channel DDR5-5600"}},
    {"hardware.matmul_tflops",
     {"matmul TFLOPS", "--matmul-tflops", "tflops",
      "the card's measured 16-bit matmul rate; absent: the catalog's (needed with gpu.memory_gib)"}},
    {"hardware.memory_gbs",
     {"memory bandwidth (GB/s)", "--memory-gbs", "membw",
      "the card's memory bandwidth; absent: the catalog's (needed with gpu.memory_gib)"}},
};

#undef VRAM_FSDP_STRATEGIES

std::vector<FieldSpec> build() {
  std::vector<FieldSpec> out;
  out.reserve(std::size(kRows));
  for (const Row& r : kRows) {
    FieldSpec f;
    f.path = r.path;
    f.type = r.type;
    f.default_value = r.def.to_json();
    if (r.optimizers) {
      f.values = optimizer_names();
      f.aliases = optimizer_aliases();
    } else {
      f.values = detail::split_bars(r.values);
      for (const std::string& pair : detail::split_bars(r.aliases)) {
        const size_t eq = pair.find('=');
        f.aliases.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
      }
    }
    if (r.limited) {
      f.min = r.lo;
      f.max = r.hi;
    }
    f.cli_unit = r.cli_unit;
    f.internal = r.internal;
    out.push_back(std::move(f));
  }
  return out;
}

// Those rows with their faces (kFaces, in the same order: a mismatch is a
// bug in this file, caught by fields_test).
std::vector<FieldSpec> described() {
  std::vector<FieldSpec> out = known_fields();
  if (std::size(kFaces) != out.size()) std::abort();
  for (size_t i = 0; i < out.size(); ++i) {
    const Described& d = kFaces[i];
    if (out[i].path != d.path) std::abort();
    out[i].label = d.face.label;
    out[i].cli = d.face.cli;
    out[i].url = d.face.url;
    out[i].doc = d.face.doc;
  }
  return out;
}

}  // namespace

// The rows the request parser reads (find_field, field, the known paths),
// without label, flag, URL key and doc.
const std::vector<FieldSpec>& known_fields() {
  static const std::vector<FieldSpec> kFields = build();
  return kFields;
}

const std::vector<FieldSpec>& request_fields() {
  static const std::vector<FieldSpec> kFields = described();
  return kFields;
}

const FieldSpec* find_field(std::string_view path) {
  for (const auto& f : known_fields()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

const FieldSpec& field(std::string_view path) {
  const FieldSpec* f = find_field(path);
  if (f == nullptr) std::abort();  // undeclared path: a bug in core, caught by fields_test
  return *f;
}

json fields_table() {
  json out = json::array();
  for (const auto& f : request_fields()) {
    json j = {{"path", f.path}, {"type", to_string(f.type)}, {"default", f.default_value}};
    if (f.type == FieldType::kEnum) {
      j["values"] = f.values;
      json aliases = json::object();
      for (const auto& [alias, value] : f.aliases) aliases[alias] = value;
      j["aliases"] = aliases;
    }
    if (f.min) j["min"] = f.type == FieldType::kInt ? json(static_cast<int64_t>(*f.min)) : json(*f.min);
    if (f.max) j["max"] = f.type == FieldType::kInt ? json(static_cast<int64_t>(*f.max)) : json(*f.max);
    j["label"] = f.label;
    j["cli"] = f.cli.empty() ? json(nullptr) : json(f.cli);
    if (f.cli_unit > 0) j["cli_unit"] = static_cast<int64_t>(f.cli_unit);
    j["url"] = f.url.empty() ? json(nullptr) : json(f.url);
    j["doc"] = f.doc;
    j["internal"] = f.internal;
    if (f.path == "train.framework") {
      // Each framework's label and releases (version, date), for the page's
      // selects: the tables themselves are the full module's (vram/releases.h).
      json labels = json::object();
      for (const Framework& fw : frameworks()) labels[fw.name] = fw.label;
      j["labels"] = std::move(labels);
      j["releases"] = framework_releases(false);
    }
    out.push_back(std::move(j));
  }
  return {{"schema", kSchema}, {"version", VRAM_VERSION}, {"fields", out}};
}

}  // namespace vram

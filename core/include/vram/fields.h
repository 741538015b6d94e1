// One declaration per request field (docs/schema.md "Request"): its dotted
// path, type, default, allowed values and limits, its label in the user's
// vocabulary, its vram-probe flag and the page's URL key (issue 11 item 3).
//
// The defaults and limits below are written once: the Request structs
// (request.h) start from them, parse_request (request.cpp) falls back to them
// and checks them, and the table (fields.cpp) publishes them to the CLI
// (`vram-probe fields --json`) and the page (fields_json(), WASM `fields()`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vram/json_reader.h"

namespace vram {

// Defaults of the request fields, each with the source it follows.
namespace defaults {

inline constexpr const char* kTask = "train";
inline constexpr const char* kMethod = "full";
// HF Trainer / TRL / Accelerate + PEFT + bitsandbytes: the defaults of the
// other fields are theirs (vram/frameworks.h).
inline constexpr const char* kFramework = "hf";
// The smallest job: one sequence per GPU, no accumulation (TrainingArguments'
// per_device_train_batch_size is 8, a demo value; the planner starts at the floor
// and reports the largest micro-batch that fits).
inline constexpr int64_t kMicroBatch = 1;
inline constexpr int64_t kGradAccum = 1;  // TrainingArguments gradient_accumulation_steps = 1
// PyTorch >= 2.0: zero_grad() sets gradients to None (set_to_none=True became
// the default of torch/optim/optimizer.py Optimizer.zero_grad and
// torch/nn/modules/module.py Module.zero_grad in pytorch PR #92731), so they
// are freed after each step. Before 2.0 the default was False: the HF
// Trainer's model.zero_grad() after every optimizer step (trainer.py, v4.x
// train loop) zeroed them in place and they stayed allocated.
inline constexpr bool kZeroGradSetToNone = true;
// PyTorch >= 1.11: softmax and log_softmax keep only their output for backward
// (tools/autograd/derivatives.yaml: _softmax_backward_data(grad, result, dim,
// self.scalar_type()); pytorch issue #64000, PR #65242, relanded as #66018).
// PyTorch <= 1.10 also kept the input (`self`, the formula's last argument).
inline constexpr bool kSoftmaxSavesInput = false;
// A loop that returns or drops its step's loss and logits (transformers
// Trainer training_step returns loss.detach()) frees the autograd graph after
// backward. LitGPT's fit() keeps `logits = model(...)` (litgpt/finetune/lora.py
// at 43c44323) until the next step's model() returns, and with it the graph.
inline constexpr bool kKeepsPreviousLogits = false;
// transformers >= 4.49 (loss/loss_utils.py ForCausalLMLoss at 0114da07): the
// causal-LM loss pads the labels by one and reads the logits as they are
// (logits.view(-1, vocab)). Before (huggingface/transformers PR #35646,
// opened 2025-01-13, after v4.48.0; v4.49.0 the first release after it), it
// shifted the logits: shift_logits = logits[..., :-1, :].contiguous(), one
// more fp32 N x V copy alive next to the upcast logits until log_softmax has
// run — in ForCausalLMLoss from v4.46, in each model's forward before.
inline constexpr bool kLossShiftCopy = false;
// transformers <= 4.45: each causal LM's forward upcast its logits itself and
// returned them in fp32 (modeling_llama.py at v4.45: logits =
// self.lm_head(...).float(), "TODO: remove the float() operation in v4.46"),
// so the model-dtype logits were freed before the loss; from v4.46 the model
// returns them in its own dtype and ForCausalLMLoss upcasts a copy.
inline constexpr bool kLogitsUpcastInModel = false;
// The same loop keeps this step's logits through its own backward: torchtune
// deletes them first (recipes/lora_finetune_single_device.py "del logits"),
// the HF Trainer's compute_loss returns only the loss; LitGPT's fit() holds
// `logits` while fabric.backward(loss) runs.
inline constexpr bool kKeepsLogits = false;
// The wrapper around the model converts its floating outputs to fp32 before
// the loss sees them: Lightning Fabric's _FabricModule.forward ends with
// precision.convert_output(output), and HalfPrecision ("bf16-true",
// "16-true") and BitsandbytesPrecision convert every floating tensor of the
// output to torch.get_default_dtype(), fp32 outside the forward context
// (lightning src/lightning/fabric/plugins/precision/half.py and wrappers.py at
// 71aed751, the commit lit-gpt 8641822 pins; since 614dcdf5, 2023-04-27).
inline constexpr bool kOutputsFp32 = false;
// Attention that takes q, k and v as views of one fused projection output:
// when the kernel's saved v is such a view, the whole fused output (q, k and
// v widths) stays allocated until backward, not v alone. LitGPT's
// CausalSelfAttention.forward (litgpt/model.py at 43c44323: qkv.view().permute()
// .split(); for MHA the k/v expand is a no-op and reshape a view, while rope's
// torch.cat gives q and k their own storage) does so for multi-head attention;
// with grouped or multi-query attention reshape copies the expanded k and v.
inline constexpr bool kKeepsFusedQkv = false;
inline constexpr bool kReturnsKvCache = false;
// The contract's example sequence length (docs/schema.md) and Llama-2's context.
inline constexpr int64_t kSeqLen = 2048;
// Pure bf16: the model loaded with torch_dtype=bfloat16, as most fine-tuning
// recipes do; DeepSpeed / FSDP / Megatron layouts switch to mixed_bf16 (request.cpp).
inline constexpr const char* kPrecision = "bf16";
// HF Trainer's default optim in recent transformers (adamw_torch_fused on CUDA).
inline constexpr const char* kOptimizer = "adamw_torch_fused";
inline constexpr const char* kCheckpointing = "none";  // TrainingArguments gradient_checkpointing = False
// transformers picks SDPA when torch has it (attn_implementation=None).
inline constexpr const char* kAttention = "sdpa";
// Whose layers run the model: "standard" = each op's own autograd (HF
// transformers modules + PEFT LoRA layers); "unsloth" = Unsloth's patched
// Llama-family layers (saved_activations.cpp cites what they keep).
inline constexpr const char* kKernels = "standard";
// How a batch's samples become one tensor: "max_length" (padded to seq_len)
// and "packed" (concatenated to seq_len) give every step the same shape;
// "longest" (padded to the longest sample of the batch: transformers
// DataCollatorWithPadding padding=True, torchtune padded_collate) gives
// every step its own length. The default keeps one shape per step, the
// figure the estimate gave before the field existed; frameworks that pad
// to the longest set it (frameworks.cpp).
inline constexpr const char* kPadding = "max_length";
// torch.compile off: transformers training_args.py TrainingArguments.torch_compile
// = False; torchtune's recipes compile: False
// (recipes/configs/llama3_1/8B_*_single_device.yaml at bd2a0fc7); LitGPT's
// finetune scripts do not compile.
// torchtune modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss
// (num_output_chunks: int = 8, v0.6.1), whose compute_cross_entropy upcasts
// each chunk: F.cross_entropy(logits.float(), ...).
inline constexpr int64_t kLossChunks = 8;
inline constexpr bool kLossUpcast = true;
inline constexpr bool kCompile = false;

// peft LoraConfig: r = 8, lora_alpha = 8, lora_dropout = 0.0; autocast_adapter_dtype=True
// upcasts adapters to fp32; use_dora = False. An absent alpha follows r (alpha = r),
// which equals PEFT's default at the default r.
inline constexpr int64_t kLoraRank = 8;
inline constexpr double kLoraAlpha = 8;
inline constexpr double kLoraDropout = 0.0;
inline constexpr bool kLoraAdapterFp32 = true;
inline constexpr bool kLoraUseDora = false;
// PEFT wraps q_proj, k_proj and v_proj separately, each with its own dropout
// and lora_A (peft tuners/lora/layer.py Linear: lora_dropout is a ModuleDict
// per wrapped layer); LitGPT's attention is one fused Linear (litgpt/model.py
// CausalSelfAttention.attn) and its LoRAQKVLinear applies one dropout and one
// lora_A to the shared input (litgpt/lora.py LoRAQKVLinear.forward:
// F.linear(self.lora_dropout(x), self.lora_A)).
inline constexpr bool kLoraFusedQkv = false;

// QLoRA: bnb_4bit_use_double_quant (the QLoRA paper's recipe), bitsandbytes
// quantize_4bit's default blocksize 64, peft prepare_model_for_kbit_training
// casting non-4-bit parameters to fp32.
inline constexpr bool kDoubleQuant = true;
inline constexpr int64_t kQuantBlocksize = 64;
inline constexpr bool kPrepareKbit = true;
// bitsandbytes >= 0.43.2 (PR #1270, autograd/_functions.py MatMul4Bit.forward:
// ctx.tensors = (None, B)) no longer keeps a 4-bit Linear's input for
// backward; 0.41.x-0.43.1 kept it (ctx.tensors = (A, B)). Current releases are
// the default.
inline constexpr bool kQuantSavesInput = false;
// Who quantises the 4-bit base: bitsandbytes (transformers / PEFT /
// Lightning: Params4bit._quantize -> the quantize_4bit CUDA kernel) or
// torchao's NF4Tensor (torchtune modules/peft/lora.py LoRALinear
// quantize_base -> to_nf4), whose quantize_tensor_nearest builds a
// (values x 16) difference tensor: over chunks of 1024^2 values since
// pytorch/ao PR #196 (2024-05-01, "Perform quantization in Chunks", torchao
// 0.2), over the whole weight before it (torchao_unchunked).
inline constexpr const char* kQuantizer = "bitsandbytes";

// Inference: one sequence, a 4k context, bf16 weights and KV cache, transformers generate.
inline constexpr int64_t kInferBatch = 1;
inline constexpr int64_t kContextLen = 4096;
inline constexpr const char* kWeightsDtype = "bf16";
inline constexpr const char* kKvDtype = "bf16";
inline constexpr const char* kEngine = "hf";
// vLLM EngineArgs defaults (vllm/engine/arg_utils.py). max_num_seqs and
// max_num_batched_tokens have no fixed default: vLLM sets them by GPU and
// entrypoint (infer/vllm.cpp, EngineArgs._set_default_args).
inline constexpr double kGpuMemoryUtilization = 0.9;
inline constexpr int64_t kBlockSize = 16;
inline constexpr bool kEnforceEager = false;  // CUDA graphs on
// `vllm serve` (the OpenAI API server); "offline" is the LLM class
// (vllm/usage/usage_lib.py UsageContext OPENAI_API_SERVER / LLM_CLASS).
inline constexpr const char* kEntrypoint = "server";
// llama.cpp (ggml-org/llama.cpp ec98e2002 common/common.h common_params and
// src/llama-context.cpp llama_context_default_params): n_ubatch 512, f16 K
// and V caches, one KV stream per sequence, KV offloaded with its layer,
// the weights mmap'd, layers split across GPUs.
inline constexpr int64_t kNUbatch = 512;
inline constexpr const char* kCacheType = "f16";
inline constexpr bool kKvOffload = true;
inline constexpr bool kMmap = true;
inline constexpr const char* kSplitMode = "layer";

// One GPU, no sharding; torchrun --nproc_per_node 8 (an HGX node) for FSDP
// HYBRID_SHARD's shard group.
inline constexpr int64_t kGpus = 1;
inline constexpr int64_t kGpusPerNode = 8;
// FSDP1 (FullyShardedDataParallel) unless fully_shard is asked for.
inline constexpr int64_t kFsdpVersion = 1;
// FSDP1 LoRA: each adapter matrix its own unit, as PEFT's
// fsdp_auto_wrap_policy (utils/other.py) wraps it, which the HF Trainer
// applies to a LoRA PeftModel under FSDP (transformers trainer.py
// Trainer._fsdp_qlora_plugin_updates); false: whole decoder layers
// (parallel_buffers.h fsdp1_adapter_pieces; release_table.h rules).
inline constexpr bool kFsdpAdapterUnits = true;
// Megatron-LM keeps fp32 main grads (accumulate_allreduce_grads_in_fp32) in bf16 runs.
inline constexpr bool kMainGradsFp32 = true;
// NCCL: 32 channels per communicator on 8 x H100 (NVIDIA/nccl#1685; research/memory-internals.md §2.4).
inline constexpr int64_t kNcclChannels = 32;
// torch DistributedDataParallel(gradient_as_bucket_view=False) and
// deepspeed/runtime/zero/config.py defaults.
inline constexpr bool kGradientAsBucketView = false;
inline constexpr int64_t kReduceBucketSize = 500000000;  // elements
inline constexpr bool kContiguousGradients = true;
inline constexpr int64_t kStage3PrefetchBucketSize = 50000000;
inline constexpr int64_t kStage3MaxLiveParameters = 1000000000;
inline constexpr int64_t kStage3ParamPersistenceThreshold = 100000;  // smaller params stay whole on every rank

inline constexpr int64_t kMiscBytes = 0;  // the user's cushion, off

// The time model (issue 31): a run of one epoch over the samples when the
// request gives samples (time.samples), its tokens when it gives tokens.
inline constexpr double kEpochs = 1.0;

}  // namespace defaults

// Limits parse_request enforces: they reject mistakes, never real runs.
namespace limits {

// 2^24 tokens of context and 2^16 sequences per micro-batch cover every real
// run. Their products with the model's sizes can still exceed what a byte
// figure may hold (kMaxBytes): the memory terms check every product
// (core/src/memory/bytes.h) and answer out_of_range instead.
inline constexpr int64_t kMaxSeq = int64_t{1} << 24;
inline constexpr int64_t kMaxBatch = int64_t{1} << 16;
inline constexpr int64_t kMaxGradAccum = int64_t{1} << 20;
inline constexpr int64_t kMaxLoraRank = int64_t{1} << 16;
inline constexpr int64_t kMaxGpus = int64_t{1} << 20;
inline constexpr int64_t kMaxSmallDegree = int64_t{1} << 10;  // tp, vp, GPUs per node
inline constexpr int64_t kMaxDegree = int64_t{1} << 12;       // pp, cp, ep
inline constexpr int64_t kMaxNodes = int64_t{1} << 16;
inline constexpr int64_t kMaxNcclChannels = 64;              // NCCL MAXCHANNELS (src/include/device.h)
inline constexpr int64_t kMaxLossChunks = int64_t{1} << 16;  // train.loss_chunks: at most a chunk per token
inline constexpr int64_t kMaxElems = int64_t{1} << 40;       // DeepSpeed bucket and threshold sizes, elements
// Up to 64 GiB for any single overhead: larger is a unit mistake.
inline constexpr int64_t kMaxOverhead = int64_t{64} << 30;
// max_split_size_mb: CUDAAllocatorConfig.cpp requires more than 20 (MiB);
// 2^30 MiB (1 PiB) is past any card.
inline constexpr int64_t kMaxSplitSizeMb = int64_t{1} << 30;
// The largest byte figure an estimate reports: 2^53 - 1 (8 PiB), JavaScript's
// Number.MAX_SAFE_INTEGER (ECMA-262 §21.1.2.6), the largest integer the page
// and every JSON reader that parses numbers as doubles hold exactly. A figure
// above it is an out_of_range error naming the input that drove it.
inline constexpr int64_t kMaxBytes = (int64_t{1} << 53) - 1;
// Every JSON input (request, model config, DeepSpeed config, probe report),
// through the CLI and the WASM module: at most 16 MiB of text, checked before
// it is read whole (the probe caps its own reports at 16 MiB; real
// config.json files are a few KiB), and at most 64 levels of nesting,
// checked while parsing, so no input can exhaust memory or the WebAssembly
// stack (issue 17; HF configs nest 3 levels).
inline constexpr int64_t kMaxInputBytes = int64_t{16} << 20;
inline constexpr int kMaxJsonDepth = 64;
// Time model inputs (time.*, hardware.*): 10^15 tokens is ~70x the largest
// published pre-training run (Llama 4 Behemoth-class, ~4 x 10^13); prices up
// to $10,000 per GPU-hour and rates up to 10^6 (GB/s, Gbit/s, TFLOPS) catch
// unit mistakes, not real hardware.
inline constexpr int64_t kMaxRunTokens = int64_t{1} << 50;
inline constexpr double kMaxPrice = 1e4;
inline constexpr double kMaxRate = 1e6;

}  // namespace limits

enum class FieldType { kInt, kNumber, kBool, kString, kEnum, kList, kObject };

const char* to_string(FieldType t);

struct FieldSpec {
  std::string path;  // dotted request path: "train.lora.rank"
  FieldType type;
  // What parse_request applies when the field is absent; null where absence
  // means something else (the doc says what: "= context_len", "by GPU").
  json default_value;
  std::vector<std::string> values;                           // enum: canonical values
  std::vector<std::pair<std::string, std::string>> aliases;  // enum: accepted alias -> canonical value
  std::optional<double> min, max;                            // int / number: inclusive limits
  std::string label;                                         // the user's words (HF Trainer, PEFT, DeepSpeed)
  std::string cli;                                           // vram-probe estimate flag, "" for none
  double cli_unit = 0;  // bytes per unit of the flag's value (--cuda-context-gib), 0 = as is
  std::string url;      // the page's URL key, "" for none
  std::string doc;      // one line
  // Not a setting of the user's job but a consequence of a framework release
  // or a library version (vram/releases.h): the rules set it, a user may see
  // and override it, and no validation request sets it (issue 29).
  bool internal = false;

  // The canonical value of an accepted enum name, or nullopt.
  std::optional<std::string> canonical(const std::string& name) const;
  // Every accepted name (values and aliases), sorted.
  std::vector<std::string> accepted() const;
};

// Every request field, in docs/schema.md order.
const std::vector<FieldSpec>& request_fields();

// The same fields without label, cli, url and doc (empty): what the request
// parser reads, and all find_field and field return. Core itself calls only
// these, so a build that never writes the fields table or reads CLI flags
// (the first-visit WASM module) carries none of that text.
const std::vector<FieldSpec>& known_fields();

// The declaration of `path` (without its face: known_fields()), or nullptr.
const FieldSpec* find_field(std::string_view path);

// The declaration of `path`. Core calls it with declared paths only (the
// tests check each one); an undeclared path is a programming error and aborts.
const FieldSpec& field(std::string_view path);

// {"schema", "version", "fields": [{path, type, default, values?, aliases?, min?,
// max?, label, cli, cli_unit?, url, doc}, ...]}.
json fields_table();

}  // namespace vram

// The estimate request (DESIGN.md §2), parsed and validated from JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vram/json_reader.h"
#include "vram/model.h"
#include "vram/status.h"

namespace vram {

enum class Task { kTrain, kInfer };
enum class Method { kFull, kLora, kQlora, kFreeze };

// Named precision recipes (DESIGN.md §3). Research notes §3.4 give the bytes.
enum class Precision {
  kFp32,       // fp32 weights, no autocast
  kBf16,       // pure bf16: weights, grads and torch optimizer states in bf16
  kFp16,       // pure fp16
  kAmpBf16,    // fp32 weights + torch.autocast(bf16) (HF Trainer bf16=True on an fp32-loaded model)
  kAmpFp16,    // fp32 weights + autocast(fp16) + GradScaler
  kMixedBf16,  // bf16 weights and grads + fp32 master weights and states (DeepSpeed/Megatron/FSDP style)
};

enum class AttentionImpl { kEager, kSdpa, kFlash2 };
enum class Checkpointing { kNone, kFull, kSelective };

struct LoraOptions {
  int64_t rank = 8;                  // peft LoraConfig r default 8
  double alpha = 8;                  // peft LoraConfig lora_alpha default 8
  double dropout = 0.0;              // peft LoraConfig lora_dropout default 0.0
  std::vector<std::string> targets;  // leaf module names; empty = family default
  bool all_linear = false;           // "all-linear": every nn.Linear except the output layer
  bool adapter_fp32 = true;          // peft autocast_adapter_dtype=True upcasts adapters to fp32
  bool use_dora = false;             // DoRA adds a magnitude vector of out_features per target
};

struct QuantOptions {
  bool double_quant = true;  // bnb_4bit_use_double_quant (QLoRA paper recipe)
  int64_t blocksize = 64;    // bitsandbytes quantize_4bit default blocksize
  bool prepare_kbit = true;  // peft prepare_model_for_kbit_training casts non-4bit params to fp32
};

struct TrainOptions {
  Method method = Method::kFull;
  int64_t micro_batch = 1;
  int64_t seq_len = 2048;
  int64_t grad_accum = 1;
  Precision precision = Precision::kBf16;
  bool precision_given = false;
  std::string optimizer = "adamw_torch_fused";
  bool optimizer_given = false;
  Checkpointing checkpointing = Checkpointing::kNone;
  AttentionImpl attention = AttentionImpl::kSdpa;
  bool attention_given = false;
  bool fused_loss = false;       // Liger / cut-cross-entropy fused linear cross-entropy
  bool fused_norm = false;       // Liger / apex fused RMSNorm kernels
  bool sdpa_gqa_native = false;  // SDPA enable_gqa path (no padding mask, torch >= 2.5)
  bool optimizer_in_backward = false;
  bool activation_offload = false;  // saved activations kept in host memory
  LoraOptions lora;
  QuantOptions quant;
  std::vector<std::string> trainable_modules;  // method freeze: leaf names or "layers.N"
  double dropout = -1;                         // override of the model's dropout; -1 = model default
  int64_t images_per_sample = 0;               // VLMs
};

struct InferOptions {
  int64_t batch = 1;           // concurrent sequences
  int64_t context_len = 4096;  // tokens per sequence (prompt + generated)
  int64_t prompt_len = 0;      // prefill length; 0 = context_len
  std::string weights_dtype = "bf16";
  std::string kv_dtype = "bf16";
  std::string engine = "hf";  // "hf" (transformers generate) | "vllm" (paged)
  // vLLM EngineArgs defaults (vllm/engine/arg_utils.py).
  double gpu_memory_utilization = 0.9;
  int64_t block_size = 16;
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;  // chunked prefill budget per step
  bool cuda_graphs = true;                // enforce_eager = false
};

struct ParallelOptions {
  int64_t gpus = 1;
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t cp = 1;                  // context parallel: the sequence split across ranks
  int64_t ep = 1;                  // expert parallel: routed experts split across ranks (within dp)
  int64_t vp = 1;                  // virtual pipeline stages per rank (Megatron interleaved 1F1B)
  int64_t zero = 0;                // DeepSpeed ZeRO stage
  std::string fsdp;                // "", "full_shard", "shard_grad_op", "hybrid_shard", "no_shard"
  bool offload_optimizer = false;  // ZeRO / FSDP optimizer (and fp32 master) offload to CPU
  bool offload_params = false;     // ZeRO-3 / FSDP parameter offload to CPU
  bool sequence_parallel = false;  // Megatron SP: norms and dropouts split across tp ranks
  int64_t gpus_per_node = 8;       // FSDP HYBRID_SHARD shards within a node
  int64_t nodes = 1;               // gpus / gpus_per_node, rounded up
  // Megatron-LM: --use-distributed-optimizer shards the fp32 main params and
  // optimizer states over data parallel; bf16 runs keep fp32 main grads
  // (accumulate_allreduce_grads_in_fp32) unless main_grads_fp32 is false.
  bool distributed_optimizer = false;
  bool main_grads_fp32 = true;
  // FSDP: 1 = FlatParameter units (FullyShardedDataParallel), 2 = per-parameter
  // DTensor shards (fully_shard). MixedPrecision reduce dtype: 0 = param dtype.
  int64_t fsdp_version = 1;
  int64_t fsdp_reduce_bytes = 0;
  int64_t fsdp_param_bytes = 0;  // MixedPrecision param_dtype (the gathered copy); 0 = the weights' dtype
  // NCCL (research/memory-internals.md §2.4): channels per ring/tree
  // connection set, and NVLink SHARP buffers on NVSwitch systems (unset = by GPU).
  int64_t nccl_channels = 32;
  std::optional<bool> nvls;
  // Buffers (torch DistributedDataParallel and deepspeed/runtime/zero/config.py defaults).
  bool gradient_as_bucket_view = false;
  int64_t reduce_bucket_size = 500000000;  // elements
  bool overlap_comm = false;               // DeepSpeed turns it on for stage 3
  bool overlap_comm_given = false;
  bool contiguous_gradients = true;
  int64_t stage3_prefetch_bucket_size = 50000000;
  int64_t stage3_max_live_parameters = 1000000000;
  int64_t stage3_param_persistence_threshold = 100000;  // smaller params stay whole on every rank
};

// Everything outside the tensors, each overridable (issue 4). Defaults and
// their sources live in overheads.cpp.
struct OverheadOptions {
  std::optional<int64_t> cuda_context_bytes;
  std::optional<int64_t> cublas_workspace_bytes;
  std::optional<int64_t> nccl_bytes;    // per GPU, replaces the modelled NCCL buffers (multi-GPU)
  std::optional<double> fragmentation;  // extra reserved/allocated fraction
  int64_t misc_bytes = 0;               // user cushion, added to every phase
};

// The seeds' tunable factors (seed 000 "Calibration Factors"), off by default:
// each multiplies one modelled term when given.
struct Calibration {
  std::optional<double> attention;
  std::optional<double> mlp;
  std::optional<double> logits;
  std::optional<double> checkpointing;
};

struct GpuChoice {
  std::string name;  // catalog name; empty with memory_gib
  std::optional<double> memory_gib;
};

struct Request {
  ModelSpec model;
  Task task = Task::kTrain;
  TrainOptions train;
  InferOptions infer;
  ParallelOptions parallel;
  OverheadOptions overheads;
  Calibration calibration;
  GpuChoice gpu;
  std::vector<std::string> assumptions;  // defaults the parser chose, shown to the user
};

Result<Request> parse_request(const json& request);

// The error parse_request would report for this request's parallel layout,
// if any (for callers that build layouts themselves, like the planner).
std::optional<Error> layout_error(const Request& req);

const char* to_string(Precision p);
const char* to_string(Method m);
const char* to_string(AttentionImpl a);
const char* to_string(Checkpointing c);

}  // namespace vram

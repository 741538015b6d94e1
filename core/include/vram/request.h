// The estimate request (DESIGN.md §2), parsed and validated from JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vram/fields.h"
#include "vram/frameworks.h"
#include "vram/gpus.h"
#include "vram/json_reader.h"
#include "vram/model.h"
#include "vram/releases.h"
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

enum class AttentionImpl { kEager, kSdpa, kFlash2, kXformers };
// Whose layer implementations the training step runs (train.kernels).
enum class Kernels { kStandard, kUnsloth };
// kSelective: Megatron --recompute-granularity selective (only the attention
// score path is recomputed); kSelectiveOp: torchtitan's op-level selective
// checkpointing (memory/recipe.h op_sac_layer).
enum class Checkpointing { kNone, kFull, kSelective, kSelectiveOp };
// train.padding (vram/fields.h kPadding): kLongest varies the batch length
// from step to step.
enum class Padding { kMaxLength, kPacked, kLongest };
// train.loss: how the logits and the cross-entropy are computed
// (memory/loss.cpp). kChunked: the output projection in chunks of the
// sequence, one cross-entropy per chunk (torchtune CEWithChunkedOutputLoss,
// LitGPT chunked_cross_entropy); kFused: a fused linear cross-entropy that
// never holds the logits (Liger; train.fused_loss).
enum class LossKind { kStandard, kChunked, kFused };

struct LoraOptions {
  // Defaults and their sources: vram/fields.h.
  int64_t rank = defaults::kLoraRank;
  double alpha = defaults::kLoraAlpha;
  double dropout = defaults::kLoraDropout;
  std::vector<std::string> targets;                // leaf module names; empty = family default
  bool all_linear = false;                         // "all-linear": every nn.Linear except the output layer
  bool adapter_fp32 = defaults::kLoraAdapterFp32;  // adapters upcast to fp32
  bool use_dora = defaults::kLoraUseDora;          // DoRA adds a magnitude vector of out_features per target
  bool fused_qkv = defaults::kLoraFusedQkv;        // one dropout + lora_A for q, k and v (LitGPT LoRAQKVLinear)
};

struct QuantOptions {
  bool double_quant = defaults::kDoubleQuant;  // bnb_4bit_use_double_quant
  int64_t blocksize = defaults::kQuantBlocksize;
  bool prepare_kbit = defaults::kPrepareKbit;     // peft prepare_model_for_kbit_training casts non-4bit params to fp32
  bool saves_input = defaults::kQuantSavesInput;  // bitsandbytes < 0.43.2: MatMul4Bit keeps each input for backward
  bool torchao = false;                           // quantizer torchao (NF4Tensor) instead of bitsandbytes
  bool torchao_unchunked = false;                 // torchao before 0.2: to_nf4 over the whole weight at once
  bool lightning = false;  // Lightning BitsandbytesPrecision: lm_head quantised too, from an fp16 copy
};

struct TrainOptions {
  Method method = Method::kFull;
  int64_t micro_batch = defaults::kMicroBatch;
  int64_t seq_len = defaults::kSeqLen;
  int64_t grad_accum = defaults::kGradAccum;
  bool zero_grad_set_to_none = defaults::kZeroGradSetToNone;     // false: gradients stay allocated between steps
  bool softmax_saves_input = defaults::kSoftmaxSavesInput;       // torch <= 1.10: softmax also keeps its input
  bool keeps_previous_logits = defaults::kKeepsPreviousLogits;   // the loop holds last step's logits (and graph)
  bool loss_shift_copy = defaults::kLossShiftCopy;               // transformers < 4.49: the loss shifts a logits copy
  bool logits_upcast_in_model = defaults::kLogitsUpcastInModel;  // transformers < 4.46: the model returns fp32 logits
  bool keeps_logits = defaults::kKeepsLogits;         // the loop holds this step's logits through its backward
  bool outputs_fp32 = defaults::kOutputsFp32;         // the model wrapper returns fp32 copies of its outputs
  bool keeps_fused_qkv = defaults::kKeepsFusedQkv;    // MHA: SDPA's saved v is a view of the fused q/k/v output
  bool returns_kv_cache = defaults::kReturnsKvCache;  // model() returns K/V (use_cache) in training, held to the loss
  Precision precision = Precision::kBf16;
  bool precision_given = false;
  std::string optimizer = defaults::kOptimizer;
  bool optimizer_given = false;
  Checkpointing checkpointing = Checkpointing::kNone;
  AttentionImpl attention = AttentionImpl::kSdpa;
  bool attention_given = false;
  Kernels kernels = Kernels::kStandard;   // Unsloth's fused LoRA / norm / loss kernels
  Padding padding = Padding::kMaxLength;  // how batches are shaped (seq_len is the longest)
  bool padding_given = false;
  bool fused_loss = false;  // Liger / cut-cross-entropy fused linear cross-entropy (loss == kFused)
  LossKind loss = LossKind::kStandard;
  int64_t loss_chunks = defaults::kLossChunks;  // kChunked: chunks of the sequence (torchtune num_output_chunks)
  int64_t loss_chunk_size = 0;                  // kChunked: tokens per chunk instead (LitGPT lm_head_chunk_size)
  bool loss_upcast = defaults::kLossUpcast;     // kChunked: each chunk's logits cast to fp32 before the loss
  bool fused_norm = false;                      // Liger / apex fused RMSNorm kernels
  bool sdpa_gqa_native = false;                 // SDPA enable_gqa path (no padding mask, torch >= 2.5)
  bool optimizer_in_backward = false;
  bool activation_offload = false;    // saved activations kept in host memory
  bool compile = defaults::kCompile;  // torch.compile: accepted, not modelled (a warning says so)
  LoraOptions lora;
  QuantOptions quant;
  std::vector<std::string> trainable_modules;  // method freeze: leaf names or "layers.N"
  double dropout = -1;                         // override of the model's dropout; -1 = model default
  int64_t images_per_sample = 0;               // VLMs

  // Gradients outlive one step: carried across accumulation micro-steps, or
  // zeroed in place by zero_grad(set_to_none=False) (vram/fields.h
  // kZeroGradSetToNone). A step in backward frees each one regardless.
  bool gradients_persist() const { return grad_accum > 1 || (!zero_grad_set_to_none && !optimizer_in_backward); }
};

// llama.cpp engines (infer.engine llama_cpp, ollama, lmstudio): the
// settings as the request gives them; what it leaves out takes the engine's
// default for its release at estimate time (core/src/infer/llama_cpp_options.cpp),
// each listed in the result's assumptions.
struct LlamaCppOptions {
  std::optional<int64_t> ctx_size;      // --ctx-size: KV cells for every sequence (0: the model's context_length)
  std::optional<int64_t> n_gpu_layers;  // --n-gpu-layers (-1: the release's default)
  std::optional<int64_t> n_batch;       // --batch-size
  int64_t n_ubatch = defaults::kNUbatch;
  std::optional<std::string> flash_attn;  // on | off | auto
  std::string cache_type_k = defaults::kCacheType;
  std::optional<std::string> cache_type_v;  // absent: f16 (Ollama: OLLAMA_KV_CACHE_TYPE, as K)
  std::optional<bool> kv_unified;           // absent: false (llama-server 2025-12 with --parallel left out: true)
  std::optional<bool> swa_full;
  std::optional<bool> fit;  // --fit (absent: on from 2025-12, llama_cpp engine)
  bool kv_offload = defaults::kKvOffload;
  bool mmap = defaults::kMmap;
  std::string split_mode = defaults::kSplitMode;
  std::vector<double> tensor_split;  // --tensor-split proportions, one per GPU
  bool cache_type_k_given = false;
  bool context_len_given = false;    // Ollama's num_ctx
  bool batch_given = false;          // --parallel / OLLAMA_NUM_PARALLEL
  bool weights_dtype_given = false;  // a llama-quantize preset for a config without a GGUF
};

struct InferOptions {
  int64_t batch = defaults::kInferBatch;        // concurrent sequences
  int64_t context_len = defaults::kContextLen;  // tokens per sequence (prompt + generated)
  int64_t prompt_len = 0;                       // prefill length; 0 = context_len
  int64_t images_per_prompt = 0;                // VLMs: images in each sequence's prompt
  std::string weights_dtype = defaults::kWeightsDtype;
  std::string kv_dtype = defaults::kKvDtype;
  std::string engine = defaults::kEngine;  // "hf" (transformers generate) | "vllm" | "sglang" | "litgpt"
  bool context_len_given = false;          // vLLM / SGLang: absent = the model's own maximum
  bool weights_dtype_given = false;        // absent: vLLM / SGLang load a quantised checkpoint as stored
  // infer.engine_version (or its alias infer.engine NAME@RELEASE): vLLM / SGLang
  // release ("0.11.1"), llama.cpp source date ("2025-12"), Ollama version
  // ("0.6.7"); absent = the newest modelled.
  std::optional<std::string> engine_version;
  std::string entrypoint = defaults::kEntrypoint;  // vLLM: "server" (vllm serve) | "offline" (LLM class)
  // vLLM engine arguments (defaults: vram/fields.h); 0 = vLLM's own default.
  double gpu_memory_utilization = defaults::kGpuMemoryUtilization;
  int64_t block_size = defaults::kBlockSize;
  int64_t max_num_seqs = 0;
  int64_t max_num_batched_tokens = 0;  // chunked prefill budget per step
  bool cuda_graphs = !defaults::kEnforceEager;
  LlamaCppOptions llama;
  // SGLang server arguments; 0 = SGLang's own default by GPU.
  double mem_fraction_static = 0;
  int64_t chunked_prefill_size = 0;
  int64_t cuda_graph_max_bs = 0;
};

struct ParallelOptions {
  int64_t gpus = defaults::kGpus;
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t cp = 1;                                  // context parallel: the sequence split across ranks
  int64_t ep = 1;                                  // expert parallel: routed experts split across ranks (within dp)
  int64_t vp = 1;                                  // virtual pipeline stages per rank (Megatron interleaved 1F1B)
  int64_t zero = 0;                                // DeepSpeed ZeRO stage
  std::string fsdp;                                // "", "full_shard", "shard_grad_op", "hybrid_shard", "no_shard"
  bool offload_optimizer = false;                  // ZeRO / FSDP optimizer (and fp32 master) offload to CPU
  bool offload_params = false;                     // ZeRO-3 / FSDP parameter offload to CPU
  bool sequence_parallel = false;                  // Megatron SP: norms and dropouts split across tp ranks
  int64_t gpus_per_node = defaults::kGpusPerNode;  // FSDP HYBRID_SHARD shards within a node
  int64_t nodes = 1;                               // gpus / gpus_per_node, rounded up
  // Megatron-LM: --use-distributed-optimizer shards the fp32 main params and
  // optimizer states over data parallel; bf16 runs keep fp32 main grads
  // (accumulate_allreduce_grads_in_fp32) unless main_grads_fp32 is false.
  bool distributed_optimizer = false;
  bool main_grads_fp32 = defaults::kMainGradsFp32;
  // FSDP: 1 = FlatParameter units (FullyShardedDataParallel), 2 = per-parameter
  // DTensor shards (fully_shard). MixedPrecision reduce dtype: 0 = param dtype.
  int64_t fsdp_version = defaults::kFsdpVersion;
  bool fsdp_version_given = false;  // by the request, not a release rule (the planner keeps it)
  int64_t fsdp_reduce_bytes = 0;
  int64_t fsdp_param_bytes = 0;  // MixedPrecision param_dtype (the gathered copy); 0 = the weights' dtype
  // FSDP1 FullyShardedDataParallel(sync_module_states=True): each unit is
  // broadcast from rank 0 while it is built (parallel_buffers.h Fsdp1Units).
  bool fsdp_sync_module_states = false;
  bool fsdp_sync_module_states_given = false;  // by the request, not a release rule (the planner keeps it)
  // FSDP1 LoRA wrap policy: each adapter matrix its own unit (true), or whole
  // decoder layers, frozen weights included (false; fields.h).
  bool fsdp_adapter_units = defaults::kFsdpAdapterUnits;
  bool fsdp_adapter_units_given = false;  // by the request, not a release rule (the planner keeps it)
  // NCCL (research/memory-internals.md §2.4): channels per ring/tree
  // connection set, and NVLink SHARP buffers on NVSwitch systems (unset = by GPU).
  int64_t nccl_channels = defaults::kNcclChannels;
  std::optional<bool> nvls;
  // Buffers (torch DistributedDataParallel and DeepSpeed ZeRO; defaults: vram/fields.h).
  bool gradient_as_bucket_view = defaults::kGradientAsBucketView;
  int64_t reduce_bucket_size = defaults::kReduceBucketSize;  // elements
  bool overlap_comm = false;                                 // DeepSpeed turns it on for stage 3
  bool overlap_comm_given = false;
  bool contiguous_gradients = defaults::kContiguousGradients;
  int64_t stage3_prefetch_bucket_size = defaults::kStage3PrefetchBucketSize;
  int64_t stage3_max_live_parameters = defaults::kStage3MaxLiveParameters;
  int64_t stage3_param_persistence_threshold = defaults::kStage3ParamPersistenceThreshold;
};

// Everything outside the tensors, each overridable (issue 4). Defaults and
// their sources live in overheads.cpp.
struct OverheadOptions {
  std::optional<int64_t> cuda_context_bytes;
  std::optional<int64_t> cublas_workspace_bytes;
  std::optional<int64_t> nccl_bytes;          // per GPU, replaces the modelled NCCL buffers (multi-GPU)
  std::optional<double> fragmentation;        // extra reserved/allocated fraction
  int64_t misc_bytes = defaults::kMiscBytes;  // user cushion, added to every phase
};

// The seeds' tunable factors (seed 000 "Calibration Factors"), off by default:
// each multiplies one modelled term when given.
struct Calibration {
  std::optional<double> attention;
  std::optional<double> mlp;
  std::optional<double> logits;
  std::optional<double> checkpointing;
};

// PYTORCH_CUDA_ALLOC_CONF settings the caching-allocator replay uses
// (allocator.*; c10/cuda/CUDAAllocatorConfig.cpp).
struct AllocatorOptions {
  std::string conf;  // the environment variable's text, validated at parse time
  std::optional<bool> expandable_segments;
  std::optional<int64_t> max_split_size_mb;
};

// The time model's inputs (time.*; issue 31): what the run covers and what a
// GPU-hour costs. Defaults: vram/fields.h, core/src/speed/.
struct TimeOptions {
  bool enabled = true;              // false: the result has no `time` object
  std::optional<int64_t> tokens;    // the run's tokens
  std::optional<int64_t> samples;   // or samples x mean_len x epochs
  std::optional<int64_t> mean_len;  // absent: train.seq_len
  double epochs = defaults::kEpochs;
  std::optional<double> gpu_hour_usd;    // the request's card
  std::map<std::string, double> prices;  // catalog name -> USD per GPU-hour (time.prices)
};

// The machine around the cards (hardware.*): absent fields take the card's
// catalog row (vram/gpus.h GpuSpeed).
struct HardwareOptions {
  std::optional<Link> link;
  std::optional<double> network_gbps;
  std::optional<double> host_memory_gbs;
  std::optional<double> matmul_tflops;
  std::optional<double> memory_gbs;
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
  AllocatorOptions allocator;
  GpuChoice gpu;
  TimeOptions time;
  HardwareOptions hardware;
  // train.framework and the defaults it filled in (the fields the request
  // left out), in the order applied.
  std::string framework = "hf";
  std::vector<FrameworkDefault> framework_defaults;
  // Its release and library versions (vram/releases.h).
  FrameworkJob framework_job;
  std::vector<std::string> assumptions;  // defaults the parser chose, shown to the user
};

// Fails (throws Failure, code unknown_field) at the first key the request
// format does not have, suggesting the nearest known field; model.config and
// deepspeed are other tools' formats and pass unchecked. parse_request runs it.
void check_request_keys(const json& request);
// Every such key, each as its unknown_field Error (vram-probe validate).
std::vector<Error> unknown_request_keys(const json& request);

Result<Request> parse_request(const json& request);

// The canonical value of the enum field `f` (vram/fields.h) at r[key], or
// nullopt when absent; a name the table does not accept fails (throws
// Failure) at r[key], listing every accepted name, aliases included.
std::optional<std::string> enum_value(const JsonReader& r, const std::string& key, const FieldSpec& f);

// Layout rules the page asks instead of copying (the parser applies them):
// data parallel fills what tensor, pipeline and context parallel leave of
// parallel.gpus; which offload and sharding options a layout can take.
int64_t data_parallel(const ParallelOptions& p);
bool offload_params_allowed(const ParallelOptions& p);
bool offload_optimizer_allowed(const ParallelOptions& p);
bool distributed_optimizer_allowed(const ParallelOptions& p);

// The error parse_request would report for this request's parallel layout,
// if any (for callers that build layouts themselves, like the planner).
std::optional<Error> layout_error(const Request& req);

const char* to_string(Precision p);
const char* to_string(Method m);
const char* to_string(AttentionImpl a);
const char* to_string(Kernels k);
const char* to_string(Checkpointing c);
const char* to_string(Padding p);
const char* to_string(LossKind k);
const char* to_string(Link l);

}  // namespace vram

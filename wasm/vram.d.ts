// Types of the WebAssembly estimator's facade (vram.js). They mirror the JSON
// contract (DESIGN.md §2, docs/schema.md): the request the core parses
// (core/src/request.cpp) and the result it prints (core/src/api.cpp). Fields
// marked "contract" are used by external validation and are never renamed.
// Sizes are integer byte counts, exact as JSON numbers up to 2^53.

// ---------------------------------------------------------------------------
// Request

/** An HF `config.json` object, as the Hub serves it. */
export type HfConfig = {
  /** Picks the family adapter ("llama", "qwen2", "mixtral", ...); required. */
  model_type: string;
  /** Any other config.json key; each family reads the ones its modeling code reads. */
  [key: string]: unknown;
};

/** Explicit sizes for a model without a config.json: a Llama-shaped decoder. */
export interface CustomModel {
  /** Decoder layers. */
  layers: number;
  /** Hidden size. */
  hidden: number;
  /** Attention heads. */
  heads: number;
  /** Key/value heads (GQA); defaults to `heads`. */
  kv_heads?: number;
  /** Per-head dimension; defaults to `hidden / heads`. */
  head_dim?: number;
  /** MLP intermediate size; defaults to 8/3 x hidden rounded up to 256. */
  intermediate?: number;
  /** Vocabulary size. */
  vocab: number;
  /** Whether lm_head shares the embedding matrix; default false. */
  tie_word_embeddings?: boolean;
  /** Stated parameter total, or a count string ("7B", "6.7B", "125M"; README "Input rules"); the excess over the derived count is shown as "other". */
  params?: number | string;
}

/**
 * A GGUF file's header as `vram-probe estimate --gguf FILE` and the page
 * (@huggingface/gguf) read it: the metadata an estimate can use (no
 * `tokenizer.*` keys, no string arrays) and every tensor's ggml shape
 * (ne0 first), ggml type id and data offset.
 */
export interface GgufInventory {
  /** The file's name. */
  file?: string;
  /** GGUF version, 2 or 3. */
  version?: number;
  /** Metadata keys (general.architecture, <arch>.block_count, ...). */
  metadata: Record<string, number | string | boolean | Array<number | boolean>>;
  /** Every tensor: name, ggml dimensions (ne0 first), ggml type id or name, offset in the data section. */
  tensors: Array<{ name: string; shape: number[]; type: number | string; offset?: number }>;
}

/** The model: a config.json (contract: `model.config`) or explicit sizes (contract: `model.custom`). */
export interface ModelInput {
  /** A GGUF file's header: the model llama.cpp runs (engines llama_cpp, ollama, lmstudio). */
  gguf?: GgufInventory;
  /** A multimodal projector GGUF (llama.cpp --mmproj): its weights on the first GPU. */
  mmproj?: GgufInventory;
  /** Contract. An HF config.json object. */
  config?: HfConfig;
  /** Contract. Explicit sizes, used when `config` is absent. */
  custom?: CustomModel;
  /** Estimate an unknown model_type as a generic Llama-like decoder (flagged inexact) instead of failing. */
  allow_generic?: boolean;
}

/** Training method (contract: `train.method`). */
export type Method = 'full' | 'lora' | 'qlora' | 'freeze';

/**
 * Precision recipe (contract: `train.precision`): pure `bf16`/`fp16`/`fp32`,
 * autocast over fp32 weights (`amp_bf16`, `amp_fp16`), or bf16 weights with
 * fp32 master weights and states (`mixed_bf16`). Lightning and torch spellings
 * are accepted too.
 */
export type Precision =
  | 'fp32'
  | 'float32'
  | '32-true'
  | 'bf16'
  | 'bfloat16'
  | 'bf16-true'
  | 'fp16'
  | 'float16'
  | 'fp16-true'
  | 'amp_bf16'
  | 'bf16-mixed'
  | 'amp_fp16'
  | '16-mixed'
  | 'fp16-mixed'
  | 'mixed_bf16';

/** Attention kernel (contract: `train.attention`); transformers' attn_implementation names. */
export type Attention =
  'eager' | 'sdpa' | 'flash_attention_2' | 'flash_attention_3' | 'fa2' | 'flash';

/** LoRA / QLoRA adapter settings (peft LoraConfig). */
export interface LoraOptions {
  /** Contract. Adapter rank `r`; peft's default 8. */
  rank?: number;
  /** `lora_alpha`; defaults to the rank. */
  alpha?: number;
  /** `lora_dropout`, 0 to 1; default 0. */
  dropout?: number;
  /** Contract. Leaf module names (`["q_proj", "v_proj"]`, `"lm_head"` for the output layer) or `"all-linear"` (which leaves the output layer out, as PEFT does); default the family's. */
  targets?: string[] | 'all-linear';
  /** peft autocast_adapter_dtype: adapters kept in fp32; default true. */
  adapter_fp32?: boolean;
  /** DoRA: a magnitude vector per target; default false. */
  use_dora?: boolean;
}

/** bitsandbytes 4-bit settings for QLoRA. */
export interface QuantOptions {
  /** bnb_4bit_use_double_quant; default true. */
  double_quant?: boolean;
  /** Quantization block size; default 64. */
  blocksize?: number;
  /** peft prepare_model_for_kbit_training (non-4-bit params cast to fp32); default true. */
  prepare_kbit?: boolean;
  /**
   * bitsandbytes older than 0.43.2: MatMul4Bit keeps every 4-bit Linear's input for backward
   * (ctx.tensors = (A, B)); default false (current releases keep none).
   */
  saves_input?: boolean;
}

/** Training workload, used when `task` is "train". */
export interface TrainOptions {
  /** Contract. full | lora | qlora | freeze; default full. */
  method?: Method;
  /**
   * Contract. The training framework, optionally at a release: "torchtune", "torchtune@0.2",
   * "unsloth@2024.8", "hf@4.44"; default "hf" at its newest release (core/include/vram/releases.h).
   */
  framework?: string;
  /** Contract. Sequences per GPU per forward pass; default 1. */
  micro_batch?: number;
  /** Contract. Tokens per sequence; default 2048. */
  seq_len?: number;
  /** Contract. Gradient accumulation steps; default 1. */
  grad_accum?: number;
  /** zero_grad(set_to_none): false (PyTorch < 2.0's default) keeps gradients allocated between steps; default true. */
  zero_grad_set_to_none?: boolean;
  /** PyTorch <= 1.10: softmax / log_softmax also keep their input for backward (eager attention); default false. */
  softmax_saves_input?: boolean;
  /** Contract. Precision recipe; default bf16. */
  precision?: Precision;
  /** Contract. HF Trainer `optim` name (adamw_torch_fused, adamw_bnb_8bit, paged_adamw_8bit, adafactor, sgd, lion, ...). */
  optimizer?: string;
  /** Contract. Gradient checkpointing: a boolean, or none | full | selective. */
  grad_checkpointing?: boolean | 'none' | 'full' | 'selective';
  /** Contract. Attention implementation; default sdpa. */
  attention?: Attention;
  /** Contract. Fused linear cross-entropy (Liger, cut-cross-entropy): no full logits; default false. */
  fused_loss?: boolean;
  /** How the logits and the cross-entropy are computed: standard, chunked (torchtune CEWithChunkedOutputLoss, LitGPT chunked_cross_entropy) or fused (= fused_loss). */
  loss?: 'standard' | 'chunked' | 'fused';
  /** chunked: chunks of the sequence (torchtune num_output_chunks); default 8. */
  loss_chunks?: number;
  /** Fused RMSNorm kernels (Liger, apex); default false. */
  fused_norm?: boolean;
  /** SDPA's native GQA path (torch >= 2.5, no padding mask); default false. */
  sdpa_gqa_native?: boolean;
  /** Optimizer step fused into backward, one parameter at a time (torchtune optimizer_in_bwd): gradients never all live at once; default false. */
  optimizer_in_backward?: boolean;
  /** Saved activations offloaded to CPU memory during forward and brought back for backward (torchtune enable_activation_offloading); default false. */
  activation_offload?: boolean;
  /** torch.compile (HF `torch_compile`, torchtune `compile`); default false. Not modelled: the result warns that the estimate is the eager-mode figure. */
  compile?: boolean;
  /** Contract (`train.lora.rank`, `train.lora.targets`). Adapter settings for lora and qlora. */
  lora?: LoraOptions;
  /** 4-bit quantization settings for qlora. */
  quant?: QuantOptions;
  /** Method freeze: the trainable leaf module names or "layers.N"; required with freeze. */
  trainable_modules?: string[];
  /** Dropout probability overriding the model's, 0 to 1. */
  dropout?: number;
  /** VLMs: images per training sample; default 0. */
  images_per_sample?: number;
}

/**
 * Inference engine (`infer.engine`): transformers `generate` with a dynamic cache, vLLM or SGLang as they size
 * themselves to the GPU, LitGPT `generate`, or llama.cpp and its presets Ollama and LM Studio (GGUF).
 */
export type Engine = 'hf' | 'vllm' | 'sglang' | 'litgpt' | 'llama_cpp' | 'ollama' | 'lmstudio';

/** Inference workload, used when `task` is "infer". */
export interface InferOptions {
  /** Contract. Concurrent sequences; default 1. */
  batch?: number;
  /** Contract. Tokens per sequence (prompt + generated); default 4096. */
  context_len?: number;
  /** Tokens of the prompt, prefilled at once (transformers); 1 to context_len, default context_len. */
  prompt_len?: number;
  /** Contract. Serving dtype of the weights (bf16, fp16, fp8, int8, int4, nf4, ...); default bf16. */
  weights_dtype?: string;
  /** Contract. KV-cache dtype; default bf16. */
  kv_dtype?: string;
  /**
   * "hf" (transformers generate, default), "vllm" or "sglang" (both need `gpu.name` or `gpu.memory_gib`), "litgpt",
   * or the llama.cpp engines. `NAME@RELEASE` ("vllm@0.11.1") is an alias of `engine_version`.
   */
  engine?: Engine | `${Engine}@${string}`;
  /**
   * The engine's release whose rules apply: vLLM / SGLang a version ("0.11.1"), llama.cpp a source date
   * ("2025-12"), Ollama a version ("0.6.7"); absent: the newest modelled. hf and litgpt take none.
   */
  engine_version?: string;
  /** vLLM: "server" (`vllm serve`, default) or "offline" (the LLM class), which have other defaults. */
  entrypoint?: 'server' | 'offline';
  /** vLLM gpu_memory_utilization: the fraction of the GPU vLLM may use, 0.01 to 1; default 0.9. */
  gpu_memory_utilization?: number;
  /** vLLM block_size: tokens per KV-cache block, 1 to 4096; default 16. */
  block_size?: number;
  /** vLLM max_num_seqs: sequences scheduled at once (the sampler's profile size); absent, vLLM's default by GPU. */
  max_num_seqs?: number;
  /** vLLM max_num_batched_tokens: tokens of the profile forward; absent, vLLM's default by GPU. */
  max_num_batched_tokens?: number;
  /** vLLM enforce_eager: no CUDA graphs captured; default false. */
  enforce_eager?: boolean;
  /** SGLang mem_fraction_static: weights + token pool share of the GPU; absent, SGLang's default. */
  mem_fraction_static?: number;
  /** SGLang chunked_prefill_size; absent, SGLang's default by GPU. */
  chunked_prefill_size?: number;
  /** SGLang cuda_graph_max_bs; absent, SGLang's default by GPU. */
  cuda_graph_max_bs?: number;
}

/** How the job is spread over GPUs. */
export interface ParallelOptions {
  /** Contract. GPUs in the job; default 1. */
  gpus?: number;
  /** Contract. Data-parallel degree; default gpus / (tp x pp x cp). dp x tp x pp x cp must equal gpus. */
  dp?: number;
  /** Contract. Tensor-parallel degree; default 1. With `task: "infer"` it shards weights and KV heads over `gpus = tp`. */
  tp?: number;
  /** Contract. Pipeline stages; default 1. */
  pp?: number;
  /** Contract. DeepSpeed ZeRO stage 0 to 3; default 0. */
  zero?: 0 | 1 | 2 | 3;
  /** Contract. FSDP sharding strategy; default none. Exclusive with `zero`. */
  fsdp?: 'full_shard' | 'shard_grad_op' | 'hybrid_shard' | 'no_shard' | '';
  /**
   * One-field alternative to `zero` / `fsdp` / `distributed_optimizer` (not together with them):
   * "ddp" ("none"), "zero1".."zero3", an FSDP strategy, or "distributed_optimizer".
   */
  sharding?:
    | 'ddp'
    | 'none'
    | 'zero1'
    | 'zero2'
    | 'zero3'
    | 'full_shard'
    | 'shard_grad_op'
    | 'hybrid_shard'
    | 'no_shard'
    | 'distributed_optimizer';
  /** Contract. Optimizer states and fp32 master offloaded to the CPU (needs ZeRO >= 1 or FSDP); default false. */
  offload_optimizer?: boolean;
  /** Context-parallel degree (the sequence split across ranks); default 1. */
  cp?: number;
  /** Parameters offloaded to the CPU (needs ZeRO-3 or FSDP full/hybrid shard); default false. */
  offload_params?: boolean;
  /** Megatron sequence parallel: norms and residual activations split over tp; default false. */
  sequence_parallel?: boolean;
  /** GPUs per node: the shard group of FSDP hybrid_shard; default 8 (at most `gpus`). */
  gpus_per_node?: number;
  /** Nodes in the job: `gpus / nodes` is the GPUs per node (an alternative to `gpus_per_node`); must divide `gpus`. */
  nodes?: number;
  /**
   * Expert-parallel degree (mixture-of-experts models only); default 1. Must divide the routed experts and
   * dp x cp: expert-parallel ranks are carved out of the data-parallel ranks (Megatron-core parallel_state).
   */
  ep?: number;
  /**
   * Virtual pipeline stages per rank (Megatron interleaved 1F1B,
   * `--num-layers-per-virtual-pipeline-stage`); default 1. Needs pp > 1 and layers divisible by pp x vp.
   */
  vp?: number;
  /**
   * Megatron-LM `--use-distributed-optimizer`: fp32 main params and optimizer states sharded over data
   * parallel; default false. Not combinable with `zero` or `fsdp`.
   */
  distributed_optimizer?: boolean;
  /** Megatron's fp32 main-grad buffer (`accumulate_allreduce_grads_in_fp32`) for bf16/fp16 runs; default true. */
  main_grads_fp32?: boolean;
  /** FSDP implementation: 1 = FlatParameter units (FullyShardedDataParallel), 2 = per-parameter fully_shard; default 1. */
  fsdp_version?: 1 | 2;
  /**
   * FSDP1 sync_module_states: each unit broadcast from rank 0 while it is built (bucket copies the caching allocator
   * keeps); default false, true by the release rules of hf / Axolotl / LLaMA-Factory (transformers >= 4.31) and
   * torchtune < 0.3 under FSDP1.
   */
  fsdp_sync_module_states?: boolean;
  fsdp_adapter_units?: boolean;
  /** FSDP MixedPrecision reduce_dtype of the gradient reduce-scatter; default the parameter dtype. */
  fsdp_reduce_dtype?: 'bf16' | 'fp16' | 'fp32';
  /** NCCL channels per communicator (NCCL_MAX_NCHANNELS), 1 to 64; default 32. */
  nccl_channels?: number;
  /** NVLink SHARP buffers (NCCL_NVLS_ENABLE) on NVSwitch systems; default: decided by the GPU. */
  nvls?: boolean;
  /** DeepSpeed stage3_param_persistence_threshold: parameters with fewer elements stay whole on every rank; default 100000. */
  stage3_param_persistence_threshold?: number;
  /** DDP gradient_as_bucket_view (no bucket copy of the gradients); default false. */
  gradient_as_bucket_view?: boolean;
  /** DeepSpeed overlap_comm (doubles the reduce bucket); default true for ZeRO-3 only. */
  overlap_comm?: boolean;
}

/** Overrides of the memory outside the tensors (defaults documented in the core). */
export interface OverheadOptions {
  /** CUDA context bytes, or a size string ("512MiB"); every byte field here takes one. */
  cuda_context_bytes?: number | string;
  /** cuBLAS/cuBLASLt workspace bytes. */
  cublas_workspace_bytes?: number | string;
  /** Reserved = allocated x (1 + fragmentation) (0 to 4); replaces the caching-allocator replay when given. */
  fragmentation?: number;
  /** A cushion in bytes added to every phase. */
  misc_bytes?: number | string;
  /** NCCL memory per GPU on multi-GPU layouts (e.g. measured); replaces the channel model. */
  nccl_bytes?: number | string;
}

/** PyTorch caching-allocator settings the reserved-memory replay uses (PYTORCH_CUDA_ALLOC_CONF). */
export interface AllocatorOptions {
  /** The environment variable's text, e.g. "expandable_segments:True,max_split_size_mb:128"; checked by the core. */
  conf?: string;
  /** expandable_segments:True; wins over `conf`. */
  expandable_segments?: boolean;
  /** Blocks this large (MiB, more than 20) are never split; absent: unlimited. Wins over `conf`. */
  max_split_size_mb?: number;
}

/** Multipliers of single modelled terms, for calibrating against measurements; off when absent. */
export interface Calibration {
  /** Attention activations. */
  attention?: number;
  /** MLP activations. */
  mlp?: number;
  /** Logits and loss buffers. */
  logits?: number;
  /** What gradient checkpointing keeps. */
  checkpointing?: number;
}

/** The GPU to check the fit against: a catalog name (contract: `gpu.name`) or a size (contract: `gpu.memory_gib`). */
export interface GpuInput {
  /** Contract. Catalog name, case-insensitive, aliases accepted ("H100 80GB", "a100-80gb", "4090"). */
  name?: string;
  /** Contract. Memory in GiB for a card not in the catalog, or a size string: "80GB" (80 x 10^9 bytes), "80GiB". */
  memory_gib?: number | string;
}

/** The estimate request: `estimate(request)`. */
export interface Request {
  /** Contract. The model to estimate. */
  model: ModelInput;
  /** Contract. "train" (default) or "infer". */
  task?: 'train' | 'infer';
  /** Contract. Training workload. */
  train?: TrainOptions;
  /** Library versions the job runs on, overriding what `train.framework`'s release implies ("0.41.1"). */
  versions?: {
    torch?: string;
    transformers?: string;
    peft?: string;
    trl?: string;
    bitsandbytes?: string;
    torchao?: string;
    flash_attn?: string;
  };
  /** Contract. Inference workload. */
  infer?: InferOptions;
  /** Contract. Multi-GPU layout. */
  parallel?: ParallelOptions;
  /**
   * A DeepSpeed config JSON as is: zero_optimization (stage, offload_optimizer/offload_param devices,
   * reduce_bucket_size, overlap_comm, ...), train_micro_batch_size_per_gpu,
   * gradient_accumulation_steps, bf16/fp16.enabled. Explicit train/parallel fields win.
   */
  deepspeed?: Record<string, unknown>;
  /** Overrides of context, workspace and fragmentation. */
  overheads?: OverheadOptions;
  /** Calibration factors. */
  calibration?: Calibration;
  /** Caching-allocator settings for the reserved view (training). */
  allocator?: AllocatorOptions;
  /** Contract. The GPU to fit on; without it the result has no fit verdict. */
  gpu?: GpuInput;
  /** The time model's inputs: the run's size and prices (docs/schema.md). */
  time?: TimeOptions;
  /** The machine around the cards, for the time model; absent fields take the catalog's. */
  hardware?: HardwareOptions;
  /** Planner options, read by `plan(request)` only. */
  plan?: PlanOptions;
}

/** The time model's inputs (`time.*`). */
export interface TimeOptions {
  /** The result's `time` object; false leaves it out (the first-visit module answers not_in_module otherwise). Default true. */
  enabled?: boolean;
  /** The run's size in tokens (not with `samples`). */
  tokens?: number;
  /** The run's size in samples (with `mean_len` and `epochs`). */
  samples?: number;
  /** Mean tokens per sample when packed or padded to the batch's longest; default train.seq_len. */
  mean_len?: number;
  /** Passes over the samples; default 1. */
  epochs?: number;
  /** The request's card's price per GPU-hour, USD; default the price table's. */
  gpu_hour_usd?: number;
  /** Prices per GPU-hour by catalog card name (aliases accepted), over the default table. */
  prices?: Record<string, number>;
}

/** The machine around the cards (`hardware.*`). */
export interface HardwareOptions {
  /** The link between a node's GPUs; default by card. */
  link?: 'nvlink5' | 'nvlink4' | 'nvlink3' | 'nvlink2' | 'nvlink_bridge' | 'xgmi' | 'pcie5' | 'pcie4' | 'pcie3';
  /** A node's backend network, Gbit/s over its NICs; default by card. */
  network_gbps?: number;
  /** Host RAM bandwidth, GB/s (CPU offload); default by card class. */
  host_memory_gbs?: number;
  /** The card's measured 16-bit matmul TFLOPS; needed with gpu.memory_gib. */
  matmul_tflops?: number;
  /** The card's memory bandwidth, GB/s; needed with gpu.memory_gib. */
  memory_gbs?: number;
}

/** A range of the time model: for a time `low` is the fast end; for a rate `low` is the slow end's rate. */
export interface Range {
  low: number;
  high: number;
}

/** One term of a step (time.terms): what it is, how long, and the figures that went in. */
/** A training step's time and the cost of a million tokens at the card's price (null without one). */
export interface StepCost {
  step_seconds: Range;
  tokens_per_second_per_gpu: Range;
  usd_per_million_tokens: Range | null;
}

export interface TimeTerm {
  key: string;
  label: string;
  seconds: Range;
  formula: string;
}

/** One catalog card's figures (time.cards): the GPU table's time and cost columns. */
export interface TimeCard {
  name: string;
  price: { usd_per_gpu_hour: number; source: string } | null;
  /** Training. */
  step_seconds?: Range;
  tokens_per_second_per_gpu?: Range;
  mfu?: Range;
  run_hours?: Range | null;
  usd?: Range | null;
  usd_per_million_tokens?: Range | null;
  /** Inference. */
  ttft_seconds?: Range;
  decode_tokens_per_second_per_sequence?: Range;
  decode_tokens_per_second?: Range;
  usd_per_million_output_tokens?: Range | null;
}

/** The result's `time` object (docs/schema.md "Time"). */
export interface TimeResult extends Omit<TimeCard, 'name'> {
  task: 'train' | 'infer';
  /** The request's card, or null (with `unavailable`) without one or without its rates. */
  gpu: string | null;
  unavailable?: string;
  gpus?: number;
  peak_tflops?: number;
  matmul_tflops?: number;
  memory_gbs?: number;
  link?: string;
  /** Training: tokens per optimizer step, all replicas. */
  tokens_per_step?: number;
  tokens_per_second?: Range;
  model_flops_per_token?: number;
  run?: { tokens: number; steps: number; basis: string } | null;
  /** Inference. */
  engine?: string;
  batch?: number;
  prompt_len?: number;
  output_tokens?: number;
  mean_context?: number;
  prefill_tokens_per_second?: Range;
  decode_step_seconds?: Range;
  request_seconds?: Range;
  prefill_terms?: TimeTerm[];
  terms?: TimeTerm[];
  assumptions?: string[];
  cards: TimeCard[];
}

/** How `plan(request)` searches. `parallel.gpus` is the GPU budget; `gpu` is required. */
export interface PlanOptions {
  /**
   * Layout family: "deepspeed" (ZeRO 0-3; pipelines with ZeRO 0/1), "fsdp" (no_shard, shard_grad_op,
   * full_shard, hybrid_shard) or "megatron" (DDP or the distributed optimizer, sequence parallel with tp).
   * Default "deepspeed", or the family the request's parallel fields already use.
   */
  framework?: 'deepspeed' | 'fsdp' | 'megatron';
  /** Candidates returned, best first (1-1000); default 10. */
  top?: number;
  /** Also try full activation checkpointing; default true. */
  allow_checkpointing?: boolean;
  /** Host RAM per node, GiB; default 2x the node's GPU memory (stated in the plan's notes). */
  host_ram_gib?: number;
  /** Samples per optimizer step every layout keeps; default parallel.gpus x micro_batch x grad_accum. */
  global_batch?: number;
  /** Try CPU offload when nothing else fits; default true. */
  allow_offload?: boolean;
}

// ---------------------------------------------------------------------------
// Result
/** One transformer stack's architecture as the adapter read it. */
export interface StackFacts {
  /** Layers. */
  layers: number;
  /** Hidden size. */
  hidden: number;
  /** Attention heads. */
  heads: number;
  /** Key/value heads. */
  kv_heads: number;
  /** Query/key head dimension (MLA: nope + rope). */
  head_dim: number;
  /** Value head dimension, only when it differs from head_dim (MLA). */
  v_head_dim?: number;
  /** Dense MLP intermediate size. */
  intermediate: number;
  /** Attention kind: multi-head, grouped-query, multi-query or multi-head latent. */
  attention: 'mha' | 'gqa' | 'mqa' | 'mla';
  /** Norm kind. */
  norm: 'rmsnorm' | 'layernorm';
  /** Gated (SwiGLU/GeGLU) or plain (fc1-act-fc2) MLP. */
  mlp: 'gated' | 'plain';
  /** config.json hidden_act. */
  activation: string;
  /** Causal (decoder) or bidirectional (encoder) attention. */
  causal: boolean;
  /** Present and true when attention and MLP read the same input (GPT-J, NeoX, Phi, Falcon). */
  parallel_block?: boolean;
  /** Present and true with per-head q/k norms (Qwen3, Gemma 3). */
  qk_norm?: boolean;
  /** Mixture of experts, for sparse models. */
  moe?: {
    /** Layers with routed experts. */
    layers: number;
    /** Routed experts per sparse layer. */
    experts: number;
    /** Experts each token is routed to. */
    experts_per_token: number;
    /** Intermediate size of one expert. */
    expert_intermediate: number;
    /** Total width of the always-on shared experts, 0 for none. */
    shared_expert_intermediate: number;
  };
  /** Multi-head latent attention ranks (DeepSeek V2/V3). */
  mla?: {
    /** Query low-rank size, 0 for a direct q_proj. */
    q_lora_rank: number;
    /** Compressed key/value size. */
    kv_lora_rank: number;
    /** Rotary part of the query/key head. */
    qk_rope_head_dim: number;
    /** Non-rotary part of the query/key head. */
    qk_nope_head_dim: number;
  };
  /** Sliding-window attention: `layers` of the stack attend to at most `window` tokens. */
  sliding_window?: { window: number; layers: number };
  /**
   * State-space / short-convolution mixers (Mamba, Mamba-2, Jamba, Falcon-H1, LFM2): `layers` run the
   * mixer, `attention_layers` attend (beside the mixer when `with_attention`, Falcon-H1); every one of
   * `state_layers` caches conv_dim x conv_kernel + inner x state values per sequence instead of keys.
   */
  ssm?: {
    kind: 'mamba' | 'mamba2' | 'jamba_mamba' | 'short_conv';
    layers: number;
    attention_layers: number;
    with_attention: boolean;
    inner: number;
    state: number;
    conv_kernel: number;
    conv_dim: number;
    state_layers: number;
  };
}

/** The model summary: `modelInfo(model)`, and `result.model` of an estimate. */
export interface ModelInfo {
  /** config.json model_type ("custom" for explicit sizes). */
  model_type: string;
  /** The adapter that built the inventory. */
  family: string;
  /** architectures[0], or the class transformers would pick. */
  architecture: string;
  /** Checkpoint dtype from config.json, "" when unknown. */
  torch_dtype: string;
  /** Contract. Every parameter, tied weights counted once: sum(p.numel() for p in model.parameters()). */
  params_total: number;
  /** Parameters used per token (MoE: only the routed experts). */
  params_active: number;
  /** Whether params_total is exact for this config. */
  exact: boolean;
  /** Why the count is not exact, when `exact` is false. */
  inexact: string[];
  /** Defaults applied and assumptions made while reading the config. */
  notes: string[];
  /** Parameters per component (embeddings, attention, mlp, experts, router, norms, lm_head, vision_tower, projector). */
  breakdown: { component: string; params: number }[];
  /** Every weight tensor group. */
  modules: ModuleRow[];
  /** The language model's architecture plus vocabulary facts. */
  facts: StackFacts & {
    /** Vocabulary size. */
    vocab: number;
    /** Whether lm_head shares the embedding matrix. */
    tie_word_embeddings: boolean;
    /** max_position_embeddings, when the config gives one. */
    max_position_embeddings?: number;
  };
  /** Other stacks by name: the vision tower of a VLM, the encoder of T5. */
  stacks?: Record<string, StackFacts>;
  /** Image input of a VLM. */
  vision?: {
    /** Input image side in pixels. */
    image_size: number;
    /** Patch side in pixels. */
    patch_size: number;
    /** Tokens the language model sees per image. */
    tokens_per_image: number;
    /** Tokens inside the vision tower per image. */
    encoder_tokens_per_image: number;
  };
}

/** One group of identical weight tensors (a module repeated over layers or experts). */
export interface ModuleRow {
  /** HF leaf module name, as PEFT target_modules uses it ("q_proj"). */
  module: string;
  /** Breakdown component it counts towards. */
  component: string;
  /** Stack it belongs to ("text", "vision", "encoder", "projector"). */
  stack: string;
  /** Parameters of all instances, biases included. */
  params: number;
  /** Copies in the model (layers, layers x experts). */
  instances: number;
  /** nn.Linear weight shape [out_features, in_features]; linears only. */
  shape?: [number, number];
}

/** One named memory component of the estimate. */
export interface Component {
  /** Contract. Stable id: weights, gradients, optimizer_states, activations, kv_cache, cuda_context, nccl, cuda_graphs, ... */
  key: string;
  /** Name for people. */
  label: string;
  /** Contract. The component's largest size over the step, in bytes. */
  bytes: number;
  /** The formula with the values plugged in. */
  formula: string;
  /** Counted by PyTorch's caching allocator, or outside it (CUDA context, NCCL, paged memory). */
  pool: 'allocated' | 'outside';
}

/** Memory at one moment of a step. */
export interface Phase {
  /** Contract. Stable id: forward, loss, backward_start, backward, optimizer_step (training); weights_loaded, prefill, decode (inference, transformers); weights_loaded, profile, serving (inference, vLLM). */
  key: string;
  /** Name for people. */
  label: string;
  /** Contract. What nvidia-smi shows for the process at that moment: reserved plus outside-allocator memory. */
  bytes: number;
  /** torch.cuda.memory_allocated at that moment. */
  allocated_bytes: number;
  /** torch.cuda.memory_reserved: allocated plus block rounding and fragmentation. */
  reserved_bytes: number;
  /** Component key to the bytes of it live in this phase. */
  parts: Record<string, number>;
}

/** Whether a job fits a card, and whether a paged optimizer's states page to host RAM. */
export type FitVerdict = 'fits' | 'fits_with_paging' | 'does_not_fit';

/** The verdict for the requested GPU. */
export interface Fit {
  /** Catalog name, or a description of `gpu.memory_gib`. */
  gpu: string;
  /** What nvidia-smi shows as the card's total. */
  total_bytes: number;
  /** Contract. What a process can really use (total minus the driver's reserve). */
  capacity_bytes: number;
  /**
   * Contract. The job runs on the card: peak_bytes <= capacity_bytes, or, with a paged optimizer, everything
   * but its managed states fits (`verdict` "fits_with_paging").
   */
  fits: boolean;
  /**
   * "fits" (nothing pages), "fits_with_paging" (only the paged optimizer's states in CUDA managed memory
   * overflow the card: they page to host RAM at a throughput cost), "does_not_fit" (even without them).
   */
  verdict: FitVerdict;
  /** With "fits_with_paging": the managed bytes that do not fit (peak_bytes - capacity_bytes); else 0. */
  paged_bytes: number;
  /** peak_bytes / capacity_bytes, rounded to 4 decimals. */
  utilization: number;
  /** peak_bytes <= headroom_fraction x total_bytes (the seeds' safety margin). */
  headroom_ok: boolean;
  /** The headroom rule's fraction (0.8). */
  headroom_fraction: number;
  /** false where the rule does not apply (vLLM takes gpu_memory_utilization of the card by design). */
  headroom_applies: boolean;
  /** The verdict, decided once in core; the page colours by it and shows `words`. */
  status: FitStatus;
  words: string;
  /** Training only: the largest micro-batch that fits without paging, 0 if none. */
  max_micro_batch?: number;
  /**
   * Training only: the longest sequence (tokens per sample, at the request's micro-batch) that fits without paging,
   * 0 if none, at most 1,048,576 (searched up to 2^20); the model's own context limit is not applied.
   */
  max_seq_len?: number;
  /** Training with a paged optimizer: the largest micro-batch that runs with its states paging, 0 if none. */
  max_micro_batch_with_paging?: number;
  /**
   * Training only: what the fit searches above ran. `probes`: steps built and checked against the card (one per
   * rank and tried size); `replays`: caching-allocator replays among them (a probe whose live tensors already
   * exceed the card replays nothing; a bounded replay that fails and the unbounded one after it are two).
   */
  search?: { probes: number; replays: number };
}

/** One row of the GPU table: the same peak against every catalog card. */
export interface GpuRow {
  /** Catalog name. */
  name: string;
  /** Usable bytes of the card. */
  capacity_bytes: number;
  /** The job runs on this card (with paging when `verdict` says so). */
  fits: boolean;
  /** As `Fit.verdict`. */
  verdict: FitVerdict;
  /** Peak / capacity, rounded to 4 decimals. */
  utilization: number;
  /** The peak is within the headroom rule. */
  headroom_ok: boolean;
  /** The verdict as for `Fit.status`, or "unsupported" with `refused`. */
  status: FitStatus;
  /** Why the card cannot run the job (bf16, FlashAttention-2, FP8), when it cannot. */
  refused?: string;
}

/** Inference answers (`result.infer`): the settings as resolved and what the KV cache allows. */
export interface InferFacts {
  /** Engine estimated. */
  engine: Engine;
  /** Concurrent sequences requested. */
  batch: number;
  /** Tokens per sequence. */
  context_len: number;
  /** Serving dtype of the weights. */
  weights_dtype: string;
  /** KV-cache dtype. */
  kv_dtype: string;
  /** KV-cache bytes of one token over every layer, on one GPU (after tensor parallel). */
  kv_bytes_per_token: number;
  /** KV-cache bytes of one token in one layer, on one GPU. */
  kv_bytes_per_token_per_layer: number;
  /** KV cache on one GPU: the full-context cache (transformers) or every allocated block (vLLM). */
  kv_cache_bytes: number;
  /** Tensor-parallel degree (GPUs the model is sharded over). */
  tp: number;
  /** Sequences of `context_len` tokens that fit at once; with a GPU (transformers), always (vLLM, capped at max_num_seqs). */
  max_concurrent_sequences?: number;
  /** Longest context each of `batch` sequences can reach; with a GPU (transformers), always (vLLM). */
  max_context_len?: number;
  /** vLLM: KV-cache blocks allocated after profiling. */
  kv_blocks?: number;
  /** vLLM: bytes of one KV-cache block (block_size tokens over every layer of a group). */
  kv_block_bytes?: number;
  /** vLLM and SGLang: tokens the KV cache holds ("GPU KV cache size", SGLang max_total_num_tokens). */
  kv_tokens?: number;
  /** vLLM and SGLang: the length served (--max-model-len / --context-length as resolved). */
  max_model_len?: number;
  /** vLLM: max_num_seqs and max_num_batched_tokens as resolved. */
  max_num_seqs?: number;
  max_num_batched_tokens?: number;
  /** vLLM and SGLang: the weights as loaded, on one GPU. */
  weights_bytes?: number;
  /** vLLM: the profile run's torch peak increase. */
  activation_peak_bytes?: number;
  /** vLLM: memory outside PyTorch that grows during the profile run. */
  non_torch_bytes?: number;
  /** vLLM and SGLang: the release whose rules applied. */
  engine_release?: string;
  /** SGLang: chunked_prefill_size as resolved. */
  chunked_prefill_size?: number;
  /** vLLM and SGLang: the memory lines the engine prints at start-up, as the estimate expects them. */
  engine_log?: EngineLine[];
}

/** A line a serving engine prints at start-up (`result.infer.engine_log[i]`). */
export interface EngineLine {
  /** "vllm.available_kv_cache", "sglang.max_total_num_tokens", ... */
  key: string;
  /** The figure, in `unit`. */
  value: number;
  /** "GiB", "tokens" or "x". */
  unit: string;
  /** The line as the engine prints it. */
  text: string;
}

/** One pipeline rank of a training layout with pp > 1 (`result.parallel.stages[i]`). */
export interface PipelineStage {
  /** Pipeline rank, 0 = the first stage. */
  stage: number;
  /** Decoder layers this rank holds (over all its virtual stages). */
  layers: number;
  /** Of those, layers with routed experts (0 for a dense model). */
  moe_layers: number;
  /** Parameters this rank holds (after tensor and expert parallel, before data-parallel sharding). */
  params: number;
  /** Micro-batches of activations held at once (1F1B: min(pp - stage, micro-batches)); fractional with vp > 1. */
  in_flight: number;
  /** The rank holds the input embeddings. */
  embeddings: boolean;
  /** The rank holds the output head and the loss buffers. */
  head: boolean;
  /** This rank's peak in bytes, as nvidia-smi would show it. */
  peak_bytes: number;
}

/** The multi-GPU training layout behind a result. */
export interface ParallelFacts {
  /** "DDP", "ZeRO-1" .. "ZeRO-3", "FSDP full_shard", ..., or "model parallel". */
  layout: string;
  /** GPUs in the job. */
  gpus?: number;
  /** Data-parallel degree. */
  dp?: number;
  /** Tensor-parallel degree. */
  tp?: number;
  /** Pipeline-parallel degree. */
  pp?: number;
  /** Context-parallel degree. */
  cp?: number;
  /** Expert-parallel degree. */
  ep?: number;
  /** Virtual pipeline stages per rank. */
  vp?: number;
  /** Nodes the GPUs span. */
  nodes?: number;
  /** GPUs per node. */
  gpus_per_node?: number;
  /** Mixture-of-experts models only: routed experts each rank holds per sparse layer (experts / ep). */
  experts_per_rank?: number;
  /** NCCL communicator buffers on each GPU. */
  nccl_bytes?: number;
  /** Ranks the model state is sharded over. */
  shard_group?: number;
  /** Parameters the busiest rank holds (after tensor, pipeline and expert parallel). */
  params_per_gpu?: number;
  /** With pp > 1: the first pipeline stage's peak. */
  first_stage_peak_bytes?: number;
  /** With pp > 1: the last pipeline stage's peak. */
  last_stage_peak_bytes?: number;
  /** With pp > 1: the stage with the largest peak (the one the result reports). */
  busiest_stage?: number;
  /** With pp > 1: every pipeline rank, stage 0 first. */
  stages?: PipelineStage[];
  /** With a GPU and a sharded layout: the fewest GPUs (growing dp) for which it fits; 0 if none up to dp 4096. */
  min_gpus_to_fit?: number;
}

/** The estimate: `estimate(request)`. */
export interface Result {
  /** Schema version of this object ("vram-planner/1"). */
  schema: string;
  /** Version of the estimator that produced it. */
  version: string;
  /** The task estimated. */
  task: 'train' | 'infer';
  /**
   * Contract (`model.params_total`, `model.params_trainable`). The model summary plus trainable
   * parameters: the same object `modelInfo(request)` returns, so a caller that has
   * the estimate needs no modelInfo call.
   */
  model: ModelInfo & {
    /** Contract. Parameters the optimizer updates (adapters for LoRA); 0 for inference. */
    params_trainable: number;
  };
  /** Contract. Per-GPU peak in bytes as nvidia-smi would show it: the largest phase. */
  peak_bytes: number;
  /** torch.cuda.max_memory_allocated at the peak. */
  peak_allocated_bytes: number;
  /** torch.cuda.max_memory_reserved at the peak; training: the upper end of the reserved range (the most
   * the job or a smaller job of it reserves alone), the figure the peak and the fit use. */
  peak_reserved_bytes: number;
  /** Training (allocator replay): the lower end of the reserved range, the job's own replay alone. */
  peak_reserved_low_bytes?: number;
  /** Contract. Key of the phase where the peak happens. */
  peak_phase: string;
  /** Tokens in one micro-batch (micro_batch x seq_len, or batch x context_len). */
  tokens_per_micro_batch: number;
  /** Contract. Every memory component with its formula. */
  components: Component[];
  /** Contract. Memory at each moment of the step, in order. */
  phases: Phase[];
  /** The same peak against every card of the catalog. */
  gpus: GpuRow[];
  /** Defaults the estimator chose for fields the request left out. */
  assumptions: string[];
  /** Training: the framework at its release, the library versions, and every default it applied. */
  framework?: {
    name: string;
    label: string;
    /** The release applied (the newest when `release_given` is false). */
    release: string;
    release_given: boolean;
    /** Each library's version and where it came from ("torchtune@0.2.1" or "versions.torch"). */
    versions: Record<string, { version: string; from: string }>;
    defaults_applied: { path: string; value: unknown; source: string }[];
    not_modelled: string[];
  };
  /** Contract. Things the user should know (inexact counts, risky settings). */
  warnings: string[];
  /** Contract (`fit.fits`, `fit.capacity_bytes`). The verdict for `request.gpu`; null without a GPU. */
  fit: Fit | null;
  /** Inference only: engine, KV-cache sizes and how many sequences and tokens fit. */
  infer?: InferFacts;
  /** Multi-GPU training only: the layout each rank was estimated for. */
  parallel?: ParallelFacts;
  /** The time model (absent with time.enabled false). */
  time?: TimeResult;
  /** Training only: the settings used, defaults filled in. */
  train?: {
    /** Training method. */
    method: Method;
    /** Canonical precision recipe name. */
    precision: 'fp32' | 'bf16' | 'fp16' | 'amp_bf16' | 'amp_fp16' | 'mixed_bf16';
    /** Optimizer name as resolved from its alias. */
    optimizer: string;
    /** Canonical attention name. */
    attention: 'eager' | 'sdpa' | 'flash_attention_2';
    /** Gradient checkpointing mode. */
    grad_checkpointing: 'none' | 'full' | 'selective';
    /** Sequences per GPU per forward pass. */
    micro_batch: number;
    /** Tokens per sequence. */
    seq_len: number;
    /** Gradient accumulation steps. */
    grad_accum: number;
  };
}

/** One card of the GPU catalog. */
export interface CatalogGpu {
  /** Catalog name ("H100 80GB"). */
  name: string;
  /** What nvidia-smi shows as the total, in bytes. */
  memory_bytes: number;
  /** What a process can really use, in bytes. */
  usable_bytes: number;
  /** "nvidia" or "amd". */
  vendor: string;
  /** Memory type or form factor. */
  note: string;
  /** "sm_86", "gfx942". */
  arch: string;
  /** NVIDIA compute capability (8.6), null on AMD. */
  compute_capability: number | null;
  /** bf16 arithmetic (sm80+, MI200/MI300). */
  bf16: boolean;
  /** FlashAttention-2 (sm80+, flash-attention README; ROCm MI200/MI300). */
  flash_attention_2: boolean;
  /** FP8 tensor cores (sm89+, MI300). */
  fp8: boolean;
}

/** `version()`: what this build of the estimator knows. */
export interface VersionInfo {
  /** Schema version of results ("vram-planner/1"). */
  schema: string;
  /** Estimator version. */
  version: string;
  /** config.json model_type values with an exact adapter, sorted. */
  supported_model_types: string[];
  /** Known optimizer names (HF Trainer `optim` vocabulary plus aliases). */
  optimizers: string[];
  /** Contract. The `train.framework` names. */
  frameworks: string[];
  /** The GPU catalog. */
  gpus: CatalogGpu[];
  /** The input rules every entry point applies (README "Input rules"). */
  limits: {
    /** Largest input text, 16 MiB; checked before the text is read whole. */
    max_input_bytes: number;
    /** Deepest nesting of objects and arrays, 64. */
    max_json_depth: number;
    /** Largest byte figure of a result, 2^53 - 1; beyond it the estimate is an out_of_range error naming its input. */
    max_bytes: number;
  };
}

/** A request field's JSON type in the fields table. */
export type FieldType = 'int' | 'number' | 'bool' | 'string' | 'enum' | 'list' | 'object';

/** One request field as the core declares it (core/include/vram/fields.h). */
export interface FieldInfo {
  /** Dotted request path ("train.lora.rank"). */
  path: string;
  type: FieldType;
  /** What the core applies when the field is absent; null where absence means something else (see `doc`). */
  default: number | boolean | string | string[] | null;
  /** Enums: the canonical values. */
  values?: (string | number)[];
  /** Enums: accepted alias -> the canonical value it means ("bf16-mixed" -> "amp_bf16"). */
  aliases?: Record<string, string>;
  /** Numbers: the smallest accepted value. */
  min?: number;
  /** Numbers: the largest accepted value. */
  max?: number;
  /** The field in the user's words (HF Trainer, PEFT, DeepSpeed): "per_device_train_batch_size". */
  label: string;
  /** The `vram-probe estimate` flag that sets it, or null. */
  cli: string | null;
  /** Bytes per unit of the flag's value when the flag takes GiB or MiB ("--cuda-context-gib"). */
  cli_unit?: number;
  /** The page's URL key, or null. */
  url: string | null;
  /** One line: what it does, and what absence means. */
  doc: string;
  /** `train.framework` only: each framework's label, by name ("torchtune" -> "torchtune", "hf" -> "Hugging Face Trainer / ..."). */
  labels?: Record<string, string>;
  /** `train.framework` only: each framework's releases, oldest first (`vram-probe version` adds their libraries and sources). */
  releases?: Record<string, { version: string; date: string }[]>;
}

/** `fields()`: every request field of docs/schema.md, in its order. */
export interface FieldsInfo {
  /** "vram-planner/1". */
  schema: string;
  /** Estimator version. */
  version: string;
  fields: FieldInfo[];
}

// ---------------------------------------------------------------------------
// Errors and the facade

/** The boundary's error object: `{"error": {code, message, path}}`. */
export interface ErrorInfo {
  /** Stable code: bad_json | missing_field | wrong_type | out_of_range | inconsistent | unsupported_model | unknown_value | unknown_field | unsupported | internal. */
  code: ErrorCode;
  /** What is wrong, naming the field. */
  message: string;
  /** Dotted JSON path of the offending field ("model.config.hidden_size"), "" for the whole input. */
  path: string;
}

/** Stable error codes (core/include/vram/status.h); new ones may be added, none renamed. */
export type ErrorCode =
  | 'bad_json'
  | 'missing_field'
  | 'wrong_type'
  | 'out_of_range'
  | 'inconsistent'
  | 'unsupported_model'
  | 'unknown_value'
  | 'unknown_field'
  | 'unsupported'
  | 'internal';

/** One layout the planner estimated. */
export interface PlanCandidate {
  /** 1 = best. */
  rank: number;
  /** "tp 2 x dp 4, ZeRO-2, activation checkpointing". */
  label: string;
  /** The request's `parallel` fields for this layout: merge them into the request to estimate it. */
  parallel: ParallelOptions;
  /** The `train.grad_checkpointing` of this layout. */
  grad_checkpointing: 'none' | 'full' | 'selective';
  /** Every request field Apply sets (a merge patch): parallel, checkpointing, grad_accum, and precision when the search changed it. */
  apply: {
    parallel: ParallelOptions;
    train: { grad_checkpointing: string; grad_accum: number; precision?: string };
  };
  /** The verdict (see `FitStatus`) and its words, as everywhere. */
  status: FitStatus;
  words: string;
  /** Accumulation that fills the plan's global batch with this layout's data parallel. */
  grad_accum: number;
  /** Samples per optimizer step: dp x micro_batch x grad_accum (the same for every layout). */
  global_batch: number;
  /** Host RAM per node for what the layout offloads (0 without offload), bytes. */
  host_bytes: number;
  /** host_bytes fits in the plan's host RAM; a layout that does not is not counted as fitting. */
  host_fits: boolean;
  /** Per-GPU peak of the busiest rank, bytes. */
  peak_bytes: number;
  /** peak / usable memory of the GPU. */
  utilization: number;
  /** How far from fitting: the larger of utilization and host RAM needed / available; <= 1 when it fits. Layouts that do not fit rank by it, closest first. */
  fit_ratio: number;
  fits: boolean;
  /** Peak at or under 80 % of the card's memory. */
  headroom_ok: boolean;
  /** Largest micro-batch that fits with this layout (0 when it does not fit). */
  max_micro_batch: number;
  /** Step time relative to no recomputation and no pipeline bubble: 4/3 with full recompute x (1 + (pp-1)/m). */
  step_time_factor: number;
  /** Data-parallel traffic relative to DDP: 1.5 when parameters are sharded (ZeRO paper §7.2). */
  comm_factor: number;
  /**
   * The time model's step on the plan's card (issue 31; the planner ranks by
   * its middle) and the cost of a million tokens at the card's price; null
   * when the card has no speed figures.
   */
  time: StepCost | null;
  /** Why it costs what it costs, with sources. */
  why: string[];
}

/** `plan(request)`: every layout of the GPU budget the framework can run, estimated and ranked. */
export interface PlanResult {
  schema: string;
  version: string;
  plan: {
    framework: 'deepspeed' | 'fsdp' | 'megatron';
    /** The GPU budget (`parallel.gpus`). */
    gpus: number;
    /** The card's name. */
    gpu: string;
    /** What a process can use on the card, bytes. */
    capacity_bytes: number;
    /** Layouts estimated (valid for the model and framework). */
    considered: number;
    /** Samples per optimizer step every layout trains (gpus x micro_batch x grad_accum of the request). */
    global_batch: number;
    /** Host RAM per node the offload layouts are checked against, bytes. */
    host_ram_bytes: number;
    /** true when host_ram_bytes is the default (plan.host_ram_gib not given). */
    host_ram_default: boolean;
    /** Of those, how many fit. */
    fitting: number;
    notes: string[];
    /** Best first, same global batch: fits with headroom, then fits; no offload; least recompute and bubble; least tp; least traffic. */
    candidates: PlanCandidate[];
  };
}

/**
 * The verdict, decided once in core (fit.h verdict_of): "fits" (within the headroom rule, or an engine
 * budget where the rule does not apply), "tight" (fits above it), "fits_with_paging", "does_not_fit";
 * GPU table rows also "unsupported" (the card cannot run the job: bf16, FlashAttention-2, FP8).
 */
export type FitStatus = 'fits' | 'tight' | 'fits_with_paging' | 'does_not_fit' | 'unsupported';

/** One change that would make the job fit (`suggest(request)`). */
export interface Suggestion {
  /** "fused_loss", "checkpointing_selective", "checkpointing_full", "micro_batch", "optimizer_8bit", "optimizer_paged_8bit", "lora", "qlora", "seq_len", "more_gpus", "gpu", "combined". */
  key: string;
  title: string;
  /** The change as request fields (JSON merge patch: null removes a field). */
  patch: Record<string, unknown>;
  /** The patched request's peak, estimated again. */
  peak_bytes: number;
  utilization: number;
  fits: boolean;
  headroom_ok: boolean;
  status: FitStatus;
  words: string;
  /** The card it was estimated on (a "gpu" suggestion changes it). */
  gpu: string;
  /**
   * The time model's step after the change (issue 31) and `vs_base`, its
   * middle over the job's as asked; null when the card has no speed figures.
   */
  time: (StepCost & { vs_base: number | null }) | null;
  cost: {
    kind: 'none' | 'speed' | 'optimizer precision' | 'quality' | 'data' | 'hardware';
    /** Step time relative to the job as asked, where a source gives one; null otherwise. */
    step_time_factor: number | null;
    text: string;
    source: string;
  };
}

/** `suggest(request)`: the changes that reach the goal, cheapest first. */
export interface SuggestResult {
  schema: string;
  version: string;
  /** "fit" when the job does not fit, "headroom" when it fits above the headroom rule, "none" otherwise. */
  goal: 'fit' | 'headroom' | 'none';
  base?: {
    peak_bytes: number;
    status: FitStatus;
    gpu: string;
    capacity_bytes: number;
    /** The job's step as asked (the time model), null without speed figures. */
    time: StepCost | null;
  };
  suggestions: Suggestion[];
  notes: string[];
}

/** Thrown by the facade for rejected input, and with code "internal" when the module itself fails. */
export declare class EstimatorError extends Error {
  /** Builds the error from the boundary's error object. */
  constructor(error?: Partial<ErrorInfo>);
  /** Always "EstimatorError". */
  readonly name: 'EstimatorError';
  /** Stable error code. */
  readonly code: ErrorCode;
  /** Dotted JSON path of the offending field, "" for the whole input. */
  readonly path: string;
}

/**
 * The loaded estimator. The calls never return an error object: they throw
 * EstimatorError (the asynchronous ones reject with it). All are synchronous
 * except plan and suggest (the plan module, vram_plan.wasm) and importFiles
 * and exportConfig (the io module, vram_io.wasm), whose first call loads
 * their module.
 */
export interface Vram {
  /**
   * Estimates a request. Throws EstimatorError for bad input. The module a
   * page loads first (vram_core.wasm) estimates training for llama, mistral,
   * qwen2 and qwen3 configs (and custom sizes); anything else needs the
   * full module (vram_plan.wasm): once loadFull() has resolved the same call
   * answers, until then it throws code "not_in_module".
   */
  estimate(request: Request): Result;
  /** estimate, waiting for the full module when the request needs it. */
  estimateAsync(request: Request): Promise<Result>;
  /** Loads the full module; estimate and modelInfo then answer every request synchronously. */
  loadFull(): Promise<true>;
  /** The code ("not_in_module") estimate and modelInfo throw until loadFull has resolved, for what only the full module answers. */
  readonly notInModule: 'not_in_module';
  /** Counts a model's parameters: `{config}` or `{custom}` (or a whole request). Throws EstimatorError for bad input, and "not_in_module" as estimate. */
  modelInfo(model: ModelInput | Request): ModelInfo;
  /**
   * Ranks every layout of `parallel.gpus` GPUs on `gpu` for a training
   * request. Rejects with EstimatorError for bad input. Asynchronous: the
   * planner and the suggestions live in a module of their own
   * (vram_plan.wasm) loaded on first use.
   */
  plan(request: Request): Promise<PlanResult>;
  /** What would make a training request fit its card, cheapest first. Asynchronous, as plan. */
  suggest(request: Request): Promise<SuggestResult>;
  /**
   * The time model alone (the result's `time` object, without the memory
   * estimate's searches), from the plan module: asynchronous, as the first
   * call loads it.
   */
  time(request: Request): Promise<TimeAnswer>;
  /** Version, schema, supported model types and the GPU catalog. */
  version(): VersionInfo;
  /** Every request field: default, allowed values, limits, label, CLI flag and URL key (`vram-probe fields --json`). From the full module (the page bundles the table). */
  fields(): Promise<FieldsInfo>;
  /** What a layout's data parallel comes to and which options it can take, by the core's own rules. */
  layoutOptions(parallel: LayoutInput): LayoutOptions;
  /**
   * The defaults a framework's recipe for a method sets (`train.framework`), from the core's table. The
   * core module answers hf at its newest release; any other framework, a release or `versions` throws
   * `not_in_module` until `loadFull()` has resolved (the tables are the full module's).
   */
  frameworkDefaults(query: FrameworkQuery): FrameworkDefaults;
  /**
   * The request a run's own configuration files give (Axolotl, LLaMA-Factory,
   * torchtune, LitGPT, TrainingArguments, PEFT, bitsandbytes, config.json,
   * DeepSpeed, accelerate), each file as its parsed JSON tree, with a report
   * of every key (core/include/vram/import.h). Asynchronous: import and
   * export live in a second module (vram_io.wasm) loaded on first use.
   */
  importFiles(input: ImportInput): Promise<ImportResult>;
  /**
   * The file that reproduces a request's training job in a framework:
   * `{...request, export: {format, model_id?}}` -> `{format, file, text}`.
   * Asynchronous, as importFiles.
   */
  exportConfig(input: ExportInput): Promise<ExportResult>;
}

/** Which framework's recipe, for which training method. */
export interface FrameworkQuery {
  /** A `train.framework` value (aliases accepted). */
  framework: string;
  /** A `train.method` value; the core's default when absent. */
  method?: string;
  /** Library versions overriding the release's (`versions.bitsandbytes`, ...). */
  versions?: Record<string, string>;
}

/** One framework's defaults for one method (core/src/frameworks.cpp). */
export interface FrameworkDefaults {
  /** Canonical framework name. */
  framework: string;
  /** For people, e.g. "torchtune". */
  label: string;
  /** The release the defaults are for (the newest when the query named none). */
  release: string;
  /** Canonical method name. */
  method: string;
  /** Each default: request field path, its value, and the framework file it comes from. */
  defaults: { path: string; value: unknown; source: string }[];
  /** What the framework does that no request field expresses (shown with the result). */
  not_modelled: string[];
}

/** The part of `parallel` the layout rules read. */
export interface LayoutInput {
  gpus?: number;
  tp?: number;
  pp?: number;
  cp?: number;
  /** DeepSpeed ZeRO stage 0-3. */
  zero?: number;
  /** FSDP sharding strategy, '' for none. */
  fsdp?: string;
}

/** The core's layout rules for one layout. */
export interface LayoutOptions {
  /** Data parallel: parallel.gpus / (tp x pp x cp), at least 1. */
  dp: number;
  /** offload_optimizer needs ZeRO >= 1 or FSDP. */
  offload_optimizer: boolean;
  /** offload_params needs ZeRO-3 or FSDP full_shard / hybrid_shard. */
  offload_params: boolean;
  /** Megatron's distributed optimizer replaces ZeRO and FSDP. */
  distributed_optimizer: boolean;
}

/**
 * Loads the WebAssembly module on the first call and resolves to the
 * estimator; later calls return the same promise. After the module itself
 * fails (code "internal"), the next call loads a new instance. Rejects with
 * EstimatorError (code "internal") when the module cannot be loaded.
 */
export declare function loadVram(): Promise<Vram>;

/** The plan module's calls, synchronous once it is loaded (loadPlanner). */
export interface Planner {
  /** As Vram.plan, synchronous. Throws EstimatorError for bad input. */
  plan(request: Request): PlanResult;
  /** As Vram.suggest, synchronous. Throws EstimatorError for bad input. */
  suggest(request: Request): SuggestResult;
  /** The full module's estimate (every family, inference, the time model), synchronous. */
  estimate(request: Request): Result;
  /** The time model alone: the estimate's `time` object without the memory searches, synchronous. */
  time(request: Request): TimeAnswer;
}

/** `time(request)`: the time model's answer. */
export interface TimeAnswer {
  schema: string;
  version: string;
  time: TimeResult;
}

/**
 * Loads the plan module (vram_plan.wasm: the planner and the suggestions)
 * without the core on the first call and resolves to its calls; later calls
 * return the same promise. The planner's and the suggestions' Web Workers use
 * it. Rejects with EstimatorError (code "internal") when the module cannot be
 * loaded.
 */
export declare function loadPlanner(): Promise<Planner>;

/** The code of the answer "the full module answers this" (core errc::kNotInModule). */
export declare const kNotInModule: 'not_in_module';

/** Loads the full module (vram_plan.wasm): Vram.estimate and modelInfo then answer every request synchronously. */
export declare function loadFull(): Promise<true>;

/** One module's own answer text (`core` or `plan`), without the facade's fallback to the full module. */
export declare function moduleRaw(which: 'core' | 'plan', name: string, text?: string): Promise<string>;

/** A module's live instance, for diagnostics (instanceStats). */
export interface InstanceStats {
  /**
   * Failures that have unwound in this instance (the modules are built
   * without C++ exceptions: each leaves what the failed work allocated, and
   * the facade replaces an instance that has any).
   */
  unwinds: number;
  /** The instance's linear memory, in bytes. */
  memoryBytes: number;
}

/** Diagnostics of a module's live instance (loading it if needed). */
export declare function instanceStats(which?: 'core' | 'plan' | 'io'): Promise<InstanceStats>;

/**
 * The exact output text for a request text, errors included as
 * `{"error": {...}}` text: byte-for-byte what
 * `vram-probe estimate --request FILE --json` prints, without its final newline.
 */
export declare function estimateRaw(requestText: string): Promise<string>;

/**
 * The exact model summary text for a model text (`{"config": {...}}`), errors
 * included: what `vram-probe params --config FILE --json` prints, without its
 * final newline.
 */
export declare function modelInfoRaw(modelText: string): Promise<string>;

/**
 * The planner's exact output text for a request text, errors included:
 * what `vram-probe plan --request FILE --json` prints, without its final newline.
 */
export declare function planRaw(requestText: string): Promise<string>;

/**
 * The fields table's exact text: what `vram-probe fields --json` prints,
 * without its final newline.
 */
export declare function fieldsRaw(): Promise<string>;

/** One configuration file: its name and its content parsed as JSON (YAML through the npm `yaml` package). */
export interface ImportFile {
  file: string;
  content: Record<string, unknown>;
}

/** importFiles' input: the files, and the Hub ids of the bundled presets. */
export interface ImportInput {
  files: ImportFile[];
  presets?: string[];
}

/** What one file gave: the keys used, not understood and ignored. */
export interface ImportReport {
  file: string;
  kind: string;
  used: { key: string; field?: string; value?: unknown; note?: string }[];
  not_understood: { key: string; why: string }[];
  ignored: string[];
}

/** importFiles' result. */
export interface ImportResult {
  /** The request fields the files set (no model unless a config.json is among them). */
  request: Record<string, unknown>;
  /** The model a recipe names, and the bundled preset that matches it, or null. */
  model: { id: string; file: string; key: string; preset: string | null } | null;
  files: ImportReport[];
}

/** The importer's exact output text (errors included), as `vram-probe import --json` prints it. */
export declare function importFilesRaw(inputText: string): Promise<string>;

/** exportConfig's input: a training request plus the format to write. */
export type ExportInput = Request & {
  export: {
    format: 'deepspeed' | 'accelerate' | 'trainer' | 'axolotl' | 'llama_factory' | 'torchtune';
    /** The Hub id written as the recipe's model (else config._name_or_path). */
    model_id?: string;
  };
};

/** exportConfig's result: a file name and its text. */
export interface ExportResult {
  format: string;
  file: string;
  text: string;
}

// The form speaks the user's vocabulary (HF Trainer, PEFT, DeepSpeed, FSDP,
// LLaMA-Factory, vLLM); this file maps each of those choices to the request
// field and value of the estimator's JSON contract (docs/schema.md). Labels
// are what the page shows; `value` is what the request carries.

import { FIELDS } from './fields.js';

export const TASKS = [
  { value: 'train', label: 'Training / fine-tuning' },
  { value: 'infer', label: 'Inference' },
];

// LLaMA-Factory's finetuning_type (full | freeze | lora) plus QLoRA, which is
// LoRA over a 4-bit NF4 base (quantization_bit: 4 / BitsAndBytesConfig).
export const METHODS = [
  { value: 'full', label: 'full' },
  { value: 'lora', label: 'lora' },
  { value: 'qlora', label: 'qlora (4-bit NF4 base)' },
  { value: 'freeze', label: 'freeze (some layers train)' },
];

// How the model is held and computed in: HF Trainer's bf16/fp16 flags with a
// model loaded in fp32 are autocast (AMP); a model loaded with
// torch_dtype=bfloat16 and no flag is pure bf16; DeepSpeed/FSDP mixed
// precision keeps fp32 master weights in the optimizer.
export const PRECISIONS = [
  {
    value: 'bf16',
    label: 'bf16 (pure)',
    hint: 'Model loaded with torch_dtype=bfloat16: weights, gradients and torch optimizer states in bf16.',
  },
  {
    value: 'fp16',
    label: 'fp16 (pure)',
    hint: 'Model loaded with torch_dtype=float16: everything in fp16.',
  },
  {
    value: 'amp_bf16',
    label: 'bf16 AMP',
    hint: 'bf16=True on an fp32-loaded model: fp32 weights and states, bf16 autocast.',
  },
  {
    value: 'amp_fp16',
    label: 'fp16 AMP',
    hint: 'fp16=True on an fp32-loaded model: fp32 weights, fp16 autocast and GradScaler.',
  },
  {
    value: 'mixed_bf16',
    label: 'bf16 + fp32 master',
    hint: 'DeepSpeed / FSDP / Megatron mixed precision: bf16 weights and gradients, fp32 master weights and optimizer states.',
  },
  { value: 'fp32', label: 'fp32', hint: 'No mixed precision: everything in fp32.' },
];

// HF Trainer `optim` names (transformers TrainingArguments / OptimizerNames),
// shown until the estimator's own list (vram.version().optimizers) arrives.
export const OPTIMIZERS = [
  { value: 'adamw_torch', label: 'adamw_torch' },
  { value: 'adamw_torch_fused', label: 'adamw_torch_fused' },
  { value: 'adamw_bnb_8bit', label: 'adamw_bnb_8bit' },
  { value: 'paged_adamw_8bit', label: 'paged_adamw_8bit' },
  { value: 'paged_adamw_32bit', label: 'paged_adamw_32bit' },
  { value: 'adafactor', label: 'adafactor' },
  { value: 'lion_32bit', label: 'lion_32bit' },
  { value: 'lion_8bit', label: 'lion_8bit' },
  { value: 'sgd', label: 'sgd' },
];

// attn_implementation of from_pretrained.
export const ATTENTIONS = [
  { value: 'sdpa', label: 'sdpa' },
  { value: 'flash_attention_2', label: 'flash_attention_2' },
  { value: 'eager', label: 'eager (keeps s² scores)' },
  { value: 'xformers', label: 'xformers (K/V expanded to every head)' },
];

// How batches are shaped (train.padding): padding to max_length and packing
// give every step micro_batch x seq_len; padding to the longest sample of
// each batch (DataCollatorWithPadding, torchtune padded_collate_sft) gives
// every step its own length, and the allocator caches the blocks of each.
export const PADDINGS = [
  { value: 'max_length', label: 'padded to max_length' },
  { value: 'packed', label: 'packed' },
  { value: 'longest', label: 'padded to longest' },
];

// gradient_checkpointing=True recomputes every layer in backward (full);
// selective recomputes only the attention score path (Megatron's
// --recompute-granularity selective); selective_op is torchtitan's op-level
// policy (layer input, every second matmul and the attention output kept).
export const CHECKPOINTING = [
  { value: 'none', label: 'off' },
  { value: 'full', label: 'on (every layer recomputed)' },
  { value: 'selective', label: 'selective (attention only)' },
  { value: 'selective_op', label: 'selective, op level (torchtitan)' },
];

// PEFT LoraConfig(target_modules=...). "all-linear" is PEFT's shortcut for
// every nn.Linear except the output layer.
export const LORA_TARGET_PRESETS = [
  { value: 'all-linear', label: 'all-linear' },
  { value: 'q_proj,v_proj', label: 'q_proj, v_proj' },
  { value: 'q_proj,k_proj,v_proj,o_proj', label: 'q_proj, k_proj, v_proj, o_proj' },
];

// How the model is served (each engine's one-line description, for the
// form's hint, is in vocabulary-serving.js ENGINE_HINTS).
export const ENGINES = [
  {
    value: 'hf',
    label: 'transformers generate',
  },
  {
    value: 'vllm',
    label: 'vLLM (vllm serve)',
  },
  {
    value: 'sglang',
    label: 'SGLang (sglang.launch_server)',
  },
  {
    value: 'llama_cpp',
    label: 'llama.cpp (GGUF)',
  },
  {
    value: 'ollama',
    label: 'Ollama',
  },
  {
    value: 'lmstudio',
    label: 'LM Studio',
  },
  {
    value: 'litgpt',
    label: 'LitGPT generate',
  },
];

// vLLM's entrypoint: its default batch limits differ (UsageContext).
export const ENTRYPOINTS = [
  { value: 'server', label: 'vllm serve' },
  { value: 'offline', label: 'LLM class (offline)' },
];

// Serving dtype of the weights (torch_dtype, or the quantisation method).
export const WEIGHT_DTYPES = [
  { value: 'bf16', label: 'bf16' },
  { value: 'fp16', label: 'fp16' },
  { value: 'fp32', label: 'fp32' },
  { value: 'fp8', label: 'fp8' },
  { value: 'int8', label: 'int8 (bitsandbytes LLM.int8 / W8)' },
  { value: 'int4', label: 'int4' },
  { value: 'nf4', label: 'nf4 (bitsandbytes 4-bit)' },
  { value: 'awq', label: 'awq' },
  { value: 'gptq', label: 'gptq' },
];

// vLLM's kv_cache_dtype ("auto" = the weights' dtype).
export const KV_DTYPES = [
  { value: 'bf16', label: 'bf16' },
  { value: 'fp16', label: 'fp16' },
  { value: 'fp8', label: 'fp8' },
  { value: 'fp32', label: 'fp32' },
];

// DeepSpeed zero_optimization.stage.
export const ZERO_STAGES = [
  { value: 0, label: '0 (off: plain DDP)' },
  { value: 1, label: '1 (optimizer sharded)' },
  { value: 2, label: '2 (+ gradients sharded)' },
  { value: 3, label: '3 (+ params sharded)' },
];

// FSDP sharding_strategy (accelerate's fsdp_sharding_strategy).
export const FSDP_STRATEGIES = [
  { value: '', label: 'off' },
  { value: 'full_shard', label: 'FULL_SHARD' },
  { value: 'shard_grad_op', label: 'SHARD_GRAD_OP' },
  { value: 'hybrid_shard', label: 'HYBRID_SHARD (shard within a node)' },
  { value: 'no_shard', label: 'NO_SHARD (like DDP)' },
];

// accelerate's fsdp_config.fsdp_version: FSDP1 wraps units into one
// FlatParameter each; FSDP2 (fully_shard) shards every parameter as a DTensor.
// '' leaves it to the framework release (the core's rule; the layout line
// says which it is).
export const FSDP_VERSIONS = [
  { value: '', label: "the framework release's" },
  { value: 1, label: 'FSDP1 (FlatParameter)' },
  { value: 2, label: 'FSDP2 (fully_shard)' },
];

// FSDP MixedPrecision(reduce_dtype=...): the dtype gradients are
// reduce-scattered in; unset follows param_dtype.
export const REDUCE_DTYPES = [
  { value: '', label: 'same as the parameters' },
  { value: 'bf16', label: 'bf16' },
  { value: 'fp16', label: 'fp16' },
  { value: 'fp32', label: 'fp32' },
];

// NCCL_NVLS_ENABLE: NVLink SHARP buffers exist on NVSwitch systems (H100/H200
// HGX); 'auto' lets the estimator decide from the GPU.
export const NVLS_MODES = [
  { value: 'auto', label: 'auto (by GPU)' },
  { value: 'on', label: 'on' },
  { value: 'off', label: 'off' },
];

// hardware.link: the link between a node's GPUs (core/src/speed/links.cpp
// has each one's measured bus bandwidth); '' = the card's usual board.
export const LINKS = [
  { value: '', label: 'by GPU' },
  { value: 'nvlink5', label: 'NVLink 5 (B200)' },
  { value: 'nvlink4', label: 'NVLink 4 (H100 / H200 SXM)' },
  { value: 'nvlink3', label: 'NVLink 3 (A100 SXM)' },
  { value: 'nvlink2', label: 'NVLink 2 (V100 SXM2)' },
  { value: 'nvlink_bridge', label: 'NVLink bridge (pairs)' },
  { value: 'xgmi', label: 'xGMI (AMD Instinct)' },
  { value: 'pcie5', label: 'PCIe 5' },
  { value: 'pcie4', label: 'PCIe 4' },
  { value: 'pcie3', label: 'PCIe 3' },
];

// The layout planner's families (vram-probe plan --framework): which
// sharding it may choose. DeepSpeed: ZeRO 0-3 (pipelines with ZeRO 0/1);
// FSDP: its sharding strategies; Megatron-LM: DDP or the distributed
// optimizer, with sequence parallel whenever tensor parallel is used.
export const PLAN_FRAMEWORKS = [
  { value: 'deepspeed', label: 'DeepSpeed (ZeRO)' },
  { value: 'fsdp', label: 'FSDP' },
  { value: 'megatron', label: 'Megatron-LM' },
];

// The framework names of the training-layout boxes (DeepSpeed config keys,
// accelerate / Megatron / torchrun arguments), shown beside each label.
export const PARALLEL_NAMES = {
  gpus: 'world_size',
  tp: 'tensor_parallel_size',
  pp: 'pipeline_parallel_size',
  cp: 'context_parallel_size',
  zero: 'zero_optimization.stage',
  fsdp: 'fsdp_sharding_strategy',
  offload_optimizer: 'zero_optimization.offload_optimizer.device',
  offload_params: 'zero_optimization.offload_param.device',
  sequence_parallel: 'sequence_parallel',
  gpus_per_node: 'nproc_per_node',
  nodes: 'nnodes',
  ep: 'expert_model_parallel_size',
  vp: 'virtual_pipeline_model_parallel_size',
  distributed_optimizer: 'use_distributed_optimizer',
  main_grads_fp32: 'accumulate_allreduce_grads_in_fp32',
  fsdp_version: 'fsdp_version',
  fsdp_reduce_dtype: 'mixed_precision.reduce_dtype',
  nccl_channels: 'NCCL_MAX_NCHANNELS',
  nvls: 'NCCL_NVLS_ENABLE',
  deepspeed: 'ds_config.json',
};

/** The label of `value` in an option list, or the value itself. */
export function labelOf(options, value) {
  const o = options.find((x) => x.value === value);
  return o ? o.label : String(value);
}

// Request paths in words, for error messages: which box of the form, or
// which config.json key, the core complained about. The request fields'
// labels are the core's (fields.json); the rest are the page's own.
const PATH_WORDS = {
  model: 'Model',
  ...Object.fromEntries(FIELDS.map((f) => [f.path, f.label])),
  'plan.framework': 'Framework',
  'plan.top': 'Layouts shown',
  'plan.allow_checkpointing': 'Try activation checkpointing',
  'plan.allow_offload': 'Try CPU offload',
  gpu: 'GPU',
};

/**
 * A request path ("model.config.text_config.hidden_size", "train.seq_len")
 * in words: "config.json › text_config › hidden_size", "Training ›
 * max_seq_length (train.seq_len)".
 */
export function describePath(path) {
  if (!path) return '';
  const p = String(path);
  if (p.startsWith('model.config.')) {
    return `config.json › ${p.slice('model.config.'.length).split('.').join(' › ')}`;
  }
  if (p.startsWith('deepspeed.')) {
    return `DeepSpeed config › ${p.slice('deepspeed.'.length).split('.').join(' › ')}`;
  }
  if (p.startsWith('model.custom.')) {
    return `custom model › ${p.slice('model.custom.'.length).split('.').join(' › ')}`;
  }
  if (PATH_WORDS[p]) {
    const section = p.startsWith('train.')
      ? 'Training › '
      : p.startsWith('infer.')
        ? 'Inference › '
        : p.startsWith('parallel.')
          ? 'Parallelism › '
          : p.startsWith('plan.')
            ? 'Layout planner › '
            : p.startsWith('overheads.')
              ? 'Overheads › '
              : '';
    return `${section}${PATH_WORDS[p]} (${p})`;
  }
  return p.split('.').join(' › ');
}

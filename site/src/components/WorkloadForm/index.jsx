// The job: training or inference, in HF Trainer / PEFT / vLLM vocabulary.

import {
  framework,
  frameworkOptions,
  hasVisionTower,
  isLlamaEngine,
  layerCount,
  model,
  modelFacts,
  optimizerOptions,
  releaseOptions,
  setFramework,
  setMethod,
  setRelease,
  setSetting,
  settings,
} from '../../lib/state.js';
import { fieldInfo } from '../../lib/fields.js';
import { getPath } from '../../lib/paths.js';
import {
  ATTENTIONS,
  CACHE_TYPES,
  CHECKPOINTING,
  FLASH_ATTN,
  GGUF_TYPES,
  PADDINGS,
  ENGINES,
  ENTRYPOINTS,
  KV_DTYPES,
  LORA_TARGET_PRESETS,
  METHODS,
  PRECISIONS,
  TASKS,
  WEIGHT_DTYPES,
} from '../../lib/vocabulary.js';
import { CheckboxField, NumberField, SelectField, TextField } from '../Field/index.jsx';
import styles from './style.module.css';

function TaskSwitch({ value }) {
  return (
    <div class={styles.switch} role="radiogroup" aria-label="Task">
      {TASKS.map((t) => (
        <label
          key={t.value}
          class={styles.switchOption}
          data-checked={value === t.value ? '' : undefined}
        >
          <input
            type="radio"
            name="task"
            value={t.value}
            checked={value === t.value}
            onChange={() => setSetting('task', t.value)}
          />
          {t.label}
        </label>
      ))}
    </div>
  );
}

function LoraFields({ lora }) {
  const preset = LORA_TARGET_PRESETS.some((p) => p.value === lora.targets);
  return (
    <fieldset class={styles.group}>
      <legend class={styles.legend}>LoRA adapters</legend>
      <div class={styles.grid}>
        <NumberField
          label="Rank"
          name="r"
          value={lora.rank}
          min={1}
          max={65536}
          onChange={(v) => setSetting('train.lora.rank', v)}
        />
        <NumberField
          label="Alpha"
          name="lora_alpha"
          value={lora.alpha}
          min={1}
          max={1e6}
          onChange={(v) => setSetting('train.lora.alpha', v)}
        />
        <SelectField
          label="Target modules"
          name="target_modules"
          value={preset ? lora.targets : 'custom'}
          options={[...LORA_TARGET_PRESETS, { value: 'custom', label: 'custom list…' }]}
          onChange={(v) =>
            setSetting('train.lora.targets', v === 'custom' ? 'q_proj,v_proj,gate_proj' : v)
          }
        />
        {!preset && (
          <TextField
            label="Module names, comma-separated"
            name="target_modules"
            value={lora.targets}
            onChange={(v) => setSetting('train.lora.targets', v)}
            hint="Leaf names as in the model: q_proj, c_attn, query_key_value, …"
          />
        )}
      </div>
    </fieldset>
  );
}

function FreezeFields({ text }) {
  const n = layerCount(model.value?.config);
  return (
    <fieldset class={styles.group}>
      <legend class={styles.legend}>Frozen model</legend>
      <TextField
        label="Trainable modules, comma-separated"
        name="freeze_trainable_modules"
        value={text}
        placeholder={n >= 2 ? `layers.${n - 2}, layers.${n - 1}` : 'layers.0'}
        onChange={(v) => setSetting('train.freeze_modules', v)}
        hint="Leaf names (lm_head, q_proj) or layers.N. Empty: the last two layers train, as LLaMA-Factory's freeze_trainable_layers=2."
      />
    </fieldset>
  );
}

// The hint under a field whose value is the chosen framework's default.
function frameworkHint(path, t) {
  // No hint while the recipe loads (framework.value undefined).
  const fw = framework.value ?? {};
  if (!(path in fw) || getPath(t, path.slice('train.'.length)) !== fw[path]) return undefined;
  const label = frameworkOptions.value.find((o) => o.value === t.framework)?.label ?? t.framework;
  return `${label}${t.release ? ` ${t.release}` : ''} default`;
}

function TrainingFields({ t }) {
  const fwHint = (path) => frameworkHint(path, t);
  return (
    <>
      <div class={styles.grid}>
        <SelectField
          label="Framework"
          name="train.framework"
          value={t.framework}
          options={frameworkOptions.value}
          onChange={setFramework}
          hint="Its recipe's defaults fill the fields below; what you change wins."
        />
        <SelectField
          label="Release"
          name="framework@release"
          value={t.release}
          options={releaseOptions.value}
          onChange={setRelease}
          hint="The libraries its users ran (PyTorch, transformers, PEFT, bitsandbytes, torchao) follow it."
        />
        <SelectField
          label="Method"
          name="finetuning_type"
          value={t.method}
          options={METHODS}
          onChange={setMethod}
        />
        <SelectField
          label="Precision"
          name="bf16 / fp16 / torch_dtype"
          value={t.precision}
          options={PRECISIONS}
          onChange={(v) => setSetting('train.precision', v)}
          hint={fwHint('train.precision') ?? PRECISIONS.find((p) => p.value === t.precision)?.hint}
        />
        <NumberField
          label="Micro-batch per GPU"
          name="per_device_train_batch_size"
          value={t.micro_batch}
          max={65536}
          onChange={(v) => setSetting('train.micro_batch', v)}
        />
        <NumberField
          label="Sequence length"
          name="max_seq_length"
          value={t.seq_len}
          max={16777216}
          onChange={(v) => setSetting('train.seq_len', v)}
        />
        {hasVisionTower(modelFacts.value) && (
          <NumberField
            label="Images per sample"
            name="train.images_per_sample"
            value={t.images_per_sample}
            min={0}
            max={fieldInfo('train.images_per_sample').max}
            onChange={(v) => setSetting('train.images_per_sample', v)}
            hint="Images through the vision tower per training sample; 0: text-only samples."
          />
        )}
        <NumberField
          label="Gradient accumulation"
          name="gradient_accumulation_steps"
          value={t.grad_accum}
          max={65536}
          onChange={(v) => setSetting('train.grad_accum', v)}
        />
        <SelectField
          label="Optimizer"
          name="optim"
          value={t.optimizer}
          options={optimizerOptions.value}
          onChange={(v) => setSetting('train.optimizer', v)}
          hint={fwHint('train.optimizer')}
        />
        <SelectField
          label="Attention kernel"
          name="attn_implementation"
          value={t.attention}
          options={ATTENTIONS}
          onChange={(v) => setSetting('train.attention', v)}
          hint={fwHint('train.attention')}
        />
        <SelectField
          label="Batches"
          name="padding"
          value={t.padding}
          options={PADDINGS}
          onChange={(v) => setSetting('train.padding', v)}
          hint={fwHint('train.padding')}
        />
        <SelectField
          label="Gradient checkpointing"
          name="gradient_checkpointing"
          value={t.grad_checkpointing}
          options={CHECKPOINTING}
          onChange={(v) => setSetting('train.grad_checkpointing', v)}
          hint={fwHint('train.grad_checkpointing')}
        />
      </div>
      <div class={styles.checks}>
        <CheckboxField
          label="Fused cross-entropy"
          name="use_liger_kernel"
          checked={t.fused_loss}
          onChange={(v) => setSetting('train.fused_loss', v)}
        />
        <CheckboxField
          label="Offload activations to CPU"
          name="enable_activation_offloading"
          checked={t.activation_offload}
          onChange={(v) => setSetting('train.activation_offload', v)}
        />
        <CheckboxField
          label="Optimizer step in backward"
          name="optimizer_in_bwd"
          checked={t.optimizer_in_backward}
          onChange={(v) => setSetting('train.optimizer_in_backward', v)}
        />
        <CheckboxField
          label="torch.compile (not modelled: eager figure)"
          name="torch_compile"
          checked={t.compile}
          onChange={(v) => setSetting('train.compile', v)}
        />
      </div>
      {(t.method === 'lora' || t.method === 'qlora') && <LoraFields lora={t.lora} />}
      {t.method === 'freeze' && <FreezeFields text={t.freeze_modules} />}
    </>
  );
}

/** The engine's release, whose rules the estimate applies (absent: the newest modelled). */
function ReleaseField({ i, example }) {
  return (
    <TextField
      label="Engine release"
      name="infer.engine_version"
      value={i.engine_version ?? ''}
      placeholder={example}
      onChange={(v) => setSetting('infer.engine_version', v.trim())}
      hint={`The release you run (${example}); empty: the newest modelled.`}
    />
  );
}

function VllmFields({ i }) {
  return (
    <fieldset class={styles.group}>
      <legend class={styles.legend}>vLLM engine arguments</legend>
      <div class={styles.grid}>
        <NumberField
          label="GPU memory utilization"
          name="gpu_memory_utilization"
          value={i.gpu_memory_utilization}
          min={0.01}
          max={1}
          step={0.01}
          integer={false}
          onChange={(v) => setSetting('infer.gpu_memory_utilization', v)}
          hint="Fraction of the GPU vLLM takes; the KV cache gets what the weights leave."
        />
        <NumberField
          label="Max sequences at once"
          name="max_num_seqs"
          value={i.max_num_seqs}
          max={65536}
          optional
          onChange={(v) => setSetting('infer.max_num_seqs', v)}
          hint="Empty: vLLM's default for the GPU (1024 on 70 GiB cards but the A100, else 256)."
        />
        <NumberField
          label="Max batched tokens"
          name="max_num_batched_tokens"
          value={i.max_num_batched_tokens}
          max={16777216}
          optional
          onChange={(v) => setSetting('infer.max_num_batched_tokens', v)}
          hint="Empty: vLLM's default for the GPU and entrypoint (8192 or 2048 for vllm serve)."
        />
        <NumberField
          label="KV block size (tokens)"
          name="block_size"
          value={i.block_size}
          max={4096}
          onChange={(v) => setSetting('infer.block_size', v)}
        />
        <SelectField
          label="Entrypoint"
          name="usage context"
          value={i.entrypoint}
          options={ENTRYPOINTS}
          onChange={(v) => setSetting('infer.entrypoint', v)}
        />
        <ReleaseField i={i} example="0.11.1" />
      </div>
      <div class={styles.checks}>
        <CheckboxField
          label="No CUDA graphs"
          name="enforce_eager"
          checked={i.enforce_eager}
          onChange={(v) => setSetting('infer.enforce_eager', v)}
        />
      </div>
    </fieldset>
  );
}

// llama.cpp's own settings, in its flags' words (Ollama and LM Studio name
// a few of them otherwise, as the labels say).
function LlamaFields({ i }) {
  const ollama = i.engine === 'ollama';
  const ggufModel = Boolean(model.value?.gguf);
  return (
    <div class={styles.grid}>
      <SelectField
        label="Engine"
        name="llama.cpp / Ollama / LM Studio"
        value={i.engine}
        options={ENGINES}
        onChange={(v) => setSetting('infer.engine', v)}
        hint={ENGINES.find((e) => e.value === i.engine)?.hint}
      />
      {ollama ? (
        <NumberField
          label="num_ctx"
          name="infer.context_len"
          value={i.context_len}
          max={16777216}
          onChange={(v) => setSetting('infer.context_len', v)}
          hint="Tokens per sequence; the runner gets num_ctx × OLLAMA_NUM_PARALLEL KV cells."
        />
      ) : (
        <NumberField
          label="--ctx-size"
          name="infer.ctx_size"
          value={i.ctx_size}
          min={0}
          max={16777216}
          onChange={(v) => setSetting('infer.ctx_size', v)}
          hint="KV cells for all sequences; 0: the release's default (the model's context length)."
        />
      )}
      <NumberField
        label={ollama ? 'OLLAMA_NUM_PARALLEL' : '--parallel'}
        name="infer.parallel"
        value={i.parallel}
        min={0}
        max={256}
        onChange={(v) => setSetting('infer.parallel', v)}
        hint={
          ollama
            ? "0: Ollama's default for its version."
            : "0: the release's default (llama-server 2025-12: 4 slots sharing one KV cache)."
        }
      />
      <NumberField
        label={ollama ? 'num_gpu (layers)' : '--n-gpu-layers'}
        name="infer.n_gpu_layers"
        value={i.n_gpu_layers}
        min={-1}
        max={100000}
        onChange={(v) => setSetting('infer.n_gpu_layers', v)}
        hint={
          ollama
            ? '-1: Ollama places the layers that fit.'
            : "-1: the release's default (every layer)."
        }
      />
      <SelectField
        label={ollama ? 'OLLAMA_FLASH_ATTENTION' : '--flash-attn'}
        name="infer.flash_attn"
        value={i.flash_attn}
        options={FLASH_ATTN}
        onChange={(v) => setSetting('infer.flash_attn', v)}
      />
      <SelectField
        label={ollama ? 'OLLAMA_KV_CACHE_TYPE' : '--cache-type-k'}
        name="infer.cache_type_k"
        value={i.cache_type_k}
        options={CACHE_TYPES}
        onChange={(v) => setSetting('infer.cache_type_k', v)}
      />
      {!ollama && (
        <SelectField
          label="--cache-type-v"
          name="infer.cache_type_v"
          value={i.cache_type_v}
          options={[{ value: '', label: 'f16' }, ...CACHE_TYPES.filter((c) => c.value !== 'f16')]}
          onChange={(v) => setSetting('infer.cache_type_v', v)}
        />
      )}
      <NumberField
        label="--ubatch-size"
        name="infer.n_ubatch"
        value={i.n_ubatch}
        max={16777216}
        onChange={(v) => setSetting('infer.n_ubatch', v)}
        hint="Tokens per compute graph: the compute buffer is reserved for them."
      />
      {!ggufModel && (
        <SelectField
          label="Quantization (llama-quantize type)"
          name="infer.weights_dtype"
          value={GGUF_TYPES.some((t) => t.value === i.weights_dtype) ? i.weights_dtype : 'BF16'}
          options={GGUF_TYPES}
          onChange={(v) => setSetting('infer.weights_dtype', v)}
          hint="For a config without a GGUF file: each tensor's type as llama-quantize picks it."
        />
      )}
      <NumberField
        label="GPUs"
        name="parallel.gpus"
        value={settings.value.parallel.gpus}
        max={64}
        onChange={(v) => setSetting('parallel.gpus', v)}
        hint="Layers are split over them (--split-mode layer)."
      />
    </div>
  );
}

function SglangFields({ i }) {
  return (
    <fieldset class={styles.group}>
      <legend class={styles.legend}>SGLang server arguments</legend>
      <div class={styles.grid}>
        <NumberField
          label="Static memory fraction"
          name="mem_fraction_static"
          value={i.mem_fraction_static}
          min={0.01}
          max={1}
          step={0.01}
          integer={false}
          optional
          onChange={(v) => setSetting('infer.mem_fraction_static', v)}
          hint="Weights + token pool share of the GPU; empty: SGLang's default for the release and GPU."
        />
        <NumberField
          label="Prefill chunk (tokens)"
          name="chunked_prefill_size"
          value={i.chunked_prefill_size}
          max={16777216}
          optional
          onChange={(v) => setSetting('infer.chunked_prefill_size', v)}
          hint="Empty: SGLang's default for the GPU."
        />
        <NumberField
          label="Largest CUDA graph batch"
          name="cuda_graph_max_bs"
          value={i.cuda_graph_max_bs}
          max={65536}
          optional
          onChange={(v) => setSetting('infer.cuda_graph_max_bs', v)}
          hint="Empty: SGLang's default for the GPU."
        />
        <ReleaseField i={i} example="0.5.4" />
      </div>
    </fieldset>
  );
}

function InferenceFields({ i }) {
  if (isLlamaEngine(i.engine)) return <LlamaFields i={i} />;
  const served = i.engine === 'vllm' || i.engine === 'sglang';
  return (
    <>
      <div class={styles.grid}>
        <SelectField
          label="Engine"
          name="generate / vllm serve"
          value={i.engine}
          options={ENGINES}
          onChange={(v) => setSetting('infer.engine', v)}
          hint={ENGINES.find((e) => e.value === i.engine)?.hint}
        />
        <NumberField
          label="Concurrent sequences"
          name="batch_size"
          value={i.batch}
          max={65536}
          onChange={(v) => setSetting('infer.batch', v)}
        />
        <NumberField
          label="Context length"
          name="max_model_len"
          value={i.context_len}
          max={16777216}
          onChange={(v) => setSetting('infer.context_len', v)}
        />
        {!served && (
          <NumberField
            label="Prompt length"
            name="input_ids length"
            value={i.prompt_len}
            min={0}
            max={16777216}
            onChange={(v) => setSetting('infer.prompt_len', v)}
            hint="Tokens prefilled at once; 0: the whole context."
          />
        )}
        {hasVisionTower(modelFacts.value) && (
          <NumberField
            label="Images per prompt"
            name="infer.images_per_prompt"
            value={i.images_per_prompt}
            min={0}
            max={fieldInfo('infer.images_per_prompt').max}
            onChange={(v) => setSetting('infer.images_per_prompt', v)}
            hint="Images in each sequence's prompt; 0: text-only prompts."
          />
        )}
        <SelectField
          label="Weights dtype"
          name="torch_dtype / quantization"
          value={i.weights_dtype}
          options={WEIGHT_DTYPES}
          onChange={(v) => setSetting('infer.weights_dtype', v)}
        />
        <SelectField
          label="KV-cache dtype"
          name="kv_cache_dtype"
          value={i.kv_dtype}
          options={KV_DTYPES}
          onChange={(v) => setSetting('infer.kv_dtype', v)}
        />
      </div>
      {i.engine === 'vllm' && <VllmFields i={i} />}
      {i.engine === 'sglang' && <SglangFields i={i} />}
    </>
  );
}

export function WorkloadForm() {
  const s = settings.value;
  return (
    <section class={styles.card} aria-labelledby="workload-heading">
      <h2 id="workload-heading" class={styles.heading}>
        Job
      </h2>
      <TaskSwitch value={s.task} />
      {s.task === 'train' ? <TrainingFields t={s.train} /> : <InferenceFields i={s.infer} />}
    </section>
  );
}

// The inference half of the Job card (components/WorkloadForm): the engine,
// its release and its own arguments (transformers generate, vLLM, SGLang,
// llama.cpp / Ollama / LM Studio). A chunk of its own (components/Lazy): a
// first visit trains, so its script leaves these out (issue 32, first visit
// <= 220 KiB gzip); an inference link or the task switch loads them.

import {
  hasVisionTower,
  isLlamaEngine,
  model,
  modelFacts,
  setSetting,
  settings,
} from '../../lib/state.js';
import { fieldInfo } from '../../lib/fields.js';
import { ENGINES, ENTRYPOINTS, KV_DTYPES, WEIGHT_DTYPES } from '../../lib/vocabulary.js';
import { CACHE_TYPES, ENGINE_HINTS, FLASH_ATTN, GGUF_TYPES } from '../../lib/vocabulary-serving.js';
import { CheckboxField, NumberField, SelectField, TextField } from '../Field/index.jsx';
import styles from './style.module.css';

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
        hint={ENGINE_HINTS[i.engine]}
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

export function InferenceFields({ i }) {
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
          hint={ENGINE_HINTS[i.engine]}
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

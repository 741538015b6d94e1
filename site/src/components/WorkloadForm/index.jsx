// The job: training or inference, in HF Trainer / PEFT / vLLM vocabulary.

import {
  framework,
  frameworkOptions,
  hasVisionTower,
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
  CHECKPOINTING,
  PADDINGS,
  LORA_TARGET_PRESETS,
  METHODS,
  PRECISIONS,
  TASKS,
} from '../../lib/vocabulary.js';
import { CheckboxField, NumberField, SelectField, TextField } from '../Field/index.jsx';
import { lazyView } from '../Lazy/index.jsx';
import styles from './style.module.css';

// The inference fields are a chunk of their own (inference.jsx): a first
// visit trains. An inference link or the task switch loads them.
const Inference = lazyView(() => import('./inference.jsx'), 'InferenceFields');

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

export function WorkloadForm() {
  const s = settings.value;
  return (
    <section class={styles.card} aria-labelledby="workload-heading">
      <h2 id="workload-heading" class={styles.heading}>
        Job
      </h2>
      <TaskSwitch value={s.task} />
      {s.task === 'train' ? <TrainingFields t={s.train} /> : <Inference.View i={s.infer} />}
    </section>
  );
}

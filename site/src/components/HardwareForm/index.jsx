// GPUs: which card (from the core's catalog, or a custom capacity) and how
// the job is spread over several (DeepSpeed ZeRO, FSDP, tensor/pipeline
// parallel).

import { chosenGpuName, gpuCatalog, setSetting, settings } from '../../lib/state.js';
import { formatGiB } from '../../lib/format.js';
import { FSDP_STRATEGIES, ZERO_STAGES } from '../../lib/vocabulary.js';
import { CheckboxField, NumberField, SelectField } from '../Field/index.jsx';
import styles from './style.module.css';

const CUSTOM = '__custom__';

function GpuPicker({ s, catalog }) {
  const name = chosenGpuName(s, catalog);
  const options = [
    ...catalog.map((g) => ({
      value: g.name,
      label: `${g.name} (${formatGiB(g.usable_bytes ?? g.memory_bytes)} GiB usable)`,
    })),
    { value: CUSTOM, label: 'Other: enter the memory…' },
  ];
  if (!catalog.length && s.gpu.mode !== 'custom')
    options.unshift({ value: '', label: 'Loading the GPU list…' });
  return (
    <div class={styles.gpuGrid}>
      <SelectField
        label="GPU"
        value={s.gpu.mode === 'custom' ? CUSTOM : name}
        options={options}
        onChange={(v) => {
          if (v === CUSTOM) setSetting('gpu.mode', 'custom');
          else {
            settings.value = {
              ...settings.value,
              gpu: { ...settings.value.gpu, mode: 'catalog', name: v },
            };
          }
        }}
      />
      {s.gpu.mode === 'custom' && (
        <NumberField
          label="GPU memory (GiB)"
          name="memory_gib"
          value={s.gpu.memory_gib}
          min={0.5}
          max={4096}
          step={0.5}
          integer={false}
          onChange={(v) => setSetting('gpu.memory_gib', v)}
        />
      )}
    </div>
  );
}

// Inference shards with tensor parallelism alone (vLLM tensor_parallel_size,
// transformers tp_plan): the tensor-parallel box sets the GPU count too.
function InferenceParallelFields({ p }) {
  return (
    <fieldset class={styles.group}>
      <legend class={styles.legend}>Parallelism</legend>
      <div class={styles.grid}>
        <NumberField
          label="Tensor parallel"
          name="tensor_parallel_size"
          value={p.tp}
          max={1024}
          onChange={(v) => {
            settings.value = {
              ...settings.value,
              parallel: { ...settings.value.parallel, tp: v, gpus: v },
            };
          }}
          hint={
            p.tp === 1
              ? 'One GPU holds the whole model.'
              : `${p.tp} GPUs, each with 1/${p.tp} of the weights and KV heads; memory is per GPU.`
          }
        />
      </div>
    </fieldset>
  );
}

// Training: data parallel fills what tensor and pipeline parallel leave.
function TrainingParallelFields({ p }) {
  const dp = Math.floor(p.gpus / Math.max(1, p.tp * p.pp));
  const uneven = p.gpus % (p.tp * p.pp) !== 0;
  return (
    <fieldset class={styles.group}>
      <legend class={styles.legend}>Parallelism</legend>
      <div class={styles.grid}>
        <NumberField
          label="Number of GPUs"
          name="world_size"
          value={p.gpus}
          max={65536}
          onChange={(v) => setSetting('parallel.gpus', v)}
          hint={uneven ? undefined : `Data parallel: ${dp} replica${dp === 1 ? '' : 's'}`}
        />
        <NumberField
          label="Tensor parallel"
          name="tensor_parallel_size"
          value={p.tp}
          max={1024}
          onChange={(v) => setSetting('parallel.tp', v)}
        />
        <NumberField
          label="Pipeline parallel"
          name="pipeline_parallel_size"
          value={p.pp}
          max={1024}
          onChange={(v) => setSetting('parallel.pp', v)}
        />
        <SelectField
          label="ZeRO stage"
          name="zero_optimization.stage"
          value={p.zero}
          options={ZERO_STAGES}
          onChange={(v) => setSetting('parallel.zero', v)}
        />
        <SelectField
          label="FSDP"
          name="fsdp_sharding_strategy"
          value={p.fsdp}
          options={FSDP_STRATEGIES}
          onChange={(v) => setSetting('parallel.fsdp', v)}
        />
      </div>
      {uneven && (
        <p class={styles.error} role="alert">
          The number of GPUs ({p.gpus}) must be a multiple of tensor × pipeline parallel (
          {p.tp * p.pp}).
        </p>
      )}
      <div class={styles.checks}>
        <CheckboxField
          label="Offload optimizer states to CPU"
          name="offload_optimizer.device: cpu"
          checked={p.offload_optimizer}
          onChange={(v) => setSetting('parallel.offload_optimizer', v)}
        />
      </div>
    </fieldset>
  );
}

export function HardwareForm() {
  const s = settings.value;
  return (
    <section class={styles.card} aria-labelledby="hardware-heading">
      <h2 id="hardware-heading" class={styles.heading}>
        Hardware
      </h2>
      <GpuPicker s={s} catalog={gpuCatalog.value} />
      {s.task === 'infer' ? (
        <InferenceParallelFields p={s.parallel} />
      ) : (
        <TrainingParallelFields p={s.parallel} />
      )}
    </section>
  );
}

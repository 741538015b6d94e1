// GPUs: which card (from the core's catalog, or a custom capacity) and how
// the job is spread over several (DeepSpeed ZeRO, FSDP, tensor/pipeline/
// context parallel, a pasted DeepSpeed config).

import { useId } from 'preact/hooks';
import {
  canDistributeOptimizer,
  canOffloadOptimizer,
  canOffloadParams,
  chosenGpuName,
  dataParallel,
  DEFAULT_SETTINGS,
  deepspeedSets,
  gpuCatalog,
  modelFacts,
  parseDeepspeed,
  routedExperts,
  setSetting,
  settings,
} from '../../lib/state.js';
import { bytesTitle, formatBytes, formatGiB } from '../../lib/format.js';
import { deepspeedForUrl } from '../../lib/url-state.js';
import {
  FSDP_STRATEGIES,
  FSDP_VERSIONS,
  NVLS_MODES,
  PARALLEL_NAMES,
  REDUCE_DTYPES,
  ZERO_STAGES,
} from '../../lib/vocabulary.js';
import { CheckboxField, NumberField, SelectField, TextField } from '../Field/index.jsx';
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

// Training: data parallel fills what tensor, pipeline and context parallel
// leave. ZeRO and FSDP are exclusive (choosing one turns the other off); the
// offload boxes appear only where the layout allows them.
function TrainingParallelFields({ p, dsText, precision, experts }) {
  const ds = parseDeepspeed(dsText);
  const fromDs = deepspeedSets(ds.config);
  const zero = fromDs.zero ?? p.zero;
  const split = p.tp * p.pp * p.cp;
  const dp = dataParallel(p);
  const uneven = p.gpus % split !== 0;
  const setParallel = (patch) => {
    settings.value = { ...settings.value, parallel: { ...settings.value.parallel, ...patch } };
  };
  const fromConfig = 'Set by the DeepSpeed config below.';
  const sharded = zero > 0 || (p.fsdp && p.fsdp !== 'no_shard');
  const pureHalf = (precision === 'bf16' || precision === 'fp16') && fromDs.precision === undefined;
  return (
    <fieldset class={styles.group}>
      <legend class={styles.legend}>Parallelism</legend>
      <div class={styles.grid}>
        <NumberField
          label="Number of GPUs"
          name={PARALLEL_NAMES.gpus}
          value={p.gpus}
          max={65536}
          onChange={(v) => setSetting('parallel.gpus', v)}
          hint={
            uneven || dp === null ? undefined : `Data parallel: ${dp} replica${dp === 1 ? '' : 's'}`
          }
        />
        <NumberField
          label="Tensor parallel"
          name={PARALLEL_NAMES.tp}
          value={p.tp}
          max={1024}
          onChange={(v) => setSetting('parallel.tp', v)}
        />
        <NumberField
          label="Pipeline parallel"
          name={PARALLEL_NAMES.pp}
          value={p.pp}
          max={1024}
          onChange={(v) => setSetting('parallel.pp', v)}
        />
        <NumberField
          label="Context parallel"
          name={PARALLEL_NAMES.cp}
          value={p.cp}
          max={1024}
          onChange={(v) => setSetting('parallel.cp', v)}
          hint={p.cp > 1 ? `Each GPU holds 1/${p.cp} of every sequence.` : undefined}
        />
        {experts > 0 && (
          <NumberField
            label="Expert parallel"
            name={PARALLEL_NAMES.ep}
            value={p.ep}
            max={4096}
            onChange={(v) => setSetting('parallel.ep', v)}
            hint={
              experts % p.ep === 0
                ? `${experts / p.ep} of the ${experts} experts per GPU; ep ranks are data-parallel ranks.`
                : `Must divide the ${experts} experts.`
            }
          />
        )}
        {p.pp > 1 && (
          <NumberField
            label="Virtual pipeline stages"
            name={PARALLEL_NAMES.vp}
            value={p.vp}
            max={1024}
            onChange={(v) => setSetting('parallel.vp', v)}
            hint={
              p.vp > 1
                ? `Interleaved 1F1B: each GPU holds ${p.vp} model chunks.`
                : 'Megatron interleaved schedule: model chunks per GPU.'
            }
          />
        )}
        {p.gpus > 1 && (
          <NumberField
            label="Nodes"
            name={PARALLEL_NAMES.nodes}
            value={p.nodes}
            max={65536}
            onChange={(v) => setSetting('parallel.nodes', v)}
            hint={
              p.nodes > 1 && p.gpus % p.nodes === 0
                ? `${p.gpus / p.nodes} GPUs per node.`
                : p.nodes > 1
                  ? `Must divide the ${p.gpus} GPUs.`
                  : undefined
            }
          />
        )}
        <SelectField
          label="ZeRO stage"
          name={PARALLEL_NAMES.zero}
          value={zero}
          options={ZERO_STAGES}
          disabled={fromDs.zero !== undefined}
          hint={fromDs.zero !== undefined ? fromConfig : undefined}
          onChange={(v) =>
            setParallel(v > 0 ? { zero: v, fsdp: '', distributed_optimizer: false } : { zero: v })
          }
        />
        <SelectField
          label="FSDP"
          name={PARALLEL_NAMES.fsdp}
          value={p.fsdp}
          options={FSDP_STRATEGIES}
          onChange={(v) =>
            setParallel(v ? { fsdp: v, zero: 0, distributed_optimizer: false } : { fsdp: v })
          }
        />
        {p.fsdp && (
          <SelectField
            label="FSDP version"
            name={PARALLEL_NAMES.fsdp_version}
            value={p.fsdp_version}
            options={FSDP_VERSIONS}
            onChange={(v) => setSetting('parallel.fsdp_version', v)}
          />
        )}
        {p.fsdp && (
          <SelectField
            label="FSDP reduce dtype"
            name={PARALLEL_NAMES.fsdp_reduce_dtype}
            value={p.fsdp_reduce_dtype}
            options={REDUCE_DTYPES}
            onChange={(v) => setSetting('parallel.fsdp_reduce_dtype', v)}
          />
        )}
        {p.fsdp === 'hybrid_shard' && !(p.gpus > 1 && p.nodes > 1) && (
          <NumberField
            label="GPUs per node"
            name={PARALLEL_NAMES.gpus_per_node}
            value={p.gpus_per_node}
            max={1024}
            onChange={(v) => setSetting('parallel.gpus_per_node', v)}
            hint="HYBRID_SHARD shards within a node and replicates across nodes."
          />
        )}
      </div>
      {uneven && (
        <p class={styles.error} role="alert">
          The number of GPUs ({p.gpus}) must be a multiple of tensor × pipeline × context parallel (
          {split}).
        </p>
      )}
      {sharded && pureHalf && (
        <p class={styles.note}>
          Precision is pure {precision}: no fp32 master weights. DeepSpeed and FSDP mixed precision
          keep them; choose “bf16 + fp32 master” under Precision to count them.
        </p>
      )}
      <div class={styles.checks}>
        {canOffloadOptimizer(p, zero) && (
          <CheckboxField
            label="Offload optimizer states to CPU"
            name={PARALLEL_NAMES.offload_optimizer}
            checked={
              fromDs.offload_optimizer !== undefined
                ? Boolean(fromDs.offload_optimizer)
                : p.offload_optimizer
            }
            disabled={fromDs.offload_optimizer !== undefined}
            hint={fromDs.offload_optimizer !== undefined ? fromConfig : undefined}
            onChange={(v) => setSetting('parallel.offload_optimizer', v)}
          />
        )}
        {canOffloadParams(p, zero) && (
          <CheckboxField
            label="Offload parameters to CPU"
            name={PARALLEL_NAMES.offload_params}
            checked={
              fromDs.offload_params !== undefined
                ? Boolean(fromDs.offload_params)
                : p.offload_params
            }
            disabled={fromDs.offload_params !== undefined}
            hint={fromDs.offload_params !== undefined ? fromConfig : undefined}
            onChange={(v) => setSetting('parallel.offload_params', v)}
          />
        )}
        {p.tp > 1 && (
          <CheckboxField
            label="Sequence parallel (Megatron)"
            name={PARALLEL_NAMES.sequence_parallel}
            checked={p.sequence_parallel}
            onChange={(v) => setSetting('parallel.sequence_parallel', v)}
          />
        )}
        {canDistributeOptimizer(p, zero) && (
          <CheckboxField
            label="Distributed optimizer (Megatron)"
            name={PARALLEL_NAMES.distributed_optimizer}
            checked={p.distributed_optimizer}
            onChange={(v) => setSetting('parallel.distributed_optimizer', v)}
            hint={
              p.distributed_optimizer
                ? `fp32 main weights and optimizer states sharded over the ${dp} data-parallel ranks.`
                : undefined
            }
          />
        )}
        {canDistributeOptimizer(p, zero) && p.distributed_optimizer && (
          <CheckboxField
            label="fp32 main gradients"
            name={PARALLEL_NAMES.main_grads_fp32}
            checked={p.main_grads_fp32}
            onChange={(v) => setSetting('parallel.main_grads_fp32', v)}
          />
        )}
      </div>
      {p.gpus > 1 && <NcclFields p={p} />}
      <DeepspeedBox text={dsText} parsed={ds} fromDs={fromDs} />
    </fieldset>
  );
}

// NCCL's own buffers, rarely changed: folded away unless a value differs
// from its default (a restored link opens it).
function NcclFields({ p }) {
  const d = DEFAULT_SETTINGS.parallel;
  const changed = p.nccl_channels !== d.nccl_channels || p.nvls !== d.nvls;
  return (
    <details class={styles.advanced} open={changed}>
      <summary>NCCL buffers (advanced)</summary>
      <div class={styles.grid}>
        <NumberField
          label="NCCL channels"
          name={PARALLEL_NAMES.nccl_channels}
          value={p.nccl_channels}
          max={64}
          onChange={(v) => setSetting('parallel.nccl_channels', v)}
          hint="Channels per communicator; NCCL's default is 32."
        />
        <SelectField
          label="NVLink SHARP"
          name={PARALLEL_NAMES.nvls}
          value={p.nvls}
          options={NVLS_MODES}
          onChange={(v) => setSetting('parallel.nvls', v)}
          hint="NVLS buffers exist on NVSwitch systems (HGX H100/H200/B200)."
        />
      </div>
    </details>
  );
}

function describeDeepspeed(fromDs) {
  const parts = [];
  if (fromDs.zero !== undefined) parts.push(`ZeRO stage ${fromDs.zero}`);
  if (fromDs.offload_optimizer !== undefined)
    parts.push(`optimizer offload ${fromDs.offload_optimizer || 'off'}`);
  if (fromDs.offload_params !== undefined)
    parts.push(`parameter offload ${fromDs.offload_params || 'off'}`);
  if (fromDs.micro_batch !== undefined) parts.push(`micro-batch ${fromDs.micro_batch}`);
  if (fromDs.grad_accum !== undefined) parts.push(`accumulation ${fromDs.grad_accum}`);
  if (fromDs.precision !== undefined) parts.push(`${fromDs.precision} + fp32 master weights`);
  return parts;
}

// An optional ds_config.json: its settings go to the request's `deepspeed`
// object and replace the matching boxes. Invalid JSON is said in words and
// the estimate goes on without it.
function DeepspeedBox({ text, parsed, fromDs }) {
  const id = useId();
  const parts = parsed.config ? describeDeepspeed(fromDs) : [];
  const inLink = !text.trim() || !parsed.config || deepspeedForUrl(text) !== '';
  return (
    <details class={styles.deepspeed} open={Boolean(text.trim())}>
      <summary>Paste a DeepSpeed config (optional)</summary>
      <label class={styles.dsLabel} for={id}>
        DeepSpeed config <code>{PARALLEL_NAMES.deepspeed}</code>
      </label>
      <textarea
        id={id}
        class={styles.textarea}
        rows={6}
        spellcheck={false}
        value={text}
        placeholder='{"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}, "bf16": {"enabled": true}}'
        aria-invalid={parsed.error ? 'true' : undefined}
        aria-describedby={`${id}-note`}
        onInput={(e) => setSetting('deepspeed', e.currentTarget.value)}
      />
      <p
        id={`${id}-note`}
        class={parsed.error ? styles.error : styles.note}
        role={parsed.error ? 'alert' : undefined}
      >
        {parsed.error
          ? `${parsed.error} The estimate ignores it until it parses.`
          : parsed.config
            ? parts.length
              ? `From this config: ${parts.join(', ')}.${inLink ? '' : ' It is too long for the link; share the request JSON instead.'}`
              : 'This config sets none of the fields the estimate uses (zero_optimization, train_micro_batch_size_per_gpu, gradient_accumulation_steps, bf16).'
            : 'zero_optimization (stage, offload_optimizer, offload_param, overlap_comm, reduce_bucket_size), train_micro_batch_size_per_gpu, gradient_accumulation_steps and bf16.enabled replace the boxes above.'}
      </p>
      {text.trim() && (
        <button type="button" class={styles.clear} onClick={() => setSetting('deepspeed', '')}>
          Remove the DeepSpeed config
        </button>
      )}
    </details>
  );
}

// Overheads measured by vram-probe and set from a dropped report (the
// comparison card): shown while set, each with the way back to the core's
// own figure.
const MEASURED = [
  {
    key: 'cuda_context_bytes',
    label: 'CUDA context',
    from: 'vram-probe overheads',
    back: 'Use the 512 MiB prior',
  },
  {
    key: 'nccl_bytes',
    label: 'NCCL memory per GPU',
    from: 'vram-probe nccl',
    back: 'Use the modelled NCCL buffers',
  },
];

function MeasuredOverheads({ overheads, gpus }) {
  const set = MEASURED.filter((m) => Number.isSafeInteger(overheads?.[m.key]));
  if (!set.length) return null;
  return (
    <fieldset class={styles.group}>
      <legend class={styles.legend}>Measured overheads</legend>
      {set.map((m) => (
        <div key={m.key} class={styles.measured}>
          <p class={styles.measuredLine}>
            {m.label}{' '}
            <strong title={bytesTitle(overheads[m.key])}>{formatBytes(overheads[m.key])}</strong>{' '}
            <code>overheads.{m.key}</code>
            <span class={styles.hint}>
              {' '}
              from <code>{m.from}</code>
              {m.key === 'nccl_bytes' && gpus < 2 && '; applies with 2 or more GPUs'}
            </span>
          </p>
          <button
            type="button"
            class={styles.clear}
            onClick={() => setSetting(`overheads.${m.key}`, null)}
          >
            {m.back}
          </button>
        </div>
      ))}
    </fieldset>
  );
}

// PyTorch's caching-allocator settings (PYTORCH_CUDA_ALLOC_CONF): they change
// the reserved memory the core replays, not the allocated one.
function AllocatorFields({ a }) {
  return (
    <details
      class={styles.advanced}
      open={Boolean(a.expandable_segments || a.max_split_size_mb || a.conf)}
    >
      <summary>
        PyTorch allocator <code>PYTORCH_CUDA_ALLOC_CONF</code> (advanced)
      </summary>
      <CheckboxField
        label="Expandable segments"
        name="expandable_segments:True"
        checked={Boolean(a.expandable_segments)}
        onChange={(v) => setSetting('allocator.expandable_segments', v)}
        hint="One growing segment per pool: far less cached, unusable memory."
      />
      <NumberField
        label="Largest block split, MiB (0 = unlimited)"
        name="max_split_size_mb"
        value={a.max_split_size_mb ?? 0}
        min={0}
        max={1 << 30}
        onChange={(n) => setSetting('allocator.max_split_size_mb', n === 0 ? null : n)}
        hint="Blocks this large are never split; PyTorch requires more than 20."
      />
      <TextField
        label="Other settings"
        name="PYTORCH_CUDA_ALLOC_CONF"
        value={a.conf ?? ''}
        placeholder="garbage_collection_threshold:0.6,roundup_power2_divisions:4"
        onChange={(v) => setSetting('allocator.conf', v.trim())}
        hint="The environment variable's text; the two settings above win over it."
      />
    </details>
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
        <TrainingParallelFields
          p={s.parallel}
          dsText={s.deepspeed ?? ''}
          precision={s.train.precision}
          experts={routedExperts(modelFacts.value)}
        />
      )}
      {s.task !== 'infer' && <AllocatorFields a={s.allocator ?? {}} />}
      <MeasuredOverheads
        overheads={s.overheads}
        gpus={s.task === 'infer' ? s.parallel.tp : s.parallel.gpus}
      />
    </section>
  );
}

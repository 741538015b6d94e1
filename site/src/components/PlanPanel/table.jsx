// The planner's answer: the layouts, best first, each with why it costs what
// it costs and exactly what Apply changes. A chunk of its own (index.jsx
// says why), loaded when a search starts.

import { useId, useState } from 'preact/hooks';
import {
  bytesTitle,
  formatDuration,
  formatGiB,
  formatPercent,
  formatRange,
} from '../../lib/format.js';
import {
  applyPlanCandidate,
  deepspeedSetsLayout,
  plannedMixedPrecision,
  settingsMatch,
} from '../../lib/plan-apply.js';
import { request } from '../../lib/state.js';
import { labelOf, PLAN_FRAMEWORKS } from '../../lib/vocabulary.js';
import { verdictOf } from '../../lib/verdict.js';
import { ExportBox } from '../SharePanel/index.jsx';
import styles from './style.module.css';

/** The fit column: the core's verdict, in the same words and colour as the peak card. */
function fitOf(c) {
  const v = verdictOf(c);
  return {
    tone: v.tone,
    words: v.words,
    title: c.host_fits === false ? 'Its CPU offload does not fit in the host RAM.' : v.words,
  };
}

/** Every form field Apply changes, with its value now and after (request paths). */
export function applyChanges(s, c) {
  const out = [];
  const p = s.parallel;
  const dp = Math.max(1, Math.floor(p.gpus / ((p.tp || 1) * (p.pp || 1) * (p.cp || 1))));
  const now = {
    'parallel.gpus': p.gpus,
    'parallel.dp': dp,
    'parallel.tp': p.tp,
    'parallel.pp': p.pp,
    'parallel.cp': p.cp ?? 1,
    'parallel.ep': p.ep ?? 1,
    'parallel.zero': p.zero ?? 0,
    'parallel.fsdp': p.fsdp ?? '',
    'parallel.distributed_optimizer': Boolean(p.distributed_optimizer),
    'parallel.sequence_parallel': Boolean(p.sequence_parallel),
    'parallel.offload_optimizer': Boolean(p.offload_optimizer),
    'parallel.offload_params': Boolean(p.offload_params),
    'train.grad_checkpointing': s.train.grad_checkpointing,
    'train.grad_accum': s.train.grad_accum,
    'train.precision': s.train.precision,
  };
  const apply = c.apply ?? { parallel: c.parallel, train: {} };
  const after = {
    'parallel.zero': 0,
    'parallel.fsdp': '',
    'parallel.distributed_optimizer': false,
    'parallel.sequence_parallel': false,
    'parallel.offload_optimizer': false,
    'parallel.offload_params': false,
  };
  for (const [k, v] of Object.entries(apply.parallel ?? {})) after[`parallel.${k}`] = v;
  for (const [k, v] of Object.entries(apply.train ?? {})) after[`train.${k}`] = v;
  for (const [path, v] of Object.entries(after)) {
    if (path in now && now[path] !== v) out.push({ path, from: now[path], to: v });
  }
  return out;
}

function formatChange({ path, from, to }) {
  const show = (v) => (v === '' ? 'none' : String(v));
  return `${path} ${show(from)} → ${show(to)}`;
}

/** A step-time or traffic factor: 1.33×; a dash if the core gave none. */
function formatFactor(x) {
  return Number.isFinite(x) ? `${x.toFixed(2)}×` : '–';
}

function maxMicroBatch(c) {
  return c.fits && Number.isSafeInteger(c.max_micro_batch) && c.max_micro_batch > 0
    ? String(c.max_micro_batch)
    : 'none';
}

// When nothing fits: what would change that, for this job.
function whatToTry(s) {
  const t = s.train;
  const tries = ['more GPUs', 'a card with more memory'];
  if (t.method === 'full' || t.method === 'freeze')
    tries.push('LoRA or QLoRA instead of full training');
  else if (t.method === 'lora') tries.push('QLoRA (a 4-bit base model)');
  tries.push('a shorter max_seq_length');
  if (t.micro_batch > 1) tries.push('a smaller per_device_train_batch_size');
  return `${tries.slice(0, -1).join(', ')} or ${tries[tries.length - 1]}`;
}

const WHY_NONE =
  'None of the costs the planner weighs: no recomputation, no pipeline bubble, no CPU offload, ' +
  'no tensor-parallel or extra data-parallel traffic.';

function CandidateRow({ c, open, onToggle, inForm, whyId, s }) {
  const fit = fitOf(c);
  const changes = applyChanges(s, c);
  const util = Number.isFinite(c.utilization) ? c.utilization : 0;
  return (
    <>
      <tr
        class={`${styles.row} ${inForm ? styles.inForm : ''}`}
        data-rank={String(c.rank)}
        aria-current={inForm ? 'true' : undefined}
        onClick={onToggle}
      >
        <td class={`${styles.num} ${styles.rank}`}>{c.rank}</td>
        <th scope="row" class={styles.label}>
          <button
            type="button"
            class={styles.toggle}
            aria-expanded={open ? 'true' : 'false'}
            aria-controls={whyId}
            onClick={(e) => {
              e.stopPropagation();
              onToggle();
            }}
          >
            {c.label}
          </button>
          {c.host_bytes > 0 && (
            <span
              class={styles.host}
              data-host-bytes={String(c.host_bytes)}
              data-fits={String(c.host_fits !== false)}
              title={bytesTitle(c.host_bytes)}
            >
              host RAM {formatGiB(c.host_bytes)} GiB per node
              {c.host_fits === false ? ', more than the node has' : ''}
            </span>
          )}
        </th>
        <td
          class={`${styles.num} ${styles.peak}`}
          data-label="Peak, GiB"
          data-bytes={String(c.peak_bytes)}
          title={`${bytesTitle(c.peak_bytes)} · ${formatPercent(c.utilization)} of the usable memory`}
        >
          <span class={styles.util} aria-hidden="true">
            <span
              class={styles[`fill_${fit.tone}`]}
              style={{ width: `${Math.min(100, util * 100).toFixed(1)}%` }}
            />
          </span>
          {formatGiB(c.peak_bytes)}
        </td>
        <td class={styles.fit} data-label="Fit">
          <span class={styles.badge} data-tone={fit.tone} title={fit.title}>
            {fit.words}
          </span>
        </td>
        <td class={styles.num} data-cell="micro-batch" data-label="Max micro-batch">
          {maxMicroBatch(c)}
        </td>
        <td
          class={styles.num}
          data-cell="step-time"
          data-label="Step time"
          data-seconds={
            c.time
              ? String(Math.sqrt(c.time.step_seconds.low * c.time.step_seconds.high))
              : undefined
          }
          title={`${formatFactor(c.step_time_factor)} the step without recomputation or bubble`}
        >
          {c.time ? formatDuration(c.time.step_seconds) : formatFactor(c.step_time_factor)}
        </td>
        <td class={styles.num} data-cell="cost" data-label="$ per M tokens">
          {c.time?.usd_per_million_tokens ? `$${formatRange(c.time.usd_per_million_tokens)}` : '–'}
        </td>
        <td class={styles.num} data-label="DP traffic">
          {formatFactor(c.comm_factor)}
        </td>
        <td class={styles.action}>
          <button
            type="button"
            class={styles.apply}
            aria-label={`${inForm ? 'In the form' : 'Apply'}: ${c.label}`}
            title={inForm ? undefined : `Changes ${changes.map(formatChange).join('; ')}`}
            disabled={inForm}
            onClick={(e) => {
              e.stopPropagation();
              applyPlanCandidate(c);
            }}
          >
            {inForm ? 'In the form' : 'Apply'}
          </button>
        </td>
      </tr>
      {open && (
        <tr id={whyId} class={styles.why}>
          <td />
          <td colSpan={8}>
            <ul class={styles.whyList} aria-label={`Why: ${c.label}`}>
              {(c.why?.length ? c.why : [WHY_NONE]).map((w, i) => (
                <li key={i}>{w}</li>
              ))}
            </ul>
            <p class={styles.changes} aria-label={`Apply changes: ${c.label}`}>
              Apply changes:{' '}
              {changes.length
                ? changes.map(formatChange).join('; ')
                : 'nothing (already in the form)'}
              {Number.isSafeInteger(c.global_batch)
                ? ` · global batch ${c.global_batch} = dp ${c.parallel.dp} × micro-batch × grad_accum ${c.grad_accum}`
                : ''}
            </p>
          </td>
        </tr>
      )}
    </>
  );
}

export function PlanTable({ plan, s, gpuLabel }) {
  const id = useId();
  // A new search starts with every row folded: the open rows belong to the
  // plan they were opened in (no effect to reset them, which would run after
  // the search's answer has painted and could undo a click made meanwhile).
  const [opened, setOpened] = useState(() => ({ plan, ranks: new Set() }));
  const open = opened.plan === plan ? opened.ranks : new Set();
  const toggle = (rank) =>
    setOpened((prev) => {
      const next = new Set(prev.plan === plan ? prev.ranks : []);
      if (next.has(rank)) next.delete(rank);
      else next.add(rank);
      return { plan, ranks: next };
    });
  const offloadSearched = plan.notes.some((n) => /CPU offload layouts searched/.test(n));
  return (
    <>
      <p class={styles.counts} data-considered={plan.considered} data-fitting={plan.fitting}>
        {plan.considered} {labelOf(PLAN_FRAMEWORKS, plan.framework)} layout
        {plan.considered === 1 ? '' : 's'} of {plan.gpus} × {gpuLabel} considered, {plan.fitting}{' '}
        fit{plan.fitting === 1 ? 's' : ''}. Every layout trains the same global batch of{' '}
        {plan.global_batch} samples per step (data parallel × micro-batch × accumulation). Best
        first: fits within the 80 % headroom, then fits (CPU offload only within{' '}
        {formatGiB(plan.host_ram_bytes)} GiB of host RAM per node
        {plan.host_ram_default ? ': none given, so the core’s default' : ', as given'})
        {plan.candidates.some((c) => c.time)
          ? '; then the shortest step of the time model (compute, recomputation, pipeline bubble, every collective at its link, CPU offload).'
          : '; no CPU offload; the least recomputation and pipeline bubble; the least tensor parallel; the least data-parallel traffic (the card has no speed figures for a step time).'}
      </p>
      {plan.fitting === 0 && (
        <p class={styles.none} role="alert">
          None of the {plan.considered} layouts fits on {plan.gpus} × {gpuLabel}
          {offloadSearched ? ', not even with CPU offload' : ''}. Try {whatToTry(s)}.
        </p>
      )}
      {plan.candidates.length > 0 && (
        <div class={styles.scroll}>
          <table class={styles.table} aria-label="Layouts, best first">
            <thead>
              <tr>
                <th scope="col" class={styles.num}>
                  #
                </th>
                <th scope="col">Layout</th>
                <th scope="col" class={styles.num}>
                  Peak, GiB
                </th>
                <th scope="col">Fit</th>
                <th scope="col" class={styles.num} title="per_device_train_batch_size">
                  Max micro-batch
                </th>
                <th
                  scope="col"
                  class={styles.num}
                  title="One optimizer step of the global batch on this layout (the time model's range)"
                >
                  Step time
                </th>
                <th
                  scope="col"
                  class={styles.num}
                  title="Cost of a million training tokens at the card's price per GPU-hour"
                >
                  $ / M tokens
                </th>
                <th scope="col" class={styles.num}>
                  DP traffic
                </th>
                <th scope="col">
                  <span class={styles.visuallyHidden}>Apply</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {plan.candidates.map((c) => (
                <CandidateRow
                  key={c.rank}
                  c={c}
                  open={open.has(c.rank)}
                  onToggle={() => toggle(c.rank)}
                  inForm={settingsMatch(s, c, plan)}
                  s={s}
                  whyId={`${id}-why-${c.rank}`}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p class={styles.footnote}>
        Click a layout for why it costs what it costs. Step time is one optimizer step of the global
        batch, as a range (the time card lists the figures it rests on; hover for the factor
        relative to the same step without recomputation or pipeline bubble); $ / M tokens is its
        cost at the card's price per GPU-hour (editable in the time card); DP traffic is
        data-parallel bytes relative to DDP (parameter sharding 1.5×). Apply sets the Hardware
        card's layout, gradient_checkpointing and gradient_accumulation_steps (to keep the global
        batch)
        {plannedMixedPrecision(plan.notes) ? ', and Precision to bf16 + fp32 master' : ''}; each row
        lists exactly what it changes.
        {deepspeedSetsLayout(s.deepspeed ?? '')
          ? ' It also writes the ZeRO stage and offload devices into the pasted DeepSpeed config, which sets them.'
          : ''}
      </p>
      {plan.notes.length > 0 && (
        <ul class={styles.notes} aria-label="Planner notes">
          {plan.notes.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      )}
      {plan.candidates.some((c) => settingsMatch(s, c, plan)) && (
        // The applied layout, one download away from a launch (issue 15).
        <ExportBox
          request={request.value}
          initialFormat={
            plan.framework === 'fsdp'
              ? 'accelerate'
              : plan.framework === 'megatron'
                ? 'trainer'
                : 'deepspeed'
          }
          label="Export the applied layout as a launch config"
        />
      )}
    </>
  );
}

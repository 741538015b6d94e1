// The two-setup comparison's figures (issue 18; time and cost, issue 31):
// the pinned setup's estimate and the rows the comparison shows. Loaded with
// the comparison's view (components/PinCompare/pinned.jsx), not with the page:
// a first visit has no pin.

import { computed } from '@preact/signals';
import { pinned } from './pin.js';
import { estimator, onThisThread, requestFor, withCheckpoint } from './state.js';

/**
 * The pinned setup's estimate: {result} or {error}, or null without a pin,
 * its config (a Hub fetch in flight) or the estimator.
 */
export const pinnedOutcome = computed(() => {
  const p = pinned.value;
  const vram = estimator.value;
  if (!p || !vram) return null;
  if (p.error) return { error: p.error };
  if (!p.model?.config) return null;
  try {
    // A model read from its checkpoint's tensors carries them (withCheckpoint).
    const request = withCheckpoint(requestFor(p.settings, p.model.config, vram), p.model);
    // null while the full module, which holds the pinned framework's recipe, loads.
    if (!request) return null;
    const result = onThisThread(vram, () => vram.estimate(request));
    // null while the full module loads (a pinned Gemma on a first visit).
    return result === undefined ? null : { result };
  } catch (error) {
    return { error };
  }
});

/**
 * Rows of a side-by-side comparison: the union of two lists of {key, label,
 * bytes} in the order they first appear, each {key, label, before, after}
 * with null where a setup has no such entry.
 */
export function pairRows(before = [], after = []) {
  const rows = new Map();
  for (const x of before)
    rows.set(x.key, { key: x.key, label: x.label, before: x.bytes, after: null });
  for (const x of after) {
    const row = rows.get(x.key) ?? { key: x.key, label: x.label, before: null, after: null };
    row.after = x.bytes;
    rows.set(x.key, row);
  }
  return [...rows.values()];
}

/**
 * What differs between two setups, as the link carries them: [{key, path,
 * before, after}] with the link's values ('' where a setup leaves the field
 * at its default); `path` is the settings path, 'model' for the model.
 */
export function setupDiff(before, after, serialize, urlKeys) {
  const a = new URLSearchParams(serialize(before.model, before.settings).slice(1));
  const b = new URLSearchParams(serialize(after.model, after.settings).slice(1));
  const paths = new Map([['m', 'model'], ...urlKeys]);
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  return keys
    .filter((k) => (a.get(k) ?? '') !== (b.get(k) ?? ''))
    .map((k) => ({
      key: k,
      path: paths.get(k) ?? k,
      before: a.get(k) ?? '',
      after: b.get(k) ?? '',
    }));
}

// The time model's figures the comparison shows (docs/schema.md "Time"), by
// task; `better` says which way a change is an improvement.
const TIME_ROWS = {
  train: [
    { key: 'step_seconds', label: 'One optimizer step', unit: 'seconds', better: 'lower' },
    {
      key: 'tokens_per_second_per_gpu',
      label: 'Tokens per second per GPU',
      unit: 'rate',
      better: 'higher',
    },
    { key: 'run_hours', label: 'The run', unit: 'hours', better: 'lower' },
    { key: 'usd', label: 'Cost of the run', unit: 'usd', better: 'lower' },
    {
      key: 'usd_per_million_tokens',
      label: 'Cost per million tokens',
      unit: 'usd',
      better: 'lower',
    },
  ],
  infer: [
    { key: 'ttft_seconds', label: 'Time to first token', unit: 'seconds', better: 'lower' },
    {
      key: 'decode_tokens_per_second_per_sequence',
      label: 'Decode tokens/s per sequence',
      unit: 'rate',
      better: 'higher',
    },
    {
      key: 'decode_tokens_per_second',
      label: 'Decode tokens/s, the batch',
      unit: 'rate',
      better: 'higher',
    },
    {
      key: 'usd_per_million_output_tokens',
      label: 'Cost per million output tokens',
      unit: 'usd',
      better: 'lower',
    },
  ],
};

/** A time object that has figures (a card with speed figures), else null. */
function withFigures(t) {
  return t?.gpu ? t : null;
}

/**
 * The middle of a range as the core takes it (core/src/speed/machine.cpp
 * Range::mid, which the planner ranks by and a suggestion's vs_base divides):
 * the geometric mean of two positive ends, else their mean.
 */
export function rangeMiddle(r) {
  if (!r || !Number.isFinite(r.low) || !Number.isFinite(r.high)) return null;
  return r.low > 0 && r.high > 0 ? Math.sqrt(r.low * r.high) : (r.low + r.high) / 2;
}

/**
 * How the second setup's figure compares with the first's: {delta, ratio,
 * tone} from the ranges' middles, tone 'better', 'worse' or 'same' by the
 * row's `better` direction; null when a side has no figure.
 */
export function timeChange(row) {
  const a = rangeMiddle(row.before);
  const b = rangeMiddle(row.after);
  if (a === null || b === null) return null;
  const ratio = a > 0 ? b / a : null;
  const same = a === b;
  const lower = b < a;
  return {
    delta: b - a,
    ratio,
    tone: same ? 'same' : lower === (row.better === 'lower') ? 'better' : 'worse',
  };
}

/**
 * Rows of the comparison's time and cost: the figures of the tasks either
 * time object has (training, inference or both when the setups differ), each
 * {key, label, unit, better, before, after} with the `{low, high}` range of
 * each side, or null where a side has no such figure (no card figures, no
 * run size, no price, the other task). No rows when neither side has figures.
 */
export function timeRows(before, after) {
  const a = withFigures(before);
  const b = withFigures(after);
  const tasks = [...new Set([a?.task, b?.task].filter(Boolean))];
  return tasks.flatMap((task) =>
    TIME_ROWS[task].map((row) => ({
      ...row,
      before: a?.task === task ? (a[row.key] ?? null) : null,
      after: b?.task === task ? (b[row.key] ?? null) : null,
    })),
  );
}

// What "Apply" does with a candidate of the planner's last search (lib/plan.js):
// its layout into the form's settings, a pasted DeepSpeed config rewritten to
// match, and whether the form already is a candidate. Only the table of
// layouts (components/PlanPanel/table.jsx, a chunk of its own) needs it, so it
// stays out of a first visit's script (issue 32, first visit <= 220 KiB).

import { deepspeedSets, parseDeepspeed, settings } from './state.js';
import { planOutcome, planRequest } from './plan.js';

/** The plan note that says the search ran in bf16 + fp32 master weights. */
export function plannedMixedPrecision(notes = []) {
  return notes.some((n) => /^precision mixed_bf16\b/.test(n));
}

function deviceBlock(block, on) {
  const base = block && typeof block === 'object' ? block : {};
  return { ...base, device: on ? 'cpu' : 'none' };
}

/**
 * A pasted DeepSpeed config sets the ZeRO stage and the offload devices it
 * names, over the form's boxes: Apply writes the candidate's into it.
 * Returns the text unchanged when it sets none of them.
 */
export function deepspeedWithLayout(text, parallel) {
  const { config } = parseDeepspeed(text);
  const sets = deepspeedSets(config);
  if (
    sets.zero === undefined &&
    sets.offload_optimizer === undefined &&
    sets.offload_params === undefined
  )
    return text;
  const next = structuredClone(config);
  const z = next.zero_optimization;
  if (sets.zero !== undefined) z.stage = parallel.zero ?? 0;
  if (sets.offload_optimizer !== undefined)
    z.offload_optimizer = deviceBlock(z.offload_optimizer, parallel.offload_optimizer);
  if (sets.offload_params !== undefined)
    z.offload_param = deviceBlock(z.offload_param, parallel.offload_params);
  return JSON.stringify(next, null, 2);
}

/** Whether the pasted DeepSpeed config sets a field Apply changes. */
export function deepspeedSetsLayout(text) {
  const sets = deepspeedSets(parseDeepspeed(text).config);
  return (
    sets.zero !== undefined ||
    sets.offload_optimizer !== undefined ||
    sets.offload_params !== undefined
  );
}

/**
 * The settings with a candidate's layout: its parallel degrees and sharding,
 * sequence parallel, CPU offload and activation checkpointing, the planner's
 * framework, and bf16 + fp32 master weights when the plan says it planned
 * with them. The page's estimate of the result is the candidate's peak.
 */
export function applyCandidate(s, candidate, plan) {
  const c = candidate.parallel;
  const next = structuredClone(s);
  Object.assign(next.parallel, {
    gpus: c.gpus,
    tp: c.tp,
    pp: c.pp,
    cp: c.cp ?? 1,
    ep: c.ep ?? 1,
    vp: 1,
    zero: c.zero ?? 0,
    fsdp: c.fsdp ?? '',
    distributed_optimizer: Boolean(c.distributed_optimizer),
    sequence_parallel: Boolean(c.sequence_parallel),
    offload_optimizer: Boolean(c.offload_optimizer),
    offload_params: Boolean(c.offload_params),
  });
  next.train.grad_checkpointing = candidate.grad_checkpointing;
  // The accumulation that keeps the plan's global batch (core: every layout
  // trains the same samples per step), and the precision it planned with.
  if (Number.isSafeInteger(candidate.grad_accum)) next.train.grad_accum = candidate.grad_accum;
  const precision = candidate.apply?.train?.precision;
  if (precision) next.train.precision = precision;
  else if (plannedMixedPrecision(plan.notes)) next.train.precision = 'mixed_bf16';
  next.deepspeed = deepspeedWithLayout(s.deepspeed ?? '', c);
  next.planner = { ...next.planner, framework: plan.framework };
  return next;
}

/**
 * Whether the form's settings are this candidate's layout, as the planner
 * estimated it: a pasted DeepSpeed config's stage and offload count, and so
 * does the precision the plan says it planned with.
 */
export function settingsMatch(s, candidate, plan) {
  const c = candidate.parallel;
  const p = s.parallel;
  const ds = deepspeedSets(parseDeepspeed(s.deepspeed ?? '').config);
  const offloadOptimizer =
    ds.offload_optimizer !== undefined ? Boolean(ds.offload_optimizer) : p.offload_optimizer;
  const offloadParams =
    ds.offload_params !== undefined ? Boolean(ds.offload_params) : p.offload_params;
  return (
    p.gpus === c.gpus &&
    p.tp === c.tp &&
    p.pp === c.pp &&
    p.cp === (c.cp ?? 1) &&
    p.ep === (c.ep ?? 1) &&
    p.vp === 1 &&
    (ds.zero ?? p.zero) === (c.zero ?? 0) &&
    p.fsdp === (c.fsdp ?? '') &&
    p.distributed_optimizer === Boolean(c.distributed_optimizer) &&
    p.sequence_parallel === Boolean(c.sequence_parallel) &&
    offloadOptimizer === Boolean(c.offload_optimizer) &&
    offloadParams === Boolean(c.offload_params) &&
    s.train.grad_checkpointing === candidate.grad_checkpointing &&
    (!Number.isSafeInteger(candidate.grad_accum) || s.train.grad_accum === candidate.grad_accum) &&
    (!plannedMixedPrecision(plan.notes) || s.train.precision === 'mixed_bf16')
  );
}

/**
 * Applies a candidate of the last search to the form. The search stays
 * current: Apply changes only what the planner chose.
 */
export function applyPlanCandidate(candidate) {
  const o = planOutcome.value;
  if (!o?.result) return;
  settings.value = applyCandidate(settings.value, candidate, o.result.plan);
  const req = planRequest.value;
  if (req) planOutcome.value = { ...o, key: JSON.stringify(req), request: req };
}

// The layout planner on the page: the request the planner gets, the outcome
// of the last search, and what "Apply" does to the form. The core does the
// searching (vram.plan, the same as `vram-probe plan`); this file only builds
// its request and maps a candidate back onto the form's boxes.

import { batch, computed, signal } from '@preact/signals';
import { planOffThread, stopPlanner } from './planner.js';
import {
  buildRequest,
  canDistributeOptimizer,
  estimator,
  gpuCatalog,
  hasVisionTower,
  model,
  modelFacts,
  routedExperts,
  settings,
  withCheckpoint,
} from './state.js';

/**
 * The framework the user chose for the planner, or '' to let the core choose
 * from the form's layout (api.cpp plan(): FSDP with an FSDP strategy,
 * Megatron-LM with its distributed optimizer or sequence parallel, else
 * DeepSpeed). The page keeps no copy of that rule (issue 11): the result's
 * plan.framework says what the core chose.
 */
export function plannerFramework(s) {
  return s.planner?.framework || '';
}

// The parallel fields the planner chooses itself (plan.cpp overwrites every
// one of them per layout). They are reset to a plain data-parallel layout in
// the planner's request, so the search does not depend on them: a layout the
// form got wrong (6 GPUs with tp 4) does not stop it, and applying a
// candidate does not make the table stale.
const NEUTRAL_LAYOUT = {
  tp: 1,
  pp: 1,
  cp: 1,
  ep: 1,
  vp: 1,
  zero: 0,
  fsdp: '',
  distributed_optimizer: false,
  sequence_parallel: false,
  offload_optimizer: false,
  offload_params: false,
};

/**
 * The planner's request for the settings: the estimate's request with the
 * layout reset (see NEUTRAL_LAYOUT) and `plan.framework` when the user chose one. The FSDP version,
 * its reduce dtype and Megatron's fp32 main gradients are sent whatever the
 * layout, since the form sends them once a candidate turns FSDP or the
 * distributed optimizer on. Full activation checkpointing reads as off: the
 * planner tries it anyway, and a candidate sets it.
 */
export function buildPlanRequest(s, config, catalog = [], experts = 0, vision = false) {
  const neutral = {
    ...s,
    parallel: { ...s.parallel, ...NEUTRAL_LAYOUT },
    train: {
      ...s.train,
      grad_checkpointing:
        s.train.grad_checkpointing === 'full' ? 'none' : s.train.grad_checkpointing,
    },
  };
  const req = buildRequest(neutral, config, catalog, experts, {}, vision);
  const p = s.parallel;
  if (p.fsdp_version === 1 || p.fsdp_version === 2) req.parallel.fsdp_version = p.fsdp_version;
  if (p.fsdp_reduce_dtype) req.parallel.fsdp_reduce_dtype = p.fsdp_reduce_dtype;
  if (!p.main_grads_fp32) req.parallel.main_grads_fp32 = false;
  const framework = plannerFramework(s);
  if (!framework) {
    // The core picks the framework from these (and plan.cpp then sets every
    // layout field per candidate, so they do not narrow the search).
    if (p.fsdp) req.parallel.fsdp = p.fsdp;
    else if (p.distributed_optimizer && canDistributeOptimizer(p, p.zero))
      req.parallel.distributed_optimizer = true;
    if (p.sequence_parallel && p.tp > 1) req.parallel.sequence_parallel = true;
  }
  req.plan = framework ? { framework } : {};
  // The global batch of the form's own layout (its data parallel x micro-batch
  // x accumulation), which every candidate keeps; the planner's request has
  // the layout reset, so the core would otherwise take all GPUs as data parallel.
  if (s.task === 'train') {
    const dp = Math.max(1, Math.floor(p.gpus / ((p.tp || 1) * (p.pp || 1) * (p.cp || 1))));
    req.plan.global_batch = dp * s.train.micro_batch * s.train.grad_accum;
  }
  const hostRam = s.planner?.host_ram_gib;
  if (Number.isFinite(hostRam) && hostRam > 0) req.plan.host_ram_gib = hostRam;
  return req;
}

/** The planner's request for the page's state, or null without a model. */
export const planRequest = computed(() =>
  model.value?.config
    ? withCheckpoint(
        buildPlanRequest(
          settings.value,
          model.value.config,
          gpuCatalog.value,
          routedExperts(modelFacts.value),
          hasVisionTower(modelFacts.value),
        ),
        model.value,
      )
    : null,
);

/**
 * The last search: {key, request, result} or {key, request, error} (an
 * EstimatorError), or null before the first. `key` is the request's JSON
 * text: when the page's planner request no longer matches it, the table is
 * out of date.
 */
export const planOutcome = signal(null);

/** Whether the last search was for the page's current settings. */
export const planIsCurrent = computed(() => {
  const o = planOutcome.value;
  const req = planRequest.value;
  return Boolean(o && req && o.key === JSON.stringify(req));
});

/**
 * The search in progress: {key, started} (the request's JSON text and
 * performance.now() when it started), or null.
 */
export const planRunning = signal(null);

let planTicket = 0;

/**
 * Runs the planner for the current settings in a Web Worker (lib/planner.js)
 * and keeps the outcome. Resolves to the outcome, or null when the search was
 * cancelled or a newer one replaced it.
 */
export async function runPlan() {
  const vram = estimator.value;
  const req = planRequest.value;
  if (!vram || !req) return null;
  const ticket = ++planTicket;
  const key = JSON.stringify(req);
  planRunning.value = { key, started: performance.now() };
  const outcome = await planOffThread(req, vram);
  if (ticket !== planTicket) return null;
  batch(() => {
    planRunning.value = null;
    planOutcome.value = { key, request: req, ...outcome };
  });
  return planOutcome.value;
}

/** Cancels the search in progress: its worker is terminated. */
export function cancelPlan() {
  if (!planRunning.value) return;
  planTicket++;
  stopPlanner();
  planRunning.value = null;
}

/** Forgets the last search (a new page state from a link). */
export function clearPlan() {
  cancelPlan();
  planOutcome.value = null;
}

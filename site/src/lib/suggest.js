// "What would make it fit" on the page: the core's suggestions for the
// current request (vram.suggest, the same as `vram-probe estimate --suggest`)
// and what one click on a suggestion does to the form.

import { computed, effect, signal } from '@preact/signals';
import { callOffThread, stopLane, workersAvailable } from './planner.js';
import { answered, estimator, outcome, outcomeRequest, request, settings } from './state.js';
import { putPath } from './paths.js';

/**
 * The suggestions run in their own Web Worker in a browser (lib/planner.js,
 * the suggest lane, which runs the plan module, vram_plan.wasm), for the
 * request the shown estimate answers: each suggestion is a real estimate,
 * seconds for a large model on many GPUs. Only for a training job whose
 * verdict is not "fits" (it does not fit, fits only with paging, or fits
 * above the headroom rule): a job that fits never searches, so never loads
 * the plan module. Without Worker (Node, the unit tests) the same search runs
 * on the page's estimator after a macrotask (vram.suggest, asynchronous: its
 * first call loads the plan module). {request, outcome} of the last search,
 * or null.
 */
const suggested = signal(null);

/** The request whose suggestions are being searched, or null. */
export const suggestRunning = signal(null);

effect(() => {
  const vram = estimator.value;
  // The request the shown estimate answers, and that estimate.
  const req = outcomeRequest.value;
  const fit = (workersAvailable ? answered.value?.outcome : outcome.value)?.result?.fit;
  // A newer estimate makes a search in progress pointless: stop it.
  if (suggestRunning.peek()) stopLane('suggest');
  suggestRunning.value = null;
  if (!vram || !req || req.task !== 'train' || !fit || fit.status === 'fits') return;
  if (suggested.peek()?.request === req) return;
  suggestRunning.value = req;
  callOffThread('suggest', 'suggest', req, vram).then((answer) => {
    if (suggestRunning.peek() !== req) return;
    suggestRunning.value = null;
    suggested.value = { request: req, outcome: answer };
  });
});

/**
 * The suggestions for the page's request: {result} or {error}, or null when
 * there is nothing to suggest (no estimate, not training, or it fits within
 * the headroom rule) or while they are searched (suggestRunning).
 */
export const suggestOutcome = computed(() => {
  const vram = estimator.value;
  const req = request.value;
  const fit = outcome.value?.result?.fit;
  if (!vram || !req || req.task !== 'train' || !fit) return null;
  if (fit.status === 'fits') return null;
  const s = suggested.value;
  return s && s.request === outcomeRequest.value ? s.outcome : null;
});

/**
 * The request paths a suggestion's patch (a JSON merge patch of request
 * fields) sets, with their values: [['train.micro_batch', 2], ...]. Null
 * values (fields the patch removes) are left out.
 */
export function patchPaths(patch, prefix = '') {
  const out = [];
  for (const [k, v] of Object.entries(patch ?? {})) {
    const path = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) out.push(...patchPaths(v, path));
    else if (v !== null) out.push([path, v]);
  }
  return out;
}

/**
 * The settings with a suggestion's patch: each request field onto its form
 * field. parallel.dp is derived by the form (gpus / tp x pp x cp), nodes
 * revert to one node's worth; gpu.name picks the catalog card.
 */
export function applyPatch(s, patch) {
  const next = structuredClone(s);
  for (const [path, value] of patchPaths(patch)) {
    if (path === 'parallel.dp') continue;
    if (path === 'gpu.name') {
      next.gpu = { ...next.gpu, mode: 'catalog', name: value };
      continue;
    }
    if (path === 'train.grad_checkpointing') {
      next.train.grad_checkpointing = value === true ? 'full' : value === false ? 'none' : value;
      continue;
    }
    putPath(next, path, value);
  }
  // A patch that removes nodes (more GPUs) leaves one node per gpus_per_node.
  if (patch?.parallel && 'nodes' in patch.parallel && patch.parallel.nodes === null)
    next.parallel.nodes = 1;
  return next;
}

/** Applies one suggestion to the form (and so to the link). */
export function applySuggestion(suggestion) {
  settings.value = applyPatch(settings.value, suggestion.patch);
}

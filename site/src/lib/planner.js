// Where the layout planner runs: in a Web Worker (workers/planner.worker.js)
// with its own WebAssembly instance, so a long search never blocks the page,
// and a search is cancelled by terminating the worker (the only way to stop a
// WebAssembly call in progress; the next search starts a fresh worker).
// Without Worker (Node, the unit tests' happy-dom) the search runs on the
// page's own estimator after a macrotask, so the "searching" state still
// renders first.

import { wrap } from 'comlink';
import { EstimatorError } from '../wasm/vram.js';

let worker = null;
let remote = null;

function startWorker() {
  if (typeof Worker === 'undefined') return null;
  if (!remote) {
    worker = new Worker(new URL('../workers/planner.worker.js', import.meta.url), {
      type: 'module',
      name: 'planner',
    });
    remote = wrap(worker);
  }
  return remote;
}

/** Stops the worker and the search it is running, if any. */
export function stopPlanner() {
  worker?.terminate();
  worker = null;
  remote = null;
}

/**
 * vram.plan(request) off the main thread: resolves to {result} or {error}
 * (an EstimatorError). `vram` is the page's estimator, used only where there
 * is no Worker.
 */
export async function planOffThread(request, vram) {
  const r = startWorker();
  let answer;
  if (r) {
    try {
      answer = await r.plan(request);
    } catch (cause) {
      answer = {
        error: {
          code: 'internal',
          message: `the planner's worker failed: ${cause?.message ?? cause}`,
        },
      };
      stopPlanner();
    }
  } else {
    await new Promise((ok) => setTimeout(ok, 0));
    try {
      answer = { result: vram.plan(request) };
    } catch (error) {
      answer = { error };
    }
  }
  if (answer.error && !(answer.error instanceof EstimatorError))
    answer = { error: new EstimatorError(answer.error) };
  return answer;
}

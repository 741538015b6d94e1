// Where the estimator's long calls run: in Web Workers
// (workers/estimator.worker.js), each with its own WebAssembly instance of a
// module the page compiled once (vram.js compileModule), so an estimate, a
// suggestion search or a planner search never blocks typing or painting
// (issue 18: no main-thread task over 50 ms while typing). Three lanes, each
// its own worker; the estimate lane runs the core module (vram_core.wasm),
// and the full module as well once a request needs it (the core answers
// not_in_module), the other two the plan module (vram_plan.wasm), which the
// page downloads and compiles only when the first of them starts or the
// first estimate needs it (a first visit whose job fits, with a default
// preset, never does):
//   estimate  the page's estimate; long-lived (a new request waits for the
//             one in flight, lib/state.js sends only the newest);
//   suggest   "what would make it fit": cancelled, by terminating its worker
//             (the only way to stop a WebAssembly call in progress), when the
//             request changes;
//   plan      the layout planner: cancelled the same way by its Cancel button;
//   time      the time model (the result's `time`, issue 31): the full
//             module's estimate of the same request, a moment after the
//             core's answer, which leaves the time out (time.enabled false).
// Without Worker (Node, the unit tests' happy-dom) the call runs on the
// page's own estimator after a macrotask, so a "searching" state still
// renders first.

import { wrap } from 'comlink';
import { compileModule, EstimatorError, kNotInModule } from '../wasm/vram.js';

/** Whether calls run in Web Workers here (a browser), or on the page's estimator. */
export const workersAvailable = typeof Worker !== 'undefined';

const lanes = new Map();

/** The WebAssembly module each lane's worker runs (vram.js MODULES). */
const LANE_MODULES = {
  estimate: 'core',
  gguf: 'core',
  suggest: 'plan',
  plan: 'plan',
  time: 'plan',
};

function lane(name) {
  if (!workersAvailable) return null;
  let l = lanes.get(name);
  if (!l) {
    const worker = new Worker(new URL('../workers/estimator.worker.js', import.meta.url), {
      type: 'module',
      name,
    });
    const remote = wrap(worker);
    // The compiled module goes over once; the worker instantiates it.
    const which = LANE_MODULES[name] ?? 'core';
    const ready = compileModule(which).then((module) => remote.init(module, which));
    l = { worker, remote, ready };
    lanes.set(name, l);
  }
  return l;
}

/**
 * Starts a lane's worker now (the page does this for the estimate lane at
 * start-up, so the worker boots while the module downloads and compiles).
 */
export function warmLane(name) {
  lane(name)?.ready.catch(() => {});
}

/** Stops a lane's worker and the call it is running, if any; the next call starts a fresh one. */
export function stopLane(name) {
  const l = lanes.get(name);
  if (!l) return;
  l.worker.terminate();
  lanes.delete(name);
}

/**
 * vram[method](request) in lane `name`'s worker: resolves to {result} or
 * {error} (an EstimatorError). `vram` is the page's estimator, used only
 * where there is no Worker.
 */
export async function callOffThread(name, method, request, vram) {
  const l = lane(name);
  let answer;
  if (l) {
    try {
      await l.ready;
      answer = await l.remote[method](request);
      // The core leaves this request to the full module (a family other than
      // the common Llama-shaped ones, inference, ...): the page compiles that
      // module once, as for the other lanes, hands it to this worker, and asks
      // again.
      if (answer.error?.code === kNotInModule && LANE_MODULES[name] === 'core') {
        await l.remote.init(await compileModule('plan'), 'plan');
        answer = await l.remote[method](request);
      }
    } catch (cause) {
      answer = {
        error: {
          code: 'internal',
          message: `the estimator's worker failed: ${cause?.message ?? cause}`,
        },
      };
      if (lanes.get(name) === l) stopLane(name);
    }
  } else {
    await new Promise((ok) => setTimeout(ok, 0));
    try {
      // plan and suggest are asynchronous on the page's estimator (their
      // first call loads the plan module); estimate is not.
      answer = { result: await vram[method](request) };
    } catch (error) {
      answer = { error };
    }
  }
  if (answer.error && !(answer.error instanceof EstimatorError))
    answer = { error: new EstimatorError(answer.error) };
  return answer;
}

/** vram.plan(request) off the main thread: {result} or {error}. */
export function planOffThread(request, vram) {
  return callOffThread('plan', 'plan', request, vram);
}

/** Stops the planner's worker and the search it is running, if any. */
export function stopPlanner() {
  stopLane('plan');
}

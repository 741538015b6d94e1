// The estimator's Web Worker: its own instance of a WebAssembly module, so
// that no estimate, suggestion search or planner search blocks typing or
// painting (issue 18: a Llama-2-70B estimate with its GPU table is 80-100 ms,
// a DeepSeek-V3 plan on 64 GPUs seconds). lib/planner.js starts one per
// lane (estimates, suggestions, the planner), hands it the module the page
// compiled (init: the core for the estimates' lane, the plan module for the
// suggestions' and the planner's), calls it through comlink and terminates it
// to cancel. A lane's worker instantiates only its own module.
//
// Every answer is a plain object, {result} or {error: {code, message, path}}:
// comlink would send a thrown EstimatorError as a bare Error and lose its
// code and path.

import { expose } from 'comlink';
import { loadPlanner, loadVram, useCompiledModule } from '../wasm/vram.js';

// `load` is loadVram (the core) or loadPlanner (the plan module).
async function answer(load, call) {
  try {
    const loaded = await load();
    return { result: await call(loaded) };
  } catch (error) {
    return {
      error: {
        code: error?.code ?? 'internal',
        message: error?.message ?? String(error),
        path: error?.path ?? '',
      },
    };
  }
}

const api = {
  /**
   * The page's compiled WebAssembly.Module, `which` of them ('core' or
   * 'plan'): instantiated here, not downloaded again.
   */
  init(module, which = 'core') {
    useCompiledModule(which, module);
    return (which === 'plan' ? loadPlanner() : loadVram()).then(() => true);
  },
  /**
   * vram.estimate(request) as {result} or {error}: the core's answer, or the
   * full module's once the page has handed it over (init(module, 'plan'));
   * until then what the core leaves out is the error not_in_module, and the
   * page compiles the full module and sends it (lib/planner.js).
   */
  estimate(request) {
    return answer(loadVram, (vram) => vram.estimate(request));
  },
  /**
   * The time model's answer ({schema, version, time}) from the full module,
   * as {result} or {error}: the time lane asks it for what the core module
   * leaves out, without the memory estimate's searches, and only the time
   * crosses back.
   */
  estimateTime(request) {
    return answer(loadPlanner, (planner) => planner.time(request));
  },
  /** suggest(request) as {result} or {error} (the plan module). */
  suggest(request) {
    return answer(loadPlanner, (planner) => planner.suggest(request));
  },
  /** plan(request) as {result} or {error} (the plan module). */
  plan(request) {
    return answer(loadPlanner, (planner) => planner.plan(request));
  },
};

expose(api);

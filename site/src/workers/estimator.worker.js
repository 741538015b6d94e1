// The estimator's Web Worker: its own instance of the WebAssembly core, so
// that no estimate, suggestion search or planner search blocks typing or
// painting (issue 18: a Llama-2-70B estimate with its GPU table is 80-100 ms,
// a DeepSeek-V3 plan on 64 GPUs seconds). lib/offthread.js starts one per
// lane (estimates, suggestions, the planner), hands it the module the page
// compiled (init), calls it through comlink and terminates it to cancel.
//
// Every answer is a plain object, {result} or {error: {code, message, path}}:
// comlink would send a thrown EstimatorError as a bare Error and lose its
// code and path.

import { expose } from 'comlink';
import { loadVram, useCompiledCore } from '../wasm/vram.js';

async function answer(call) {
  try {
    const vram = await loadVram();
    return { result: call(vram) };
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
  /** The page's compiled WebAssembly.Module: instantiated here, not downloaded again. */
  init(module) {
    useCompiledCore(module);
    return loadVram().then(() => true);
  },
  /** vram.estimate(request) as {result} or {error}. */
  estimate(request) {
    return answer((vram) => vram.estimate(request));
  },
  /** vram.suggest(request) as {result} or {error}. */
  suggest(request) {
    return answer((vram) => vram.suggest(request));
  },
  /** vram.plan(request) as {result} or {error}. */
  plan(request) {
    return answer((vram) => vram.plan(request));
  },
};

expose(api);

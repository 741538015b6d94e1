// The layout planner's Web Worker: its own instance of the WebAssembly core,
// so a search of hundreds of layouts (DeepSeek-V3 on 64 GPUs: over half a
// second on the main thread, issue 18) never blocks typing or painting.
// lib/planner.js starts it, calls it through comlink and terminates it to
// cancel a search.
//
// The answer is a plain object, {result} or {error: {code, message, path}}:
// comlink would send a thrown EstimatorError as a bare Error and lose its
// code and path.

import { expose } from 'comlink';
import { loadVram } from '../wasm/vram.js';

const api = {
  /** vram.plan(request) as {result} or {error}. */
  async plan(request) {
    try {
      const vram = await loadVram();
      return { result: vram.plan(request) };
    } catch (error) {
      return {
        error: {
          code: error?.code ?? 'internal',
          message: error?.message ?? String(error),
          path: error?.path ?? '',
        },
      };
    }
  },
};

expose(api);

// Loads the WASM estimator once (the facade caches its own promise) and
// publishes it in the `estimator` signal. The facade's module is a separate
// chunk imported dynamically, so the page paints before it arrives.

import { loadVram } from '../wasm/vram.js';
import { estimator, estimatorLoadError } from './state.js';

let pending = null;

export function loadEstimator() {
  if (!pending) {
    pending = loadVram().then(
      (vram) => {
        // For the benchmark (scripts/bench-page.mjs): when the core is ready.
        globalThis.performance?.mark?.('vram:estimator-ready');
        estimator.value = vram;
        return vram;
      },
      (error) => {
        estimatorLoadError.value = error;
        pending = null;
        throw error;
      },
    );
  }
  return pending;
}

// Opening the page in a test exactly as a browser does: the URL hash first,
// then <App />, with the real WebAssembly estimator from src/wasm/.
import { render, screen, waitFor } from '@testing-library/preact';
import { App } from '../../src/components/App/index.jsx';
import { loadEstimator } from '../../src/lib/estimator.js';

export const PEAK = { name: 'Peak memory per GPU' };

/** Loads the real module once per file (the facade caches it). */
export function loadRealEstimator() {
  return loadEstimator();
}

/** Renders the page for `hash` and waits for the first estimate. */
export async function openPage(hash = '') {
  window.history.replaceState(null, '', `${window.location.pathname}${hash}`);
  const view = render(<App win={window} />);
  await screen.findByRole('status', PEAK, { timeout: 10000 });
  return view;
}

/** The peak per GPU the page shows, in exact bytes (its data-bytes). */
export function peakBytes() {
  return Number(screen.getByRole('status', PEAK).getAttribute('data-bytes'));
}

/**
 * Waits until the peak differs from `before`, and returns it (up to 10 s: the
 * first change that needs the full module, vram_plan.wasm, waits for it).
 */
export async function peakChangedFrom(before) {
  let now = before;
  await waitFor(
    () => {
      now = peakBytes();
      if (now === before) throw new Error(`peak still ${before}`);
    },
    { timeout: 10000 },
  );
  return now;
}

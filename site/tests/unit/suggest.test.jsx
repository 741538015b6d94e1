// "What would make it fit": the core's suggestions (vram.suggest, the real
// WebAssembly core) under the verdict, and one click putting a suggestion's
// patch into the form so the page's estimate is that suggestion's peak.
import { fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/lib/presets.js';
import { buildRequest, defaultSettings, request } from '../../src/lib/state.js';
import { applyPatch, patchPaths } from '../../src/lib/suggest.js';
import { verdictOf } from '../../src/lib/verdict.js';
import { loadRealEstimator, openPage, peakBytes } from './helpers.jsx';

let vram;
beforeAll(async () => {
  vram = await loadRealEstimator();
});

describe('suggestions', () => {
  it('maps every patch field onto the form, and the form sends it back', async () => {
    const { config } = await loadPreset('meta-llama/Llama-3.1-8B');
    const s = defaultSettings();
    const patch = {
      train: { micro_batch: 1, grad_accum: 8, grad_checkpointing: 'full', fused_loss: true },
      parallel: { gpus: 4, dp: 4, zero: 3, nodes: null, gpus_per_node: null },
      gpu: { name: 'H100 80GB', memory_gib: null },
    };
    expect(patchPaths(patch).map(([p]) => p)).toContain('parallel.zero');
    const next = applyPatch(s, patch);
    const req = buildRequest(next, config, vram.version().gpus);
    expect(req.train).toMatchObject({ micro_batch: 1, grad_accum: 8, grad_checkpointing: true });
    expect(req.train.fused_loss).toBe(true);
    expect(req.parallel).toMatchObject({ gpus: 4, dp: 4, zero: 3 });
    expect(req.gpu).toEqual({ name: 'H100 80GB' });
  });

  it('colours the core verdict the same way everywhere', () => {
    expect(verdictOf({ status: 'tight', fits: true, words: 'Fits, with little headroom' })).toEqual(
      {
        status: 'tight',
        tone: 'warn',
        words: 'Fits, with little headroom',
      },
    );
    expect(verdictOf({ status: 'unsupported', fits: false }).tone).toBe('bad');
    expect(verdictOf(null).tone).toBe('neutral');
  });

  it('lists what would make a job fit, and Apply puts the first one in the form', async () => {
    await openPage(
      '#m=preset:meta-llama/Llama-3.1-8B&task=train&method=lora&mb=4&seq=2048&ga=1&gpu=A100%2040GB',
    );
    // The search runs after the estimate (and loads the plan module first).
    const items = await waitFor(
      () =>
        within(screen.getByRole('region', { name: /What would make it fit/ })).getAllByRole(
          'listitem',
        ),
      { timeout: 15000 },
    );
    expect(items.length).toBeGreaterThan(0);
    const first = items[0];
    const bytes = Number(first.querySelector('[data-bytes]').getAttribute('data-bytes'));
    // The suggestion's peak is the core's estimate of the patched request.
    const result = await vram.suggest(request.value);
    expect(result.suggestions[0].peak_bytes).toBe(bytes);
    // And what it costs in time: the time model's step after the change.
    const t = result.suggestions[0].time;
    expect(t.step_seconds.low).toBeGreaterThan(0);
    expect(within(first).getByTestId('suggestion-time').textContent).toMatch(
      /^Time: step [\d.]+(–[\d.]+)? (ms|s), ×\d\.\d\d the job’s as asked/,
    );
    fireEvent.click(within(first).getByRole('button', { name: /^Apply: / }));
    await waitFor(() => expect(peakBytes()).toBe(bytes));
    expect(screen.queryByRole('region', { name: /What would make it fit$/ })).toBeNull();
  });
});

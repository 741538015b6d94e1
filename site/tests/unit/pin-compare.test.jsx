// "Compare two setups" in time and cost (issue 31): the pinned setup's
// estimate carries the time model's `time` (the full module answers it), the
// current one's time comes from the time lane; the comparison shows both
// sides' step time, tokens/s per GPU, run hours and cost, and the difference
// of their middles; a side without time says why.
import { cleanup, screen, waitFor, within } from '@testing-library/preact';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { formatDuration, formatRange, formatSig } from '../../src/lib/format.js';
import { rangeMiddle, timeChange, timeRows } from '../../src/lib/pin-compare.js';
import { loadedPreset } from '../../src/lib/presets.js';
import { defaultSettings, request, requestFor, timeResult } from '../../src/lib/state.js';
import { serialize } from '../../src/lib/url-state.js';
import { loadRealEstimator, openPage } from './helpers.jsx';

let vram;
beforeAll(async () => {
  vram = await loadRealEstimator();
});
afterEach(cleanup);

const LLAMA = { source: 'preset', id: 'meta-llama/Llama-3.2-1B' };

function trainOn(gpu, tokens = null) {
  const s = defaultSettings();
  s.task = 'train';
  s.gpu = { ...s.gpu, mode: 'catalog', name: gpu };
  s.time = { ...s.time, tokens };
  return s;
}

function timeTable() {
  return screen.findByRole(
    'table',
    { name: 'Time and cost of the pinned and current setups' },
    { timeout: 20000 },
  );
}

/** The cells of a row of the time table: [pinned, now, difference]. */
function cells(table, key) {
  const row = table.querySelector(`tr[data-key="${key}"]`);
  if (!row) throw new Error(`no row ${key} in ${table.textContent}`);
  return [...row.querySelectorAll('td')].map((td) => td.textContent);
}

async function coreTime(settings) {
  await loadRealEstimator();
  const config = loadedPreset(LLAMA.id).config;
  return (await vram.estimateAsync(requestFor(settings, config, vram))).time;
}

describe('the two-setup comparison in time and cost', () => {
  it("shows both setups' step time, tokens/s, run hours and cost as the core computes them", async () => {
    const pin = trainOn('H100 80GB', 1e9);
    const now = trainOn('A100 80GB', 1e9);
    await openPage(serialize(LLAMA, now, { model: LLAMA, settings: pin }));
    const table = await timeTable();
    await waitFor(() => expect(timeResult.value?.gpu).toBe('A100 80GB'), { timeout: 20000 });
    const before = await coreTime(pin);
    const after = (await vram.estimateAsync(request.value)).time;
    expect(before.gpu).toBe('H100 80GB');
    expect(after.step_seconds).toEqual(timeResult.value.step_seconds);

    await waitFor(() =>
      expect(cells(table, 'step_seconds').slice(0, 2)).toEqual([
        formatDuration(before.step_seconds),
        formatDuration(after.step_seconds),
      ]),
    );
    expect(cells(table, 'tokens_per_second_per_gpu').slice(0, 2)).toEqual([
      formatRange(before.tokens_per_second_per_gpu),
      formatRange(after.tokens_per_second_per_gpu),
    ]);
    // The run's hours and cost: both setups train on 1 B tokens at the default prices.
    expect(before.run_hours.low).toBeGreaterThan(0);
    expect(cells(table, 'run_hours')[0]).toBe(
      formatDuration({ low: before.run_hours.low * 3600, high: before.run_hours.high * 3600 }),
    );
    expect(cells(table, 'usd')[0]).toBe(`$${formatRange(before.usd)}`);
    expect(cells(table, 'usd')[1]).toBe(`$${formatRange(after.usd)}`);

    // The A100 is slower than the H100: the step's difference is positive,
    // its ratio the middles' (core/src/speed/machine.cpp Range::mid).
    const ratio = rangeMiddle(after.step_seconds) / rangeMiddle(before.step_seconds);
    expect(ratio).toBeGreaterThan(1);
    const diff = cells(table, 'step_seconds')[2];
    expect(diff).toMatch(/^\+/);
    expect(diff).toContain(`(×${formatSig(ratio)})`);
    const cell = table.querySelector('tr[data-key="step_seconds"] td:last-child');
    expect(cell.getAttribute('data-tone')).toBe('worse');
    expect(
      table.querySelector('tr[data-key="tokens_per_second_per_gpu"] td:last-child').dataset.tone,
    ).toBe('worse');
    expect(within(table).getByText('1 × H100 80GB')).toBeTruthy();
    expect(document.body.textContent).not.toMatch(/NaN|undefined/);
  });

  it('says why a side has no time: a custom card has no speed figures', async () => {
    const pin = trainOn('H100 80GB');
    pin.gpu = { ...pin.gpu, mode: 'custom', memory_gib: 80 };
    const now = trainOn('H100 80GB');
    await openPage(serialize(LLAMA, now, { model: LLAMA, settings: pin }));
    const table = await timeTable();
    const before = await coreTime(pin);
    expect(before.gpu).toBeNull();
    await screen.findByText(`Pinned: ${before.unavailable}`, {}, { timeout: 20000 });
    await waitFor(() => expect(cells(table, 'step_seconds')[1]).not.toBe('–'), { timeout: 20000 });
    expect(cells(table, 'step_seconds')[0]).toBe('–');
    expect(cells(table, 'step_seconds')[2]).toBe('–');
  });
});

describe('the time rows', () => {
  it('take the rows of each task either setup has, and compare the middles', async () => {
    const train = await coreTime(trainOn('H100 80GB'));
    const rows = timeRows(train, { ...train, step_seconds: { low: 2, high: 8 } });
    expect(rows.map((r) => r.key)).toEqual([
      'step_seconds',
      'tokens_per_second_per_gpu',
      'run_hours',
      'usd',
      'usd_per_million_tokens',
    ]);
    // No run size: no hours, no cost of the run, on either side.
    expect(rows.find((r) => r.key === 'run_hours').before).toBeNull();
    const step = rows[0];
    const change = timeChange({ ...step, before: { low: 1, high: 4 } });
    expect(change.delta).toBeCloseTo(2);
    expect(change.ratio).toBeCloseTo(2);
    expect(change.tone).toBe('worse');
    expect(timeChange({ ...rows[1], after: rows[1].before }).tone).toBe('same');
    // An inference setup against a training one: both tasks' rows, each side
    // its own task's figures.
    const infer = { task: 'infer', gpu: 'H100 80GB', ttft_seconds: { low: 0.1, high: 0.2 } };
    const mixed = timeRows(train, infer);
    expect(mixed.find((r) => r.key === 'ttft_seconds')).toMatchObject({ before: null });
    expect(mixed.find((r) => r.key === 'step_seconds')).toMatchObject({ after: null });
    // A side without figures (no card) has no rows of its own.
    expect(timeRows({ task: 'train', gpu: null }, null)).toEqual([]);
  });
});

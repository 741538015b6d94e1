// The time card and the GPU table's time and cost columns (issue 31): the
// full module's `time` object arrives after the estimate and is shown as the
// core computed it; the run's size and the prices are request fields kept in
// the link.
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { formatRange } from '../../src/lib/format.js';
import { request, settings, timeResult } from '../../src/lib/state.js';
import { parse, pricesForUrl, pricesFromUrl, serialize } from '../../src/lib/url-state.js';
import { loadRealEstimator, openPage } from './helpers.jsx';

let vram;

beforeAll(async () => {
  vram = await loadRealEstimator();
});

afterEach(cleanup);

const TRAIN = '#m=preset:meta-llama/Llama-3.2-1B&task=train&gpu=H100%2080GB';

function timeCard() {
  return screen.getByRole('region', { name: 'How long and how much' });
}

async function timeShown() {
  await waitFor(() => expect(timeResult.value?.gpu).toBeTruthy(), { timeout: 20000 });
  return timeResult.value;
}

describe('the time card', () => {
  it("shows the step time and tokens per GPU the core computes for the page's request", async () => {
    await openPage(TRAIN);
    const t = await timeShown();
    const core = (await vram.estimateAsync(request.value)).time;
    expect(t.step_seconds).toEqual(core.step_seconds);
    await waitFor(() =>
      expect(within(timeCard()).getByTestId('tokens-per-gpu').textContent).toContain(
        formatRange(core.tokens_per_second_per_gpu),
      ),
    );
  });

  it("asks the run's size and gives its hours and cost", async () => {
    await openPage(TRAIN);
    await timeShown();
    await screen.findByLabelText('Tokens to train on');
    fireEvent.input(screen.getByLabelText('Tokens to train on'), {
      target: { value: '1000000000' },
    });
    expect(request.value.time).toEqual({ tokens: 1e9 });
    await waitFor(() => expect(timeResult.value?.run?.tokens).toBe(1e9), { timeout: 20000 });
    const t = timeResult.value;
    expect(within(timeCard()).getByTestId('run-hours').textContent).not.toBe('–');
    // The H100's default price (RunPod Serverless): a cost in dollars.
    expect(t.price.usd_per_gpu_hour).toBeGreaterThan(0);
    expect(within(timeCard()).getByTestId('run-cost').textContent).toMatch(/^\$/);
    expect(serialize(null, settings.value)).toContain('rtok=1000000000');
  });

  it("puts a card's price from the GPU table into the request and the link", async () => {
    await openPage(TRAIN);
    await timeShown();
    const box = await screen.findByLabelText('Price per GPU-hour of the RTX 4090 24GB (USD)');
    fireEvent.change(box, { target: { value: '0.39' } });
    expect(request.value.time.prices).toEqual({ 'RTX 4090 24GB': 0.39 });
    await waitFor(
      () => {
        const card = timeResult.value?.cards?.find((c) => c.name === 'RTX 4090 24GB');
        expect(card?.price).toEqual({ usd_per_gpu_hour: 0.39, source: 'time.prices' });
      },
      { timeout: 20000 },
    );
    const link = serialize(null, settings.value);
    expect(parse(link).settings.time.prices).toEqual({ 'RTX 4090 24GB': 0.39 });
  });
});

describe('prices in the link', () => {
  it('round-trip, and a bad entry drops the value', () => {
    const prices = { 'H100 80GB': 2.5, 'RTX 4090 24GB': 0.4 };
    expect(pricesFromUrl(pricesForUrl(prices))).toEqual(prices);
    expect(pricesFromUrl('H100 80GB:abc')).toBeNull();
    expect(pricesFromUrl(':2')).toBeNull();
    expect(pricesForUrl({ 'bad|name': 1, ok: 0 })).toBe('');
  });
});

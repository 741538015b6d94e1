// How often the page calls into the WASM module: once per edit. The estimate
// carries the model summary (`result.model`), so the page reads it from there
// and calls modelInfo only when the estimate fails and the model has no
// summary yet.
import { fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { estimator, modelFacts } from '../../src/lib/state.js';
import { loadRealEstimator, openPage, peakBytes, peakChangedFrom } from './helpers.jsx';

const QWEN = '#m=preset:Qwen/Qwen3-0.6B&task=train&method=full&seq=1024';
const MIXTRAL = '#m=preset:mistralai/Mixtral-8x7B-v0.1&task=train&method=full&gpus=8';

let real;
/** The names of the module's functions the page called, in order. */
let calls = [];

beforeAll(async () => {
  real = await loadRealEstimator();
  // The same facade, counting: the page reads whatever `estimator` holds.
  const counting = {};
  for (const [name, fn] of Object.entries(real)) {
    // Constants (notInModule) stay as they are.
    counting[name] =
      typeof fn === 'function'
        ? (...args) => {
            calls.push(name);
            return fn(...args);
          }
        : fn;
  }
  estimator.value = counting;
});

afterAll(() => {
  estimator.value = real;
});

beforeEach(() => {
  calls = [];
});

/** Opens the page and forgets the calls of the first paint. */
async function openAndCount(hash) {
  await openPage(hash);
  calls = [];
}

function modelSummary() {
  return screen.getByRole('region', { name: 'Model summary' });
}

describe('calls into the module per edit', () => {
  it('makes one estimate call when a number changes', async () => {
    await openAndCount(QWEN);
    const before = peakBytes();
    fireEvent.input(screen.getByLabelText(/max_seq_length/), { target: { value: '4096' } });
    await peakChangedFrom(before);
    expect(calls).toEqual(['estimate']);
  });

  it('makes one estimate call when the model changes, and the summary comes from it', async () => {
    await openAndCount(QWEN);
    fireEvent.change(screen.getByLabelText('Bundled preset'), {
      target: { value: 'meta-llama/Llama-3.2-1B' },
    });
    await waitFor(() =>
      expect(within(modelSummary()).getByText('meta-llama/Llama-3.2-1B')).toBeTruthy(),
    );
    expect(within(modelSummary()).getAllByText('1,235,814,400').length).toBeGreaterThan(0);
    expect(modelFacts.value.params_total).toBe(1235814400);
    expect(calls).toEqual(['estimate']);
  });

  it('makes one call per edit with expert parallel on a mixture-of-experts model', async () => {
    await openAndCount(`${MIXTRAL}&zero=1`);
    const before = peakBytes();
    fireEvent.input(screen.getByLabelText(/expert_model_parallel_size/), {
      target: { value: '2' },
    });
    await peakChangedFrom(before);
    // One estimate; a job that does not fit also asks once for what would
    // make it fit (the suggestions card under the verdict).
    expect(calls.filter((c) => c === 'estimate')).toEqual(['estimate']);
    expect(calls.filter((c) => c !== 'estimate' && c !== 'suggest')).toEqual([]);
    expect(calls.filter((c) => c === 'suggest').length).toBeLessThanOrEqual(1);
  });

  it('keeps the model facts without a modelInfo call when the estimate fails', async () => {
    await openAndCount(MIXTRAL);
    fireEvent.input(screen.getByLabelText(/expert_model_parallel_size/), {
      target: { value: '3' },
    });
    await screen.findByRole('alert', { name: 'The estimator could not use this input' });
    // The expert-parallel box still knows the 8 experts (from the last estimate).
    expect(screen.getByText(/Must divide the 8 experts/)).toBeTruthy();
    expect(calls).toEqual(['estimate']);
  });
});

import { fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it } from 'vitest';
import { MODELS } from './fixtures.js';
import { loadRealEstimator, openPage, peakBytes, peakChangedFrom } from './helpers.jsx';

beforeAll(async () => {
  await loadRealEstimator();
});

function modelSummary() {
  return screen.getByRole('region', { name: 'Model summary' });
}

describe('the page with the real estimator', () => {
  it('opens on a bundled preset and shows a peak in GiB with its exact bytes', async () => {
    await openPage();
    const peak = screen.getByRole('status', { name: 'Peak memory per GPU' });
    const bytes = peakBytes();
    expect(Number.isSafeInteger(bytes)).toBe(true);
    expect(bytes).toBeGreaterThan(0);
    expect(peak.textContent).toContain((bytes / 1024 ** 3).toFixed(2));
    expect(peak.getAttribute('title')).toBe(`${bytes.toLocaleString('en-US')} bytes`);
    expect(document.body.textContent).not.toMatch(/NaN|undefined/);
  });

  it('shows the exact parameter count of the preset the user chooses', async () => {
    await openPage();
    fireEvent.change(screen.getByLabelText('Bundled preset'), {
      target: { value: 'Qwen/Qwen3-0.6B' },
    });
    await waitFor(() => expect(within(modelSummary()).getByText('Qwen/Qwen3-0.6B')).toBeTruthy());
    expect(within(modelSummary()).getByText('596,049,920')).toBeTruthy();
  });

  it('raises the peak when the sequence length grows', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&task=train&method=full&seq=1024');
    const before = peakBytes();
    fireEvent.input(screen.getByLabelText(/max_seq_length/), { target: { value: '8192' } });
    const after = await peakChangedFrom(before);
    expect(after).toBeGreaterThan(before);
  });

  it('keeps the last good estimate and says why when a number box holds no number', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&seq=1024');
    const before = peakBytes();
    const box = screen.getByLabelText(/max_seq_length/);
    fireEvent.input(box, { target: { value: '' } });
    expect(box.getAttribute('aria-invalid')).toBe('true');
    expect(screen.getByText(/Enter a whole number/)).toBeTruthy();
    expect(peakBytes()).toBe(before);
    expect(document.body.textContent).not.toMatch(/NaN/);
  });

  it('switches to inference and estimates the KV cache job', async () => {
    await openPage('#m=preset:meta-llama/Llama-3.2-1B');
    const training = peakBytes();
    fireEvent.click(screen.getByRole('radio', { name: 'Inference' }));
    await screen.findByLabelText(/max_model_len/);
    const infer = await peakChangedFrom(training);
    fireEvent.input(screen.getByLabelText(/max_model_len/), { target: { value: '32768' } });
    expect(await peakChangedFrom(infer)).toBeGreaterThan(infer);
  });

  it('lists the GPUs of the catalog with whether each one fits', async () => {
    await openPage();
    const gpuSection = screen.getByRole('region', { name: 'Which GPUs fit' });
    const rows = within(gpuSection).getAllByRole('row');
    expect(rows.length).toBeGreaterThan(2);
    expect(
      within(gpuSection).getAllByText(/Fits|Does not fit|Not supported|Runs with paging/).length,
    ).toBe(rows.length - 1);
  });

  it('shows every phase of the step and marks the peak one', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=full');
    const list = screen.getByRole('list', { name: 'Memory by phase' });
    const items = within(list).getAllByRole('listitem');
    expect(items.length).toBeGreaterThan(1);
    const peak = items.filter((li) => li.getAttribute('aria-current') === 'true');
    expect(peak.length).toBe(1);
    expect(Number(peak[0].querySelector('[data-bytes]').getAttribute('data-bytes'))).toBe(
      peakBytes(),
    );
  });

  it('shows the longest sequence that fits the chosen card next to the largest micro-batch', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&task=train&method=full&seq=1024&gpu=L4%2024GB');
    const term = await screen.findByText(/Longest sequence that fits/);
    const words = term.closest('div').querySelector('dd').textContent;
    const tokens = Number(words.match(/^([\d,]+) tokens/)[1].replaceAll(',', ''));
    // The job at seq 1024 fits an L4, so the longest sequence is at least that.
    expect(tokens).toBeGreaterThanOrEqual(1024);
    expect(tokens).toBeLessThan(1048576);
    expect(words).toMatch(/at this micro-batch/);
  });

  it('shows allocated against reserved memory in every phase and explains the gap', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=full');
    const list = screen.getByRole('list', { name: 'Memory by phase' });
    const views = list.querySelectorAll('[data-allocated]');
    expect(views.length).toBe(within(list).getAllByRole('listitem').length);
    for (const v of views) {
      expect(Number(v.getAttribute('data-reserved'))).toBeGreaterThanOrEqual(
        Number(v.getAttribute('data-allocated')),
      );
    }
    expect(document.body.textContent).toMatch(/caching allocator replayed/);
  });
});

describe('the caching allocator settings', () => {
  it('lowers reserved memory with expandable segments and keeps it in the link', async () => {
    await loadRealEstimator();
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=full');
    const before = peakBytes();
    fireEvent.click(screen.getByLabelText(/Expandable segments/));
    const after = await peakChangedFrom(before);
    expect(after).toBeLessThan(before);
    await waitFor(() => expect(window.location.hash).toMatch(/xseg=/));
  });
});

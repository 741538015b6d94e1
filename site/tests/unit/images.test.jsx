// The image-count boxes (train.images_per_sample, infer.images_per_prompt):
// shown for a model with a vision tower only, sent only then, kept in the
// link, and what they send moves the estimate as the core says.
import { cleanup, fireEvent, screen, waitFor } from '@testing-library/preact';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../../src/lib/state.js';
import { loadRealEstimator, openPage, peakBytes } from './helpers.jsx';

beforeAll(async () => {
  await loadRealEstimator();
});

afterEach(() => cleanup());

const MLLAMA = 'preset:meta-llama/Llama-3.2-11B-Vision-Instruct';

describe('images per sample and per prompt', () => {
  it('a text-only model has no image box and sends no image count', async () => {
    await openPage('#m=preset:meta-llama/Llama-3.1-8B&task=train&imgs=2');
    await waitFor(() => expect(request.value).not.toBeNull());
    expect(screen.queryByLabelText(/Images per sample/)).toBeNull();
    expect(request.value.train.images_per_sample).toBeUndefined();
  });

  it('a VLM shows the training box; two images per sample raise the peak', async () => {
    await openPage(`#m=${MLLAMA}&task=train&method=lora`);
    const box = await screen.findByLabelText(/Images per sample/);
    expect(request.value.train.images_per_sample).toBeUndefined();
    const before = await waitFor(() => {
      const b = peakBytes();
      expect(b).toBeGreaterThan(0);
      return b;
    });
    fireEvent.input(box, { target: { value: '2' } });
    await waitFor(() => expect(request.value.train.images_per_sample).toBe(2));
    await waitFor(() => expect(peakBytes()).toBeGreaterThan(before));
    await waitFor(() => expect(window.location.hash).toContain('imgs=2'));
  });

  it('a VLM shows the inference box and a link restores it', async () => {
    await openPage(`#m=${MLLAMA}&task=infer&img=1`);
    const box = await screen.findByLabelText(/Images per prompt/);
    expect(box.value).toBe('1');
    await waitFor(() => expect(request.value.infer.images_per_prompt).toBe(1));
  });
});

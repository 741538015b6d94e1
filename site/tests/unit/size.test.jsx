// "I only know the size" (issue 16 part 2): the model box sends model.size to
// the core, which sizes a Llama-3-shaped decoder and flags it approximate; the
// link keeps the size.
import { fireEvent, screen, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, serialize, sizeModel } from '../../src/lib/url-state.js';
import { defaultSettings } from '../../src/lib/state.js';
import { PEAK, loadRealEstimator, openPage } from './helpers.jsx';

beforeAll(async () => {
  await loadRealEstimator();
});

async function useSize(text) {
  await openPage();
  fireEvent.click(screen.getByRole('tab', { name: 'I only know the size' }));
  fireEvent.input(screen.getByLabelText(/Parameters/), { target: { value: text } });
  fireEvent.click(screen.getByRole('button', { name: 'Use this size' }));
}

describe('a model known only by its size', () => {
  it('is estimated and marked approximate', async () => {
    await useSize('7B');
    const summary = await screen.findByRole('region', { name: 'Model summary' });
    expect(within(summary).getByText('approximate')).toBeTruthy();
    expect(summary.textContent).toMatch(/quick sizing/);
    expect(screen.getByRole('status', PEAK)).toBeTruthy();
    expect(window.location.hash).toMatch(/m=size:7B/);
  });

  it('a bare number counts billions, as seed 004 does', async () => {
    await useSize('8');
    const summary = await screen.findByRole('region', { name: 'Model summary' });
    expect(summary.textContent).toMatch(/requested 8000000000/);
    expect(window.location.hash).toMatch(/m=size:8B/);
  });

  it('that the core rejects names model.size', async () => {
    await useSize('7X');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/7X/);
    expect(document.body.textContent).not.toMatch(/NaN/);
  });
});

describe('the link', () => {
  it('keeps a size model', () => {
    const hash = serialize(sizeModel('70B'), defaultSettings());
    expect(hash).toMatch(/m=size:70B/);
    expect(parse(hash).model).toEqual(sizeModel('70B'));
    expect(parse('#m=size:seven').model).toBeNull();
  });
});

// The Framework select (issue 12): its recipe fills the form, the estimate
// lists the defaults it applied, and the link keeps the choice.
import { cleanup, fireEvent, screen, waitFor } from '@testing-library/preact';
import { beforeAll, describe, expect, it } from 'vitest';
import { settings } from '../../src/lib/state.js';
import { loadRealEstimator, openPage, peakBytes, peakChangedFrom } from './helpers.jsx';

beforeAll(async () => {
  await loadRealEstimator();
});

describe('the framework select', () => {
  it("fills the form with Unsloth's recipe, lists what it applied, and keeps it in the link", async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=qlora');
    const before = peakBytes();
    fireEvent.change(screen.getByLabelText(/train\.framework/), { target: { value: 'unsloth' } });
    const after = await peakChangedFrom(before);
    expect(after).toBeLessThan(before); // offloaded checkpoints, fused loss, 8-bit AdamW
    expect(settings.value.train.optimizer).toBe('adamw_bnb_8bit');
    expect(settings.value.train.activation_offload).toBe(true);
    expect(screen.getByLabelText(/optim$/).value).toBe('adamw_bnb_8bit');
    expect(screen.getAllByText('Unsloth default').length).toBeGreaterThan(0);
    const notes = screen.getByText(/Unsloth defaults in this estimate/).closest('details');
    expect(notes.textContent).toContain('train.lora.rank');
    expect(notes.textContent).toContain('unsloth/models/llama.py');
    await waitFor(() => expect(window.location.hash).toContain('fw=unsloth'));

    const link = window.location.hash;
    cleanup();
    window.history.replaceState(null, '', window.location.pathname);
    await openPage(link);
    expect(peakBytes()).toBe(after);
    expect(screen.getByLabelText(/train\.framework/).value).toBe('unsloth');
  });

  it('a release select follows the framework, fills its recipe and is kept in the link', async () => {
    cleanup();
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=lora&fw=torchtune');
    const newest = peakBytes();
    const release = screen.getByLabelText(/framework@release/);
    expect(release.value).toBe('');
    expect([...release.options].map((o) => o.value)).toContain('0.2.1');
    fireEvent.change(release, { target: { value: '0.2.1' } });
    await peakChangedFrom(newest);
    expect(settings.value.train.lora.targets).toBe('q_proj,v_proj'); // v0.2 configs: q and v only
    expect(settings.value.train.optimizer).toBe('adamw_torch'); // fused AdamW from v0.3.1
    await waitFor(() => expect(window.location.hash).toContain('rel=0.2.1'));
    const link = window.location.hash;
    cleanup();
    window.history.replaceState(null, '', window.location.pathname);
    await openPage(link);
    expect(screen.getByLabelText(/framework@release/).value).toBe('0.2.1');
    fireEvent.change(screen.getByLabelText(/train\.framework/), { target: { value: 'unsloth' } });
    await waitFor(() => expect(settings.value.train.release).toBe(''));
  });

  it("a hand-written link naming only the framework gets its recipe; the link's own fields win", async () => {
    cleanup();
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=qlora&fw=unsloth&optim=adamw_torch');
    await waitFor(() => expect(settings.value.train.activation_offload).toBe(true));
    expect(settings.value.train.grad_checkpointing).toBe('full');
    expect(settings.value.train.lora.rank).toBe(16);
    expect(settings.value.train.optimizer).toBe('adamw_torch');
  });

  it('a field the user changes wins over the framework, and leaving the framework undoes its defaults', async () => {
    cleanup();
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=lora');
    const hf = peakBytes();
    fireEvent.change(screen.getByLabelText(/train\.framework/), { target: { value: 'torchtune' } });
    const tt = await peakChangedFrom(hf);
    fireEvent.change(screen.getByLabelText(/gradient_checkpointing/), {
      target: { value: 'none' },
    });
    const off = await peakChangedFrom(tt);
    expect(off).toBeGreaterThan(tt);
    const notes = screen.getByText(/torchtune defaults in this estimate/).closest('details');
    expect(notes.textContent).not.toContain('train.grad_checkpointing');
    fireEvent.change(screen.getByLabelText(/train\.framework/), { target: { value: 'hf' } });
    await waitFor(() => expect(peakBytes()).toBe(hf));
  });

  it('torchtune pads to the longest sample: its recipe fills the Batches select, the core lists it, the link keeps a change', async () => {
    cleanup();
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=lora');
    expect(screen.getByLabelText(/Batches/).value).toBe('max_length');
    fireEvent.change(screen.getByLabelText(/train\.framework/), { target: { value: 'torchtune' } });
    await waitFor(() => expect(settings.value.train.padding).toBe('longest'));
    expect(screen.getByLabelText(/Batches/).value).toBe('longest');
    await waitFor(() =>
      expect(
        screen.getByText(/torchtune defaults in this estimate/).closest('details').textContent,
      ).toContain('train.padding'),
    );
    const padded = peakBytes();
    // Packed batches keep one shape per step: the allocator caches less.
    fireEvent.change(screen.getByLabelText(/Batches/), { target: { value: 'packed' } });
    const packed = await peakChangedFrom(padded);
    expect(packed).toBeLessThan(padded);
    await waitFor(() => expect(window.location.hash).toContain('pad=packed'));
    const link = window.location.hash;
    cleanup();
    window.history.replaceState(null, '', window.location.pathname);
    await openPage(link);
    expect(screen.getByLabelText(/Batches/).value).toBe('packed');
    expect(peakBytes()).toBe(packed);
  });
});

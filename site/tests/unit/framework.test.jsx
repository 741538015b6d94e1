// The Framework select (issue 12): its recipe fills the form, the estimate
// lists the defaults it applied, and the link keeps the choice. The recipes
// are the full module's (vram_plan.wasm): whichever way a framework comes
// (the select, a link, an imported file, a pinned setup), the page sends no
// request until its recipe is in the form.
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../../src/components/App/index.jsx';
import {
  importedSettings,
  importParsed,
  importParsedFiles,
  parseConfigText,
} from '../../src/lib/import.js';
import { loadedPreset } from '../../src/lib/presets.js';
import {
  applyFramework,
  defaultSettings,
  estimator,
  fullLoaded,
  recipeWaiting,
  request,
  requestFor,
  settings,
} from '../../src/lib/state.js';
import { serialize } from '../../src/lib/url-state.js';
import { EstimatorError } from '../../src/wasm/vram.js';
import litgptYaml from '../../../tests/fixtures/import/litgpt_llama-3.2-1B_qlora.yaml?raw';
import { loadRealEstimator, openPage, PEAK, peakBytes, peakChangedFrom } from './helpers.jsx';

let real;
beforeAll(async () => {
  real = await loadRealEstimator();
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

/**
 * The real estimator with the full module held back until release(): until
 * then it answers as the module every visit loads does before vram_plan.wasm
 * has arrived (a framework other than hf at its newest release is
 * not_in_module), so each test sees the page wait, whichever test loaded the
 * real full module first. `sent` records the train object of every request
 * estimated, and `released` how many were sent before release().
 */
function holdFullModule() {
  let open;
  const arrived = new Promise((ok) => {
    open = ok;
  });
  let full = false;
  const gate = { sent: [], released: -1 };
  const elsewhere = () =>
    new EstimatorError({ code: real.notInModule, message: 'held back', path: 'train.framework' });
  gate.vram = {
    ...real,
    estimate: (req) => {
      gate.sent.push(structuredClone(req.train ?? {}));
      if (!full && req.train?.framework) throw elsewhere();
      return real.estimate(req);
    },
    frameworkDefaults: (query) => {
      if (!full && query.framework !== 'hf') throw elsewhere();
      return real.frameworkDefaults(query);
    },
    loadFull: () =>
      arrived
        .then(() => real.loadFull())
        .then(() => {
          full = true;
          return true;
        }),
  };
  gate.release = () => {
    gate.released = gate.sent.length;
    open();
  };
  // Every request naming `framework` came after release() and is the one
  // built from the form with its recipe: none from the form's own values.
  gate.expectOnlyRecipeRequests = (framework, train) => {
    const named = (t) => String(t.framework ?? '').startsWith(framework);
    expect(gate.sent.slice(0, gate.released).filter(named)).toEqual([]);
    const after = gate.sent.slice(gate.released).filter(named);
    expect(after.length).toBeGreaterThan(0);
    for (const t of after) expect(t).toEqual(train);
  };
  // A fresh page: the full module not yet loaded on this thread.
  fullLoaded.value = false;
  estimator.value = gate.vram;
  return gate;
}

describe('while the full module, which holds the recipes, loads', () => {
  afterEach(() => {
    estimator.value = real;
  });

  it('the select: "Estimating…", no request, then the recipe fills the form and is estimated', async () => {
    cleanup();
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=qlora');
    const gate = holdFullModule();
    const before = peakBytes();
    fireEvent.change(screen.getByLabelText(/train\.framework/), { target: { value: 'unsloth' } });
    expect(settings.value.train.framework).toBe('unsloth');
    expect(recipeWaiting.value).not.toBeNull();
    expect(request.value).toBeNull();
    await screen.findByText('Estimating…');
    expect(settings.value.train.optimizer).not.toBe('adamw_bnb_8bit');
    gate.release();
    await peakChangedFrom(before);
    expect(settings.value.train.optimizer).toBe('adamw_bnb_8bit');
    expect(recipeWaiting.value).toBeNull();
    gate.expectOnlyRecipeRequests('unsloth', request.value.train);
    expect(request.value.train.optimizer).toBeUndefined(); // the core applies and lists it
  });

  it('a link naming a framework and a release', async () => {
    cleanup();
    const gate = holdFullModule();
    window.history.replaceState(
      null,
      '',
      `${window.location.pathname}#m=preset:Qwen/Qwen3-0.6B&method=lora&fw=torchtune&rel=0.2.1&optim=adamw_torch_fused`,
    );
    render(<App win={window} />);
    await screen.findByText('Estimating…');
    expect(request.value).toBeNull();
    gate.release();
    await screen.findByRole('status', PEAK, { timeout: 10000 });
    expect(settings.value.train.lora.targets).toBe('q_proj,v_proj'); // torchtune 0.2's recipe
    expect(settings.value.train.optimizer).toBe('adamw_torch_fused'); // the link's own
    gate.expectOnlyRecipeRequests('torchtune@0.2.1', request.value.train);
    expect(request.value.train.optimizer).toBe('adamw_torch_fused');
  });

  it('an imported file naming a framework', async () => {
    cleanup();
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=lora');
    const gate = holdFullModule();
    const parsed = [
      { file: 'litgpt.yaml', content: await parseConfigText('litgpt.yaml', litgptYaml) },
    ];
    await importParsed(gate.vram, parsed);
    expect(settings.value.train.framework).toBe('litgpt');
    expect(request.value).toBeNull();
    await screen.findByText('Estimating…');
    gate.release();
    await waitFor(() => expect(recipeWaiting.value).toBeNull());
    await screen.findByRole('status', PEAK, { timeout: 10000 });
    const imported = (await importParsedFiles(real, parsed)).request;
    expect(settings.value).toEqual(importedSettings(imported, real));
    gate.expectOnlyRecipeRequests('litgpt', request.value.train);
  });

  it('a pinned setup under another framework', async () => {
    cleanup();
    await real.loadFull();
    const unsloth = defaultSettings();
    unsloth.train.framework = 'unsloth';
    unsloth.train.method = 'qlora';
    const pinnedSettings = applyFramework(unsloth, real);
    const qwen = { source: 'preset', id: 'Qwen/Qwen3-0.6B' };
    const gate = holdFullModule();
    await openPage(serialize(qwen, defaultSettings(), { model: qwen, settings: pinnedSettings }));
    await screen.findByText(/Estimating the pinned setup/);
    expect(gate.sent.some((t) => t.framework)).toBe(false);
    gate.release();
    await screen.findByRole('table', { name: /Pinned and current setups/ }, { timeout: 10000 });
    const config = loadedPreset('Qwen/Qwen3-0.6B').config;
    gate.expectOnlyRecipeRequests('unsloth', requestFor(pinnedSettings, config, real).train);
  });
});

// The bundled presets (lib/presets.js): the first script lists every preset
// and holds the default model's config.json; every other config.json is a
// chunk loaded when that preset is chosen (issue 18), and the page waits for
// it the way it waits for a Hub fetch.
import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { screen, waitFor } from '@testing-library/preact';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_PRESET,
  PRESET_IDS,
  hasPreset,
  loadPreset,
  loadedPreset,
} from '../../src/lib/presets.js';
import { pinned } from '../../src/lib/pin.js';
import { defaultSettings, model, modelStatus, setPreset } from '../../src/lib/state.js';
import { serialize } from '../../src/lib/url-state.js';
import { loadRealEstimator, openPage } from './helpers.jsx';

const fixtures = ['models', 'validation'].flatMap((dir) =>
  readdirSync(resolve(__dirname, '../../../tests/fixtures', dir))
    .filter((f) => /__.*\.json$/.test(f))
    .map((f) => f.replace(/\.json$/, '').replace('__', '/')),
);

describe('the bundled presets', () => {
  it('lists every fixture, sorted, with nothing but the default loaded', () => {
    expect([...PRESET_IDS].sort()).toEqual([...fixtures].sort());
    expect(PRESET_IDS).toEqual(
      [...PRESET_IDS].sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' })),
    );
    expect(hasPreset('Qwen/Qwen3-0.6B')).toBe(true);
    expect(hasPreset('nobody/nothing')).toBe(false);
    expect(loadedPreset(DEFAULT_PRESET).config.model_type).toBe('llama');
    expect(loadedPreset('Qwen/Qwen3-0.6B')).toBeUndefined();
  });

  it('loads a config.json once, and nothing for an id it does not bundle', async () => {
    const first = await loadPreset('Qwen/Qwen3-0.6B');
    expect(first.id).toBe('Qwen/Qwen3-0.6B');
    expect(first.config.model_type).toBe('qwen3');
    // The same object: the page's per-config caches (state.js) key on it.
    expect(await loadPreset('Qwen/Qwen3-0.6B')).toBe(first);
    expect(loadedPreset('Qwen/Qwen3-0.6B')).toBe(first);
    expect(await loadPreset('nobody/nothing')).toBeUndefined();
  });

  it('makes a preset the model at once, its config.json a moment later', async () => {
    expect(setPreset('microsoft/phi-2')).toBe(true);
    expect(model.value).toEqual({ source: 'preset', id: 'microsoft/phi-2', config: null });
    expect(modelStatus.value.state).toBe('loading');
    await waitFor(() => expect(model.value.config?.model_type).toBe('phi'));
    expect(modelStatus.value.state).toBe('idle');
    expect(setPreset('nobody/nothing')).toBe(false);
    expect(model.value.id).toBe('microsoft/phi-2');
  });

  it('keeps the newer choice when an earlier preset arrives after it', async () => {
    setPreset('google/gemma-2b');
    setPreset(DEFAULT_PRESET);
    expect(model.value.config).toBe(loadedPreset(DEFAULT_PRESET).config);
    await loadPreset('google/gemma-2b');
    await new Promise((ok) => setTimeout(ok, 0));
    expect(model.value.id).toBe(DEFAULT_PRESET);
    expect(modelStatus.value.state).toBe('idle');
  });
});

describe('a link naming presets not loaded yet', () => {
  beforeAll(async () => {
    await loadRealEstimator();
  });

  it('restores the model and a pinned setup once their chunks have loaded', async () => {
    const settings = defaultSettings();
    const hash = serialize({ source: 'preset', id: 'EleutherAI/pythia-160m' }, settings, {
      model: { source: 'preset', id: 'HuggingFaceTB/SmolLM2-135M' },
      settings,
    });
    expect(loadedPreset('EleutherAI/pythia-160m')).toBeUndefined();
    expect(loadedPreset('HuggingFaceTB/SmolLM2-135M')).toBeUndefined();
    await openPage(hash);
    expect(model.value.id).toBe('EleutherAI/pythia-160m');
    expect(model.value.config.model_type).toBe('gpt_neox');
    await screen.findByRole('table', { name: /Pinned and current setups/ });
    expect(pinned.value.model.config.model_type).toBe('llama');
    expect(window.location.hash).toContain('m=preset:EleutherAI/pythia-160m');
    expect(window.location.hash).toContain('pin=');
  });
});

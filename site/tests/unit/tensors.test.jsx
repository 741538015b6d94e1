// Any model from its checkpoint's tensor list: the safetensors headers read
// from a mocked Hub through @huggingface/hub, handed to the real estimator.
import { fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { hubFetch, safetensorsBytes, TINY, TINY_PARAMS, tinyRepo } from '../hub-mock.mjs';
import { fetchHubTensors, toInventory } from '../../src/lib/hub-fetch.js';
import { loadRealEstimator, openPage, peakBytes } from './helpers.jsx';

const REPO = 'acme/tiny-newarch';

beforeAll(async () => {
  await loadRealEstimator();
});

describe('fetchHubTensors', () => {
  it('reads the index and every shard header with range requests, to huggingface.co only', async () => {
    const calls = [];
    const inv = await fetchHubTensors(REPO, {
      token: 'hf_secret',
      fetch: hubFetch(REPO, tinyRepo(), calls),
    });
    expect(inv.tensors).toHaveLength(1 + 2 * 11 + 2);
    expect(inv.metadata).toEqual({ total_size: 2 * TINY_PARAMS });
    const q = inv.tensors.find((t) => t.name === 'model.layers.1.self_attn.q_proj.weight');
    expect(q).toEqual({
      name: 'model.layers.1.self_attn.q_proj.weight',
      dtype: 'BF16',
      shape: [TINY.H, TINY.H],
      shard: 'model-00002-of-00002.safetensors',
    });
    for (const c of calls) {
      expect(new URL(c.url).origin).toBe('https://huggingface.co');
      const auth = c.headers.Authorization ?? c.headers.get?.('authorization');
      expect(auth).toBe('Bearer hf_secret');
    }
    // The shards' data is never fetched: only ranges inside their headers.
    const shardGets = calls.filter((c) => c.url.endsWith('.safetensors') && c.method === 'GET');
    expect(shardGets.length).toBeGreaterThan(0);
    for (const c of shardGets) {
      const range = c.headers.Range ?? c.headers.range;
      expect(range).toMatch(/^bytes=\d+-\d+$/);
      const [, a, b] = /bytes=(\d+)-(\d+)/.exec(range).map(Number);
      expect(b - a).toBeLessThan(4096);
    }
  });

  it('answers null for a repository without safetensors weights', async () => {
    const files = { 'config.json': new TextEncoder().encode('{}') };
    expect(await fetchHubTensors(REPO, { fetch: hubFetch(REPO, files) })).toBeNull();
  });

  it('turns a single-file result into the same inventory', () => {
    const inv = toInventory({
      sharded: false,
      header: {
        __metadata__: { format: 'pt' },
        'lm_head.weight': { dtype: 'F16', shape: [8, 4], data_offsets: [0, 64] },
      },
      filepaths: ['model.safetensors'],
    });
    expect(inv).toEqual({
      tensors: [
        { name: 'lm_head.weight', dtype: 'F16', shape: [8, 4], shard: 'model.safetensors' },
      ],
    });
  });

  it('keeps each tensor from the shard the index names', () => {
    const header = { 'a.weight': { dtype: 'F32', shape: [1], data_offsets: [0, 4] } };
    const inv = toInventory({
      sharded: true,
      index: { weight_map: { 'a.weight': 'two.safetensors' } },
      headers: { 'one.safetensors': header, 'two.safetensors': header },
    });
    expect(inv.tensors).toEqual([
      { name: 'a.weight', dtype: 'F32', shape: [1], shard: 'two.safetensors' },
    ]);
  });

  it('writes the safetensors layout the format defines', () => {
    const bytes = safetensorsBytes([{ name: 'x', dtype: 'F32', shape: [2] }]);
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.slice(8, 8 + n)));
    expect(header.x).toEqual({ dtype: 'F32', shape: [2], data_offsets: [0, 8] });
    expect(bytes.length).toBe(8 + n + 8);
  });
});

async function typeModelId(id) {
  fireEvent.click(screen.getByRole('tab', { name: 'Hugging Face Hub' }));
  fireEvent.input(screen.getByLabelText(/Model id/), { target: { value: id } });
  fireEvent.click(screen.getByRole('button', { name: 'Fetch config.json' }));
}

describe('a model id whose model_type the estimator does not know', () => {
  it('is estimated from its checkpoint tensors, exact to the parameter', async () => {
    vi.stubGlobal('fetch', hubFetch(REPO, tinyRepo('tiny_newarch')));
    await openPage();
    const before = peakBytes();
    await typeModelId(REPO);
    // The region is found again: a model only the full module (vram_plan)
    // estimates shows "Estimating…" while that module loads, and then a new
    // summary.
    await waitFor(
      () =>
        expect(
          within(screen.getByRole('region', { name: 'Model summary' })).getByText(REPO),
        ).toBeTruthy(),
      { timeout: 10000 },
    );
    const summary = screen.getByRole('region', { name: 'Model summary' });
    expect(within(summary).getByText(TINY_PARAMS.toLocaleString('en-US'))).toBeTruthy();
    expect(within(summary).getByText('safetensors')).toBeTruthy();
    expect(within(summary).getByText(/Built from the checkpoint's tensors/)).toBeTruthy();
    const peak = peakBytes();
    expect(peak).toBeGreaterThan(0);
    expect(peak).not.toBe(before);
    expect(screen.getByText(/the checkpoint's tensor list \(25 tensors\)/)).toBeTruthy();
  });

  it('says so when the repository has no safetensors weights either', async () => {
    const repo = tinyRepo('tiny_newarch');
    vi.stubGlobal('fetch', hubFetch(REPO, { 'config.json': repo['config.json'] }));
    await openPage();
    await typeModelId(REPO);
    const alert = await screen.findByRole('alert', {}, { timeout: 10000 });
    expect(alert.textContent).toMatch(/no safetensors weights/);
  });
});

describe('a model id of a known architecture', () => {
  it('shows that the exact count matches the checkpoint', async () => {
    vi.stubGlobal('fetch', hubFetch(REPO, tinyRepo('qwen3')));
    await openPage();
    await typeModelId(REPO);
    const summary = await screen.findByRole('region', { name: 'Model summary' });
    await waitFor(() => expect(within(summary).getByText(REPO)).toBeTruthy(), { timeout: 10000 });
    await waitFor(
      () =>
        expect(within(summary).getByText(/the exact count equals the checkpoint's/)).toBeTruthy(),
      { timeout: 10000 },
    );
    expect(within(summary).getByText('qwen3')).toBeTruthy();
  });

  it('shows the difference when the checkpoint holds more (a layer past num_hidden_layers)', async () => {
    const files = tinyRepo('qwen3');
    const config = JSON.parse(new TextDecoder().decode(files['config.json']));
    config.num_hidden_layers = 1;
    files['config.json'] = new TextEncoder().encode(JSON.stringify(config));
    vi.stubGlobal('fetch', hubFetch(REPO, files));
    await openPage();
    await typeModelId(REPO);
    const summary = await screen.findByRole('region', { name: 'Model summary' });
    const { H, I, KV, HEAD_DIM } = TINY;
    const layerParams = 2 * H * H + 2 * KV * H + 3 * H * I + 2 * H + 2 * HEAD_DIM;
    await waitFor(
      () =>
        expect(
          within(summary).getByText(
            new RegExp(`holds ${layerParams.toLocaleString('en-US')} parameters more`),
          ),
        ).toBeTruthy(),
      { timeout: 10000 },
    );
    expect(within(summary).getByText(/multi-token-prediction/)).toBeTruthy();
  });
});

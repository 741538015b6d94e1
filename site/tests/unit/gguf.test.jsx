// The GGUF tab: a Hub repository of GGUF files (a mocked Hub: the tree API,
// then range requests for each file's header), its quant files listed with
// the core's answers on the chosen card, one taken as the model; dropped
// .gguf files read in the page.
import { fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { ggufRepo, hubFetch, llamaGguf } from '../hub-mock.mjs';
import { requestForGguf } from '../../src/lib/gguf-actions.js';
import { request, settings } from '../../src/lib/state.js';
import { loadRealEstimator, openPage, PEAK } from './helpers.jsx';

const REPO = 'acme/Llama-8B-GGUF';
// Each test reads headers and estimates several files with the real module.
vi.setConfig({ testTimeout: 90000 });
let vram;

beforeAll(async () => {
  vram = await loadRealEstimator();
  await vram.loadFull();
});

async function openGgufTab() {
  await openPage('#task=infer&eng=llama_cpp&gpu=RTX%204090%2024GB');
  fireEvent.click(screen.getByRole('tab', { name: 'GGUF' }));
  return screen.findByLabelText(/GGUF repository/, {}, { timeout: 15000 });
}

function table() {
  return screen.getByRole('table', { name: 'GGUF files' });
}

function row(file) {
  return table().querySelector(`tr[data-file="${file}"]`);
}

describe('a GGUF repository from the Hub', () => {
  it('lists every quant file with GPU memory, host RAM, the largest -ngl and the longest context', async () => {
    const calls = [];
    const files = ggufRepo();
    vi.stubGlobal('fetch', hubFetch(REPO, files, calls));
    fireEvent.input(await openGgufTab(), { target: { value: REPO } });
    fireEvent.click(screen.getByRole('button', { name: 'List quant files' }));
    await screen.findByRole('table', { name: 'GGUF files' }, { timeout: 20000 });
    // Smallest first, the projector last.
    const names = [...table().querySelectorAll('tbody tr')].map((r) => r.dataset.file);
    expect(names).toEqual([
      'Llama-8B-Q4_K_M.gguf',
      'Llama-8B-Q8_0.gguf',
      'Llama-8B-F16.gguf',
      'mmproj-Llama-8B-f16.gguf',
    ]);
    await waitFor(
      () => expect(row('Llama-8B-F16.gguf').querySelectorAll('td[data-bytes]')).toHaveLength(2),
      {
        timeout: 20000,
      },
    );
    // Each figure is the core's for that file on the chosen card.
    const { readGgufFile } = await import('../../src/lib/gguf.js');
    for (const name of names.slice(0, 3)) {
      const inventory = await readGgufFile(new File([files[name]], name));
      const out = vram.estimate(requestForGguf(inventory, settings.value));
      const cells = row(name).querySelectorAll('td');
      expect(Number(cells[0].dataset.bytes)).toBe(out.peak_bytes);
      expect(Number(cells[1].dataset.bytes)).toBe(out.infer.host_bytes);
      expect(Number(cells[2].dataset.count)).toBe(out.infer.max_gpu_layers);
      expect(cells[2].textContent).toBe(`${out.infer.max_gpu_layers} / 33`);
      expect(Number(cells[3].dataset.count)).toBe(out.infer.max_ctx_size);
    }
    // 16 GB of F16 weights and the model's 131072-token KV cache do not fit a 24 GB card whole.
    expect(Number(row('Llama-8B-F16.gguf').querySelectorAll('td')[3].dataset.count)).toBeLessThan(
      131072,
    );
    // Only headers were read: the tree, then range requests, never a whole file.
    expect(calls[0].url).toBe(`https://huggingface.co/api/models/${REPO}/tree/main?recursive=true`);
    for (const c of calls.slice(1))
      expect(c.headers.Range ?? c.headers.range).toMatch(/^bytes=\d+-\d+$/);
    // Use: the file becomes the model, and the result shows llama.cpp's buffers.
    fireEvent.click(within(row('Llama-8B-Q4_K_M.gguf')).getByRole('button', { name: 'Use' }));
    await screen.findByRole('table', { name: 'llama.cpp buffers by device' }, { timeout: 20000 });
    expect(request.value.model.gguf.file).toBe('Llama-8B-Q4_K_M.gguf');
    expect(request.value.infer.engine).toBe('llama_cpp');
    await waitFor(() =>
      expect(Number(screen.getByRole('status', PEAK).getAttribute('data-bytes'))).toBe(
        vram.estimate(request.value).peak_bytes,
      ),
    );
  });

  it('says so when the repository has no GGUF files or does not exist', async () => {
    vi.stubGlobal('fetch', hubFetch(REPO, { 'config.json': new TextEncoder().encode('{}') }));
    fireEvent.input(await openGgufTab(), { target: { value: REPO } });
    fireEvent.click(screen.getByRole('button', { name: 'List quant files' }));
    expect((await screen.findByRole('alert')).textContent).toContain('has no .gguf files');
    fireEvent.input(screen.getByLabelText(/GGUF repository/), {
      target: { value: 'acme/nothing' },
    });
    fireEvent.click(screen.getByRole('button', { name: 'List quant files' }));
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toContain('No repository acme/nothing'),
    );
  });
});

describe('a dropped .gguf file', () => {
  it('is read in the page and estimated like a listed one', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => Promise.reject(new Error('no network'))),
    );
    await openGgufTab();
    const bytes = llamaGguf(
      { layers: 4, embd: 512, ffn: 1536, heads: 8, kv: 2, vocab: 4096, ctx: 65536 },
      'Q8_0',
    ).bytes();
    const input = screen.getByLabelText(/Open .gguf files/);
    fireEvent.change(input, { target: { files: [new File([bytes], 'tiny-Q8_0.gguf')] } });
    await waitFor(
      () => expect(row('tiny-Q8_0.gguf').querySelectorAll('td[data-bytes]')).toHaveLength(2),
      {
        timeout: 20000,
      },
    );
    expect(fetch).not.toHaveBeenCalled();
  });
});

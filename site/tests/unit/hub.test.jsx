import { fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { hubResponse, MODELS } from './fixtures.js';
import { loadRealEstimator, openPage } from './helpers.jsx';

beforeAll(async () => {
  // The module must be loaded before fetch is replaced.
  await loadRealEstimator();
});

async function fetchFromHub(id, token = '') {
  await openPage();
  fireEvent.click(screen.getByRole('tab', { name: 'Hugging Face Hub' }));
  fireEvent.input(screen.getByLabelText(/Model id/), { target: { value: id } });
  if (token) fireEvent.input(screen.getByLabelText(/Access token/), { target: { value: token } });
  fireEvent.click(screen.getByRole('button', { name: 'Fetch config.json' }));
}

describe('fetching a model from the Hugging Face Hub', () => {
  it('loads config.json on 200 and shows the model with its exact count', async () => {
    const { config, params } = MODELS['HuggingFaceTB/SmolLM2-135M'];
    const fetch = vi.fn(async () => hubResponse(200, config));
    vi.stubGlobal('fetch', fetch);
    await fetchFromHub('HuggingFaceTB/SmolLM2-135M');
    const summary = await screen.findByRole('region', { name: 'Model summary' });
    await waitFor(() =>
      expect(within(summary).getByText('HuggingFaceTB/SmolLM2-135M')).toBeTruthy(),
    );
    expect(within(summary).getByText(params.toLocaleString('en-US'))).toBeTruthy();
    // config.json first; the checkpoint cross-check's header reads follow (tensors.test.jsx).
    const [url, init] = fetch.mock.calls[0];
    expect(url).toBe('https://huggingface.co/HuggingFaceTB/SmolLM2-135M/resolve/main/config.json');
    expect(init.headers.Authorization).toBeUndefined();
  });

  it('sends the token as a Bearer header to huggingface.co only', async () => {
    const fetch = vi.fn(async () => hubResponse(200, MODELS['meta-llama/Llama-3.2-1B'].config));
    vi.stubGlobal('fetch', fetch);
    await fetchFromHub('meta-llama/Llama-3.2-1B', 'hf_secret');
    await waitFor(() => expect(fetch).toHaveBeenCalled());
    const [url, init] = fetch.mock.calls[0];
    expect(new URL(url).origin).toBe('https://huggingface.co');
    expect(init.headers.Authorization).toBe('Bearer hf_secret');
    for (const [u] of fetch.mock.calls) expect(new URL(u).origin).toBe('https://huggingface.co');
    await waitFor(() => expect(window.location.hash).toContain('hf:meta-llama/Llama-3.2-1B'));
    expect(window.location.href).not.toContain('hf_secret');
  });

  it('tells the user to request access and paste a token on 401 (gated model)', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () =>
        hubResponse(401, { error: 'Access restricted' }, { 'x-error-code': 'GatedRepo' }),
      ),
    );
    await fetchFromHub('meta-llama/Llama-3.1-8B');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/gated/);
    expect(alert.textContent).toMatch(/request access on the model page/);
    expect(alert.textContent).toMatch(/paste a token/);
    // The previous model and its estimate stay.
    expect(screen.getByRole('status', { name: 'Peak memory per GPU' })).toBeTruthy();
  });

  it('says gated on 403 too, and keeps the phrase when a token was refused', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => hubResponse(403, { error: 'Forbidden' })),
    );
    await fetchFromHub('meta-llama/Llama-3.1-8B', 'hf_without_access');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/refused this token/);
    expect(alert.textContent).toMatch(/request access on the model page/);
    expect(alert.textContent).toMatch(/paste a token/);
  });

  it('says not found when the Hub answers 401 with RepoNotFound', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () =>
        hubResponse(401, { error: 'Repository not found' }, { 'x-error-code': 'RepoNotFound' }),
      ),
    );
    await fetchFromHub('nobody/private-or-missing');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/No model nobody\/private-or-missing on the Hub/);
  });

  it('says the model was not found on 404', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => hubResponse(404, { error: 'Repository not found' })),
    );
    await fetchFromHub('nobody/no-such-model');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/Not found/);
    expect(alert.textContent).toMatch(/nobody\/no-such-model/);
  });

  it('says the Hub cannot be reached when the network fails', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => {
        throw new TypeError('Failed to fetch');
      }),
    );
    await fetchFromHub('Qwen/Qwen3-0.6B');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/Could not reach the Hugging Face Hub/);
    expect(alert.textContent).toMatch(/offline/);
    expect(alert.textContent).toMatch(/presets/);
  });

  it('rejects text that cannot be a model id without a request', async () => {
    const fetch = vi.fn();
    vi.stubGlobal('fetch', fetch);
    await fetchFromHub('not a model id');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/is not a Hugging Face model id/);
    expect(fetch).not.toHaveBeenCalled();
  });
});

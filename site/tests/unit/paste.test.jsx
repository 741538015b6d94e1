import { fireEvent, screen, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it } from 'vitest';
import { MODELS } from './fixtures.js';
import { loadRealEstimator, openPage } from './helpers.jsx';

beforeAll(async () => {
  await loadRealEstimator();
});

async function paste(text) {
  await openPage();
  fireEvent.click(screen.getByRole('tab', { name: 'Paste config.json' }));
  fireEvent.input(screen.getByLabelText('config.json contents'), { target: { value: text } });
  fireEvent.click(screen.getByRole('button', { name: 'Use this config' }));
}

describe('a pasted config.json', () => {
  it('is estimated like a preset', async () => {
    const { config, params } = MODELS['Qwen/Qwen3-0.6B'];
    await paste(JSON.stringify(config));
    const summary = await screen.findByRole('region', { name: 'Model summary' });
    expect(within(summary).getByText(params.toLocaleString('en-US'))).toBeTruthy();
  });

  it('that the core rejects shows the error message and the field path in words', async () => {
    const config = { ...MODELS['meta-llama/Llama-3.2-1B'].config, hidden_size: -2048 };
    await paste(JSON.stringify(config));
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/hidden_size/);
    expect(within(alert).getByText(/config\.json › hidden_size/)).toBeTruthy();
    expect(screen.queryByRole('status', { name: 'Peak memory per GPU' })).toBeNull();
    expect(document.body.textContent).not.toMatch(/NaN/);
  });

  it('that is not JSON says so in words', async () => {
    await paste('{"model_type": "llama", hidden_size: 12');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/not valid JSON/);
  });
});

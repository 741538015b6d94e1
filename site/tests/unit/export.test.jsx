// The share card's export box (components/SharePanel ExportBox): its body is
// a chunk loaded when the box is first opened (export.jsx, issue 32), and
// shows the core's own file for the page's request (vram_io's exportConfig,
// the same bytes as `vram-probe export --format F --request request.json`).
import { cleanup, fireEvent, screen, waitFor } from '@testing-library/preact';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../../src/lib/state.js';
import { loadRealEstimator, openPage } from './helpers.jsx';

let vram;

beforeAll(async () => {
  vram = await loadRealEstimator();
});

afterEach(cleanup);

const TRAIN = '#m=preset:meta-llama/Llama-3.2-1B&task=train&gpu=H100%2080GB';

function openExport() {
  const summary = screen.getByText('Export as a framework config');
  const details = summary.closest('details');
  details.open = true;
  fireEvent(details, new Event('toggle'));
}

describe('the export box', () => {
  it('shows nothing of the export until it is opened', async () => {
    await openPage(TRAIN);
    expect(screen.queryByLabelText('Export format')).toBeNull();
  });

  it(
    "shows the core's file for the page's request, or its refusal, in the format chosen",
    {
      timeout: 60000,
    },
    async () => {
      await openPage(TRAIN);
      openExport();
      // One GPU: DeepSpeed's file needs a ZeRO stage, and the box says so.
      const refusal = await vram
        .exportConfig({ ...request.value, export: { format: 'deepspeed' } })
        .then(
          () => null,
          (e) => e.message,
        );
      expect(refusal).toMatch(/ZeRO/);
      await screen.findByText(refusal, {}, { timeout: 20000 });
      fireEvent.change(screen.getByLabelText('Export format'), { target: { value: 'torchtune' } });
      const pre = await screen.findByLabelText('Exported torchtune file', {}, { timeout: 20000 });
      // The page names the preset's Hub id (SharePanel export.jsx exportOf).
      const core = await vram.exportConfig({
        ...request.value,
        export: { format: 'torchtune', model_id: 'meta-llama/Llama-3.2-1B' },
      });
      await waitFor(() => expect(pre.textContent).toBe(core.text));
      expect(screen.getByRole('button', { name: `Download ${core.file}` })).toBeTruthy();
    },
  );
});

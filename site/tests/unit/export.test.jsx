// The share card's export box (components/SharePanel ExportBox): its body is
// a chunk loaded when the box is first opened (export.jsx, issue 32), and
// shows the core's own file for the page's request (vram_io's exportConfig,
// the same bytes as `vram-probe export --format F --request request.json`),
// first in the format that fits the request (exportFormatFor).
import { cleanup, fireEvent, screen, waitFor } from '@testing-library/preact';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { exportFormatFor } from '../../src/components/SharePanel/index.jsx';
import { request } from '../../src/lib/state.js';
import { loadRealEstimator, openPage } from './helpers.jsx';

let vram;

beforeAll(async () => {
  vram = await loadRealEstimator();
});

afterEach(cleanup);

const TRAIN = '#m=preset:meta-llama/Llama-3.2-1B&task=train&gpu=H100%2080GB';
// The page names the preset's Hub id (SharePanel export.jsx exportOf).
const EXP = { model_id: 'meta-llama/Llama-3.2-1B' };

function openExport() {
  const summary = screen.getByText('Export as a framework config');
  const details = summary.closest('details');
  details.open = true;
  fireEvent(details, new Event('toggle'));
}

async function coreFile(format) {
  return vram.exportConfig({ ...request.value, export: { format, ...EXP } });
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
      // One GPU, no ZeRO, no framework recipe: TrainingArguments comes first.
      const box = await screen.findByLabelText('Exported trainer file', {}, { timeout: 20000 });
      const core = await coreFile('trainer');
      await waitFor(() => expect(box.textContent).toBe(core.text));
      expect(screen.getByRole('button', { name: `Download ${core.file}` })).toBeTruthy();
      fireEvent.change(screen.getByLabelText('Export format'), { target: { value: 'torchtune' } });
      const tt = await screen.findByLabelText('Exported torchtune file', {}, { timeout: 20000 });
      const coreTt = await coreFile('torchtune');
      await waitFor(() => expect(tt.textContent).toBe(coreTt.text));
      // DeepSpeed's file needs a ZeRO stage: the box says what the core says.
      const refusal = await coreFile('deepspeed').then(
        () => null,
        (e) => e.message,
      );
      expect(refusal).toMatch(/ZeRO/);
      fireEvent.change(screen.getByLabelText('Export format'), { target: { value: 'deepspeed' } });
      await screen.findByText(refusal, {}, { timeout: 20000 });
    },
  );
});

describe('the first export format', () => {
  it("is the framework's recipe, DeepSpeed under ZeRO, accelerate under FSDP, else TrainingArguments", () => {
    expect(exportFormatFor({ train: { framework: 'torchtune@0.6' } })).toBe('torchtune');
    expect(exportFormatFor({ train: { framework: 'axolotl' } })).toBe('axolotl');
    expect(exportFormatFor({ train: { framework: 'llama_factory' } })).toBe('llama_factory');
    expect(exportFormatFor({ train: {}, parallel: { zero: 3 } })).toBe('deepspeed');
    expect(exportFormatFor({ train: {}, parallel: { zero: 0, fsdp: 'full_shard' } })).toBe(
      'accelerate',
    );
    expect(exportFormatFor({ train: { framework: 'hf' }, parallel: { zero: 0 } })).toBe('trainer');
    expect(exportFormatFor(null)).toBe('trainer');
  });
});

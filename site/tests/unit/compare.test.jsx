// The "Compare with a measurement" card: vram-probe reports dropped, chosen or
// pasted on the page, read, and set against the real WebAssembly estimate.
// The reports in fixtures/probe/ were written by vram-probe's own commands
// against the fake memory sources of the C++ tests (fixtures/probe/README.md).
import { fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { App } from '../../src/components/App/index.jsx';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { compareWatch, matchCatalogGpu, parseProbeReport } from '../../src/lib/probe-report.js';
import { clearProbeReport } from '../../src/lib/probe-state.js';
import { outcome, request, settings } from '../../src/lib/state.js';
import deviceFakeNvml from './fixtures/probe/device-fake-nvml-h100.json?raw';
import deviceWorkstation from './fixtures/probe/device-workstation.json?raw';
import ncclReport from './fixtures/probe/nccl-8xh100.json?raw';
import overheadsReport from './fixtures/probe/overheads-h100.json?raw';
import watchContainer from './fixtures/probe/watch-container-a100.json?raw';
import watchLora from './fixtures/probe/watch-llama-3.2-1b-lora-h100.json?raw';
import { loadRealEstimator, openPage, peakBytes, peakChangedFrom } from './helpers.jsx';

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

// Bytes as the page writes them: GiB with two decimals.
const gib = (bytes) => `${(bytes / GIB).toFixed(2)} GiB`;
// The signed difference as the card writes it: "+0.41 GiB (+3.7 %)".
const signed = (bytes, of) =>
  `${bytes < 0 ? '-' : '+'}${(Math.abs(bytes) / GIB).toFixed(2)} GiB (${bytes < 0 ? '-' : '+'}${(
    (Math.abs(bytes) / of) *
    100
  ).toFixed(1)} %)`;

// The LoRA run's figures, as vram-probe wrote them (make_reports.cpp):
// 11,420 MiB polled, 11,440 MiB by accounting, on a 81,559 MiB H100.
const LORA = {
  process: 11974737920,
  accounting: 11995709440,
  devicePeak: 11982602240,
  baseline: 7864320,
  total: 85520809984,
};

let vram;
beforeAll(async () => {
  vram = await loadRealEstimator();
});
// The dropped report is page state (a signal); every test starts without one.
beforeEach(() => clearProbeReport());

function card() {
  return screen.getByRole('region', { name: 'Compare with a measurement' });
}

function asFile(text, name) {
  return new File([text], name, { type: 'application/json' });
}

/**
 * Drops a report file on the card's drop zone. (happy-dom does not deliver
 * Testing Library's synthetic DragEvent, so the drop is a plain event
 * carrying the dataTransfer a browser gives.)
 */
function dropReport(text, name = 'report.json') {
  const zone = within(card()).getByRole('group', { name: 'Drop a probe report here' });
  const drop = new Event('drop', { bubbles: true, cancelable: true });
  Object.defineProperty(drop, 'dataTransfer', {
    value: { files: [asFile(text, name)], getData: () => '' },
  });
  zone.dispatchEvent(drop);
  expect(drop.defaultPrevented).toBe(true);
}

/** Chooses a report with the card's file input. */
function chooseReport(text, name = 'report.json') {
  fireEvent.change(within(card()).getByLabelText('Probe report file'), {
    target: { files: [asFile(text, name)] },
  });
}

/** Pastes report text and submits it. */
function pasteReport(text) {
  fireEvent.input(within(card()).getByLabelText('Probe report JSON'), {
    target: { value: text },
  });
  fireEvent.click(within(card()).getByRole('button', { name: 'Compare with the estimate' }));
}

async function reportView() {
  return within(card()).findByRole('group', { name: 'Probe report' });
}

/** The <dd> of a <dl> entry by its <dt> text. */
function figure(list, term) {
  const dt = within(list)
    .getAllByRole('term')
    .find((t) => term.test(t.textContent));
  if (!dt) throw new Error(`no ${term} in ${list.textContent}`);
  return dt.nextElementSibling;
}

function versus() {
  return within(card()).getByRole('group', { name: 'Estimate against measurement' });
}

function component(key) {
  return outcome.value.result.components.find((c) => c.key === key)?.bytes ?? null;
}

function noNaN() {
  expect(document.body.textContent).not.toMatch(/NaN|undefined/);
}

describe('a watch report', () => {
  it('dropped on the card shows the command, the GPU and the measured peaks', async () => {
    await openPage();
    dropReport(watchLora, 'report.json');
    const view = await reportView();
    const doc = JSON.parse(watchLora);
    expect(doc.peak.process_used_bytes).toBe(LORA.process);
    expect(doc.peak.accounting_max_bytes).toBe(LORA.accounting);

    expect(view.textContent).toContain('vram-probe watch report');
    expect(within(view).getByLabelText('Command').textContent).toBe(
      'python train.py --model_name_or_path meta-llama/Llama-3.2-1B --use_peft --lora_r 16 --bf16 --per_device_train_batch_size 1 --max_seq_length 2048',
    );
    expect(view.textContent).toContain(
      `Ran on device 0: NVIDIA H100 80GB HBM3, ${gib(LORA.total)} total; exited with code 0.`,
    );
    expect(gib(LORA.total)).toBe('79.65 GiB');

    const measured = within(view).getByRole('group', { name: 'Measured' });
    const process = figure(measured, /Process peak/);
    expect(process.textContent).toBe('11.15 GiB at 2.1 s');
    expect(process.querySelector('[data-bytes]').getAttribute('data-bytes')).toBe(
      String(LORA.process),
    );
    expect(figure(measured, /high-water mark/).textContent).toBe('11.17 GiB');
    expect(figure(measured, /Device used peak/).textContent).toBe(
      `${gib(LORA.devicePeak)} (baseline ${gib(LORA.baseline)})`,
    );
    expect(figure(measured, /Duration/).textContent).toBe(
      `${(doc.sampling.duration_ms / 1000).toFixed(1)} s · ${doc.sampling.samples} samples every 20 ms`,
    );
    // The page's GPU is the same card.
    expect(view.textContent).toContain(
      "Same GPU as the page's estimate: H100 80GB (matched by name).",
    );
    noNaN();
  });

  it("compares the estimate's peak_bytes with the driver's high-water mark, and follows the form", async () => {
    await openPage('#m=preset:meta-llama/Llama-3.2-1B&seq=2048');
    chooseReport(watchLora);
    await reportView();
    const estimate = peakBytes();
    expect(figure(versus(), /^Estimate/).textContent).toBe(gib(estimate));
    expect(figure(versus(), /^Measured/).textContent).toBe(gib(LORA.accounting));
    expect(figure(versus(), /Measured/).previousElementSibling.textContent).toMatch(
      /high-water mark \(NVML accounting\)/,
    );
    const gap = figure(versus(), /Estimate − measured/);
    expect(Number(gap.getAttribute('data-bytes'))).toBe(estimate - LORA.accounting);
    expect(gap.textContent).toBe(signed(estimate - LORA.accounting, LORA.accounting));

    // A shorter sequence lowers the estimate: the difference follows it, and
    // a job that used over 10 % more than estimated points at fragmentation.
    fireEvent.input(screen.getByLabelText(/max_seq_length/), { target: { value: '1536' } });
    const lower = await peakChangedFrom(estimate);
    expect((LORA.accounting - lower) / lower).toBeGreaterThan(0.1);
    expect((LORA.accounting - lower) / lower).toBeLessThan(0.5);
    const after = figure(versus(), /Estimate − measured/);
    expect(Number(after.getAttribute('data-bytes'))).toBe(lower - LORA.accounting);
    expect(after.textContent).toBe(signed(lower - LORA.accounting, LORA.accounting));
    const reading = within(card()).getByRole('note', { name: 'Reading of the gap' });
    expect(reading.textContent).toContain('overheads.fragmentation');
    const allocated = outcome.value.result.peak_allocated_bytes;
    expect(reading.textContent).toContain(
      `≈ ${((LORA.accounting - lower) / allocated).toFixed(2)}`,
    );
    expect(reading.textContent).toContain('512 MiB prior');
    expect(reading.textContent).toContain('vram-probe overheads --json');

    // A longer one raises it above the measurement.
    fireEvent.input(screen.getByLabelText(/max_seq_length/), { target: { value: '2560' } });
    const higher = await peakChangedFrom(lower);
    expect((higher - LORA.accounting) / LORA.accounting).toBeGreaterThan(0.05);
    expect((higher - LORA.accounting) / LORA.accounting).toBeLessThan(0.5);
    expect(figure(versus(), /Estimate − measured/).textContent).toBe(
      signed(higher - LORA.accounting, LORA.accounting),
    );
    expect(within(card()).getByRole('note', { name: 'Reading of the gap' }).textContent).toContain(
      `The estimate is ${gib(higher - LORA.accounting)} above the measurement.`,
    );
    noNaN();
  });

  it('draws the measured timeline with its peak marked and the estimate as a line', async () => {
    await openPage();
    dropReport(watchLora);
    await reportView();
    const chart = within(card()).getByRole('img', { name: /^Measured memory over/ });
    expect(chart.getAttribute('aria-label')).toBe(
      `Measured memory over 3.0 s: peak 11.15 GiB; the dashed line is the estimate, ${gib(peakBytes())}`,
    );
    expect(chart.getAttribute('data-peak-bytes')).toBe(String(LORA.process));
    // The peak's dot sits at the peak sample: 2,060 ms into a 3,020 ms run.
    const doc = JSON.parse(watchLora);
    const last = doc.timeline[doc.timeline.length - 1].t_ms;
    const dot = chart.querySelector('[data-peak-t-ms]');
    expect(dot.getAttribute('data-peak-t-ms')).toBe(String(doc.peak.process_t_ms));
    expect(dot.style.left).toBe(`${((doc.peak.process_t_ms / last) * 100).toFixed(2)}%`);
    expect(chart.textContent).toContain(
      `peak 11.15 GiB at ${(doc.peak.process_t_ms / 1000).toFixed(1)} s`,
    );
    expect(chart.textContent).toContain(`estimate ${gib(peakBytes())}`);
    const points = chart.querySelector('polyline').getAttribute('points').split(' ');
    expect(points).toHaveLength(doc.timeline.length);
    expect(chart.querySelector('line')).toBeTruthy();
    expect(chart.outerHTML).not.toMatch(/NaN/);
  });

  it("from a container compares the device's growth over the baseline and reports the other GPU", async () => {
    await openPage();
    dropReport(watchContainer, 'container.json');
    const view = await reportView();
    const doc = JSON.parse(watchContainer);
    const growth = doc.peak.device_used_bytes - doc.baseline.device_used_bytes;
    expect(growth).toBe(70240 * MIB);
    const measured = within(view).getByRole('group', { name: 'Measured' });
    expect(figure(measured, /Process peak/).textContent).toBe('not seen');
    expect(figure(measured, /high-water mark/).textContent).toBe('off');
    expect(figure(versus(), /^Measured/).textContent).toBe(gib(growth));
    expect(figure(versus(), /Measured/).previousElementSibling.textContent).toMatch(
      /growth over the baseline/,
    );
    const notes = within(view).getByRole('list', { name: 'Notes from the probe' });
    expect(notes.textContent).toMatch(/^process_not_seen: the driver never listed/);
    // A 68.6 GiB job against a 1B LoRA estimate: not an overhead.
    const reading = within(view).getByRole('note', { name: 'Reading of the gap' });
    expect(reading.textContent).toContain(
      'far more than the CUDA context or allocator fragmentation explain',
    );
    expect(reading.textContent).toContain('The form probably does not describe this job');
    expect(reading.textContent).not.toContain('overheads.fragmentation');

    // The job ran on an A100 80GB; the page estimates for an H100.
    const mismatch = within(view).getByRole('group', { name: 'GPU mismatch' });
    expect(mismatch.textContent).toContain(
      'The report ran on NVIDIA A100-SXM4-80GB (80.00 GiB); the page estimates for H100 80GB.',
    );
    expect(mismatch.textContent).toContain(
      'In the catalog that is A100 80GB, matched by name and memory total.',
    );
    const before = peakBytes();
    fireEvent.click(within(mismatch).getByRole('button', { name: 'Choose A100 80GB' }));
    expect(settings.value.gpu).toMatchObject({ mode: 'catalog', name: 'A100 80GB' });
    expect(request.value.gpu).toEqual({ name: 'A100 80GB' });
    await peakChangedFrom(before);
    expect(within(view).queryByRole('group', { name: 'GPU mismatch' })).toBeNull();
    expect(view.textContent).toContain(
      "Same GPU as the page's estimate: A100 80GB (matched by name and memory total).",
    );
    expect(
      screen.getByRole('status', { name: 'Peak memory per GPU' }).parentElement.textContent,
    ).toContain('usable on A100 80GB');
    noNaN();
  });

  it('on a page whose input has an error still shows the measurement', async () => {
    window.history.replaceState(
      null,
      '',
      `${window.location.pathname}#m=preset:meta-llama/Llama-3.2-1B&gpus=3&tp=2`,
    );
    render(<App win={window} />);
    await screen.findByRole('alert', { name: 'The estimator could not use this input' });
    dropReport(watchLora);
    const view = await reportView();
    const measured = within(view).getByRole('group', { name: 'Measured' });
    expect(figure(measured, /high-water mark/).textContent).toBe('11.17 GiB');
    expect(view.textContent).toContain('There is no estimate to compare with');
    expect(within(view).queryByRole('group', { name: 'Estimate against measurement' })).toBeNull();
    const chart = within(view).getByRole('img', { name: /^Measured memory over/ });
    expect(chart.textContent).not.toContain('estimate');
    noNaN();
  });

  it('of a command that failed says the measurement stops where it failed', async () => {
    const doc = JSON.parse(watchLora);
    doc.exit = { ...doc.exit, code: null, signal: 9, signal_name: 'SIGKILL' };
    await openPage();
    dropReport(JSON.stringify(doc));
    const view = await reportView();
    expect(view.textContent).toContain('; ended by SIGKILL.');
    expect(within(card()).getByRole('note', { name: 'Reading of the gap' }).textContent).toContain(
      'The command ended by SIGKILL: if it ran out of memory',
    );
  });
});

describe('an overheads report', () => {
  it('sets overheads.cuda_context_bytes: the estimate counts the measured context', async () => {
    await openPage();
    chooseReport(overheadsReport, 'overheads.json');
    const view = await reportView();
    const measured = JSON.parse(overheadsReport).overheads.cuda_context_bytes;
    expect(measured).toBe(504 * MIB);
    const context = within(view).getByRole('group', { name: 'CUDA context' });
    expect(figure(context, /Measured/).textContent).toBe(
      '0.49 GiB (504 MiB, by nvml_process_used)',
    );
    expect(figure(context, /The estimate’s CUDA context/).textContent).toBe('0.50 GiB (512 MiB)');
    expect(component('cuda_context')).toBe(512 * MIB);
    const before = peakBytes();

    fireEvent.click(
      within(view).getByRole('button', { name: 'Use as overheads.cuda_context_bytes' }),
    );
    const after = await peakChangedFrom(before);
    expect(request.value.overheads).toEqual({ cuda_context_bytes: measured });
    expect(component('cuda_context')).toBe(measured);
    // The context sits outside the allocator: the peak moves by the difference.
    expect(before - after).toBe(512 * MIB - measured);
    expect(window.location.hash).toContain(`cudactx=${measured}`);
    expect(figure(context, /The estimate’s CUDA context/).textContent).toBe('0.49 GiB (504 MiB)');
    expect(
      within(view).getByRole('button', { name: 'Use as overheads.cuda_context_bytes' }).disabled,
    ).toBe(true);
    expect(screen.getByRole('button', { name: 'Use the 512 MiB prior' })).toBeTruthy();

    // The Hardware card shows the setting and gives the prior back.
    const hardware = screen.getByRole('group', { name: 'Measured overheads' });
    expect(hardware.textContent).toContain('CUDA context 504 MiB overheads.cuda_context_bytes');
    fireEvent.click(within(hardware).getByRole('button', { name: 'Use the 512 MiB prior' }));
    expect(await peakChangedFrom(after)).toBe(before);
    expect(request.value.overheads).toBeUndefined();
    expect(window.location.hash).not.toContain('cudactx=');
  });

  it('measured on another GPU says so', async () => {
    await openPage('#m=preset:meta-llama/Llama-3.2-1B&gpu=L4%2024GB');
    chooseReport(overheadsReport);
    const view = await reportView();
    const mismatch = within(view).getByRole('group', { name: 'GPU mismatch' });
    expect(mismatch.textContent).toContain('the page estimates for L4 24GB');
    expect(within(mismatch).getByRole('button', { name: 'Choose H100 80GB' })).toBeTruthy();
  });

  it('set in a link is restored into the request', async () => {
    await openPage(`#m=preset:meta-llama/Llama-3.2-1B&cudactx=${504 * MIB}`);
    expect(request.value.overheads).toEqual({ cuda_context_bytes: 504 * MIB });
    expect(component('cuda_context')).toBe(504 * MIB);
  });
});

describe('an nccl report', () => {
  it('pasted on the card sets overheads.nccl_bytes for a multi-GPU layout', async () => {
    await openPage('#m=preset:meta-llama/Llama-3.2-1B&method=full&gpus=8&zero=2');
    pasteReport(ncclReport);
    const view = await reportView();
    const doc = JSON.parse(ncclReport);
    expect(doc.overheads.nccl_bytes).toBe(544 * MIB);
    expect(view.textContent).toContain(
      'NCCL 2.21.5 on 8 GPUs (NVIDIA H100 80GB HBM3), one all-reduce of 32 MiB, measured by nvml_process_used.',
    );
    const rows = within(within(view).getByRole('table', { name: 'NCCL memory per GPU' }))
      .getAllByRole('row')
      .slice(1);
    expect(rows).toHaveLength(8);
    expect(rows[0].textContent).toBe('012 MiB532 MiB544 MiB');
    expect(view.textContent).toContain('No NCCL_* variable that changes the answer was set');

    const nccl = within(view).getByRole('group', { name: 'NCCL memory' });
    expect(figure(nccl, /Measured/).textContent).toBe('0.53 GiB (544 MiB)');
    const modelled = component('nccl');
    expect(modelled).toBeGreaterThan(0);
    expect(figure(nccl, /The estimate’s NCCL/).textContent).toBe(
      `${gib(modelled)} (${+(modelled / MIB).toFixed(2)} MiB, modelled)`,
    );
    const before = peakBytes();
    fireEvent.click(within(view).getByRole('button', { name: 'Use as overheads.nccl_bytes' }));
    await peakChangedFrom(before);
    expect(request.value.overheads).toEqual({ nccl_bytes: 544 * MIB });
    expect(component('nccl')).toBe(544 * MIB);
    expect(outcome.value.result.parallel.nccl_bytes).toBe(544 * MIB);
    expect(window.location.hash).toContain(`ncclb=${544 * MIB}`);
    expect(figure(nccl, /The estimate’s NCCL/).textContent).toBe(
      '0.53 GiB (544 MiB, measured, set on this page)',
    );
    noNaN();
  });

  it('on a one-GPU page says the layout has no communicator', async () => {
    await openPage();
    pasteReport(ncclReport);
    const view = await reportView();
    const nccl = within(view).getByRole('group', { name: 'NCCL memory' });
    expect(figure(nccl, /The estimate’s NCCL/).textContent).toBe(
      'none: the page’s layout has no communicator (one GPU)',
    );
    fireEvent.click(within(view).getByRole('button', { name: 'Use as overheads.nccl_bytes' }));
    expect(request.value.overheads).toEqual({ nccl_bytes: 544 * MIB });
    const hardware = screen.getByRole('group', { name: 'Measured overheads' });
    expect(hardware.textContent).toContain('applies with 2 or more GPUs');
  });
});

describe('a device report', () => {
  it('lists the GPUs and chooses the catalog card of one', async () => {
    await openPage();
    dropReport(deviceWorkstation, 'device.json');
    const view = await reportView();
    expect(view.textContent).toContain('vram-probe device report');
    const rows = within(within(view).getByRole('table', { name: 'GPUs in the report' }))
      .getAllByRole('row')
      .slice(1);
    expect(rows.map((r) => within(r).getByRole('rowheader').textContent)).toEqual([
      'NVIDIA GeForce RTX 4090',
      'NVIDIA RTX 6000 Ada Generation',
    ]);
    // nvidia-smi's 24,564 MiB and 49,140 MiB.
    expect(within(rows[0]).getAllByRole('cell')[1].textContent).toBe(gib(24564 * MIB));
    expect(within(rows[1]).getAllByRole('cell')[1].textContent).toBe('47.99 GiB');
    expect(within(rows[0]).getByRole('button', { name: 'Choose RTX 4090 24GB' })).toBeTruthy();
    fireEvent.click(within(rows[1]).getByRole('button', { name: 'Choose RTX 6000 Ada 48GB' }));
    expect(request.value.gpu).toEqual({ name: 'RTX 6000 Ada 48GB' });
    await waitFor(() => expect(rows[1].textContent).toContain('(the page’s GPU)'));
  });

  it("from the real binary reading the fake libnvidia-ml matches the page's H100", async () => {
    await openPage();
    dropReport(deviceFakeNvml, 'device.json');
    const view = await reportView();
    const row = within(
      within(view).getByRole('table', { name: 'GPUs in the report' }),
    ).getAllByRole('row')[1];
    expect(row.textContent).toContain('NVIDIA H100 80GB HBM3');
    expect(row.textContent).toContain('80.00 GiB');
    expect(row.textContent).toContain('H100 80GB (the page’s GPU) matched by name');
  });
});

describe('a report the page cannot read', () => {
  const watch = () => JSON.parse(watchLora);
  const overheads = () => JSON.parse(overheadsReport);
  const nccl = () => JSON.parse(ncclReport);
  const CASES = [
    ['text that is not JSON', '{"schema": "vram-planner-probe/1", gpus: [', '', /not valid JSON/],
    ['an empty file', '  \n', '', /The report is empty/],
    ['a JSON list', '[1, 2]', '', /report must be an object, not an array/],
    [
      "vram-probe's error output",
      JSON.stringify({ error: { code: 'no_gpu', message: 'no NVIDIA driver', path: '' } }),
      'error',
      /vram-probe's error output, not a report: no_gpu: no NVIDIA driver/,
    ],
    [
      'a request instead of a report',
      JSON.stringify({ model: { config: {} }, task: 'train' }),
      'schema',
      /schema is missing/,
    ],
    [
      'another schema',
      JSON.stringify({ ...watch(), schema: 'vram-planner/1' }),
      'schema',
      /schema is the string "vram-planner\/1"; this page reads vram-probe reports with schema "vram-planner-probe\/1"/,
    ],
    [
      'a missing peak',
      JSON.stringify({ ...watch(), peak: undefined }),
      'peak',
      /peak is missing\./,
    ],
    [
      'a missing process peak',
      (() => {
        const d = watch();
        delete d.peak.process_used_bytes;
        return JSON.stringify(d);
      })(),
      'peak.process_used_bytes',
      /peak\.process_used_bytes is missing/,
    ],
    [
      'a peak written as a string',
      (() => {
        const d = watch();
        d.peak.process_used_bytes = '11974737920';
        return JSON.stringify(d);
      })(),
      'peak.process_used_bytes',
      /peak\.process_used_bytes must be a whole number of bytes or null, not the string "11974737920"/,
    ],
    [
      'a GPU total written with its unit',
      (() => {
        const d = watch();
        d.gpus[0]['memory.total'] = '80 GB';
        return JSON.stringify(d);
      })(),
      'gpus[0].memory.total',
      /gpus\[0\]\.memory\.total must be a whole number of bytes or null, not the string "80 GB"/,
    ],
    [
      'a fractional timeline time',
      (() => {
        const d = watch();
        d.timeline[3].t_ms = 60.5;
        return JSON.stringify(d);
      })(),
      'timeline[3].t_ms',
      /timeline\[3\]\.t_ms must be a whole number, not 60\.5/,
    ],
    [
      'a report without a measurement',
      (() => {
        const d = watch();
        Object.assign(d.peak, {
          process_used_bytes: null,
          device_used_bytes: null,
          accounting_max_bytes: null,
        });
        return JSON.stringify(d);
      })(),
      'peak',
      /peak has no measurement/,
    ],
    [
      'a negative CUDA context',
      JSON.stringify({ ...overheads(), overheads: { cuda_context_bytes: -5 } }),
      'overheads.cuda_context_bytes',
      /overheads\.cuda_context_bytes must not be negative \(it is -5\)/,
    ],
    [
      'a CUDA context in GiB',
      JSON.stringify({ ...overheads(), overheads: { cuda_context_bytes: '0.5 GiB' } }),
      'overheads.cuda_context_bytes',
      /must be a whole number of bytes or null, not the string "0\.5 GiB"/,
    ],
    [
      'overheads of neither kind',
      JSON.stringify({ ...overheads(), overheads: { cublas_workspace_bytes: 1 } }),
      'overheads',
      /overheads has neither cuda_context_bytes .* nor nccl_bytes/,
    ],
    [
      'a negative NCCL figure for one GPU',
      (() => {
        const d = nccl();
        d.devices[1].nccl_bytes = -1;
        return JSON.stringify(d);
      })(),
      'devices[1].nccl_bytes',
      /devices\[1\]\.nccl_bytes must not be negative/,
    ],
    [
      'a watched device the report does not list',
      JSON.stringify({ ...watch(), device: 3 }),
      'device',
      /device is 3, but gpus lists no GPU with index 3/,
    ],
  ];

  it.each(CASES)('%s: a message that names the field', async (_, text, field, message) => {
    await openPage();
    const peak = peakBytes();
    dropReport(text, 'bad.json');
    const alert = await within(card()).findByRole('alert', {
      name: 'This report cannot be read',
    });
    expect(alert.textContent).toMatch(message);
    if (field) {
      expect(within(alert).getByText(/^Field:/).textContent).toBe(`Field: ${field}`);
      expect(alert.textContent.split('Field:')[0]).toContain(field.replace(/\[.*$/, ''));
    } else {
      expect(within(alert).queryByText(/^Field:/)).toBeNull();
    }
    expect(within(card()).queryByRole('group', { name: 'Probe report' })).toBeNull();
    // The estimate is untouched.
    expect(peakBytes()).toBe(peak);
    noNaN();
  });

  it('that the browser cannot read says so', async () => {
    await openPage();
    const zone = within(card()).getByRole('group', { name: 'Drop a probe report here' });
    const drop = new Event('drop', { bubbles: true, cancelable: true });
    const unreadable = {
      name: 'report.json',
      text: () => Promise.reject(new Error('NotReadableError')),
    };
    Object.defineProperty(drop, 'dataTransfer', {
      value: { files: [unreadable], getData: () => '' },
    });
    zone.dispatchEvent(drop);
    const alert = await within(card()).findByRole('alert', { name: 'This report cannot be read' });
    expect(alert.textContent).toContain(
      'The file report.json could not be read (NotReadableError).',
    );
  });

  it('over the 16 MiB input limit is refused before it is read', async () => {
    await openPage();
    const zone = within(card()).getByRole('group', { name: 'Drop a probe report here' });
    const drop = new Event('drop', { bubbles: true, cancelable: true });
    let read = false;
    const huge = {
      name: 'huge.json',
      size: 200 * 1024 ** 2,
      text: () => {
        read = true;
        return Promise.resolve('{}');
      },
    };
    Object.defineProperty(drop, 'dataTransfer', {
      value: { files: [huge], getData: () => '' },
    });
    zone.dispatchEvent(drop);
    const alert = await within(card()).findByRole('alert', { name: 'This report cannot be read' });
    expect(alert.textContent).toContain('inputs are limited to 16 MiB');
    expect(read).toBe(false);
  });

  it('replaces a good report, and a good one replaces the message', async () => {
    await openPage();
    dropReport(watchLora);
    await reportView();
    dropReport('{"schema": 1}');
    await within(card()).findByRole('alert', { name: 'This report cannot be read' });
    expect(within(card()).queryByRole('group', { name: 'Probe report' })).toBeNull();
    dropReport(watchLora);
    await reportView();
    expect(within(card()).queryByRole('alert')).toBeNull();
    fireEvent.click(within(card()).getByRole('button', { name: 'Remove the report' }));
    expect(within(card()).queryByRole('group', { name: 'Probe report' })).toBeNull();
  });
});

describe('matching a GPU the probe saw to the catalog', () => {
  const gpu = (name, mib) => ({ index: 0, name, total: mib === null ? null : mib * MIB });
  const match = (name, mib) => matchCatalogGpu(gpu(name, mib), vram.version().gpus);

  it('reads NVML names, with the memory total choosing between sizes', () => {
    expect(match('NVIDIA H100 80GB HBM3', 81559)).toMatchObject({ name: 'H100 80GB', how: 'name' });
    expect(match('NVIDIA H100 NVL', 95830).name).toBe('H100 NVL 94GB');
    // The longer catalog name wins even without a memory total.
    expect(match('NVIDIA H100 NVL', null)).toMatchObject({ name: 'H100 NVL 94GB', how: 'name' });
    expect(match('NVIDIA A100-SXM4-40GB', 40960)).toMatchObject({
      name: 'A100 40GB',
      how: 'name and memory',
    });
    expect(match('NVIDIA A100 80GB PCIe', 81920).name).toBe('A100 80GB');
    expect(match('Tesla V100-SXM2-16GB', 16384).name).toBe('V100 16GB');
    expect(match('NVIDIA GeForce RTX 4090', 24564).name).toBe('RTX 4090 24GB');
    expect(match('NVIDIA RTX A6000', 49140).name).toBe('RTX A6000 48GB');
    expect(match('NVIDIA RTX 6000 Ada Generation', 49140).name).toBe('RTX 6000 Ada 48GB');
    expect(match('NVIDIA L40S', 46068).name).toBe('L40S 48GB');
    expect(match('NVIDIA L40', 46068).name).toBe('L40 48GB');
    expect(match('NVIDIA A10G', 23028).name).toBe('A10G 24GB');
    expect(match('Tesla T4', 15360).name).toBe('T4 16GB');
    expect(match('AMD Instinct MI300X', 196592).name).toBe('MI300X 192GB');
  });

  it('falls back to the memory total, offering every card of that size', () => {
    expect(match('Some Future Card', 46068)).toEqual({
      name: null,
      how: 'memory',
      candidates: ['L40S 48GB', 'L40 48GB', 'A40 48GB'],
      memory_differs: false,
    });
    expect(match('Some Future Card', 143771)).toMatchObject({ name: 'H200 141GB', how: 'memory' });
    expect(match('Some Future Card', 12000)).toBeNull();
    expect(match('Some Future Card', null)).toBeNull();
  });

  it('flags a variant whose memory the catalog does not have', () => {
    expect(match('NVIDIA GH200 144G HBM3e', 146944)).toMatchObject({
      name: 'GH200 96GB',
      memory_differs: true,
    });
  });
});

describe('reading the gap between estimate and measurement', () => {
  // The LoRA run's 11,440 MiB high-water mark against estimates around it.
  const { watch } = parseProbeReport(watchLora).report;
  const at = (estimateMiB) =>
    compareWatch(watch, {
      peak_bytes: estimateMiB * MIB,
      peak_allocated_bytes: (estimateMiB - 512) * MIB,
      components: [{ key: 'cuda_context', bytes: 512 * MIB }],
    });

  it('is close within 5 % of the measurement either way', () => {
    expect(at(11440)).toMatchObject({ tone: 'close', gap: 0, error: 0 });
    expect(at(11900).tone).toBe('close'); // +4.0 %
    expect(at(10900).tone).toBe('close'); // -4.7 %
  });

  it('is over when the estimate is more than 5 % above', () => {
    expect(at(12100)).toMatchObject({ tone: 'over', gap: 660 * MIB });
  });

  it('is under (fragmentation) when the job used over 10 % more than estimated', () => {
    // 11,440 / 10,300 = +11.1 % over the estimate; 10,500 -> +9.0 %.
    const under = at(10300);
    expect(under.tone).toBe('under');
    expect(under.fragmentation).toBeCloseTo(1140 / (10300 - 512), 12);
    expect(at(10500)).toMatchObject({ tone: 'slightly_under', fragmentation: null });
  });

  it('is far off, not an overhead, beyond half as much again either way', () => {
    expect(at(7000)).toMatchObject({ tone: 'far_under', fragmentation: null }); // +63 %
    expect(at(7700).tone).toBe('under'); // +48.6 %
    expect(at(17500).tone).toBe('far_over'); // +53 %
    expect(at(17000).tone).toBe('over'); // +48.6 %
  });

  it('has nothing to compare without an estimate', () => {
    expect(compareWatch(watch, null)).toBeNull();
    expect(compareWatch(watch, { peak_bytes: Number.NaN })).toBeNull();
  });
});

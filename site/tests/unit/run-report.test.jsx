// `vram-probe run` reports on the compare card: read (lib/probe-report.js) and
// shown phase by phase against the estimate of the request they carry
// (CompareCard RunView). run-cpu-tiny-llama-lora.json is a real CPU run
// (fixtures/probe/README.md); the GPU case adds CUDA figures to a watch report.
import { cleanup, render, screen, within } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { TimingView } from '../../src/components/CompareCard/timing.jsx';
import { RunView, signedPercent } from '../../src/components/CompareCard/views.jsx';
import { formatDuration, formatRange } from '../../src/lib/format.js';
import { parseProbeReport, RUN_PHASES, runPhaseRows } from '../../src/lib/probe-report.js';
import runCpu from './fixtures/probe/run-cpu-tiny-llama-lora.json?raw';
import watchLora from './fixtures/probe/watch-llama-3.2-1b-lora-h100.json?raw';

const MIB = 1024 ** 2;

afterEach(cleanup);

function gpuRun() {
  // A GPU run: the watch report vram-probe wrote, plus the run object with the
  // allocator statistics the script records on CUDA.
  const doc = JSON.parse(watchLora);
  const cpu = JSON.parse(runCpu);
  const stat = (alloc, res) => ({
    allocated_bytes: alloc,
    max_allocated_bytes: alloc,
    reserved_bytes: res,
    max_reserved_bytes: res,
  });
  doc.run = {
    ...cpu.run,
    device: 'cuda',
    phases: [
      { phase: 'load', step: 0, micro_step: 0, seconds: 1.5, ...stat(2400 * MIB, 2500 * MIB) },
      { phase: 'forward', step: 1, micro_step: 1, seconds: 0.2, ...stat(9000 * MIB, 9500 * MIB) },
      { phase: 'forward', step: 2, micro_step: 1, seconds: 0.1, ...stat(10000 * MIB, 10500 * MIB) },
      { phase: 'loss', step: 2, micro_step: 1, seconds: 0.01, ...stat(10200 * MIB, 10500 * MIB) },
      {
        phase: 'backward',
        step: 2,
        micro_step: 1,
        seconds: 0.3,
        ...stat(11000 * MIB, 11400 * MIB),
      },
      {
        phase: 'optimizer_step',
        step: 2,
        micro_step: 0,
        seconds: 0.05,
        ...stat(2600 * MIB, 11400 * MIB),
      },
    ],
  };
  doc.run.estimate = {
    ...doc.run.estimate,
    components: { weights: 2400 * MIB },
    phases: [
      { key: 'forward', bytes: 0, allocated_bytes: 9500 * MIB, reserved_bytes: 10000 * MIB },
      { key: 'loss', bytes: 0, allocated_bytes: 10200 * MIB, reserved_bytes: 10600 * MIB },
      {
        key: 'backward_start',
        bytes: 0,
        allocated_bytes: 10500 * MIB,
        reserved_bytes: 11000 * MIB,
      },
      { key: 'backward', bytes: 0, allocated_bytes: 11550 * MIB, reserved_bytes: 12000 * MIB },
      { key: 'optimizer_step', bytes: 0, allocated_bytes: 2650 * MIB, reserved_bytes: 12000 * MIB },
    ],
  };
  return doc;
}

describe('vram-probe run reports', () => {
  it('reads a CPU run: no GPU, every phase timed, no allocator statistics', () => {
    const { report, error } = parseProbeReport(runCpu);
    expect(error).toBeUndefined();
    expect(report.kind).toBe('run');
    expect(report.gpus).toEqual([]);
    expect(report.watch).toBeUndefined();
    const run = report.run;
    expect(run.device).toBe('cpu');
    expect(run.request.train.method).toBe('lora');
    expect(run.phases.map((p) => p.phase)).toEqual([
      'load',
      ...['forward', 'loss', 'backward', 'optimizer_step'],
      ...['forward', 'loss', 'backward', 'optimizer_step'],
    ]);
    const rows = runPhaseRows(run);
    expect(rows.map((r) => r.phase)).toEqual(RUN_PHASES);
    expect(rows.every((r) => r.measured.allocated === null && r.error === null)).toBe(true);
    // The estimate's figures come from the report (the core's estimate of its request).
    const forward = run.estimate.phases.find((p) => p.key === 'forward');
    expect(rows[1].estimated.allocated).toBe(forward.allocated_bytes);
    expect(rows[0].estimated.allocated).toBe(run.estimate.components.weights);
    expect(run.tensor_bytes.weights).toBe(run.estimate.components.weights);
  });

  it('reads a GPU run: the watch measurement and each phase against the estimate', () => {
    const { report, error } = parseProbeReport(JSON.stringify(gpuRun()));
    expect(error).toBeUndefined();
    expect(report.kind).toBe('run');
    expect(report.watch.peak.accounting_max_bytes).toBeGreaterThan(0);
    const rows = Object.fromEntries(runPhaseRows(report.run).map((r) => [r.phase, r]));
    // The largest of the steps, and backward against the larger of backward_start and backward.
    expect(rows.forward.measured.allocated).toBe(10000 * MIB);
    expect(rows.forward.error).toBeCloseTo(-0.05, 10);
    expect(rows.backward.estimated.allocated).toBe(11550 * MIB);
    expect(rows.backward.error).toBeCloseTo(0.05, 10);
    expect(rows.optimizer_step.measured.reserved).toBe(11400 * MIB);
    expect(rows.load.measured.allocated).toBe(2400 * MIB);
    expect(rows.load.error).toBe(0);
  });

  it('refuses a run whose phases the script would not write, naming the field', () => {
    const doc = JSON.parse(runCpu);
    doc.run.phases[2].phase = 'warmup';
    const { error } = parseProbeReport(JSON.stringify(doc));
    expect(error.path).toBe('run.phases[2].phase');
    const noEstimate = JSON.parse(runCpu);
    delete noEstimate.run.estimate;
    expect(parseProbeReport(JSON.stringify(noEstimate)).error.path).toBe('run.estimate');
    const badBytes = JSON.parse(runCpu);
    badBytes.run.phases[0].max_allocated_bytes = -1;
    expect(parseProbeReport(JSON.stringify(badBytes)).error.path).toBe(
      'run.phases[0].max_allocated_bytes',
    );
  });

  it('shows the phases, the tensors, the notes, and whether the form is this request', () => {
    const { report } = parseProbeReport(runCpu);
    const { unmount } = render(<RunView report={report} result={null} />);
    const table = screen.getByRole('table', { name: 'Estimated and measured memory per phase' });
    const rows = within(table).getAllByRole('row');
    expect(
      rows.map((r) => within(r).queryByRole('rowheader')?.textContent).filter(Boolean),
    ).toEqual(['after load', 'forward', 'loss', 'backward', 'optimizer step']);
    expect(within(rows[2]).getAllByText('not reported')).toHaveLength(1); // no allocator on the CPU
    const forward = report.run.estimate.phases.find((p) => p.key === 'forward');
    expect(within(rows[2]).getAllByText(/KiB|MiB/)[0].dataset.bytes).toBe(
      String(forward.allocated_bytes),
    );
    expect(screen.getByText(/describes another job/)).toBeTruthy();
    expect(screen.getByText(/A CPU run has no CUDA allocator/)).toBeTruthy();
    expect(screen.getByRole('list', { name: 'Notes from the script' }).textContent).toMatch(
      /transformers is not installed/,
    );
    unmount();
    render(<RunView report={report} result={{ peak_bytes: report.run.estimate.peak_bytes }} />);
    expect(screen.getByText(/The page's form is this request/)).toBeTruthy();
  });

  it('says why the script did not train', () => {
    const doc = JSON.parse(runCpu);
    doc.run.phases = [];
    doc.run.error = {
      code: 'cannot_run',
      message: "method qlora: bitsandbytes' 4-bit Linear layers need CUDA",
      path: 'train.method',
    };
    const { report } = parseProbeReport(JSON.stringify(doc));
    render(<RunView report={report} result={null} />);
    expect(screen.getByRole('status').textContent).toMatch(
      /did not train: method qlora.*train\.method/,
    );
  });
});

describe('the step time a report measured (issue 31)', () => {
  const row = (table, label) =>
    within(table)
      .getAllByRole('row')
      .find((r) => r.querySelector('th')?.textContent === label);
  const cells = (r) => [...r.querySelectorAll('td')].map((td) => td.textContent);

  it("reads the run script's timed steps and the estimate's time from a CPU run, which do not compare", () => {
    const { report } = parseProbeReport(runCpu);
    const doc = JSON.parse(runCpu);
    expect(report.timing).toMatchObject({
      format: 'vram_probe_run',
      steps_logged: 2,
      warmup_skipped: 1,
    });
    expect(report.timing.step_seconds).toEqual(doc.timing.step_seconds);
    expect(report.run.estimate.time).toEqual(doc.run.estimate.time);
    render(
      <TimingView
        timing={report.timing}
        estimate={report.run.estimate.time}
        from="the report's estimate"
        cpu
      />,
    );
    expect(screen.getByText(/Measured on the CPU: the estimate is for 1 × A100 80GB/)).toBeTruthy();
    const table = screen.getByRole('table', { name: 'Measured and estimated step time' });
    const step = doc.timing.step_seconds.median;
    expect(cells(row(table, 'One optimizer step'))).toEqual([
      `${formatDuration({ low: step, high: step })} (1 step)`,
      '–',
      '–',
    ]);
  });

  it("sets torchtune's logged tokens/s against the estimate, with the gap of its middle", () => {
    // The LoRA watch report's job printed torchtune's published Step lines
    // (fixtures/probe/README.md); the run object carries the estimate's time.
    const doc = gpuRun();
    const { report, error } = parseProbeReport(JSON.stringify(doc));
    expect(error).toBeUndefined();
    const t = report.timing;
    expect(t.format).toBe('torchtune');
    expect(t.tokens_per_second_per_gpu).toEqual({
      median: 417.49818620797487,
      min: 345.44944748351764,
      max: 962.2259327743811,
      count: 11,
    });
    const est = report.run.estimate.time;
    render(<TimingView timing={t} estimate={est} from="the report's estimate" />);
    const table = screen.getByRole('table', { name: 'Measured and estimated step time' });
    const mid = Math.sqrt(est.tokens_per_second_per_gpu.low * est.tokens_per_second_per_gpu.high);
    expect(cells(row(table, 'Tokens per second per GPU'))).toEqual([
      '417 (345–962, 11 steps)',
      formatRange(est.tokens_per_second_per_gpu),
      signedPercent((mid - 417.49818620797487) / 417.49818620797487),
    ]);
    // torchtune prints no step time.
    expect(cells(row(table, 'One optimizer step'))[0]).toBe('–');
  });

  it('says so when the job printed no step times', () => {
    const doc = JSON.parse(watchLora);
    doc.timing = null;
    const { report } = parseProbeReport(JSON.stringify(doc));
    expect(report.timing).toBeNull();
    render(<TimingView timing={null} estimate={null} />);
    expect(screen.getByTestId('timing-none').textContent).toMatch(/printed none/);
  });

  it('refuses a timing that is not the shape vram-probe writes, naming the field', () => {
    const doc = JSON.parse(watchLora);
    doc.timing.tokens_per_second_per_gpu.median = 'fast';
    expect(parseProbeReport(JSON.stringify(doc)).error.path).toBe(
      'timing.tokens_per_second_per_gpu.median',
    );
  });
});

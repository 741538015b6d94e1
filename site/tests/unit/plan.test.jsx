// The layout planner panel: the search runs in the real WebAssembly core
// (vram.plan), its candidates fill a table, and Apply puts a layout into the
// form so that the page's estimate is that candidate's peak, byte for byte.
import { render, fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { App } from '../../src/components/App/index.jsx';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PlanPanel } from '../../src/components/PlanPanel/index.jsx';
import { buildPlanRequest, clearPlan, planOutcome } from '../../src/lib/plan.js';
import { applyCandidate, settingsMatch } from '../../src/lib/plan-apply.js';
import { loadPreset } from '../../src/lib/presets.js';
import {
  buildRequest,
  defaultSettings,
  estimator,
  model,
  request,
  routedExperts,
  settings,
} from '../../src/lib/state.js';
import { loadRealEstimator, openPage, peakBytes } from './helpers.jsx';

let vram;
beforeAll(async () => {
  vram = await loadRealEstimator();
});
// The last search is page state (a signal); every test starts without one.
beforeEach(() => clearPlan());

const LLAMA_8B_ON_A100 =
  '#m=preset:meta-llama/Llama-3.1-8B&task=train&method=full&gpus=8&gpu=A100%2040GB';

/** Opens a page whose estimate fails, and waits for its notice. */
async function openFailingPage(hash) {
  window.history.replaceState(null, '', `${window.location.pathname}${hash}`);
  render(<App win={window} />);
  return screen.findByRole('alert', { name: 'The estimator could not use this input' });
}

/** The planner's request for the page's current settings and model. */
function planRequestFor() {
  return buildPlanRequest(settings.value, model.value.config, vram.version().gpus, 0);
}

function planCard() {
  return screen.getByRole('region', { name: 'Find a layout' });
}

function findButton() {
  return within(planCard()).getByRole('button', { name: /^Find layouts for/ });
}

function candidateTable() {
  return within(planCard()).getByRole('table', { name: 'Layouts, best first' });
}

/** The candidate rows of the table: {rank, label, peak, fit, row}. */
function candidateRows() {
  return within(candidateTable())
    .getAllByRole('row')
    .filter((row) => row.hasAttribute('data-rank'))
    .map((row) => ({
      rank: Number(row.getAttribute('data-rank')),
      label: within(row).getByRole('rowheader').textContent,
      peak: Number(row.querySelector('[data-bytes]').getAttribute('data-bytes')),
      fit: within(row).getAllByRole('cell')[2].textContent,
      row,
    }));
}

function lastPlan() {
  return planOutcome.value.result.plan;
}

describe('the planner panel', () => {
  it('finds the layouts for 8 × A100 40GB and lists them best first, as the core ranks them', async () => {
    await openPage(LLAMA_8B_ON_A100);
    expect(findButton().textContent).toBe('Find layouts for 8 × A100 40GB');
    expect(within(planCard()).queryByRole('table')).toBeNull();

    fireEvent.click(findButton());
    // The first search loads the plan module: seconds on a loaded machine.
    await waitFor(() => expect(candidateRows().length).toBeGreaterThan(0), { timeout: 20000 });
    const plan = lastPlan();
    const rows = candidateRows();
    expect(rows).toHaveLength(plan.candidates.length);
    expect(rows).toHaveLength(10);
    expect(rows.map((r) => r.label)).toEqual(plan.candidates.map((c) => c.label));
    expect(rows.map((r) => r.rank)).toEqual(plan.candidates.map((c) => c.rank));
    expect(rows.map((r) => r.peak)).toEqual(plan.candidates.map((c) => c.peak_bytes));
    // The core's verdict words, the same as the peak card's.
    expect(rows[0].fit).toBe(plan.candidates[0].words);

    // The counts and the core's notes are shown.
    const text = planCard().textContent;
    expect(text).toContain(
      `${plan.considered} DeepSpeed (ZeRO) layouts of 8 × A100 40GB considered, ${plan.fitting} fit.`,
    );
    expect(plan.considered).toBeGreaterThan(plan.fitting);
    const notes = within(planCard()).getByRole('list', { name: 'Planner notes' });
    expect(notes.textContent).toContain('precision mixed_bf16');
    expect(document.body.textContent).not.toMatch(/NaN|undefined/);
  });

  it('shows why a layout costs what it costs when its row is clicked', async () => {
    await openPage(LLAMA_8B_ON_A100);
    fireEvent.click(findButton());
    await waitFor(() => expect(candidateRows().length).toBeGreaterThan(0));
    const recompute = candidateRows().find((r) => /activation checkpointing/.test(r.label));
    expect(within(planCard()).queryByRole('list', { name: `Why: ${recompute.label}` })).toBeNull();

    fireEvent.click(recompute.row);
    const why = within(planCard()).getByRole('list', { name: `Why: ${recompute.label}` });
    expect(why.textContent).toContain('full recomputation re-runs the forward');
    const toggle = within(recompute.row).getByRole('button', { name: recompute.label });
    expect(toggle.getAttribute('aria-expanded')).toBe('true');

    fireEvent.click(toggle);
    expect(within(planCard()).queryByRole('list', { name: `Why: ${recompute.label}` })).toBeNull();
  });

  it("Apply sets the form to a candidate's layout and the page's peak is its peak, exactly", async () => {
    await openPage(LLAMA_8B_ON_A100);
    fireEvent.click(findButton());
    // The first search loads the plan module: seconds on a loaded machine.
    await waitFor(() => expect(candidateRows().length).toBeGreaterThan(0), { timeout: 20000 });
    const plan = lastPlan();
    // Every row, including ones with recomputation, ZeRO-3 and pure tensor parallel.
    for (const [i, c] of plan.candidates.entries()) {
      const row = candidateRows()[i];
      fireEvent.click(within(row.row).getByRole('button', { name: `Apply: ${c.label}` }));
      await waitFor(() => expect(peakBytes()).toBe(c.peak_bytes));
      expect(request.value.parallel).toMatchObject({
        gpus: 8,
        dp: c.parallel.dp,
        tp: c.parallel.tp,
        pp: c.parallel.pp,
      });
      expect(request.value.parallel.zero ?? 0).toBe(c.parallel.zero ?? 0);
      expect(request.value.train.grad_checkpointing).toBe(c.grad_checkpointing === 'full');
      // The plan note says it planned with fp32 master weights: so does the form.
      expect(request.value.train.precision).toBe('mixed_bf16');
      // The applied row is marked, and the table stays.
      const applied = candidateRows()[i].row;
      expect(applied.getAttribute('aria-current')).toBe('true');
      expect(
        within(applied).getByRole('button', { name: `In the form: ${c.label}` }).disabled,
      ).toBe(true);
    }
    // The Hardware card's boxes show the last one.
    const last = plan.candidates[plan.candidates.length - 1];
    expect(screen.getByLabelText(/tensor_parallel_size/).value).toBe(String(last.parallel.tp));
    expect(screen.getByLabelText(/zero_optimization\.stage/).value).toBe(
      String(last.parallel.zero ?? 0),
    );
  });

  it('the framework select reaches the request: Megatron-LM candidates use its optimizer and sequence parallel', async () => {
    await openPage(LLAMA_8B_ON_A100);
    const select = within(planCard()).getByLabelText(/--framework/);
    expect(select.value).toBe('');
    fireEvent.change(select, { target: { value: 'megatron' } });
    await waitFor(() => expect(settings.value.planner.framework).toBe('megatron'));
    await waitFor(() => expect(window.location.hash).toContain('planfw=megatron'));

    fireEvent.click(findButton());
    await waitFor(() => expect(candidateRows().length).toBeGreaterThan(0));
    expect(planOutcome.value.request.plan.framework).toBe('megatron');
    expect(lastPlan().framework).toBe('megatron');
    const labels = candidateRows().map((r) => r.label);
    expect(labels[0]).toBe('tp 4 x dp 2, Megatron distributed optimizer, sequence parallel');
    expect(labels.some((l) => /ZeRO/.test(l))).toBe(false);

    // Applying it turns on the Megatron boxes of the Hardware card.
    const first = lastPlan().candidates[0];
    fireEvent.click(screen.getByRole('button', { name: `Apply: ${first.label}` }));
    await waitFor(() => expect(peakBytes()).toBe(first.peak_bytes));
    expect(screen.getByLabelText(/use_distributed_optimizer/).checked).toBe(true);
    expect(screen.getByLabelText(/^Sequence parallel/).checked).toBe(true);
    expect(request.value.parallel).toMatchObject({
      tp: 4,
      dp: 2,
      distributed_optimizer: true,
      sequence_parallel: true,
    });

    // FSDP candidates set the FSDP strategy.
    fireEvent.change(within(planCard()).getByLabelText(/--framework/), {
      target: { value: 'fsdp' },
    });
    await waitFor(() =>
      expect(within(planCard()).getByRole('status').textContent).toMatch(/changed/),
    );
    fireEvent.click(findButton());
    await waitFor(() => expect(lastPlan().framework).toBe('fsdp'));
    expect(candidateRows().every((r) => /FSDP|no data parallel/.test(r.label))).toBe(true);
  });

  it('leaves the framework to the core, which plans in the family of the form layout', async () => {
    await openPage(`${LLAMA_8B_ON_A100}&fsdp=full_shard`);
    expect(within(planCard()).getByLabelText(/--framework/).value).toBe('');
    // No framework: only the form's global batch, which every layout keeps.
    expect(planRequestFor().plan).toEqual({ global_batch: 8 });
    fireEvent.click(findButton());
    await waitFor(() => expect(lastPlan().framework).toBe('fsdp'));
    expect(within(planCard()).getByRole('option', { name: 'auto: FSDP' })).toBeTruthy();
  });

  it('asks the core about sequence parallel: a tensor-parallel form with it plans in Megatron-LM', async () => {
    // plan.js used to decide this itself, and the core (api.cpp plan()) did
    // not: `vram-probe plan` planned DeepSpeed for the same request.
    await openPage(`${LLAMA_8B_ON_A100}&tp=2&sp=1`);
    const req = planRequestFor();
    expect(req.plan).toEqual({ global_batch: 4 });
    expect(req.parallel.sequence_parallel).toBe(true);
    expect((await vram.plan(req)).plan.framework).toBe('megatron');
    // Without sequence parallel the core stays with DeepSpeed.
    expect(
      (await vram.plan({ ...req, parallel: { ...req.parallel, sequence_parallel: false } })).plan
        .framework,
    ).toBe('deepspeed');
  });

  it('says plainly when nothing fits, and what to try', async () => {
    await openPage(
      '#m=preset:meta-llama/Llama-3.1-8B&task=train&method=full&gpus=2&gpu=T4%2016GB&seq=8192&prec=fp16&zero=3&gc=full',
    );
    fireEvent.click(findButton());
    const none = await within(planCard()).findByText(/None of the \d+ layouts fits on 2 × T4 16GB/);
    expect(none.textContent).toContain('not even with CPU offload');
    expect(none.textContent).toContain('more GPUs');
    expect(none.textContent).toContain('a card with more memory');
    expect(none.textContent).toContain('LoRA or QLoRA');
    expect(none.textContent).toContain('a shorter max_seq_length');
    expect(lastPlan().fitting).toBe(0);
    // The closest layouts are still listed, the closest first (issue 33), and a note names it.
    expect(candidateRows().every((r) => r.fit === 'Does not fit')).toBe(true);
    const ratios = lastPlan().candidates.map((c) => c.fit_ratio);
    expect(ratios).toEqual([...ratios].sort((a, b) => a - b));
    expect(planCard().textContent).toContain(
      `nothing fits; the closest is ${lastPlan().candidates[0].label}`,
    );
    // The T4 has no bf16, so the plan keeps the form's fp16 (no bf16 + fp32
    // master weights): the form's ZeRO-3 layout is a row, and the one marked.
    const formLayout = 'dp 2, ZeRO-3, activation checkpointing';
    expect(candidateRows().map((r) => r.label)).toContain(formLayout);
    expect(
      candidateRows()
        .filter((r) => r.row.hasAttribute('aria-current'))
        .map((r) => r.label),
    ).toEqual([formLayout]);
    expect(document.body.textContent).not.toMatch(/NaN|undefined/);
  });

  it("shows the core's error with the field it names", async () => {
    await openFailingPage(`${LLAMA_8B_ON_A100.replace('gpus=8', 'gpus=16')}&nodes=3`);
    fireEvent.click(findButton());
    const notice = await screen.findByRole('alert', {
      name: 'The planner could not use this input',
    });
    expect(notice.textContent).toContain('parallel.nodes (3) must divide parallel.gpus (16)');
    expect(notice.textContent).toContain('Parallelism › Nodes (parallel.nodes)');
    expect(within(planCard()).queryByRole('table')).toBeNull();
  });

  it('searches even when the form layout is invalid, and Apply fixes it', async () => {
    await openFailingPage(`${LLAMA_8B_ON_A100.replace('gpus=8', 'gpus=6')}&tp=4`);
    fireEvent.click(findButton());
    await waitFor(() => expect(candidateRows().length).toBeGreaterThan(0));
    const first = lastPlan().candidates[0];
    fireEvent.click(screen.getByRole('button', { name: `Apply: ${first.label}` }));
    await waitFor(() => expect(peakBytes()).toBe(first.peak_bytes));
    expect(
      screen.queryByRole('alert', { name: 'The estimator could not use this input' }),
    ).toBeNull();
  });

  it('marks the table out of date when the job changes', async () => {
    await openPage(LLAMA_8B_ON_A100);
    fireEvent.click(findButton());
    await waitFor(() => expect(candidateRows().length).toBeGreaterThan(0));
    fireEvent.input(screen.getByLabelText(/max_seq_length/), { target: { value: '4096' } });
    await waitFor(() =>
      expect(within(planCard()).getByRole('status').textContent).toBe(
        'The settings changed since the last search: find layouts again.',
      ),
    );
    expect(within(planCard()).queryByRole('table')).toBeNull();
  });

  it('the host RAM box can be emptied again: no plan.host_ram_gib, and the plan says it used the default', async () => {
    await openPage(`${LLAMA_8B_ON_A100}&hostram=512`);
    const box = within(planCard()).getByLabelText(/Host RAM per node/);
    expect(box.value).toBe('512');
    expect(planRequestFor().plan.host_ram_gib).toBe(512);
    fireEvent.input(box, { target: { value: '' } });
    expect(box.value).toBe('');
    expect(box.getAttribute('aria-invalid')).toBeNull();
    expect(settings.value.planner.host_ram_gib).toBeNull();
    expect(planRequestFor().plan).not.toHaveProperty('host_ram_gib');
    await waitFor(() => expect(window.location.hash).not.toMatch(/hostram=/));
    fireEvent.click(findButton());
    await waitFor(() => candidateTable(), { timeout: 20000 });
    expect(lastPlan().host_ram_default).toBe(true);
    expect(planCard().textContent).toContain('none given, so the core’s default');
    // A value typed again is used again.
    fireEvent.input(box, { target: { value: '256' } });
    expect(settings.value.planner.host_ram_gib).toBe(256);
  });

  it('is shown for training only', async () => {
    await openPage('#m=preset:meta-llama/Llama-3.2-1B&task=infer');
    expect(screen.queryByRole('region', { name: 'Find a layout' })).toBeNull();
  });

  it('disables the button with a hint when no GPU is chosen', async () => {
    // The GPU list comes from the estimator: before it arrives the request names no GPU.
    const llama = await loadPreset('meta-llama/Llama-3.1-8B');
    const saved = { estimator: estimator.value, model: model.value, settings: settings.value };
    try {
      estimator.value = { ...vram, version: () => ({ ...vram.version(), gpus: [] }) };
      model.value = { source: 'preset', id: llama.id, config: llama.config };
      settings.value = {
        ...defaultSettings(),
        parallel: { ...defaultSettings().parallel, gpus: 8 },
      };
      render(<PlanPanel />);
      const button = screen.getByRole('button', { name: /^Find layouts for/ });
      expect(button.disabled).toBe(true);
      expect(button.textContent).toBe('Find layouts for 8 × GPU');
      expect(button.getAttribute('aria-describedby')).toBeTruthy();
      const hint = document.getElementById(button.getAttribute('aria-describedby'));
      expect(hint.textContent).toContain('Choose a GPU in the Hardware card');
    } finally {
      estimator.value = saved.estimator;
      model.value = saved.model;
      settings.value = saved.settings;
    }
  });
});

// Apply's promise in full: every candidate of a search, applied to the form,
// gives the page's estimate that candidate's peak. Pure functions and the real
// core, over layouts the table would rarely show.
describe('Apply reproduces every candidate', () => {
  function settingsFor(patch) {
    const s = defaultSettings();
    return {
      ...s,
      ...patch,
      train: { ...s.train, ...patch.train },
      parallel: { ...s.parallel, ...patch.parallel },
      gpu: { ...s.gpu, ...patch.gpu },
    };
  }

  const FULL = { method: 'full' };
  const CASES = [
    [
      'Llama-3.1-8B, DeepSpeed',
      'meta-llama/Llama-3.1-8B',
      { train: FULL, parallel: { gpus: 8 }, gpu: { name: 'A100 40GB' } },
    ],
    [
      'Llama-3.1-8B, FSDP',
      'meta-llama/Llama-3.1-8B',
      {
        train: FULL,
        parallel: { gpus: 8 },
        gpu: { name: 'A100 40GB' },
        planner: { framework: 'fsdp' },
      },
    ],
    [
      'Llama-3.1-8B, Megatron-LM',
      'meta-llama/Llama-3.1-8B',
      {
        train: FULL,
        parallel: { gpus: 8 },
        gpu: { name: 'A100 40GB' },
        planner: { framework: 'megatron' },
      },
    ],
    [
      'Mixtral-8x7B, experts, DeepSpeed',
      'mistralai/Mixtral-8x7B-v0.1',
      { train: FULL, parallel: { gpus: 16, nodes: 2 }, gpu: { name: 'H100 80GB' } },
    ],
    [
      'Mixtral-8x7B, experts, Megatron-LM',
      'mistralai/Mixtral-8x7B-v0.1',
      {
        train: FULL,
        parallel: { gpus: 16 },
        gpu: { name: 'H100 80GB' },
        planner: { framework: 'megatron' },
      },
    ],
    [
      'hidden FSDP2 and fp32 reduce, FSDP over two nodes, long sequences',
      'meta-llama/Llama-3.2-1B',
      {
        train: { ...FULL, seq_len: 32768 },
        parallel: { gpus: 16, nodes: 2, fsdp_version: 2, fsdp_reduce_dtype: 'fp32' },
        gpu: { name: 'L40S 48GB' },
        planner: { framework: 'fsdp' },
      },
    ],
    [
      'hidden bf16 main gradients, Megatron-LM',
      'Qwen/Qwen2.5-7B',
      {
        train: FULL,
        parallel: { gpus: 8, main_grads_fp32: false },
        gpu: { name: 'H100 80GB' },
        planner: { framework: 'megatron' },
      },
    ],
    [
      'an interleaved pipeline, context parallel and expert parallel in the form',
      'mistralai/Mixtral-8x7B-v0.1',
      {
        // Eight micro-batches: the interleaved schedule changes what is in flight.
        train: { ...FULL, grad_accum: 8 },
        parallel: { gpus: 16, pp: 2, vp: 2, cp: 2, ep: 2, tp: 2 },
        gpu: { name: 'H100 80GB' },
        planner: { framework: 'megatron' },
      },
    ],
    [
      'a pasted DeepSpeed config with a stage and offload',
      'meta-llama/Llama-3.1-8B',
      {
        train: FULL,
        parallel: { gpus: 4 },
        gpu: { name: 'A100 80GB' },
        deepspeed:
          '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}, "reduce_bucket_size": 200000000}, "bf16": {"enabled": true}}',
      },
    ],
    [
      'the same config, FSDP candidates',
      'meta-llama/Llama-3.1-8B',
      {
        train: FULL,
        parallel: { gpus: 4 },
        gpu: { name: 'A100 80GB' },
        planner: { framework: 'fsdp' },
        deepspeed: '{"zero_optimization": {"stage": 3}}',
      },
    ],
    [
      'selective recompute, pure fp16, LoRA',
      'Qwen/Qwen2.5-7B',
      {
        train: { grad_checkpointing: 'selective', precision: 'fp16' },
        parallel: { gpus: 4 },
        gpu: { name: 'RTX 4090 24GB' },
      },
    ],
    [
      'nothing fits: CPU offload candidates',
      'meta-llama/Llama-3.1-8B',
      // fp16: the T4 has no bf16 (the core refuses a bf16 job there).
      {
        train: { ...FULL, seq_len: 8192, precision: 'fp16' },
        parallel: { gpus: 2 },
        gpu: { name: 'T4 16GB' },
      },
    ],
    [
      'a custom GPU size',
      'google/gemma-2-9b',
      { train: FULL, parallel: { gpus: 8 }, gpu: { mode: 'custom', memory_gib: 60 } },
    ],
  ];

  it("marks the form's own layout, with the stage a pasted DeepSpeed config sets", async () => {
    const { config } = await loadPreset('meta-llama/Llama-3.1-8B');
    const catalog = vram.version().gpus;
    const s = settingsFor({
      train: { ...FULL, precision: 'mixed_bf16' },
      parallel: { gpus: 4, zero: 0 },
      gpu: { name: 'A100 80GB' },
      deepspeed: '{"zero_optimization": {"stage": 2}}',
    });
    const { plan } = await vram.plan({
      ...buildPlanRequest(s, config, catalog),
      plan: { top: 1000 },
    });
    const marked = plan.candidates.filter((c) => settingsMatch(s, c, plan)).map((c) => c.label);
    expect(marked).toEqual(['dp 4, ZeRO-2']);
  });

  it.each(CASES)(
    '%s',
    async (_, id, patch) => {
      const { config } = await loadPreset(id);
      const experts = routedExperts(vram.modelInfo({ config }));
      const catalog = vram.version().gpus;
      const s = settingsFor(patch);
      const req = buildPlanRequest(s, config, catalog, experts);
      req.plan.top = 1000;
      const { plan } = await vram.plan(req);
      expect(plan.candidates.length).toBeLessThanOrEqual(plan.considered);
      expect(plan.candidates.length).toBeGreaterThan(1);
      for (const c of plan.candidates) {
        const applied = applyCandidate(s, c, plan);
        const peak = vram.estimate(buildRequest(applied, config, catalog, experts)).peak_bytes;
        expect({ label: c.label, peak }).toEqual({ label: c.label, peak: c.peak_bytes });
        // The table marks it as the form's layout, and only it.
        expect(plan.candidates.filter((o) => settingsMatch(applied, o, plan))).toEqual([c]);
      }
      // Every candidate is estimated again here; with the global batch held
      // fixed, tensor- and pipeline-parallel layouts replay more micro-steps.
    },
    120000,
  );
});

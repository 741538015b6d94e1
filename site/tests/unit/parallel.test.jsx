// Multi-GPU training layouts in the page: DDP, ZeRO, FSDP, tensor / pipeline /
// context parallel, offloading and a pasted DeepSpeed config, with the real
// WebAssembly estimator.
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it } from 'vitest';
import { request } from '../../src/lib/state.js';
import { loadRealEstimator, openPage, peakBytes, peakChangedFrom } from './helpers.jsx';

beforeAll(async () => {
  await loadRealEstimator();
});

const LLAMA_FULL = '#m=preset:meta-llama/Llama-3.1-8B&task=train&method=full';

function layout() {
  return screen.getByRole('group', { name: 'Training layout' });
}

function estimatorError() {
  return screen.getByRole('alert', { name: 'The estimator could not use this input' });
}

function deepspeedBox() {
  return screen.getByLabelText(/ds_config\.json/);
}

describe('multi-GPU training layouts', () => {
  it('8 GPUs with ZeRO-3 lower the per-GPU peak of Llama-3.1-8B full fine-tuning', async () => {
    await openPage(LLAMA_FULL);
    const oneGpu = peakBytes();
    expect(screen.queryByRole('group', { name: 'Training layout' })).toBeNull();

    fireEvent.input(screen.getByLabelText(/world_size/), { target: { value: '8' } });
    const ddp = await peakChangedFrom(oneGpu);
    expect(within(layout()).getByText('DDP')).toBeTruthy();

    fireEvent.change(screen.getByLabelText(/zero_optimization\.stage/), {
      target: { value: '3' },
    });
    const zero3 = await peakChangedFrom(ddp);
    expect(zero3).toBeLessThan(oneGpu);
    expect(request.value.parallel).toMatchObject({ gpus: 8, dp: 8, tp: 1, pp: 1, zero: 3 });
    expect(within(layout()).getByText('ZeRO-3')).toBeTruthy();
    expect(layout().textContent).toContain('shard group 8');
    expect(layout().textContent).toContain('dp 8 × tp 1 × pp 1 × cp 1');
    // ZeRO-3's own buffers are in the breakdown.
    expect(screen.getAllByText(/Gathered parameters/).length).toBeGreaterThan(0);
    expect(document.body.textContent).not.toMatch(/NaN|undefined/);
  });

  it('offers parameter offload only where it is valid, and it lowers the peak', async () => {
    await openPage(`${LLAMA_FULL}&gpus=8&zero=2`);
    expect(screen.queryByLabelText(/offload_param\.device/)).toBeNull();
    expect(screen.getByLabelText(/offload_optimizer\.device/)).toBeTruthy();

    fireEvent.change(screen.getByLabelText(/zero_optimization\.stage/), {
      target: { value: '3' },
    });
    const box = await screen.findByLabelText(/offload_param\.device/);
    const before = peakBytes();
    fireEvent.click(box);
    const after = await peakChangedFrom(before);
    expect(after).toBeLessThan(before);
    expect(request.value.parallel.offload_params).toBe(true);

    // ZeRO and FSDP exclude each other: choosing FSDP turns ZeRO off.
    fireEvent.change(screen.getByLabelText(/fsdp_sharding_strategy/), {
      target: { value: 'shard_grad_op' },
    });
    await waitFor(() => expect(request.value.parallel.fsdp).toBe('shard_grad_op'));
    expect(request.value.parallel.zero).toBe(0);
    expect(screen.queryByLabelText(/offload_param\.device/)).toBeNull();
    expect(request.value.parallel.offload_params).toBeUndefined();
    expect(screen.queryByRole('alert')).toBeNull();
  });

  it('FSDP hybrid shard shards within a node: the shard group is the GPUs per node', async () => {
    await openPage(`${LLAMA_FULL}&gpus=16`);
    expect(screen.queryByLabelText(/nproc_per_node/)).toBeNull();
    fireEvent.change(screen.getByLabelText(/fsdp_sharding_strategy/), {
      target: { value: 'hybrid_shard' },
    });
    const perNode = await screen.findByLabelText(/nproc_per_node/);
    await waitFor(() => expect(layout().textContent).toContain('shard group 8'));
    expect(within(layout()).getByText('FSDP hybrid_shard')).toBeTruthy();

    fireEvent.input(perNode, { target: { value: '4' } });
    await waitFor(() => expect(layout().textContent).toContain('shard group 4'));
    expect(request.value.parallel).toMatchObject({ fsdp: 'hybrid_shard', gpus_per_node: 4 });
    expect(layout().textContent).toContain('dp 16 × tp 1 × pp 1 × cp 1');
  });

  it('shows the first and last pipeline stage peaks with pipeline parallel', async () => {
    await openPage(`${LLAMA_FULL}&gpus=8&tp=2&pp=2&cp=2`);
    const text = layout().textContent;
    expect(text).toContain('dp 1 × tp 2 × pp 2 × cp 2');
    expect(text).toMatch(/First pipeline stage peak\s*[\d.]+ GiB/);
    expect(text).toMatch(/Last pipeline stage peak\s*[\d.]+ GiB/);
    expect(request.value.parallel).toMatchObject({ gpus: 8, dp: 1, tp: 2, pp: 2, cp: 2 });
  });

  it("a layout that does not multiply out shows the core's message and the field in words", async () => {
    await openPage(`${LLAMA_FULL}&gpus=6`);
    fireEvent.input(screen.getByLabelText(/tensor_parallel_size/), { target: { value: '4' } });
    const notice = await screen.findByRole('alert', {
      name: 'The estimator could not use this input',
    });
    expect(notice.textContent).toContain('dp x tp x pp x cp (4) must equal parallel.gpus (6)');
    expect(notice.textContent).toContain('Parallelism › Number of GPUs (parallel.gpus)');
    expect(notice.textContent).toContain('inconsistent');
    // The form says it too, next to the boxes.
    expect(
      screen.getByText(/must be a multiple of tensor × pipeline × context parallel/),
    ).toBeTruthy();
  });
});

describe('a pasted DeepSpeed config', () => {
  it("fills ZeRO, offload and precision from the config, and the form's boxes step aside", async () => {
    await openPage(`${LLAMA_FULL}&gpus=4`);
    const before = peakBytes();
    fireEvent.input(deepspeedBox(), {
      target: {
        value: JSON.stringify({
          zero_optimization: { stage: 2, offload_optimizer: { device: 'cpu' } },
          bf16: { enabled: true },
          gradient_accumulation_steps: 4,
        }),
      },
    });
    await peakChangedFrom(before);
    expect(request.value.deepspeed.zero_optimization.stage).toBe(2);
    expect(request.value.parallel.zero).toBeUndefined();
    expect(request.value.train.precision).toBeUndefined();
    expect(request.value.train.grad_accum).toBeUndefined();
    expect(within(layout()).getByText('ZeRO-2')).toBeTruthy();
    const zero = screen.getByLabelText(/zero_optimization\.stage/);
    expect(zero.disabled).toBe(true);
    expect(zero.value).toBe('2');
    expect(screen.getByLabelText(/offload_optimizer\.device/).checked).toBe(true);
    expect(screen.getByText(/From this config: ZeRO stage 2, optimizer offload cpu/)).toBeTruthy();
    await waitFor(() => expect(window.location.hash).toContain('ds='));

    fireEvent.click(screen.getByRole('button', { name: 'Remove the DeepSpeed config' }));
    await waitFor(() => expect(request.value.deepspeed).toBeUndefined());
    expect(screen.getByLabelText(/zero_optimization\.stage/).disabled).toBe(false);
  });

  it('says in words that invalid JSON is not a config, and keeps the estimate', async () => {
    await openPage(`${LLAMA_FULL}&gpus=8&zero=3`);
    const before = peakBytes();
    fireEvent.input(deepspeedBox(), { target: { value: '{"zero_optimization": {"stage": 3' } });
    await waitFor(() => expect(screen.getByText(/That is not valid JSON/)).toBeTruthy());
    expect(deepspeedBox().getAttribute('aria-invalid')).toBe('true');
    expect(peakBytes()).toBe(before);
    expect(request.value.deepspeed).toBeUndefined();
    expect(
      screen.queryByRole('alert', { name: 'The estimator could not use this input' }),
    ).toBeNull();
  });

  it("shows the core's message when the config clashes with the form", async () => {
    await openPage(`${LLAMA_FULL}&gpus=8&fsdp=full_shard`);
    fireEvent.input(deepspeedBox(), {
      target: { value: '{"zero_optimization": {"stage": 3}}' },
    });
    const notice = await screen.findByRole('alert', {
      name: 'The estimator could not use this input',
    });
    expect(notice.textContent).toContain('not both');
    expect(notice.textContent).toContain('Parallelism › FSDP (parallel.fsdp)');

    fireEvent.input(deepspeedBox(), {
      target: { value: '{"zero_optimization": {"stage": 7}}' },
    });
    await waitFor(() =>
      expect(estimatorError().textContent).toContain(
        'DeepSpeed config › zero_optimization › stage',
      ),
    );
  });
});

describe('the layout in the link', () => {
  it('keeps context parallel, offload, GPUs per node and the DeepSpeed config in the hash', async () => {
    await openPage(`${LLAMA_FULL}&gpus=16&cp=2&fsdp=hybrid_shard&gpn=4&offp=1`);
    expect(request.value.parallel).toMatchObject({
      gpus: 16,
      dp: 8,
      cp: 2,
      fsdp: 'hybrid_shard',
      gpus_per_node: 4,
      offload_params: true,
    });
    const bytes = peakBytes();
    await waitFor(() => expect(window.location.hash).toMatch(/gpn=4/));
    const link = window.location.hash;
    expect(link).toMatch(/cp=2/);
    expect(link).toMatch(/offp=1/);

    cleanup();
    window.history.replaceState(null, '', window.location.pathname);
    await openPage(link);
    expect(peakBytes()).toBe(bytes);
    expect(screen.getByLabelText(/nproc_per_node/).value).toBe('4');
    expect(screen.getByLabelText(/context_parallel_size/).value).toBe('2');
    expect(screen.getByLabelText(/offload_param\.device/).checked).toBe(true);
  });
});

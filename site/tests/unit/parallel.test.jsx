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

  it('a layout that does not multiply out names the degree that does not divide (issue 18)', async () => {
    await openPage(`${LLAMA_FULL}&gpus=6`);
    fireEvent.input(screen.getByLabelText(/tensor_parallel_size/), { target: { value: '4' } });
    const notice = await screen.findByRole('alert', {
      name: 'The estimator could not use this input',
    });
    // tp 4 does not divide 6 GPUs: the tensor-parallel field is named, not the GPU count.
    expect(notice.textContent).toContain('parallel.tp (4) must divide parallel.gpus (6)');
    expect(notice.textContent).toContain('(parallel.tp)');
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

const MIXTRAL_FULL = '#m=preset:mistralai/Mixtral-8x7B-v0.1&task=train&method=full';

/** The stage table, once shown: a chunk of its own (components/Results), loaded where it is first shown. */
function stagesTable() {
  return screen.findByRole('region', { name: 'Pipeline stages' });
}

/** The body rows of the stage table, as {stage, cells, busiest}. */
async function stageRows() {
  return within(await stagesTable())
    .getAllByRole('row')
    .slice(1)
    .map((row) => ({
      stage: row.getAttribute('data-stage'),
      cells: within(row)
        .getAllByRole('cell')
        .map((c) => c.textContent),
      peak: Number(row.querySelector('[data-bytes]').getAttribute('data-bytes')),
      busiest: row.getAttribute('aria-current') === 'true',
    }));
}

describe('Megatron-style layouts: experts, virtual stages, nodes, distributed optimizer', () => {
  it('offers expert parallel only for a mixture-of-experts model, and ep reaches the request', async () => {
    await openPage(`${LLAMA_FULL}&gpus=8`);
    expect(screen.queryByLabelText(/expert_model_parallel_size/)).toBeNull();
    cleanup();

    await openPage(`${MIXTRAL_FULL}&gpus=8&zero=1`);
    const before = peakBytes();
    expect(within(layout()).getByText('Experts per GPU').nextSibling.textContent).toBe('8');
    fireEvent.input(screen.getByLabelText(/expert_model_parallel_size/), {
      target: { value: '2' },
    });
    const after = await peakChangedFrom(before);
    expect(after).toBeLessThan(before);
    expect(request.value.parallel.ep).toBe(2);
    expect(within(layout()).getByText('Experts per GPU').nextSibling.textContent).toBe('4');
    expect(layout().textContent).toContain('ep 2');
    expect(screen.getByText(/4 of the 8 experts per GPU/)).toBeTruthy();
  });

  it('an expert-parallel degree that does not divide the experts names the field', async () => {
    await openPage(`${MIXTRAL_FULL}&gpus=8`);
    fireEvent.input(screen.getByLabelText(/expert_model_parallel_size/), {
      target: { value: '3' },
    });
    const notice = await screen.findByRole('alert', {
      name: 'The estimator could not use this input',
    });
    expect(notice.textContent).toContain('parallel.ep (3) must divide the routed experts (8)');
    expect(notice.textContent).toContain('Parallelism › Expert parallel (parallel.ep)');
  });

  it('shows one row per pipeline stage, the busiest highlighted, and virtual stages reach it', async () => {
    await openPage(`${LLAMA_FULL}&gpus=8`);
    expect(screen.queryByRole('region', { name: 'Pipeline stages' })).toBeNull();
    expect(screen.queryByLabelText(/virtual_pipeline_model_parallel_size/)).toBeNull();
    cleanup();

    await openPage(`${LLAMA_FULL}&gpus=4&pp=4&ga=8`);
    let rows = await stageRows();
    expect(rows.map((r) => r.stage)).toEqual(['0', '1', '2', '3']);
    // 32 layers over 4 ranks; the first holds the embeddings, the last the head.
    expect(rows.map((r) => r.cells[0])).toEqual(['8', '8', '8', '8']);
    expect(rows[0].cells[2]).toContain('embeddings');
    expect(rows[3].cells[2]).toContain('head');
    // 1F1B: the first stage keeps pp micro-batches in flight, the last one.
    expect(rows[0].cells[1]).toBe('4');
    expect(rows[3].cells[1]).toBe('1');
    const busiest = rows.filter((r) => r.busiest);
    expect(busiest).toHaveLength(1);
    expect(busiest[0].peak).toBe(peakBytes());
    expect(busiest[0].peak).toBe(Math.max(...rows.map((r) => r.peak)));

    const before = peakBytes();
    fireEvent.input(screen.getByLabelText(/virtual_pipeline_model_parallel_size/), {
      target: { value: '2' },
    });
    await peakChangedFrom(before);
    expect(request.value.parallel.vp).toBe(2);
    expect(layout().textContent).toContain('vp 2');
    rows = await stageRows();
    expect(rows).toHaveLength(4);
    // The interleaved schedule holds fractional micro-batches of activations.
    expect(rows.some((r) => /\.\d\d$/.test(r.cells[1]))).toBe(true);
    expect(document.body.textContent).not.toMatch(/NaN|undefined/);
  });

  it('virtual stages that do not split the layers evenly name the field', async () => {
    await openPage(`${LLAMA_FULL}&gpus=4&pp=4`);
    fireEvent.input(screen.getByLabelText(/virtual_pipeline_model_parallel_size/), {
      target: { value: '3' },
    });
    const notice = await screen.findByRole('alert', {
      name: 'The estimator could not use this input',
    });
    expect(notice.textContent).toContain('must divide into pp x vp (12) model chunks');
    expect(notice.textContent).toContain('Parallelism › Virtual pipeline stages (parallel.vp)');
  });

  it('nodes set the GPUs per node; a count that does not divide the GPUs names the field', async () => {
    await openPage(`${LLAMA_FULL}&gpus=16`);
    fireEvent.input(screen.getByLabelText(/nnodes/), { target: { value: '2' } });
    await waitFor(() => expect(layout().textContent).toContain('2 nodes × 8 GPUs'));
    expect(request.value.parallel.nodes).toBe(2);

    fireEvent.input(screen.getByLabelText(/nnodes/), { target: { value: '3' } });
    const notice = await screen.findByRole('alert', {
      name: 'The estimator could not use this input',
    });
    expect(notice.textContent).toContain('parallel.nodes (3) must divide parallel.gpus (16)');
    expect(notice.textContent).toContain('Parallelism › Nodes (parallel.nodes)');
  });

  it("Megatron's distributed optimizer shards the optimizer, and ZeRO turns it off", async () => {
    await openPage(`${LLAMA_FULL}&gpus=8`);
    const ddp = peakBytes();
    expect(screen.queryByLabelText(/accumulate_allreduce_grads_in_fp32/)).toBeNull();
    fireEvent.click(screen.getByLabelText(/use_distributed_optimizer/));
    const sharded = await peakChangedFrom(ddp);
    expect(sharded).toBeLessThan(ddp);
    expect(request.value.parallel.distributed_optimizer).toBe(true);
    expect(within(layout()).getByText('Megatron distributed optimizer')).toBeTruthy();

    // Without fp32 main gradients the gradients stay in bf16.
    fireEvent.click(screen.getByLabelText(/accumulate_allreduce_grads_in_fp32/));
    const halfGrads = await peakChangedFrom(sharded);
    expect(halfGrads).toBeLessThan(sharded);
    expect(request.value.parallel.main_grads_fp32).toBe(false);

    fireEvent.change(screen.getByLabelText(/zero_optimization\.stage/), {
      target: { value: '1' },
    });
    await waitFor(() => expect(request.value.parallel.zero).toBe(1));
    expect(request.value.parallel.distributed_optimizer).toBeUndefined();
    expect(screen.queryByLabelText(/use_distributed_optimizer/)).toBeNull();
    expect(screen.queryByRole('alert')).toBeNull();
  });

  it('FSDP version and reduce dtype appear with FSDP and reach the request', async () => {
    await openPage(`${LLAMA_FULL}&gpus=8`);
    expect(screen.queryByLabelText(/fsdp_version/)).toBeNull();
    fireEvent.change(screen.getByLabelText(/fsdp_sharding_strategy/), {
      target: { value: 'full_shard' },
    });
    const version = await screen.findByLabelText(/fsdp_version/);
    // hf at its newest release: the Trainer's own FSDP is FSDP2 (a release
    // rule of transformers >= 5.10.3), left to the core.
    expect(version.value).toBe('');
    await waitFor(() => expect(within(layout()).getByText('FSDP2 full_shard')).toBeTruthy());
    expect(request.value.parallel.fsdp_version).toBeUndefined();

    fireEvent.change(version, { target: { value: '1' } });
    await waitFor(() => expect(within(layout()).getByText('FSDP full_shard')).toBeTruthy());
    expect(request.value.parallel.fsdp_version).toBe(1);
    const v1 = peakBytes();

    fireEvent.change(version, { target: { value: '2' } });
    await waitFor(() => expect(within(layout()).getByText('FSDP2 full_shard')).toBeTruthy());
    expect(request.value.parallel.fsdp_version).toBe(2);

    const v2 = peakBytes();
    fireEvent.change(screen.getByLabelText(/reduce_dtype/), { target: { value: 'fp32' } });
    const fp32 = await peakChangedFrom(v2);
    expect(fp32).toBeGreaterThan(v2);
    expect(request.value.parallel.fsdp_reduce_dtype).toBe('fp32');
    expect(v1).toBeGreaterThan(0);
  });

  it('NCCL channels and NVLink SHARP size the NCCL buffers in the layout line', async () => {
    await openPage(`${LLAMA_FULL}&gpus=8&gpu=H100%2080GB`);
    const ncclBytes = () =>
      Number(within(layout()).getByText('NCCL buffers').nextSibling.getAttribute('data-bytes'));
    const auto = ncclBytes();
    expect(auto).toBeGreaterThan(0);
    fireEvent.change(screen.getByLabelText(/NCCL_NVLS_ENABLE/), { target: { value: 'off' } });
    await waitFor(() => expect(ncclBytes()).toBeLessThan(auto));
    expect(request.value.parallel.nvls).toBe(false);
    const noNvls = ncclBytes();

    fireEvent.input(screen.getByLabelText(/NCCL_MAX_NCHANNELS/), { target: { value: '8' } });
    await waitFor(() => expect(ncclBytes()).toBeLessThan(noNvls));
    expect(request.value.parallel.nccl_channels).toBe(8);

    // Out of NCCL's range: the box says so and the estimate keeps the last value.
    fireEvent.input(screen.getByLabelText(/NCCL_MAX_NCHANNELS/), { target: { value: '65' } });
    await waitFor(() =>
      expect(screen.getByText('Enter a whole number from 1 to 64.')).toBeTruthy(),
    );
    expect(request.value.parallel.nccl_channels).toBe(8);
  });

  it('keeps every new layout field in the link and restores the same estimate', async () => {
    await openPage(
      `${LLAMA_FULL}&gpus=16&pp=2&vp=2&nodes=2&dopt=1&mgf32=0&nccl=16&nvls=off&gpu=H100%2080GB`,
    );
    expect(request.value.parallel).toMatchObject({
      gpus: 16,
      dp: 8,
      pp: 2,
      vp: 2,
      nodes: 2,
      distributed_optimizer: true,
      main_grads_fp32: false,
      nccl_channels: 16,
      nvls: false,
    });
    const bytes = peakBytes();
    await waitFor(() => expect(window.location.hash).toMatch(/dopt=1/));
    const link = window.location.hash;
    for (const part of ['vp=2', 'nodes=2', 'mgf32=0', 'nccl=16', 'nvls=off'])
      expect(link).toContain(part);

    cleanup();
    window.history.replaceState(null, '', window.location.pathname);
    await openPage(link);
    expect(peakBytes()).toBe(bytes);
    expect(screen.getByLabelText(/virtual_pipeline_model_parallel_size/).value).toBe('2');
    expect(screen.getByLabelText(/nnodes/).value).toBe('2');
    expect(screen.getByLabelText(/use_distributed_optimizer/).checked).toBe(true);
    expect(screen.getByLabelText(/accumulate_allreduce_grads_in_fp32/).checked).toBe(false);
    expect(screen.getByLabelText(/NCCL_MAX_NCHANNELS/).value).toBe('16');
    expect(await stageRows()).toHaveLength(2);
    cleanup();

    await openPage(`${MIXTRAL_FULL}&gpus=8&ep=4&fsdp=full_shard&fsdpv=2&rdt=fp32`);
    expect(request.value.parallel).toMatchObject({
      ep: 4,
      fsdp: 'full_shard',
      fsdp_version: 2,
      fsdp_reduce_dtype: 'fp32',
    });
    expect(screen.getByLabelText(/expert_model_parallel_size/).value).toBe('4');
    expect(screen.getByLabelText(/fsdp_version/).value).toBe('2');
    expect(screen.getByLabelText(/reduce_dtype/).value).toBe('fp32');
  });
});

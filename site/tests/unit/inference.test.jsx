// Inference with the engines the core models: transformers generate and vLLM's
// paged KV cache, the serving answers panel, tensor parallel, and the training
// switches that came with them (activation offload, optimizer in backward).
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it } from 'vitest';
import llama31 from '../../../tests/fixtures/models/meta-llama__Llama-3.1-8B.json';
import { request } from '../../src/lib/state.js';
import { loadRealEstimator, openPage, peakBytes, peakChangedFrom } from './helpers.jsx';

let vram;

beforeAll(async () => {
  vram = await loadRealEstimator();
});

const LLAMA31 = '#m=preset:meta-llama/Llama-3.1-8B&task=infer';

/**
 * openPage, then the serving panel once shown: a chunk of its own
 * (components/Results), loaded where it is first shown.
 */
async function openServing(hash) {
  await openPage(hash);
  await screen.findByRole('region', { name: 'Serving answers' });
}

function servingPanel() {
  return screen.getByRole('region', { name: 'Serving answers' });
}

/** The value (<dd>) of the panel's statistic whose term matches `term`. */
function stat(term) {
  const dt = within(servingPanel()).getByText(term);
  return dt.parentElement.querySelector('dd');
}

/** What the core itself answers for a Llama-3.1-8B inference request. */
function coreInfer(infer, gpu = { name: 'H100 80GB' }) {
  return vram.estimate({ model: { config: llama31 }, task: 'infer', infer, gpu }).infer;
}

function chooseVllm() {
  fireEvent.change(screen.getByLabelText(/vllm serve/), { target: { value: 'vllm' } });
}

describe('inference engines and the serving answers', () => {
  it('shows 128 KiB of KV cache per token for Llama-3.1-8B in bf16', async () => {
    await openServing(LLAMA31);
    const perToken = stat('KV cache per token');
    expect(perToken.textContent).toBe('128 KiB');
    expect(perToken.getAttribute('data-bytes')).toBe(String(128 * 1024));
    expect(stat('KV cache per token per layer').textContent).toBe('4 KiB');
    const core = coreInfer({ context_len: 4096 });
    const sequences = stat('Max concurrent sequences');
    expect(sequences.getAttribute('data-count')).toBe(String(core.max_concurrent_sequences));
    expect(sequences.textContent).toBe(
      `${core.max_concurrent_sequences.toLocaleString('en-US')} at 4,096 tokens`,
    );
  });

  it('for Jamba shows the KV cache per attention layer and the fixed state cache', async () => {
    await openServing('#m=preset:ai21labs/AI21-Jamba-1.5-Mini&task=infer');
    // 4 of 32 layers attend: 8 KV heads x 128 x 2 (K and V) x 2 B each.
    expect(stat('KV cache per token').getAttribute('data-bytes')).toBe(String(4 * 4096));
    expect(stat('KV cache per token per attention layer').textContent).toBe('4 KiB');
    // 28 Mamba layers x 8192 x (conv 4 + state 16) x 2 B, for 1 sequence.
    expect(stat('State cache (conv + SSM), fixed').getAttribute('data-bytes')).toBe(
      String(28 * 8192 * 20 * 2),
    );
  });

  it('for Qwen3-Next shows the 12 attention layers’ keys and the DeltaNet layers’ fp32 state', async () => {
    await openServing('#m=preset:Qwen/Qwen3-Next-80B-A3B-Instruct&task=infer');
    // 12 of 48 layers attend: 2 KV heads x 256 x 2 (K and V) x 2 B each.
    expect(stat('KV cache per token').getAttribute('data-bytes')).toBe(String(12 * 2048));
    expect(stat('KV cache per token per attention layer').textContent).toBe('2 KiB');
    // 36 gated DeltaNet layers x (conv 8192 x 4 x 2 B + fp32 state 32 x 128 x 128 x 4 B), 1 sequence.
    expect(stat('State cache (conv + SSM), fixed').getAttribute('data-bytes')).toBe(
      String(36 * (8192 * 4 * 2 + 4096 * 128 * 4)),
    );
  });

  it('offers the GLM-4.5-Air and Qwen3-VL presets', async () => {
    await openServing('#m=preset:zai-org/GLM-4.5-Air&task=infer');
    expect(stat('KV cache per token').getAttribute('data-bytes')).toBe(
      String(46 * 2 * 8 * 128 * 2),
    );
    cleanup();
    await openServing('#m=preset:Qwen/Qwen3-VL-8B-Instruct&task=infer');
    expect(stat('KV cache per token').getAttribute('data-bytes')).toBe(
      String(36 * 2 * 8 * 128 * 2),
    );
  });

  it('with vLLM on a catalog GPU shows the core’s max concurrent sequences and KV blocks', async () => {
    await openServing(`${LLAMA31}&ctx=8192`);
    const before = peakBytes();
    chooseVllm();
    await screen.findByLabelText(/gpu_memory_utilization/);
    await peakChangedFrom(before);
    const core = coreInfer({ engine: 'vllm', context_len: 8192 });
    expect(core.max_concurrent_sequences).toBeGreaterThan(1);
    const sequences = stat('Max concurrent sequences');
    expect(sequences.getAttribute('data-count')).toBe(String(core.max_concurrent_sequences));
    expect(sequences.textContent).toBe(
      `${core.max_concurrent_sequences.toLocaleString('en-US')} at 8,192 tokens`,
    );
    expect(stat('Max context').getAttribute('data-count')).toBe(String(core.max_context_len));
    expect(stat('KV blocks').getAttribute('data-count')).toBe(String(core.kv_blocks));
    expect(Number(stat('KV cache allocated').getAttribute('data-bytes'))).toBe(core.kv_cache_bytes);
    // The prompt length is transformers' prefill; vLLM profiles batched tokens instead.
    expect(screen.queryByLabelText(/input_ids length/)).toBeNull();
  });

  it('sizes vLLM’s KV cache for a custom GPU memory', async () => {
    await openServing(`${LLAMA31}&eng=vllm`);
    fireEvent.change(screen.getByLabelText('GPU'), { target: { value: '__custom__' } });
    const box = await screen.findByLabelText(/memory_gib/);
    fireEvent.input(box, { target: { value: '48' } });
    const core = coreInfer({ engine: 'vllm' }, { memory_gib: 48 });
    await waitFor(() =>
      expect(stat('KV blocks').getAttribute('data-count')).toBe(String(core.kv_blocks)),
    );
    expect(request.value.gpu).toEqual({ memory_gib: 48 });
    expect(document.body.textContent).not.toMatch(/NaN|undefined/);
  });

  it('keeps the engine and the utilization in the link', async () => {
    await openServing(LLAMA31);
    chooseVllm();
    const util = await screen.findByLabelText(/gpu_memory_utilization/);
    fireEvent.input(util, { target: { value: '0.8' } });
    await waitFor(() => expect(window.location.hash).toContain('gmu=0.8'));
    expect(window.location.hash).toContain('eng=vllm');
    const blocks = stat('KV blocks').textContent;
    const peak = peakBytes();
    const link = window.location.hash;

    cleanup();
    window.history.replaceState(null, '', window.location.pathname);
    await openServing(link);
    expect(screen.getByLabelText(/vllm serve/).value).toBe('vllm');
    expect(screen.getByLabelText(/gpu_memory_utilization/).value).toBe('0.8');
    expect(stat('KV blocks').textContent).toBe(blocks);
    expect(peakBytes()).toBe(peak);
  });

  it('shards over tensor-parallel GPUs: the box sets parallel.tp and parallel.gpus', async () => {
    await openServing(LLAMA31);
    fireEvent.input(screen.getByLabelText(/tensor_parallel_size/), { target: { value: '2' } });
    await waitFor(() => expect(stat('KV cache per token').textContent).toBe('64 KiB'));
    expect(request.value.parallel).toMatchObject({ gpus: 2, dp: 1, tp: 2, pp: 1 });
    expect(screen.queryByLabelText(/world_size/)).toBeNull();
    expect(within(servingPanel()).getByText(/per GPU of 2 \(tensor parallel\)/)).toBeTruthy();
  });

  it('with vLLM shows the KV cache size and the maximum concurrency vLLM prints, and its start-up lines', async () => {
    await openServing(`${LLAMA31}&ctx=16000&eng=vllm`);
    const core = coreInfer({ engine: 'vllm', context_len: 16000 });
    // The release whose rules applied (absent infer.engine_version: the newest modelled).
    expect(servingPanel().textContent).toContain(
      `vLLM, paged KV cache ${core.engine_release}'s rules`,
    );
    const tokens = stat('GPU KV cache size');
    expect(tokens.getAttribute('data-count')).toBe(String(core.kv_tokens));
    expect(tokens.textContent).toBe(`${core.kv_tokens.toLocaleString('en-US')} tokens`);
    const concurrency = core.engine_log.find((l) => l.key === 'vllm.max_concurrency').value;
    expect(stat('Maximum concurrency').textContent).toBe(
      `${concurrency.toFixed(2)}x for 16,000 tokens per request`,
    );
    const lines = within(servingPanel()).getByRole('list', { name: 'Engine start-up lines' });
    expect(lines.textContent).toContain(
      `GPU KV cache size: ${core.kv_tokens.toLocaleString('en-US')} tokens`,
    );
    expect(lines.textContent).toMatch(/Available KV cache memory: \d+\.\d\d GiB/);
    // vLLM's batch limits are its own unless the form sets them.
    expect(request.value.infer.max_num_seqs).toBeUndefined();
    expect(request.value.infer.entrypoint).toBe('server');
  });

  it('sends vLLM’s max_num_seqs, entrypoint and release only when the form sets them', async () => {
    await openPage(`${LLAMA31}&eng=vllm`);
    fireEvent.input(screen.getByLabelText(/max_num_seqs/), { target: { value: '64' } });
    await waitFor(() => expect(request.value.infer.max_num_seqs).toBe(64));
    fireEvent.change(screen.getByLabelText(/usage context/), { target: { value: 'offline' } });
    await waitFor(() => expect(request.value.infer.entrypoint).toBe('offline'));
    expect(request.value.infer.engine_version).toBeUndefined();
    fireEvent.input(screen.getByLabelText(/infer.engine_version/), { target: { value: '0.11.0' } });
    await waitFor(() => expect(request.value.infer.engine_version).toBe('0.11.0'));
    expect(request.value.infer.engine).toBe('vllm');
    await waitFor(() => expect(window.location.hash).toContain('ev=0.11.0'));
    fireEvent.input(screen.getByLabelText(/max_num_seqs/), { target: { value: '' } });
    await waitFor(() => expect(request.value.infer.max_num_seqs).toBeUndefined());
  });

  it('with SGLang shows its token pool, K size line and server arguments', async () => {
    await openServing(LLAMA31);
    fireEvent.change(screen.getByLabelText(/vllm serve/), { target: { value: 'sglang' } });
    const fraction = await screen.findByLabelText(/mem_fraction_static/);
    expect(screen.queryByLabelText(/gpu_memory_utilization/)).toBeNull();
    fireEvent.input(fraction, { target: { value: '0.8' } });
    await waitFor(() => expect(request.value.infer.mem_fraction_static).toBe(0.8));
    const core = coreInfer({ engine: 'sglang', context_len: 4096, mem_fraction_static: 0.8 });
    await waitFor(() =>
      expect(stat('max_total_num_tokens').getAttribute('data-count')).toBe(String(core.kv_tokens)),
    );
    const lines = within(servingPanel()).getByRole('list', { name: 'Engine start-up lines' });
    expect(lines.textContent).toContain(
      `KV Cache is allocated. #tokens: ${core.kv_tokens}, K size:`,
    );
    expect(document.body.textContent).not.toMatch(/NaN|undefined/);
  });

  it('shows no serving answers for training', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&task=train');
    expect(screen.queryByRole('region', { name: 'Serving answers' })).toBeNull();
  });
});

describe('training memory switches', () => {
  it('offloading activations to CPU lowers the peak and is kept in the link', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&task=train&method=full&seq=4096');
    const before = peakBytes();
    fireEvent.click(screen.getByRole('checkbox', { name: /Offload activations to CPU/ }));
    expect(await peakChangedFrom(before)).toBeLessThan(before);
    expect(request.value.train.activation_offload).toBe(true);
    await waitFor(() => expect(window.location.hash).toContain('aoff=1'));
  });

  it('the optimizer step in backward is sent to the core', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&task=train&method=full');
    const box = screen.getByRole('checkbox', { name: /Optimizer step in backward/ });
    fireEvent.click(box);
    await waitFor(() => expect(request.value.train.optimizer_in_backward).toBe(true));
    await waitFor(() => expect(window.location.hash).toContain('oib=1'));
  });

  it('torch.compile is sent, kept in the link, and the page says it is not modelled', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&task=train&method=lora');
    fireEvent.click(screen.getByRole('checkbox', { name: /torch\.compile/ }));
    await waitFor(() => expect(request.value.train.compile).toBe(true));
    await waitFor(() => expect(window.location.hash).toContain('compile=1'));
    expect(await screen.findByText(/compile/i, { selector: 'li' })).toBeTruthy();
  });
});

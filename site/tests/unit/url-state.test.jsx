import { fireEvent, screen, waitFor, within } from '@testing-library/preact';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultSettings } from '../../src/lib/state.js';
import { importedFromUrl, parse, serialize, toBase64Url } from '../../src/lib/url-state.js';
import { MODELS } from './fixtures.js';
import { loadRealEstimator, openPage, peakBytes, peakChangedFrom } from './helpers.jsx';
import { cleanup } from '@testing-library/preact';

beforeAll(async () => {
  await loadRealEstimator();
});

describe('imported fields in the link', () => {
  it('carries what an import set that the form has no box for, and refuses anything else', () => {
    const settings = defaultSettings();
    settings.imported = {
      'train.lora.dropout': 0.05,
      'train.quant.quantizer': 'torchao_unchunked',
      'train.lora.use_dora': true,
    };
    const hash = serialize({ source: 'preset', id: 'meta-llama/Llama-3.2-1B' }, settings);
    expect(hash).toContain('imp=');
    expect(parse(hash).settings.imported).toEqual(settings.imported);
    // A key the core's table does not have, or one the link carries itself, drops the value.
    expect(importedFromUrl(toBase64Url(JSON.stringify({ 'train.nope': 1 })))).toBeNull();
    expect(importedFromUrl(toBase64Url(JSON.stringify({ 'train.seq_len': 4096 })))).toBeNull();
    expect(
      importedFromUrl(toBase64Url(JSON.stringify({ 'train.lora.dropout': { x: 1 } }))),
    ).toBeNull();
    expect(importedFromUrl('not base64 json')).toBeNull();
    expect(parse('#imp=%%%').settings.imported).toEqual({});
  });
});

describe('the state in the URL', () => {
  it('round-trips every setting through serialize and parse', () => {
    const s = defaultSettings();
    Object.assign(s.train, {
      framework: 'torchtune',
      method: 'qlora',
      micro_batch: 4,
      seq_len: 4096,
      grad_accum: 8,
      precision: 'amp_bf16',
      optimizer: 'paged_adamw_8bit',
      grad_checkpointing: 'full',
      attention: 'flash_attention_2',
      fused_loss: true,
      activation_offload: true,
      optimizer_in_backward: true,
      images_per_sample: 3,
    });
    s.train.lora = { rank: 64, alpha: 128, targets: 'q_proj,v_proj' };
    s.infer = {
      engine: 'vllm',
      batch: 8,
      context_len: 32768,
      prompt_len: 1024,
      images_per_prompt: 2,
      weights_dtype: 'int4',
      kv_dtype: 'fp8',
      gpu_memory_utilization: 0.85,
      max_num_seqs: 64,
      max_num_batched_tokens: 4096,
      block_size: 32,
      enforce_eager: true,
      entrypoint: 'offline',
      // SGLang's server arguments.
      mem_fraction_static: 0.8,
      chunked_prefill_size: 4096,
      cuda_graph_max_bs: 64,
      // llama.cpp's flags (the page's own --parallel box included).
      ctx_size: 16384,
      n_gpu_layers: 20,
      n_batch: 1024,
      n_ubatch: 256,
      flash_attn: 'on',
      cache_type_k: 'q8_0',
      cache_type_v: 'q8_0',
      engine_version: '2025-10',
      parallel: 2,
    };
    s.parallel = {
      gpus: 16,
      tp: 2,
      pp: 1,
      cp: 2,
      zero: 0,
      fsdp: 'hybrid_shard',
      offload_optimizer: true,
      offload_params: true,
      sequence_parallel: true,
      gpus_per_node: 4,
      nodes: 4,
      ep: 2,
      vp: 3,
      distributed_optimizer: true,
      main_grads_fp32: false,
      fsdp_version: 2,
      fsdp_reduce_dtype: 'fp32',
      nccl_channels: 16,
      nvls: 'off',
    };
    s.deepspeed = '{"zero_optimization": {"overlap_comm": true, "reduce_bucket_size": 5e8}}';
    s.gpu = { mode: 'catalog', name: 'A100 80GB', memory_gib: 24 };
    const model = { source: 'preset', id: 'Qwen/Qwen3-0.6B' };
    const back = parse(serialize(model, s));
    expect(back.settings).toEqual(s);
    expect(back.model).toEqual(model);
  });

  it('round-trips a pasted config.json inside the link', () => {
    const config = MODELS['HuggingFaceTB/SmolLM2-135M'].config;
    const back = parse(
      serialize({ source: 'paste', id: 'config.json', config }, defaultSettings()),
    );
    expect(back.model.source).toBe('paste');
    expect(back.model.config).toEqual(config);
  });

  it('leaves an invalid or very long DeepSpeed config out of the link', () => {
    const s = defaultSettings();
    s.deepspeed = '{"zero_optimization": ';
    expect(serialize(null, s)).not.toContain('ds=');
    s.deepspeed = JSON.stringify({ comment: 'x'.repeat(4000), zero_optimization: { stage: 1 } });
    expect(serialize(null, s)).not.toContain('ds=');
    s.deepspeed = '{"zero_optimization": {"stage": 1}}';
    expect(parse(serialize(null, s)).settings.deepspeed).toBe(s.deepspeed);
  });

  it('ignores values it does not know and keeps the defaults', () => {
    const { settings } = parse('#seq=-3&mb=abc&prec=fp64&optim=No%20Such!&gc=maybe&task=infer');
    const d = defaultSettings();
    expect(settings.train).toEqual(d.train);
    expect(settings.task).toBe('infer');
  });

  it('writes the page state to the hash and restores the same estimate from it', async () => {
    await openPage('#m=preset:Qwen/Qwen3-0.6B&method=full');
    const before = peakBytes();
    fireEvent.input(screen.getByLabelText(/per_device_train_batch_size/), {
      target: { value: '4' },
    });
    const changed = await peakChangedFrom(before);
    await waitFor(() => expect(window.location.hash).toContain('mb=4'));
    const link = window.location.hash;
    expect(link).toContain('m=preset:Qwen/Qwen3-0.6B');

    cleanup();
    window.history.replaceState(null, '', window.location.pathname);
    await openPage(link);
    expect(peakBytes()).toBe(changed);
    expect(screen.getByLabelText(/per_device_train_batch_size/).value).toBe('4');
    expect(
      within(screen.getByRole('region', { name: 'Model summary' })).getByText('Qwen/Qwen3-0.6B'),
    ).toBeTruthy();
  });
});

// @vitest-environment node
//
// Native and WebAssembly give identical results (DESIGN.md §6): the same
// requests go through the real built module (site/src/wasm/, made by the WASM
// build) and through `vram-probe` (build/bin/, made by the native build), and
// the output text must match byte for byte, errors included.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { estimateRaw, modelInfoRaw, planRaw } from '../../src/wasm/vram.js';
import { probe, repoRoot, trainRequest } from './requests.js';

const fixtures = join(repoRoot, 'tests/fixtures/models');

function fixture(name) {
  return readFileSync(join(fixtures, `${name}.json`), 'utf8');
}

function config(name) {
  return JSON.parse(fixture(name));
}

function inferRequest(modelConfig, infer) {
  return { model: { config: modelConfig }, task: 'infer', infer, gpu: { name: 'H100 80GB' } };
}

// Every config family falls back to its transformers config class default for
// a missing hidden_size (LlamaConfig: 4096), as transformers itself does, so
// the missing-size error is exercised with model.custom, where it is required.
const customWithoutHidden = {
  model: { custom: { layers: 32, heads: 32, vocab: 32000 } },
  task: 'train',
};
const llama2FiveKvHeads = { ...config('meta-llama__Llama-2-7b-hf'), num_key_value_heads: 5 };

// [name, request text, expected error code or null for a result]
const estimateCases = [
  [
    'Llama-2-7B full fine-tuning, bf16, fused AdamW',
    JSON.stringify(trainRequest(config('meta-llama__Llama-2-7b-hf'))),
    null,
  ],
  [
    'Llama-3.2-1B LoRA rank 16, micro-batch 4, 4096 tokens, checkpointing',
    JSON.stringify(
      trainRequest(config('meta-llama__Llama-3.2-1B'), {
        method: 'lora',
        micro_batch: 4,
        seq_len: 4096,
        grad_checkpointing: true,
        lora: { rank: 16, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] },
      }),
    ),
    null,
  ],
  [
    'Qwen2.5-7B QLoRA, micro-batch 2, 1024 tokens',
    JSON.stringify(
      trainRequest(config('Qwen__Qwen2.5-7B'), {
        method: 'qlora',
        micro_batch: 2,
        seq_len: 1024,
        optimizer: 'paged_adamw_8bit',
        lora: { rank: 64, targets: 'all-linear' },
      }),
    ),
    null,
  ],
  [
    'SmolLM2-135M full training, micro-batch 16, 512 tokens, eager attention',
    JSON.stringify(
      trainRequest(config('HuggingFaceTB__SmolLM2-135M'), {
        micro_batch: 16,
        seq_len: 512,
        attention: 'eager',
        grad_accum: 4,
      }),
    ),
    null,
  ],
  [
    'Mistral-7B inference, batch 8, 8192 tokens of context',
    JSON.stringify(
      inferRequest(config('mistralai__Mistral-7B-v0.1'), {
        batch: 8,
        context_len: 8192,
        weights_dtype: 'bf16',
        kv_dtype: 'bf16',
      }),
    ),
    null,
  ],
  [
    'Llama-3.1-8B inference, batch 1, 32768 tokens, 40 GiB GPU',
    JSON.stringify({
      ...inferRequest(config('meta-llama__Llama-3.1-8B'), { batch: 1, context_len: 32768 }),
      gpu: { memory_gib: 40 },
    }),
    null,
  ],
  ['a custom model without hidden', JSON.stringify(customWithoutHidden), 'missing_field'],
  [
    'a llama config whose key/value heads do not divide its heads',
    JSON.stringify(trainRequest(llama2FiveKvHeads)),
    'inconsistent',
  ],
  [
    'Llama-3.1-8B full, ZeRO-3 on 8 GPUs',
    JSON.stringify(
      trainRequest(config('meta-llama__Llama-3.1-8B'), { precision: 'mixed_bf16' }, { parallel: { gpus: 8, zero: 3 } }),
    ),
    null,
  ],
  [
    'DeepSeek-V2-Lite, ep 4 x pp 3 x dp 8, ZeRO-1, every stage',
    JSON.stringify(
      trainRequest(
        config('deepseek-ai__DeepSeek-V2-Lite'),
        { precision: 'mixed_bf16', grad_accum: 8, seq_len: 1024 },
        { parallel: { gpus: 24, pp: 3, ep: 4, zero: 1 } },
      ),
    ),
    null,
  ],
  [
    'Llama-2-7B tp 2 x pp 4 interleaved (vp 2), Megatron distributed optimizer, 16 GPUs',
    JSON.stringify(
      trainRequest(
        config('meta-llama__Llama-2-7b-hf'),
        { precision: 'mixed_bf16', grad_accum: 8 },
        {
          parallel: {
            gpus: 16,
            tp: 2,
            pp: 4,
            vp: 2,
            distributed_optimizer: true,
            sequence_parallel: true,
          },
        },
      ),
    ),
    null,
  ],
  [
    'Llama-3.1-8B FSDP2 hybrid shard on 2 nodes, fp32 reduce, context parallel 2 at 32k',
    JSON.stringify(
      trainRequest(
        config('meta-llama__Llama-3.1-8B'),
        { precision: 'mixed_bf16', seq_len: 32768, grad_checkpointing: true },
        {
          parallel: {
            gpus: 16,
            nodes: 2,
            cp: 2,
            fsdp: 'hybrid_shard',
            fsdp_version: 2,
            fsdp_reduce_dtype: 'fp32',
          },
        },
      ),
    ),
    null,
  ],
  [
    'Mixtral with ep 3 (does not divide its 8 experts)',
    JSON.stringify(
      trainRequest(config('mistralai__Mixtral-8x7B-v0.1'), {}, { parallel: { gpus: 6, ep: 3 } }),
    ),
    'inconsistent',
  ],
  [
    'an unknown GPU',
    JSON.stringify({ ...trainRequest(config('openai-community__gpt2')), gpu: { name: 'Z9000' } }),
    'unknown_value',
  ],
];

let work;

// Runs vram-probe and returns what it printed: the result on success, the
// error object on bad input (with a non-zero exit).
function runProbe(args) {
  const run = spawnSync(probe, args, { encoding: 'utf8' });
  expect(run.error, `could not run ${probe}`).toBeUndefined();
  return run;
}

beforeAll(() => {
  if (!existsSync(probe)) {
    throw new Error(
      `${probe} is missing: build it with cmake -S . -B build && cmake --build build -j2 (or set VRAM_PROBE)`,
    );
  }
  work = mkdtempSync(join(tmpdir(), 'vram-parity-'));
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('estimate through WebAssembly and vram-probe', () => {
  it.each(estimateCases)('gives the same bytes for %s', async (name, requestText, errorCode) => {
    const file = join(work, 'request.json');
    writeFileSync(file, requestText);
    const native = runProbe(['estimate', '--request', file, '--json']);
    const wasm = await estimateRaw(requestText);

    expect(native.stdout).toBe(`${wasm}\n`);

    const parsed = JSON.parse(wasm);
    if (errorCode === null) {
      expect(native.status).toBe(0);
      expect(parsed.error).toBeUndefined();
      expect(parsed.peak_bytes).toBeGreaterThan(0);
    } else {
      expect(native.status).not.toBe(0);
      expect(parsed.error.code).toBe(errorCode);
    }
  });
});

describe('plan through WebAssembly and vram-probe', () => {
  const planCases = [
    [
      'Llama-3.1-8B on 8 x A100 40GB, DeepSpeed',
      JSON.stringify({
        ...trainRequest(config('meta-llama__Llama-3.1-8B'), { seq_len: 4096, grad_accum: 8 }),
        parallel: { gpus: 8 },
        gpu: { name: 'A100 40GB' },
      }),
      null,
    ],
    [
      'Mixtral on 16 x H100, Megatron',
      JSON.stringify({
        ...trainRequest(config('mistralai__Mixtral-8x7B-v0.1'), { seq_len: 4096, grad_accum: 16 }),
        parallel: { gpus: 16 },
        plan: { framework: 'megatron', top: 20 },
      }),
      null,
    ],
    [
      'an unknown framework',
      JSON.stringify({
        ...trainRequest(config('meta-llama__Llama-3.1-8B')),
        parallel: { gpus: 8 },
        plan: { framework: 'jax' },
      }),
      'unknown_value',
    ],
  ];

  it.each(planCases)('gives the same bytes for %s', async (name, requestText, errorCode) => {
    const file = join(work, 'plan.json');
    writeFileSync(file, requestText);
    const native = runProbe(['plan', '--request', file, '--json']);
    const wasm = await planRaw(requestText);

    expect(native.stdout).toBe(`${wasm}\n`);
    const parsed = JSON.parse(wasm);
    if (errorCode === null) {
      expect(native.status).toBe(0);
      expect(parsed.plan.candidates.length).toBeGreaterThan(0);
    } else {
      expect(native.status).not.toBe(0);
      expect(parsed.error.code).toBe(errorCode);
    }
  });
});

describe('malformed request text through WebAssembly and vram-probe', () => {
  // vram-probe parses the file itself so that its message can name the file
  // ("/tmp/x.json is not valid JSON"); the WebAssembly module says "input".
  // Everything but that message must agree.
  it.each([
    ['cut-off JSON', '{"model": {"config": {"model_type": "llama",'],
    ['a JSON array', '[1]'],
  ])('gives the same error code and path for %s', async (name, requestText) => {
    const file = join(work, 'malformed.json');
    writeFileSync(file, requestText);
    const native = runProbe(['estimate', '--request', file, '--json']);
    const wasm = JSON.parse(await estimateRaw(requestText));

    expect(native.status).not.toBe(0);
    const { error } = JSON.parse(native.stdout);
    expect(wasm.error.code).toBe(error.code);
    expect(wasm.error.path).toBe(error.path);
    expect(wasm.error.message.length).toBeGreaterThan(0);
  });
});

describe('modelInfo through WebAssembly and vram-probe params', () => {
  const models = [
    'meta-llama__Llama-2-7b-hf',
    'meta-llama__Llama-3.2-1B',
    'Qwen__Qwen2.5-7B',
    'mistralai__Mistral-7B-v0.1',
    'HuggingFaceTB__SmolLM2-135M',
  ];

  it.each(models)('gives the same bytes for %s', async (name) => {
    const native = runProbe(['params', '--config', join(fixtures, `${name}.json`), '--json']);
    // The config text is embedded as is, so WASM parses exactly the bytes the
    // probe read from the file.
    const wasm = await modelInfoRaw(`{"config": ${fixture(name)}}`);

    expect(native.status).toBe(0);
    expect(native.stdout).toBe(`${wasm}\n`);
    expect(JSON.parse(wasm).params_total).toBeGreaterThan(0);
  });
});

// The core module is built without C++ exceptions (core/include/vram/status.h:
// a failure longjmps to the nearest recover()), the native estimator with
// them; every validation request (the measured rows, docs/validation.md) and
// every failure of the strict table must still give the same bytes.
describe('every validation request and every strict failure, through WebAssembly and vram-probe', () => {
  const validationDir = join(repoRoot, 'tests/fixtures/validation');
  const validation = JSON.parse(readFileSync(join(validationDir, 'requests.json'), 'utf8'));
  const strict = JSON.parse(
    readFileSync(join(repoRoot, 'tests/fixtures/strict/failures.json'), 'utf8'),
  ).cases.filter((c) => c.request !== undefined);
  const texts = [
    ...validation.map((row, i) => {
      const modelConfig = JSON.parse(readFileSync(join(validationDir, row.config_file), 'utf8'));
      // With the GPU of the measurement, so the micro-batch searches run too.
      return [`validation row ${i}`, JSON.stringify({ ...row.request, model: { config: modelConfig } })];
    }),
    ...strict.map((c) => [`strict: ${c.name}`, JSON.stringify(c.request)]),
  ];

  it('covers both tables', () => {
    expect(texts.length).toBe(validation.length + strict.length);
    expect(strict.length).toBeGreaterThan(10);
  });

  it.each(texts)('gives the same bytes for %s', async (_name, requestText) => {
    const file = join(work, 'table.json');
    writeFileSync(file, requestText);
    const native = runProbe(['estimate', '--request', file, '--json']);
    expect(native.stdout).toBe(`${await estimateRaw(requestText)}\n`);
  });
});

// @vitest-environment node
//
// The three WebAssembly modules (wasm/CMakeLists.txt, issue 18): vram_core,
// which every visit loads, holds no planner and no suggestions; vram_plan
// holds them (and _version, for the input limit) and nothing of the
// estimate's form calls; the facade's plan and suggest still work, through
// vram_plan, and loadPlanner answers without the core.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

import createVramModule from '../../src/wasm/vram_core.mjs';
import createVramPlanModule from '../../src/wasm/vram_plan.mjs';
import {
  EstimatorError,
  estimateRaw,
  kNotInModule,
  loadPlanner,
  loadVram,
  modelInfoRaw,
  moduleRaw,
  planRaw,
} from '../../src/wasm/vram.js';
import { modelFile, trainRequest } from './requests.js';

const wasmDir = new URL('../../src/wasm/', import.meta.url);
const llama8b = JSON.parse(readFileSync(modelFile('meta-llama/Llama-3.1-8B'), 'utf8'));

// One fresh instance of a module's glue, from the bytes on disk.
async function instantiate(create, file) {
  return create({ wasmBinary: readFileSync(fileURLToPath(new URL(file, wasmDir))) });
}

// The Embind functions a module registered (their names start with "_" and a letter).
function bindings(module) {
  return Object.keys(module)
    .filter((name) => /^_[a-zA-Z]/.test(name) && typeof module[name] === 'function')
    .filter((name) => !/^_(malloc|free|emscripten|__)/.test(name))
    .sort();
}

// Llama-3.1-8B LoRA, 4 x 2048 tokens per step on one A100 40GB: does not fit
// (the e2e suggestions case), so suggest has something to say.
const notFitting = trainRequest(
  llama8b,
  { method: 'lora', micro_batch: 4, seq_len: 2048 },
  { gpu: { name: 'A100 40GB' } },
);

let core;
let plan;
beforeAll(async () => {
  [core, plan] = await Promise.all([
    instantiate(createVramModule, 'vram_core.wasm'),
    instantiate(createVramPlanModule, 'vram_plan.wasm'),
  ]);
});

describe('the modules', () => {
  it('vram_core has no _plan and no _suggest, and keeps what a first estimate needs', () => {
    const names = bindings(core);
    expect(names).not.toContain('_plan');
    expect(names).not.toContain('_suggest');
    for (const name of ['_estimate', '_modelInfo', '_version', '_layoutOptions', '_frameworkDefaults'])
      expect(names).toContain(name);
    // The page bundles the fields table (site/src/lib/fields.json): the full module has it.
    expect(names).not.toContain('_fields');
  });

  it('vram_plan, the full module, has _plan, _suggest, the estimate and the fields, not import', () => {
    const names = bindings(plan);
    for (const name of [
      '_plan',
      '_suggest',
      '_version',
      '_estimate',
      '_modelInfo',
      '_fields',
      '_frameworkDefaults',
    ])
      expect(names).toContain(name);
    expect(names).not.toContain('_importFiles');
  });

  it('vram_plan reports the same version and input limit as vram_core', () => {
    expect(plan._version()).toBe(core._version());
  });
});

describe('plan and suggest through the plan module', () => {
  it('the facade plans and suggests, and matches the plan module called directly', async () => {
    const vram = await loadVram();
    const req = { ...notFitting, parallel: { gpus: 8 }, plan: { top: 3 } };
    const planned = await vram.plan(req);
    expect(planned.plan.candidates.length).toBeGreaterThan(0);
    expect(planned).toEqual(JSON.parse(plan._plan(JSON.stringify(req))));
    expect(await planRaw(JSON.stringify(req))).toBe(plan._plan(JSON.stringify(req)));

    const suggested = await vram.suggest(notFitting);
    expect(suggested.goal).toBe('fit');
    expect(suggested.suggestions.length).toBeGreaterThan(0);
    expect(suggested).toEqual(JSON.parse(plan._suggest(JSON.stringify(notFitting))));
  });

  it('loadPlanner answers synchronously once loaded, with the same results', async () => {
    const planner = await loadPlanner();
    expect(loadPlanner()).toBe(loadPlanner());
    expect(planner.suggest(notFitting)).toEqual(await (await loadVram()).suggest(notFitting));
    expect(() => planner.plan({ ...notFitting, plan: { framework: 'jax' } })).toThrow(
      EstimatorError,
    );
  });

  it('refuses text over the input limit before the plan module copies it', async () => {
    const planner = await loadPlanner();
    const limit = JSON.parse(plan._version()).limits.max_input_bytes;
    const huge = { ...notFitting, padding: 'x'.repeat(limit + 1) };
    let error;
    try {
      planner.suggest(huge);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(EstimatorError);
    expect(error.code).toBe('out_of_range');
    expect(error.message).toMatch(/limit on every input/);
  });
});

// The first-visit module carries the common families' training estimate
// (core/lite/reach.cpp); the full module (vram_plan) everything.
const config = (id) => JSON.parse(readFileSync(modelFile(id), 'utf8'));
const errorOf = (text) => JSON.parse(text).error ?? null;

describe('what vram_core answers itself, and what it leaves to vram_plan', () => {
  // time.enabled false: the page's first estimate (the time model is
  // vram_plan's, core/src/reach.h require_time_model).
  const quick = (request) => ({ ...request, time: { enabled: false } });
  const common = Object.fromEntries(Object.entries({
    'llama LoRA': trainRequest(llama8b, { method: 'lora' }),
    'llama QLoRA, hf named': trainRequest(llama8b, { method: 'qlora', framework: 'hf' }),
    'mistral full, 8 GPUs ZeRO-3': trainRequest(
      config('mistralai/Mistral-7B-v0.1'),
      { grad_checkpointing: true },
      { parallel: { gpus: 8, zero: 3 } },
    ),
    'qwen2 LoRA, trl (hf)': trainRequest(config('Qwen/Qwen2.5-7B'), { method: 'lora', framework: 'trl' }),
    'qwen3 full': trainRequest(config('Qwen/Qwen3-0.6B'), {}),
    'custom sizes': {
      ...trainRequest(null),
      model: { custom: { layers: 4, hidden: 512, heads: 8, vocab: 32000 } },
    },
    'a llama with a bad field': trainRequest(llama8b, { seq_len: 0 }),
    'an unknown model_type': trainRequest({ ...llama8b, model_type: 'not_a_family' }),
    'an unknown model_type, generic': {
      ...trainRequest(null),
      model: { config: { ...llama8b, model_type: 'not_a_family' }, allow_generic: true },
    },
  }).map(([name, request]) => [name, quick(request)]));
  for (const [name, request] of Object.entries(common)) {
    it(`${name}: vram_core's own answer, byte for byte the full module's`, async () => {
      const text = JSON.stringify(request);
      const own = await moduleRaw('core', '_estimate', text);
      expect(errorOf(own)?.code).not.toBe(kNotInModule);
      expect(own).toBe(await moduleRaw('plan', '_estimate', text));
    });
  }

  const elsewhere = {
    'a training request with the time model': [trainRequest(llama8b, { method: 'lora' }), 'time'],
    'a gemma config': [trainRequest(config('google/gemma-2-2b')), 'model.config.model_type'],
    'a Mixtral config': [trainRequest(config('mistralai/Mixtral-8x7B-v0.1')), 'model.config.model_type'],
    'a llava config (whose text model is a llama)': [
      trainRequest(config('llava-hf/llava-1.5-7b-hf')),
      'model.config.model_type',
    ],
    'inference': [{ ...quick(trainRequest(llama8b)), task: 'infer', train: undefined }, 'task'],
    // An inference request is the full module's as a whole (b3d6564), with the time model or without.
    'inference with the time model': [{ ...trainRequest(llama8b), task: 'infer', train: undefined }, 'task'],
    'a DeepSpeed config': [
      { ...trainRequest(llama8b), deepspeed: { zero_optimization: { stage: 2 } } },
      'deepspeed',
    ],
    'a quick size': [{ ...trainRequest(null), model: { size: '13B' } }, 'model.size'],
    'a llama under unsloth': [
      trainRequest(llama8b, { method: 'qlora', framework: 'unsloth' }),
      'train.framework',
    ],
    'a qwen2 under torchtune': [
      trainRequest(config('Qwen/Qwen2.5-7B'), { method: 'lora', framework: 'torchtune' }),
      'train.framework',
    ],
    'a qwen3 under litgpt': [trainRequest(config('Qwen/Qwen3-0.6B'), { framework: 'litgpt' }), 'train.framework'],
    'an hf release': [trainRequest(llama8b, { framework: 'hf@4.44' }), 'train.framework'],
    'library versions': [
      { ...trainRequest(llama8b, { method: 'lora' }), versions: { peft: '0.10.0' } },
      'versions.peft',
    ],
    'a safetensors list': [
      {
        ...trainRequest(null),
        model: { safetensors: { tensors: [{ name: 'w', dtype: 'BF16', shape: [4, 4] }] } },
      },
      'model.safetensors',
    ],
  };
  for (const [name, [request, path]] of Object.entries(elsewhere)) {
    it(`${name}: vram_core says not_in_module at ${path}, the facade answers from vram_plan`, async () => {
      const text = JSON.stringify(request);
      const own = errorOf(await moduleRaw('core', '_estimate', text));
      expect(own).toMatchObject({ code: kNotInModule, path });
      expect(own.message).toContain('vram_plan.wasm');
      const full = await moduleRaw('plan', '_estimate', text);
      expect(errorOf(full)?.code).not.toBe(kNotInModule);
      expect(await estimateRaw(text)).toBe(full);
    });
  }

  it('modelInfo of a gemma config: not_in_module from vram_core, the count from the facade', async () => {
    const text = JSON.stringify({ config: config('google/gemma-2-2b') });
    expect(errorOf(await moduleRaw('core', '_modelInfo', text))?.code).toBe(kNotInModule);
    const info = JSON.parse(await modelInfoRaw(text));
    expect(info.params_total).toBeGreaterThan(2e9);
  });

  it('frameworkDefaults: hf from vram_core, the other frameworks from vram_plan, the same bytes', async () => {
    const hf = JSON.stringify({ framework: 'hf', method: 'qlora' });
    expect(await moduleRaw('core', '_frameworkDefaults', hf)).toBe(
      await moduleRaw('plan', '_frameworkDefaults', hf),
    );
    const unsloth = JSON.stringify({ framework: 'unsloth', method: 'qlora' });
    expect(errorOf(await moduleRaw('core', '_frameworkDefaults', unsloth))?.code).toBe(kNotInModule);
    const vram = await loadVram();
    await vram.loadFull();
    expect(vram.frameworkDefaults({ framework: 'unsloth', method: 'qlora' })).toEqual(
      JSON.parse(await moduleRaw('plan', '_frameworkDefaults', unsloth)),
    );
  });

  it('both modules report every supported model_type', () => {
    const types = JSON.parse(core._version()).supported_model_types;
    expect(types).toEqual(JSON.parse(plan._version()).supported_model_types);
    expect(types).toContain('gemma3n');
    expect(types).toContain('llama');
  });
});

// wasm/memops.cpp: memcpy / memmove as memory.copy and memset as memory.fill
// (bulk memory), not Emscripten libc's loops. Each is a function whose body
// is its three arguments and the instruction: local.get 0, 1, 2 (0x20 n),
// then memory.copy 0 0 (0xfc 0x0a 0x00 0x00) or memory.fill 0 (0xfc 0x0b 0x00).
describe('memory copies (wasm/memops.cpp)', () => {
  const args = [0x20, 0, 0x20, 1, 0x20, 2];
  it.each(['vram_core', 'vram_plan', 'vram_io'])('%s copies and fills with bulk-memory instructions', (name) => {
    const bytes = readFileSync(fileURLToPath(new URL(`${name}.wasm`, wasmDir)));
    expect(bytes.indexOf(Buffer.from([...args, 0xfc, 0x0a, 0, 0]))).toBeGreaterThan(0);
    expect(bytes.indexOf(Buffer.from([...args, 0xfc, 0x0b, 0]))).toBeGreaterThan(0);
    // The module validates with the instructions in it.
    expect(WebAssembly.validate(bytes)).toBe(true);
  });
});

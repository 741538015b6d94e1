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
import { EstimatorError, loadPlanner, loadVram, planRaw } from '../../src/wasm/vram.js';
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
    for (const name of [
      '_estimate',
      '_modelInfo',
      '_version',
      '_fields',
      '_layoutOptions',
      '_frameworkDefaults',
    ])
      expect(names).toContain(name);
  });

  it('vram_plan has _plan, _suggest and _version, and none of the form calls', () => {
    const names = bindings(plan);
    for (const name of ['_plan', '_suggest', '_version']) expect(names).toContain(name);
    for (const name of ['_estimate', '_modelInfo', '_fields', '_importFiles'])
      expect(names).not.toContain(name);
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

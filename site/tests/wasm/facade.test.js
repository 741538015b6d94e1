// @vitest-environment node
//
// The facade over the real built module (site/src/wasm/vram.js): it loads
// once, returns parsed results, and turns every kind of bad input into an
// EstimatorError with a code and a path, never a thrown number.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

import { EstimatorError, estimateRaw, loadVram } from '../../src/wasm/vram.js';
import { trainRequest } from './requests.js';

const fixtures = fileURLToPath(new URL('../../../tests/fixtures/models/', import.meta.url));
const llama2 = JSON.parse(readFileSync(join(fixtures, 'meta-llama__Llama-2-7b-hf.json'), 'utf8'));

// The shared Llama-2-7B request; `overrides` replace whole top-level fields.
// time.enabled false: the core module answers it itself (the time model is
// the full module's, core/src/reach.h).
function request(overrides = {}) {
  return trainRequest(llama2, {}, { time: { enabled: false }, ...overrides });
}

// What a call threw, or undefined when it returned.
function thrownBy(fn) {
  try {
    fn();
  } catch (thrown) {
    return thrown;
  }
  return undefined;
}

let vram;

beforeAll(async () => {
  vram = await loadVram();
});

describe('loadVram', () => {
  it('loads the module once and shares the promise', () => {
    expect(loadVram()).toBe(loadVram());
  });

  it('reports the schema and the supported model types', () => {
    const info = vram.version();
    expect(info.schema).toBe('vram-planner/1');
    expect(info.supported_model_types).toContain('llama');
  });
});

describe('estimate', () => {
  it('returns the contract fields of a result', () => {
    const result = vram.estimate(request());
    expect(Number.isSafeInteger(result.peak_bytes)).toBe(true);
    expect(result.peak_bytes).toBeGreaterThan(0);
    expect(typeof result.peak_phase).toBe('string');
    expect(result.model.params_total).toBe(6_738_415_616);
    expect(result.model.params_trainable).toBe(6_738_415_616);
    expect(result.components.length).toBeGreaterThan(0);
    for (const c of result.components) {
      expect(typeof c.key).toBe('string');
      expect(Number.isSafeInteger(c.bytes)).toBe(true);
    }
    expect(result.phases.map((p) => p.key)).toContain(result.peak_phase);
    expect(Math.max(...result.phases.map((p) => p.bytes))).toBe(result.peak_bytes);
    expect(typeof result.fit.fits).toBe('boolean');
    expect(result.fit.capacity_bytes).toBeGreaterThan(0);
    expect(Array.isArray(result.warnings)).toBe(true);
  });

  it('throws an EstimatorError naming the missing hidden size of a custom model', () => {
    const custom = { layers: 32, heads: 32, vocab: 32000 };
    const error = thrownBy(() => vram.estimate(request({ model: { custom } })));
    expect(error).toBeInstanceOf(EstimatorError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('EstimatorError');
    expect(error.code).toBe('missing_field');
    expect(error.path).toBe('model.custom.hidden');
    expect(error.message).toMatch(/hidden/);
  });

  it('throws an EstimatorError naming key/value heads that do not divide the heads', () => {
    const config = { ...llama2, num_key_value_heads: 5 };
    const error = thrownBy(() => vram.estimate(request({ model: { config } })));
    expect(error).toBeInstanceOf(EstimatorError);
    expect(error.code).toBe('inconsistent');
    expect(error.path).toBe('model.config.num_key_value_heads');
  });

  it('names a NaN field instead of letting JSON turn it into a default', () => {
    const train = { ...request().train, seq_len: NaN };
    const error = thrownBy(() => vram.estimate(request({ train })));
    expect(error).toBeInstanceOf(EstimatorError);
    expect(error.code).toBe('out_of_range');
    expect(error.path).toBe('train.seq_len');
  });

  it('names an infinite entry of a list by its index', () => {
    const config = { ...llama2, layer_types: [1, Infinity] };
    const error = thrownBy(() => vram.estimate(request({ model: { config } })));
    expect(error.path).toBe('model.config.layer_types[1]');
  });

  it('returns malformed JSON text as an error object, not a throw', async () => {
    const text = await estimateRaw('{"model": ');
    const { error } = JSON.parse(text);
    expect(error.code).toBe('bad_json');
    expect(typeof error.message).toBe('string');
    expect(typeof error.path).toBe('string');
  });

  const cyclic = request();
  cyclic.self = cyclic;
  const badInputs = [
    ['undefined', undefined],
    ['null', null],
    ['a string', 'llama'],
    ['an array', [request()]],
    ['a cyclic object', cyclic],
    ['a BigInt batch', request({ train: { ...request().train, micro_batch: 1n } })],
    ['a NaN sequence length', request({ train: { ...request().train, seq_len: NaN } })],
    ['a negative batch', request({ train: { ...request().train, micro_batch: -1 } })],
    ['a huge sequence length', request({ train: { ...request().train, seq_len: 1e300 } })],
    ['an unknown task', request({ task: 'serve' })],
    ['an unknown model_type', request({ model: { config: { ...llama2, model_type: 'nope' } } })],
    ['a string hidden_size', request({ model: { config: { ...llama2, hidden_size: '4096' } } })],
    ['no model', request({ model: undefined })],
    ['an empty object', {}],
  ];

  it.each(badInputs)('throws an EstimatorError with a code for %s', (name, input) => {
    const error = thrownBy(() => vram.estimate(input));
    expect(error).toBeInstanceOf(EstimatorError);
    expect(typeof error.code).toBe('string');
    expect(error.code).not.toBe('internal');
    expect(typeof error.path).toBe('string');
    expect(error.message.length).toBeGreaterThan(0);
  });

  it('keeps working after bad input', () => {
    thrownBy(() => vram.estimate({}));
    expect(vram.estimate(request()).peak_bytes).toBeGreaterThan(0);
  });
});

describe('modelInfo', () => {
  it('counts Llama-2-7B exactly', () => {
    expect(vram.modelInfo({ config: llama2 }).params_total).toBe(6_738_415_616);
  });

  it('throws an EstimatorError for a config without a model_type', () => {
    const config = { ...llama2 };
    delete config.model_type;
    const error = thrownBy(() => vram.modelInfo({ config }));
    expect(error).toBeInstanceOf(EstimatorError);
    expect(error.path).toMatch(/model_type/);
  });
});

describe('plan', () => {
  it('ranks layouts of the GPU budget, each one the estimate of its layout', async () => {
    const req = request({ parallel: { gpus: 8 }, gpu: { name: 'A100 80GB' } });
    const { plan } = await vram.plan(req);
    expect(plan.gpus).toBe(8);
    expect(plan.candidates.length).toBeGreaterThan(0);
    const best = plan.candidates[0];
    expect(best.fits).toBe(true);
    // Applying the candidate's fields to the request gives its peak (the
    // planner keeps DeepSpeed's mixed precision).
    const applied = {
      ...req,
      train: {
        ...req.train,
        precision: 'mixed_bf16',
        grad_checkpointing: best.grad_checkpointing === 'full',
      },
      parallel: best.parallel,
    };
    expect(vram.estimate(applied).peak_bytes).toBe(best.peak_bytes);
  });

  it('rejects with an EstimatorError naming plan.framework for an unknown framework', async () => {
    const error = await vram
      .plan(request({ parallel: { gpus: 8 }, plan: { framework: 'jax' } }))
      .catch((thrown) => thrown);
    expect(error).toBeInstanceOf(EstimatorError);
    expect(error.path).toBe('plan.framework');
  });
});

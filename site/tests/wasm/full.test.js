// @vitest-environment node
//
// The facade's synchronous calls and the full module (wasm/vram.js): the
// core module (vram_core) estimates the common families itself; for the rest
// estimate and modelInfo throw not_in_module until loadFull() has resolved,
// and answer from vram_plan after it, exactly as estimateRaw does. Its own
// file, so that no other test has loaded vram_plan first.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';

import {
  EstimatorError,
  estimateRaw,
  kNotInModule,
  loadVram,
} from '../../src/wasm/vram.js';
import { modelFile, trainRequest } from './requests.js';

const config = (id) => JSON.parse(readFileSync(modelFile(id), 'utf8'));
const gemma = trainRequest(config('google/gemma-2-2b'), { method: 'lora' });
// time.enabled false: the core module answers it itself (the time model is
// the full module's, core/src/reach.h).
const llama = trainRequest(config('meta-llama/Llama-3.2-1B'), { method: 'lora' }, { time: { enabled: false } });

let vram;
beforeAll(async () => {
  vram = await loadVram();
});

describe('the synchronous calls before and after loadFull', () => {
  it('a llama estimate needs no full module', () => {
    expect(vram.estimate(llama).peak_bytes).toBeGreaterThan(0);
  });

  it('a gemma estimate throws not_in_module, naming the field, until loadFull', async () => {
    let thrown;
    try {
      vram.estimate(gemma);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(EstimatorError);
    expect(thrown.code).toBe(kNotInModule);
    expect(vram.notInModule).toBe(kNotInModule);
    expect(thrown.path).toBe('model.config.model_type');
    expect(() => vram.modelInfo({ config: gemma.model.config })).toThrow(/vram_plan\.wasm/);
    // Asking again without loadFull still throws: nothing loaded it behind the caller's back.
    expect(() => vram.estimate(gemma)).toThrow(EstimatorError);

    await vram.loadFull();
    const result = vram.estimate(gemma);
    expect(result.model.family).toBe('gemma2');
    expect(JSON.stringify(result)).toBe(JSON.stringify(JSON.parse(await estimateRaw(JSON.stringify(gemma)))));
    expect(vram.modelInfo({ config: gemma.model.config }).params_total).toBe(result.model.params_total);
  });

  it('estimateAsync answers both without the caller loading anything', async () => {
    expect((await vram.estimateAsync(gemma)).model.family).toBe('gemma2');
    expect((await vram.estimateAsync(llama)).model.family).toBe('llama');
  });
});

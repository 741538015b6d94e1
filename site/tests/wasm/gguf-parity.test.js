// @vitest-environment node
//
// A GGUF file gives the same bytes on the page and in the CLI: the page reads
// its header with @huggingface/gguf (src/lib/gguf.js) and builds the request
// from the form (gguf-actions.js requestForGguf), the WebAssembly module
// answers; `vram-probe estimate --engine llama_cpp --gguf FILE --ctx-size
// 32768 --n-gpu-layers 99 --gpu NAME --json` reads the same file natively.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { llamaGguf, mmprojGguf } from '../hub-mock.mjs';
import { readGgufFile } from '../../src/lib/gguf.js';
import { requestForGguf } from '../../src/lib/gguf-actions.js';
import { DEFAULT_SETTINGS } from '../../src/lib/state.js';
import { estimateRaw } from '../../src/wasm/vram.js';
import { probe } from './requests.js';

// A 4-layer Llama of width 512 (Q8_0 matrices, Q6_K output): small enough to write whole.
const SHAPE = { layers: 4, embd: 512, ffn: 1536, heads: 8, kv: 2, vocab: 4096, ctx: 65536 };
const dir = mkdtempSync(join(tmpdir(), 'vram-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name, writer) {
  const bytes = writer.bytes();
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return { path, file: new File([bytes], name) };
}

function formWith(infer, gpu = 'RTX 4090') {
  const s = structuredClone(DEFAULT_SETTINGS);
  Object.assign(s.infer, { engine: 'llama_cpp', ...infer });
  s.task = 'infer';
  s.gpu = { ...s.gpu, mode: 'catalog', name: gpu };
  return s;
}

function cli(args) {
  const run = spawnSync(probe, ['estimate', ...args, '--json'], { encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout;
}

describe.skipIf(!existsSync(probe))('a GGUF file on the page and in vram-probe', () => {
  it('--ctx-size 32768 --n-gpu-layers 99: the same bytes', async () => {
    const { path, file } = write('tiny-Q8_0.gguf', llamaGguf(SHAPE, 'Q8_0', 'Q6_K'));
    const inventory = await readGgufFile(file);
    expect(inventory.tensors).toHaveLength(3 + 9 * SHAPE.layers);
    const req = requestForGguf(inventory, formWith({ ctx_size: 32768, n_gpu_layers: 99 }));
    const page = await estimateRaw(JSON.stringify(req));
    expect(JSON.parse(page).infer.ctx_size).toBe(32768);
    const native = cli([
      '--engine',
      'llama_cpp',
      '--gguf',
      path,
      '--ctx-size',
      '32768',
      '--n-gpu-layers',
      '99',
      '--gpu',
      'RTX 4090',
    ]);
    expect(JSON.parse(page)).toEqual(JSON.parse(native));
    expect(page.trimEnd()).toBe(native.trimEnd());
  });

  it("the release's defaults (no -c, no -ngl: --fit) and a projector: the same bytes", async () => {
    const { path, file } = write('tiny-Q8_0.gguf', llamaGguf(SHAPE, 'Q8_0'));
    const proj = write('mmproj-tiny-f16.gguf', mmprojGguf());
    const req = requestForGguf(await readGgufFile(file), formWith({}, 'RTX 3060 12GB'));
    req.model.mmproj = await readGgufFile(proj.file);
    const page = await estimateRaw(JSON.stringify(req));
    const native = cli([
      '--engine',
      'llama_cpp',
      '--gguf',
      path,
      '--mmproj',
      proj.path,
      '--gpu',
      'RTX 3060 12GB',
    ]);
    expect(JSON.parse(page)).toEqual(JSON.parse(native));
    expect(page.trimEnd()).toBe(native.trimEnd());
  });
});

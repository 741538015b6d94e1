// @vitest-environment node
//
// Differential test of the two ways a failure travels (core/include/vram/
// status.h): vram-probe's core throws C++ exceptions, the WASM modules' core
// longjmps. Seeded mutations of the validation requests (a field set to
// null, zero, a negative, a huge number, the wrong type, removed, or an
// unknown key added, in the request or deep in the model's config) must give
// byte-identical answers, errors included, and never make the module fail.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { estimateRaw, instanceStats } from '../../src/wasm/vram.js';
import { probe, repoRoot } from './requests.js';

const validationDir = join(repoRoot, 'tests/fixtures/validation');
const rows = JSON.parse(readFileSync(join(validationDir, 'requests.json'), 'utf8'));
const bases = rows.map((row) => ({
  ...row.request,
  model: { config: JSON.parse(readFileSync(join(validationDir, row.config_file), 'utf8')) },
}));

// mulberry32: a small seeded generator, so every run tries the same cases.
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Every [parent, key] of plain objects and arrays under `value`.
function slots(value, out = []) {
  if (value === null || typeof value !== 'object') return out;
  for (const key of Object.keys(value)) {
    out.push([value, key]);
    slots(value[key], out);
  }
  return out;
}

const replacements = [
  null,
  0,
  -1,
  1e30,
  2 ** 53,
  0.5,
  'x',
  '7B',
  '',
  true,
  [],
  {},
  [1, 2, 3],
];

function mutate(base, random) {
  const request = structuredClone(base);
  const all = slots(request);
  const edits = 1 + Math.floor(random() * 3);
  for (let i = 0; i < edits; i += 1) {
    const [parent, key] = all[Math.floor(random() * all.length)];
    const r = random();
    if (r < 0.15 && !Array.isArray(parent)) {
      delete parent[key];
    } else if (r < 0.25 && !Array.isArray(parent)) {
      parent[`${key}_unknown`] = 1;
    } else {
      parent[key] = structuredClone(replacements[Math.floor(random() * replacements.length)]);
    }
  }
  return request;
}

const random = generator(20261128);
const cases = Array.from({ length: 600 }, (_, i) => {
  const base = bases[i % bases.length];
  return [`mutation ${i} of validation row ${i % bases.length}`, JSON.stringify(mutate(base, random))];
});

const work = mkdtempSync(join(tmpdir(), 'vram-differential-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('exceptions (vram-probe) and longjmp (WASM) answer alike', () => {
  it('tries distinct requests', () => {
    expect(new Set(cases.map(([, text]) => text)).size).toBeGreaterThan(cases.length * 0.95);
  });

  const outcomes = { ok: 0, error: 0 };
  it.each(cases)('%s', async (_name, text) => {
    const file = join(work, 'request.json');
    writeFileSync(file, text);
    const native = spawnSync(probe, ['estimate', '--request', file, '--json'], { encoding: 'utf8' });
    expect(native.error).toBeUndefined();
    const wasm = await estimateRaw(text);
    expect(native.stdout).toBe(`${wasm}\n`);
    const parsed = JSON.parse(wasm);
    if (parsed.error) {
      expect(parsed.error.code).not.toBe('internal');
      outcomes.error += 1;
    } else {
      outcomes.ok += 1;
    }
  });

  it('saw answers and errors, and the live instance has not unwound', async () => {
    expect(outcomes.ok).toBeGreaterThan(20);
    expect(outcomes.error).toBeGreaterThan(20);
    expect((await instanceStats()).unwinds).toBe(0);
  });
});

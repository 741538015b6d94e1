// @vitest-environment node
//
// Issue 17 through the real WASM module: every failure of the shared table
// (tests/fixtures/strict/failures.json, which tests/probe/cli_strict_test.cpp
// runs through vram-probe) comes back as the same error, and every byte
// figure is exact and never falls as batch, sequence, layers, hidden size or
// vocabulary grow up to the documented limits.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

import { MAX_INPUT_BYTES } from '../../src/lib/limits.js';
import { estimateRaw, loadVram } from '../../src/wasm/vram.js';
import { repoRoot } from './requests.js';

const table = JSON.parse(
  readFileSync(join(repoRoot, 'tests/fixtures/strict/failures.json'), 'utf8'),
);

// The same texts as the native test builds.
function caseText(c) {
  if (c.request) return JSON.stringify(c.request);
  if (c.text !== undefined) return c.text;
  if (c.generate === 'oversize') {
    return (
      '{"model": {"custom": {"layers": 2, "hidden": 64, "heads": 2, "vocab": 100}}}' +
      ' '.repeat(16 * 1024 * 1024 + 1)
    );
  }
  if (c.generate === 'deep') return '['.repeat(100000) + ']'.repeat(100000);
  throw new Error(`unknown generator ${c.generate}`);
}

let vram;

beforeAll(async () => {
  vram = await loadVram();
});

describe('input limits', () => {
  it("are the core's, on the page too", () => {
    const { limits } = vram.version();
    expect(limits.max_input_bytes).toBe(MAX_INPUT_BYTES);
    expect(limits.max_json_depth).toBe(64);
    expect(limits.max_bytes).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('issue 17 failures through WASM', () => {
  it.each(table.cases.map((c) => [c.name, c]))('%s', async (_name, c) => {
    const out = JSON.parse(await estimateRaw(caseText(c)));
    if (c.error) {
      expect(out.error).toBeDefined();
      expect(out.error.code).toBe(c.error.code);
      expect(out.error.path).toBe(c.error.path);
      expect(out.error.message).toContain(c.error.message);
      return;
    }
    expect(out.error).toBeUndefined();
    if (c.component) {
      const comp = out.components.find((x) => x.key === c.component.key);
      expect(comp.bytes).toBe(c.component.bytes);
    }
  });

  it('keeps working after the largest inputs', async () => {
    const out = JSON.parse(await estimateRaw(caseText(table.cases[0])));
    expect(out.error.code).toBe('out_of_range');
  });
});

// ---- every byte figure never falls as an input grows -------------------------

function byteFigures(r) {
  const out = {};
  for (const k of ['peak_bytes', 'peak_allocated_bytes', 'peak_reserved_bytes']) out[k] = r[k];
  for (const c of r.components) out[`component.${c.key}`] = c.bytes;
  for (const p of r.phases) {
    for (const v of ['bytes', 'allocated_bytes', 'reserved_bytes']) {
      if (p[v] !== undefined) out[`phase.${p.key}.${v}`] = p[v];
    }
  }
  return out;
}

function powers(from, to, factor) {
  const v = [];
  for (let x = from; x < to; x *= factor) v.push(x);
  v.push(to);
  return v;
}

function customTrain(layers, hidden, vocab, batch, seq) {
  return {
    model: { custom: { layers, hidden, heads: 8, intermediate: 4 * hidden, vocab } },
    train: { micro_batch: batch, seq_len: seq, attention: 'eager' },
    // As in tests/core/byte_limits_test.cpp: the allocator replay's segment
    // reuse is not monotone by design; a factor over the live tensors is.
    overheads: { fragmentation: 0.1 },
  };
}

function customInfer(layers, hidden, vocab, batch, ctx) {
  return {
    model: { custom: { layers, hidden, heads: 8, intermediate: 4 * hidden, vocab } },
    task: 'infer',
    infer: { batch, context_len: ctx },
  };
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const axes = [
  ['train.micro_batch', powers(1, 65536, 16), (b) => customTrain(4, 512, 32000, b, 512)],
  ['train.seq_len', powers(1, 2 ** 24, 16), (s) => customTrain(4, 512, 32000, 1, s)],
  ['model.custom.layers', powers(1, 100000, 100), (l) => customTrain(l, 256, 1000, 1, 64)],
  ['model.custom.hidden', powers(8, 2 ** 24, 64), (h) => customTrain(2, h, 1000, 1, 64)],
  ['model.custom.vocab', powers(1, 2 ** 24, 16), (v) => customTrain(2, 256, v, 4, 512)],
  ['infer.batch', powers(1, 65536, 16), (b) => customInfer(32, 4096, 32000, b, 4096)],
  ['infer.context_len', powers(1, 2 ** 24, 16), (c) => customInfer(32, 4096, 32000, 64, c)],
];

describe('byte figures never fall as inputs grow, up to the limits', () => {
  it.each(axes)('%s', async (name, values, build) => {
    let prev = null;
    let failed = false;
    let estimated = 0;
    for (const v of values) {
      const request = build(v);
      // Without overheads.fragmentation the reserved view is the allocator
      // replay's (transformers inference), whose cached bytes are not
      // monotone by design (tests/core/byte_limits_test.cpp): its peaks are
      // checked, its cache is not.
      const replayed = !request.overheads;
      const out = JSON.parse(await estimateRaw(JSON.stringify(request)));
      if (out.error) {
        expect(out.error.code, `${name} ${v}: ${out.error.message}`).toBe('out_of_range');
        failed = true;
        continue;
      }
      expect(failed, `${name} ${v} estimates after a smaller value failed`).toBe(false);
      estimated += 1;
      const now = byteFigures(out);
      for (const [k, b] of Object.entries(now)) {
        expect(Number.isSafeInteger(b) && b >= 0 && b <= MAX_SAFE, `${k} = ${b}`).toBe(true);
        if (prev && k in prev && !(replayed && k === 'component.allocator')) {
          expect(b, `${k} at ${name} ${v}`).toBeGreaterThanOrEqual(prev[k]);
        }
      }
      prev = now;
    }
    expect(estimated).toBeGreaterThanOrEqual(2);
  });
});

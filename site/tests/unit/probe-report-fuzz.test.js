// A mutation fuzz of the page's probe-report reader (src/lib/probe-report.js).
// libFuzzer (tests/fuzz) cannot reach JavaScript, so this does what it does on
// a small scale: the reports vram-probe wrote (fixtures/probe/) are mutated
// structurally (keys dropped, values swapped for other types, huge, negative
// or fractional numbers, deep nesting) and byte-wise, with a seeded generator
// so a failure repeats. Every input must end in a result or a ReportError:
// any other exception (a TypeError) is a gap in the checks, which
// parseProbeReport would otherwise hide behind "could not be read".
// VRAM_FUZZ_ITERATIONS sets the number of inputs (default 1500).
import { describe, expect, it } from 'vitest';
import {
  ReportError,
  compareWatch,
  measuredPeak,
  measuredSeries,
  parseProbeReport,
  readProbeReport,
} from '../../src/lib/probe-report.js';
import device from './fixtures/probe/device-fake-nvml-h100.json?raw';
import workstation from './fixtures/probe/device-workstation.json?raw';
import nccl from './fixtures/probe/nccl-8xh100.json?raw';
import overheads from './fixtures/probe/overheads-h100.json?raw';
import container from './fixtures/probe/watch-container-a100.json?raw';
import lora from './fixtures/probe/watch-llama-3.2-1b-lora-h100.json?raw';

const SEEDS = [device, workstation, nccl, overheads, container, lora];
const ITERATIONS = Number(process.env.VRAM_FUZZ_ITERATIONS ?? 1500);

// xorshift32 (Marsaglia 2003): small, seeded, the same sequence everywhere.
function generator(seed) {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  const below = (n) => next() % n;
  return { below, pick: (list) => list[below(list.length)] };
}

const ODD_VALUES = [
  null,
  true,
  0,
  -1,
  0.5,
  1e308,
  -1e308,
  2 ** 53,
  2 ** 64,
  Number.MAX_SAFE_INTEGER,
  '',
  '12',
  'NaN',
  [],
  {},
  [null],
  { a: 1 },
  'x'.repeat(500),
];

// A random path into `doc`: walk down from the root, stopping at a leaf or
// with probability 1/3 at each level ([] never: the root itself).
function randomPath(doc, rng) {
  const path = [];
  let at = doc;
  while (at && typeof at === 'object' && Object.keys(at).length > 0) {
    const key = rng.pick(Object.keys(at));
    path.push(Array.isArray(at) ? Number(key) : key);
    at = at[key];
    if (rng.below(3) === 0) break;
  }
  return path;
}

function parentOf(doc, path) {
  let at = doc;
  for (const key of path.slice(0, -1)) at = at[key];
  return at;
}

// One structural change somewhere in a copy of `doc`.
function mutateDoc(doc, rng) {
  const copy = structuredClone(doc);
  const path = randomPath(copy, rng);
  if (path.length === 0) return rng.pick(ODD_VALUES);
  const parent = parentOf(copy, path);
  const key = path.at(-1);
  switch (rng.below(6)) {
    case 0:
      if (Array.isArray(parent)) parent.splice(key, 1);
      else delete parent[key];
      break;
    case 1:
      parent[key] = rng.pick(ODD_VALUES);
      break;
    case 2: {
      let deep = parent[key];
      for (let i = 0; i < 64; ++i) deep = [deep];
      parent[key] = deep;
      break;
    }
    case 3:
      if (typeof parent[key] === 'number') parent[key] = -parent[key] - 1;
      else parent[key] = String(parent[key]);
      break;
    case 4:
      if (Array.isArray(parent[key])) parent[key] = [...parent[key], ...parent[key].slice(0, 8)];
      else parent[`${key}_extra`] = parent[key];
      break;
    default:
      // Another part of the report in this place (a copy: no cycles).
      parent[key] = structuredClone(parentOf(copy, randomPath(copy, rng)));
  }
  return copy;
}

// Byte-level: cut, duplicate or overwrite a slice of the text.
function mutateText(text, rng) {
  const i = rng.below(text.length + 1);
  const j = Math.min(text.length, i + rng.below(32));
  switch (rng.below(3)) {
    case 0:
      return text.slice(0, i) + text.slice(j);
    case 1:
      return text.slice(0, j) + text.slice(i, j) + text.slice(j);
    default:
      return (
        text.slice(0, i) +
        rng.pick(['{', '}', '"', ',', ':', '[', '-', '9', 'e', '\u0000']) +
        text.slice(j)
      );
  }
}

function check(text) {
  const parsed = parseProbeReport(text);
  expect(Object.keys(parsed)).toHaveLength(1);
  if (parsed.error) {
    expect(parsed.error).toBeInstanceOf(ReportError);
    expect(typeof parsed.error.path).toBe('string');
    expect(parsed.error.message.length).toBeGreaterThan(0);
  }
  let doc;
  try {
    doc = JSON.parse(text);
  } catch {
    return;
  }
  try {
    readProbeReport(doc);
  } catch (e) {
    if (!(e instanceof ReportError)) throw new Error(`${e} for input ${text.slice(0, 400)}`);
  }
  const w = parsed.report?.watch;
  if (!w) return;
  const peak = measuredPeak(w);
  expect(Number.isSafeInteger(peak.bytes) && peak.bytes >= 0).toBe(true);
  for (const p of measuredSeries(w))
    expect(Number.isSafeInteger(p.bytes) && p.bytes >= 0).toBe(true);
  const comparison = compareWatch(w, {
    peak_bytes: 10 * 2 ** 30,
    peak_allocated_bytes: 9 * 2 ** 30,
    components: [],
  });
  expect(comparison === null || typeof comparison === 'object').toBe(true);
}

describe('probe report reader under mutation', () => {
  it('answers every mutated report with a result or a ReportError', () => {
    const rng = generator(20261124);
    // Whole seeds once; mutated with their timelines cut to 32 points, as
    // cloning 2048 points per input would spend the time on copying.
    const docs = SEEDS.map((s) => JSON.parse(s)).map((d) =>
      Array.isArray(d.timeline) ? { ...d, timeline: d.timeline.slice(0, 32) } : d,
    );
    SEEDS.forEach(check);
    for (let n = 0; n < ITERATIONS; ++n) {
      const k = rng.below(SEEDS.length);
      let doc = docs[k];
      const rounds = 1 + rng.below(3);
      for (let r = 0; r < rounds && doc && typeof doc === 'object'; ++r) doc = mutateDoc(doc, rng);
      const text = JSON.stringify(doc, null, rng.below(2) ? 2 : 0);
      check(rng.below(4) === 0 ? mutateText(text, rng) : text);
    }
  }, 120_000);
});

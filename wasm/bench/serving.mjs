// Timing of the serving engines' estimates in WebAssembly (issue 32): vLLM
// and SGLang size themselves to every card of the GPU table, so one estimate
// replays each engine's start-up once per catalog card.
//
//   node wasm/bench/serving.mjs [--module PATH/TO/vram.js] [--n 20]
//
// The requests are the validation table's rows of vLLM issue #21348
// (tests/fixtures/validation/requests.json): Qwen3-235B-A22B-FP8 on 4 x H100
// at tensor parallel 4, vLLM with its defaults and SGLang with
// --mem-fraction-static 0.93. Inference is in the full module (vram_plan),
// which the facade uses once loadPlanner() has loaded it, as on the page
// after its first estimate. Prints the median and p90 wall-clock and the
// median CPU time (this process's user + system) per estimate, in ms.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({
  options: {
    module: { type: 'string', default: resolve(here, '../../site/src/wasm/vram.js') },
    n: { type: 'string', default: '20' },
  },
});
const n = Number(flags.n);
const config = JSON.parse(
  readFileSync(resolve(here, '../../tests/fixtures/validation/Qwen__Qwen3-235B-A22B-FP8.json'), 'utf8'),
);
const request = (infer) => ({
  model: { config },
  task: 'infer',
  gpu: { name: 'H100 80GB' },
  parallel: { gpus: 4, tp: 4 },
  infer,
});

const { loadPlanner, loadVram } = await import(pathToFileURL(resolve(flags.module)).href);
const vram = await loadVram();
await loadPlanner();

for (const [label, req] of [
  ['vLLM Qwen3-235B FP8 TP 4', request({ engine: 'vllm' })],
  ['SGLang Qwen3-235B FP8 TP 4', request({ engine: 'sglang', mem_fraction_static: 0.93 })],
]) {
  const first = vram.estimate(req);
  if (first.error) throw new Error(`${label}: ${JSON.stringify(first.error)}`);
  for (let i = 0; i < 3; i++) vram.estimate(req); // WebAssembly tiers up
  const wall = [];
  const cpu = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    const cpuStart = process.cpuUsage();
    vram.estimate(req);
    const used = process.cpuUsage(cpuStart);
    wall.push(Number(process.hrtime.bigint() - start) / 1e6);
    cpu.push((used.user + used.system) / 1000);
  }
  wall.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const at = (a, q) => a[Math.min(n - 1, Math.ceil(q * n) - 1)];
  console.log(
    `${label.padEnd(28)} median ${at(wall, 0.5).toFixed(1).padStart(6)} ms   p90 ${at(wall, 0.9).toFixed(1).padStart(6)} ms   cpu median ${at(cpu, 0.5).toFixed(1).padStart(6)} ms   peak ${first.peak_bytes} B   (n=${n})`,
  );
}

// Timing of the WebAssembly estimator in Node (DESIGN.md §6: speed is measured
// by a script, not asserted in unit tests).
//
//   node wasm/bench/bench.mjs [--module PATH/TO/vram.js] [--n 2000]
//
// Loads the built facade (by default the copy the WASM build places in
// site/src/wasm/), times N calls each of estimate and modelInfo for a
// 70B-class config through the facade (JSON.stringify + WASM + JSON.parse) and
// through the raw text call, and prints median and p90 microseconds per call
// plus the module's size raw and gzipped. The estimate is timed twice: on the
// first-visit module (vram_core, built for size), as the page's first
// estimate, and once the full module is loaded (vram_plan, built for speed),
// which then answers the facade's estimates, as on the page after its first
// estimate; then the planner.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({
  options: {
    module: { type: 'string', default: resolve(here, '../../site/src/wasm/vram.js') },
    n: { type: 'string', default: '2000' },
  },
});
const facadePath = resolve(flags.module);
const modulePath = resolve(dirname(facadePath), 'vram_core.mjs');
// The WebAssembly binary beside it (the facade reads it the same way in Node).
const wasmPath = resolve(dirname(facadePath), 'vram_core.wasm');
let n = Number(flags.n);
// Calls made before timing so that V8 has compiled the JS glue and the
// WebAssembly tiers up (Liftoff -> TurboFan) before the first timed call.
const kWarmup = 200;

// meta-llama/Llama-2-70b-hf config.json sizes (hidden 8192, intermediate
// 28672, 80 layers, 64 heads, 8 KV heads, vocab 32000).
const llama70bConfig = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  hidden_size: 8192,
  intermediate_size: 28672,
  num_hidden_layers: 80,
  num_attention_heads: 64,
  num_key_value_heads: 8,
  vocab_size: 32000,
  max_position_embeddings: 4096,
  rms_norm_eps: 1e-5,
  hidden_act: 'silu',
  tie_word_embeddings: false,
  torch_dtype: 'float16',
};
const request = {
  model: { config: llama70bConfig },
  task: 'train',
  train: {
    method: 'full',
    micro_batch: 1,
    seq_len: 2048,
    precision: 'bf16',
    optimizer: 'adamw_torch_fused',
    grad_checkpointing: false,
    attention: 'sdpa',
  },
  gpu: { name: 'H100 80GB' },
  // The time model is the full module's (core/lite/reach.cpp): the page's
  // first estimate leaves it out, and so does this one, in both modules.
  time: { enabled: false },
};

// Wall-clock and CPU time per call (process.cpuUsage, this process's user +
// system time): on a machine shared with other work the wall clock also
// counts the time other processes held the cores.
function time(label, fn) {
  for (let i = 0; i < kWarmup; i++) fn();
  const samples = new Float64Array(n);
  const cpu = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    const cpuStart = process.cpuUsage();
    fn();
    const used = process.cpuUsage(cpuStart);
    samples[i] = Number(process.hrtime.bigint() - start) / 1000;
    cpu[i] = used.user + used.system;
  }
  samples.sort();
  cpu.sort();
  // Nearest-rank percentiles.
  const at = (a, q) => a[Math.min(n - 1, Math.ceil(q * n) - 1)];
  console.log(
    `${label.padEnd(28)} median ${at(samples, 0.5).toFixed(1).padStart(8)} µs   p90 ${at(samples, 0.9).toFixed(1).padStart(8)} µs   cpu median ${at(cpu, 0.5).toFixed(0).padStart(6)} µs   (n=${n})`,
  );
}

const { loadPlanner, loadVram } = await import(pathToFileURL(facadePath).href);

const loadStart = process.hrtime.bigint();
const vram = await loadVram();
const loadMs = Number(process.hrtime.bigint() - loadStart) / 1e6;

// Fail loudly rather than time the error path.
const result = vram.estimate(request);
const info = vram.modelInfo({ config: llama70bConfig });

const raw = readFileSync(wasmPath);
const gzipped = gzipSync(raw); // zlib default level 6, what static hosts typically serve
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB (${bytes} bytes)`;

console.log(`module      ${wasmPath}`);
console.log(`size raw    ${kib(raw.length)}`);
console.log(`size gzip   ${kib(gzipped.length)}`);
console.log(`load        ${loadMs.toFixed(1)} ms (import + instantiate, first call of loadVram)`);
console.log(`node        ${process.version}`);
console.log(
  `check       params_total ${info.params_total}, peak_bytes ${result.peak_bytes} (${result.peak_phase})`,
);
console.log('');

const requestText = JSON.stringify(request);
const modelText = JSON.stringify({ config: llama70bConfig });
time('estimate (facade, core)', () => vram.estimate(request));
time('modelInfo (facade)', () => vram.modelInfo({ config: llama70bConfig }));

// Raw text calls on a second instance of the module: the WebAssembly work
// plus string copies, without the JS object <-> JSON text conversions the
// facade adds.
const { default: createVramModule } = await import(pathToFileURL(modulePath).href);
const module = await createVramModule({ wasmBinary: readFileSync(wasmPath) });
time('estimate (raw text)', () => module._estimate(requestText));
time('modelInfo (raw text)', () => module._modelInfo(modelText));

// The planner for the same 70B model on 64 H100s (every DeepSpeed layout);
// fewer iterations, each call is tens of milliseconds.
// With the time model (the planner ranks by step time), as vram_bench's
// BM_Plan70bOn64Gpus.
const { time: _firstEstimateOnly, ...untimed } = request;
const planRequest = {
  ...untimed,
  train: { ...request.train, seq_len: 4096, grad_accum: 16 },
  parallel: { gpus: 64 },
};
// The plan module (vram_plan.wasm), loaded now, outside the timing; its
// calls are synchronous once loaded (vram.plan itself returns a promise).
const planner = await loadPlanner();
const fullResult = vram.estimate(request);
if (JSON.stringify(fullResult) !== JSON.stringify(result)) {
  throw new Error('the full module answers the request differently from the core');
}
time('estimate (facade, full)', () => vram.estimate(request));
const planned = planner.plan(planRequest);
console.log(
  `check       plan considered ${planned.plan.considered}, fitting ${planned.plan.fitting}`,
);
const fullN = n;
n = Math.max(20, Math.floor(fullN / 100));
time('plan 64 GPUs (facade)', () => planner.plan(planRequest));
n = fullN;

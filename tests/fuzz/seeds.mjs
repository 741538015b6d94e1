// Seed corpora and the dictionary for the libFuzzer targets (tests/fuzz),
// built from the tests' own inputs: the model configs of tests/fixtures/models,
// the validation requests of tests/fixtures/validation (as vram_validate
// assembles them), the site tests' request builder (site/tests/wasm/requests.js),
// the framework files of tests/fixtures/import (YAML read with the page's npm
// `yaml` package, so site/node_modules must be installed: `make deps`) and the
// core's field table (site/src/lib/fields.json, `make fields`).
//
//   node tests/fuzz/seeds.mjs <out-dir>
// writes <out-dir>/seeds/<target>/NNNN.json and <out-dir>/vram.dict. A seed
// given as a string is written as it is (import_file's raw YAML and JSON).
//
// A new target (tests/fuzz/CMakeLists.txt) adds one entry to SEEDS below.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { repoRoot, trainRequest } from '../../site/tests/wasm/requests.js';
import { GgufWriter, llamaGguf } from '../../site/tests/gguf-writer.mjs';

const out = process.argv[2];
if (!out) {
  console.error('usage: node tests/fuzz/seeds.mjs <out-dir>');
  process.exit(2);
}
const readJson = (path) => JSON.parse(readFileSync(join(repoRoot, path), 'utf8'));

const modelsDir = 'tests/fixtures/models';
const configs = readdirSync(join(repoRoot, modelsDir))
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => readJson(`${modelsDir}/${f}`));
const fields = readJson('site/src/lib/fields.json').fields;
const validation = readJson('tests/fixtures/validation/requests.json').map((row) => ({
  ...row.request,
  model: { config: readJson(`tests/fixtures/validation/${row.config_file}`) },
}));

// The framework files `vram-probe import` and the page's import read, as
// text (import_file: the CLI's JSON-else-YAML reading) and as the trees the
// page hands the core (import: vram::import_json), alone and in the pairs a
// run has (a recipe with its DeepSpeed JSON, a recipe with its model's
// config.json).
const { parse: parseYaml } = createRequire(join(repoRoot, 'site/package.json'))('yaml');
const importDir = 'tests/fixtures/import';
const importFiles = readdirSync(join(repoRoot, importDir))
  .filter((f) => /\.(ya?ml|json)$/.test(f))
  .sort()
  .map((file) => {
    const text = readFileSync(join(repoRoot, importDir, file), 'utf8');
    return { file, text, content: file.endsWith('.json') ? JSON.parse(text) : parseYaml(text) };
  });
const importFile = (name) => importFiles.find((f) => f.file === name);
const asImport = (...files) => ({ files: files.map(({ file, content }) => ({ file, content })) });
const importSeeds = [
  ...importFiles.map((f) => asImport(f)),
  asImport(importFile('axolotl_qlora-1b.yml'), importFile('transformers_ds_config_zero3.json')),
  asImport(
    importFile('trl_accelerate_deepspeed_zero3.yaml'),
    importFile('transformers_docs_zero3_auto.json'),
  ),
  asImport(importFile('peft_adapter_config.json'), {
    file: 'config.json',
    content: readJson(`${modelsDir}/HuggingFaceTB__SmolLM2-135M.json`),
  }),
];

// Hostile files (issue 33): alias bombs, keys given twice, second documents,
// numbers that are not finite; every one an error or a warning.
const hostileDir = 'tests/fixtures/hostile';
const hostileTexts = readdirSync(join(repoRoot, hostileDir))
  .filter((f) => /\.(ya?ml|json)$/.test(f) && f !== 'cases.json')
  .sort()
  .map((f) => readFileSync(join(repoRoot, hostileDir, f), 'utf8'));

// Every enum value of the field table once, on a small model's request.
function setPath(o, path, value) {
  const keys = path.split('.');
  let at = o;
  for (const k of keys.slice(0, -1)) at = at[k] ??= {};
  at[keys.at(-1)] = value;
  return o;
}
const small = readJson(`${modelsDir}/HuggingFaceTB__SmolLM2-135M.json`);
const enumRequests = fields.flatMap((f) =>
  (f.values ?? []).map((v) => setPath(trainRequest(small, {}), f.path, v)),
);
const inferRequests = configs.map((c) => ({
  model: { config: c },
  task: 'infer',
  infer: { batch: 4, context_len: 4096 },
  gpu: { name: 'H100 80GB' },
}));
const custom = {
  model: {
    custom: {
      layers: 32,
      hidden: 4096,
      heads: 32,
      kv_heads: 8,
      vocab: 128256,
      intermediate: 14336,
    },
  },
  task: 'train',
};
const planModels = [
  'HuggingFaceTB__SmolLM2-135M',
  'EleutherAI__pythia-160m',
  'facebook__opt-125m',
  'openai-community__gpt2',
  'Qwen__Qwen3-0.6B',
  'google-t5__t5-small',
].map((name) => readJson(`${modelsDir}/${name}.json`));
const planRequest = (config, framework) => ({
  ...trainRequest(config, { method: 'full', micro_batch: 2, seq_len: 4096 }),
  parallel: { gpus: 4 },
  plan: { framework, top: 5, allow_checkpointing: true, allow_offload: true },
});
const parallels = [
  { gpus: 8, tp: 2, pp: 2 },
  { gpus: 16, tp: 8, zero: 3 },
  { gpus: 4, fsdp: 'full_shard' },
  { gpus: 8, tp: 2, cp: 2, sequence_parallel: true },
  { gpus: 64, tp: 8, pp: 4, ep: 2, distributed_optimizer: true },
];

// GGUF headers (gguf_header): small Llama-shaped files in several types, a
// per-layer array, and the header alone (the reader then names the missing
// data).
const ggufSeeds = [
  llamaGguf().bytes(),
  llamaGguf({ weights: 'Q8_0', output: 'Q8_0', blocks: 3 }).bytes(),
  llamaGguf({ weights: 'F16', output: 'F16', arch: 'qwen2' }).bytes({ data: false }),
  new GgufWriter()
    .str('general.architecture', 'gemma3')
    .i32s('gemma3.attention.head_count_kv', [1, 1, 2])
    .u32('general.alignment', 64)
    .tensor('token_embd.weight', [64, 8], 0, 2048)
    .bytes({ alignment: 64 }),
];

// target name (tests/fuzz/CMakeLists.txt) -> its seed documents (a string or
// bytes is written as it is, anything else as JSON)
const SEEDS = {
  request: [
    ...validation,
    ...configs.map((c) => trainRequest(c)),
    ...inferRequests,
    ...enumRequests,
    custom,
  ],
  model: [...configs.map((c) => ({ config: c })), ...configs, custom.model, custom],
  // Small models: a plan estimates every layout, seconds per input under ASan for a large MoE.
  plan: planModels.flatMap((c) =>
    ['deepspeed', 'fsdp', 'megatron'].map((fw) => planRequest(c, fw)),
  ),
  layout: parallels,
  import: importSeeds,
  import_file: [...importFiles.map((f) => f.text), ...hostileTexts],
  yaml: [...importFiles.filter((f) => !f.file.endsWith('.json')).map((f) => f.text), ...hostileTexts],
  gguf_header: ggufSeeds,
  framework_defaults: fields
    .find((f) => f.path === 'train.framework')
    .values.flatMap((framework) =>
      ['full', 'lora', 'qlora', 'freeze'].map((method) => ({ framework, method })),
    ),
};

for (const [target, docs] of Object.entries(SEEDS)) {
  const dir = join(out, 'seeds', target);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  docs.forEach((doc, i) =>
    writeFileSync(
      join(dir, `${String(i).padStart(4, '0')}.json`),
      typeof doc === 'string' || doc instanceof Uint8Array
        ? doc
        : JSON.stringify(doc, null, i % 2 ? 2 : 0),
    ),
  );
}

// libFuzzer dictionary (docs: "Dictionaries", llvm.org/docs/LibFuzzer.html):
// every key and enum value of the field table, the model configs' keys and
// JSON's own tokens, each as a quoted JSON string.
const words = new Set(['plan', 'framework', 'top', 'allow_checkpointing', 'allow_offload']);
for (const f of fields) {
  for (const k of f.path.split('.')) words.add(k);
  for (const v of f.values ?? []) if (typeof v === 'string' && v) words.add(v);
  for (const [a, v] of Object.entries(f.aliases ?? {})) words.add(a).add(v);
}
const walk = (v) => {
  if (Array.isArray(v)) v.forEach(walk);
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      words.add(k);
      walk(x);
    }
  else if (typeof v === 'string' && v.length <= 40) words.add(v);
};
configs.forEach(walk);
importFiles.forEach((f) => walk(f.content));
const escape = (s) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
const tokens = [...words].sort().map((w) => `"${escape(JSON.stringify(w))}"`);
for (const t of [
  '{',
  '}',
  '[',
  ']',
  ':',
  ',',
  'true',
  'false',
  'null',
  '-1',
  '0',
  '1e308',
  '9223372036854775807',
])
  tokens.push(`"${escape(t)}"`);
writeFileSync(join(out, 'vram.dict'), tokens.join('\n') + '\n');
console.log(
  `seeds: ${Object.entries(SEEDS)
    .map(([t, d]) => `${t} ${d.length}`)
    .join(', ')}; dictionary: ${tokens.length} tokens`,
);

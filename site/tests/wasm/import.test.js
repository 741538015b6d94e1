// @vitest-environment node
//
// The page and the CLI give the same request and the same estimate for the
// same configuration files (issue 15): the page parses each fixture the way
// it does in the browser (lib/import.js: JSON.parse, else the npm `yaml`
// package), the real WASM module imports the trees, and the bytes must equal
// `vram-probe import FILE... --json` and `vram-probe estimate --from FILE...
// --json`, whose trees come from yaml-cpp.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

import { parseConfigText } from '../../src/lib/import.js';
import { PRESET_IDS, loadPreset } from '../../src/lib/presets.js';
import { estimateRaw, importFilesRaw } from '../../src/wasm/vram.js';
import { probe, repoRoot } from './requests.js';

const dir = join(repoRoot, 'tests/fixtures/import');
const file = (name) => join(dir, name);

function cli(args) {
  const r = spawnSync(probe, args, { encoding: 'utf8' });
  return { status: r.status, out: r.stdout.replace(/\n$/, '') };
}

// What the page does (lib/import.js importParsedFiles), on raw text.
async function pageImport(paths) {
  const files = await Promise.all(
    paths.map(async (p) => ({ file: p, content: await parseConfigText(p, readFileSync(p, 'utf8')) })),
  );
  const presets = PRESET_IDS;
  let text = await importFilesRaw(JSON.stringify({ files, presets }));
  const first = JSON.parse(text);
  if (!first.error && !first.request.model && first.model?.preset) {
    const preset = await loadPreset(first.model.preset);
    files.push({ file: `preset:${preset.id}`, content: preset.config });
    text = await importFilesRaw(JSON.stringify({ files, presets }));
  }
  return text;
}

const cases = [
  ['axolotl_qlora-1b.yml'],
  ['torchtune_llama3_1_8B_qlora_single_device.yaml'],
  ['litgpt_llama-3.2-1B_qlora.yaml'],
  ['llama_factory_llama3_lora_sft_otfq.yaml'],
  ['peft_adapter_config.json'],
  ['peft_metamathqa_llama-3.2-3B-rank32_adapter_config.json'],
  ['alignment_handbook_zephyr-7b_sft_qlora.yaml'],
  ['accelerate_fsdp.yaml'],
  ['trl_accelerate_deepspeed_zero3.yaml'],
  ['transformers_ds_config_zero3.json'],
  ['axolotl_qlora-1b.yml', 'transformers_docs_zero3_auto.json'],
];

// Files that disagree (the docs config offloads, TRL's accelerate config does
// not): the same error, byte for byte, naming both files and keys.
const disagreeing = ['trl_accelerate_deepspeed_zero3.yaml', 'transformers_docs_zero3_auto.json'];

describe('import on the page and in the CLI', () => {
  beforeAll(() => {
    if (!existsSync(probe)) throw new Error(`build vram-probe first (${probe})`);
  });

  for (const names of cases) {
    const paths = names.map(file);
    it(`gives the same bytes for ${names.join(' + ')}`, async () => {
      const page = await pageImport(paths);
      const native = cli(['import', ...paths, '--json']);
      expect(JSON.parse(page).error).toBeUndefined();
      expect(page).toBe(native.out);
    });
  }

  for (const names of cases.filter((c) => !c.includes('llama_factory_llama3_lora_sft_otfq.yaml'))) {
    const paths = names.map(file);
    const imported = async () => JSON.parse(await pageImport(paths)).request;
    it(`estimates the same bytes for ${names.join(' + ')}`, async () => {
      const request = await imported();
      if (!request.model) return; // a DeepSpeed or accelerate file alone names no model
      const page = await estimateRaw(JSON.stringify(request));
      const native = cli(['estimate', ...paths.flatMap((p) => ['--from', p]), '--json']);
      expect(page).toBe(native.out);
      expect(JSON.parse(page).peak_bytes).toBeGreaterThan(0);
    });
  }

  it('gives the same error for files that disagree', async () => {
    const paths = disagreeing.map(file);
    const page = await pageImport(paths);
    const native = cli(['import', ...paths, '--json']);
    expect(JSON.parse(page).error.code).toBe('inconsistent');
    expect(native.status).toBe(1);
    expect(page).toBe(native.out);
  });

  it('names the file and the line of a malformed YAML file', async () => {
    await expect(parseConfigText('bad.yml', 'a: 1\nb: [1, 2\n')).rejects.toThrow(/bad\.yml/);
  });
});

// Hostile and careless files (issue 33, tests/fixtures/hostile/cases.json):
// the page (lib/config-text.js, then the WASM module) and the CLI (`vram-probe
// import` and `estimate --from`) answer each with the same error code, both
// naming the file, the line and the key where the table gives them, or both
// report the key as not understood. The page's time is printed (the README's
// "Input rules and limits" quotes it), not asserted.
const hostileDir = join(repoRoot, 'tests/fixtures/hostile');
const hostile = JSON.parse(readFileSync(join(hostileDir, 'cases.json'), 'utf8')).cases;

async function pageAnswer(path) {
  try {
    return JSON.parse(await pageImport([path]));
  } catch (e) {
    return { error: { code: e.code, message: e.message } };
  }
}

function expectAnswer(answer, c, path, who) {
  if (c.not_understood) {
    expect(answer.error, who).toBeUndefined();
    expect(answer.files[0].not_understood.map((n) => n.key)).toContain(c.not_understood);
    expect(answer.files[0].used.map((u) => u.key)).not.toContain(c.not_understood);
    return;
  }
  expect(answer.error?.code, `${who}: ${JSON.stringify(answer.error)}`).toBe(c.code);
  const { message } = answer.error;
  expect(message, who).toContain(path);
  expect(message, who).toContain(c.says);
  if (c.line) expect(message, who).toContain(`${path} line ${c.line}:`);
  if (c.key) expect(answer.error.path, who).toBe(`${path}:${c.key}`);
}

describe('hostile files on the page and in the CLI (issue 33)', () => {
  for (const c of hostile) {
    const path = join(hostileDir, c.file);
    it(`${c.file}: ${c.code ?? `${c.not_understood} not understood`} on both front ends`, async () => {
      const start = performance.now();
      const page = await pageAnswer(path);
      const ms = performance.now() - start;
      const native = cli(['import', path, '--json']);
      expectAnswer(page, c, path, 'page');
      expectAnswer(JSON.parse(native.out), c, path, 'vram-probe import');
      const estimate = spawnSync(probe, ['estimate', '--from', path, '--json'], { encoding: 'utf8' });
      if (c.not_understood) {
        expect(estimate.stderr).toContain(`${c.not_understood} not understood`);
      } else {
        expect(estimate.status).toBe(1);
        expectAnswer(JSON.parse(estimate.stdout), c, path, 'vram-probe estimate --from');
      }
      console.log(`${c.file}: page ${ms.toFixed(1)} ms`);
    });
  }

  // The value cap (vram::kMaxImportValues, lib/config-text.js): a DeepSpeed
  // JSON with exactly 100,000 values imports on both; one more is refused by both.
  for (const extra of [0, 1]) {
    it(`${extra ? 'refuses' : 'reads'} a file of ${100000 + extra} values on both front ends`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'vram-values-'));
      const path = join(dir, `values-${extra}.json`);
      // 1 root + 1 micro-batch + 1 wandb object + 1 list + its items
      const items = new Array(100000 - 4 + extra).fill(0);
      writeFileSync(path, JSON.stringify({ train_micro_batch_size_per_gpu: 2, wandb: { tags: items } }));
      const page = await pageAnswer(path);
      const native = JSON.parse(cli(['import', path, '--json']).out);
      for (const [who, answer] of [
        ['page', page],
        ['vram-probe', native],
      ]) {
        if (extra) expect(answer.error?.message, who).toContain('more than 100000 values');
        else expect(answer.error, who).toBeUndefined();
      }
    });
  }
});

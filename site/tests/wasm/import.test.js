// @vitest-environment node
//
// The page and the CLI give the same request and the same estimate for the
// same configuration files (issue 15): the page parses each fixture the way
// it does in the browser (lib/import.js: JSON.parse, else the npm `yaml`
// package), the real WASM module imports the trees, and the bytes must equal
// `vram-probe import FILE... --json` and `vram-probe estimate --from FILE...
// --json`, whose trees come from yaml-cpp.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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

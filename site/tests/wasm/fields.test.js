// @vitest-environment node
//
// The page takes its defaults from the core (issue 11): fields.json is the
// core's table of request fields, the form starts at the core's defaults
// except where FORM_START says otherwise, and the request of the default form
// gives the same bytes through WebAssembly as through `vram-probe`, and the
// same memory as the CLI's own defaults with FORM_START's flags.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import table from '../../src/lib/fields.json';
import { coreDefault, fieldInfo, FIELDS } from '../../src/lib/fields.js';
import {
  buildRequest,
  DEFAULT_PRESET,
  DEFAULT_SETTINGS,
  FORM_START,
  formStart,
} from '../../src/lib/state.js';
import { estimateRaw, fieldsRaw, loadVram } from '../../src/wasm/vram.js';
import { modelFile, probe } from './requests.js';

const presetFile = modelFile(DEFAULT_PRESET);

let work;
let vram;
let catalog;

function runProbe(args) {
  const run = spawnSync(probe, args, { encoding: 'utf8' });
  expect(run.error, `could not run ${probe}`).toBeUndefined();
  return run;
}

function get(obj, path) {
  return path.split('.').reduce((o, k) => o?.[k], obj);
}

/** The page's request for its default form. */
function defaultRequest() {
  const config = JSON.parse(readFileSync(presetFile, 'utf8'));
  return buildRequest(structuredClone(DEFAULT_SETTINGS), config, catalog);
}

beforeAll(async () => {
  if (!existsSync(probe)) throw new Error(`${probe} is missing: build it first`);
  work = mkdtempSync(join(tmpdir(), 'vram-fields-'));
  vram = await loadVram();
  catalog = vram.version().gpus;
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the fields table', () => {
  it('fields.json is what the WebAssembly module and vram-probe say now', async () => {
    expect(await vram.fields()).toEqual(table);
    const native = runProbe(['fields', '--json']);
    expect(native.status).toBe(0);
    expect(native.stdout).toBe(`${await fieldsRaw()}\n`);
  });
});

describe("the page's defaults", () => {
  it('start every form field at the core default, FORM_START apart', () => {
    const formFields = FIELDS.filter((f) => f.url && get(DEFAULT_SETTINGS, f.path) !== undefined);
    expect(formFields.length).toBeGreaterThan(40);
    for (const f of formFields) {
      expect(get(DEFAULT_SETTINGS, f.path), f.path).toEqual(formStart(f.path));
      if (!(f.path in FORM_START) && f.default !== null)
        expect(get(DEFAULT_SETTINGS, f.path), f.path).toEqual(f.default);
    }
  });

  it("are the core's for LoRA r, lora_alpha and the optimizer (they used to be 16, 32 and adamw_torch)", () => {
    expect(DEFAULT_SETTINGS.train.lora.rank).toBe(coreDefault('train.lora.rank'));
    expect(DEFAULT_SETTINGS.train.lora.alpha).toBe(coreDefault('train.lora.alpha'));
    expect(DEFAULT_SETTINGS.train.optimizer).toBe(coreDefault('train.optimizer'));
    expect([coreDefault('train.lora.rank'), coreDefault('train.optimizer')]).toEqual([
      8,
      'adamw_torch_fused',
    ]);
  });

  it('FORM_START names declared fields, each with a CLI flag', () => {
    for (const path of Object.keys(FORM_START)) expect(fieldInfo(path)?.cli, path).toBeTruthy();
  });
});

describe('the default form against vram-probe', () => {
  it('gives byte-identical results through WebAssembly and vram-probe --request', async () => {
    const text = JSON.stringify(defaultRequest());
    const file = join(work, 'default.json');
    writeFileSync(file, text);
    const native = runProbe(['estimate', '--request', file, '--json']);
    expect(native.status).toBe(0);
    expect(native.stdout).toBe(`${await estimateRaw(text)}\n`);
  });

  it("gives the memory of the CLI's own defaults with FORM_START's flags", () => {
    const req = defaultRequest();
    // A select left at '' sends nothing (the FSDP version: the framework release's).
    const flags = Object.entries(FORM_START)
      .filter(([, value]) => value !== '')
      .flatMap(([path, value]) => [fieldInfo(path).cli, String(value)]);
    const native = runProbe([
      'estimate',
      '--model-config',
      presetFile,
      ...flags,
      '--gpu',
      req.gpu.name,
      '--json',
    ]);
    expect(native.status, native.stdout).toBe(0);
    const cli = JSON.parse(native.stdout);
    const page = vram.estimate(req);
    expect(page.peak_bytes).toBe(cli.peak_bytes);
    expect(page.components).toEqual(cli.components);
    expect(page.phases).toEqual(cli.phases);
    expect(page.train).toEqual(cli.train);
  });
});

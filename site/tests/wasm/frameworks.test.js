// @vitest-environment node
//
// The framework select (issue 12): picking a framework fills the form with
// that framework's recipe from the core's table, the request leaves those
// fields out so the core applies and lists them, and the page's answer is
// byte-for-byte what `vram-probe estimate --framework NAME` prints for the
// same flags. The tables are the full module's (vram_plan.wasm): until it has
// loaded there is no recipe and no request but hf's.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';

import { fieldInfo, FIELDS } from '../../src/lib/fields.js';
import {
  applyFramework,
  buildRequest,
  DEFAULT_PRESET,
  DEFAULT_SETTINGS,
  estimator,
  FRAMEWORK_FORM_PATHS,
  frameworkForm,
  frameworkName,
  requestFor as pageRequestFor,
  withoutTime,
} from '../../src/lib/state.js';
import { estimateRaw, loadVram } from '../../src/wasm/vram.js';
import { modelFile, probe } from './requests.js';

const presetFile = modelFile(DEFAULT_PRESET);
const FRAMEWORKS = fieldInfo('train.framework').values;
const METHODS = ['lora', 'qlora', 'full'];

let vram;
let catalog;
let config;

beforeAll(async () => {
  if (!existsSync(probe)) throw new Error(`${probe} is missing: build it first`);
  vram = await loadVram();
  // The layout rules (parallel.dp) come from the loaded core, as on the page.
  estimator.value = vram;
  catalog = vram.version().gpus;
  config = JSON.parse(readFileSync(presetFile, 'utf8'));
});

/** The form with `framework` and `method` chosen, as the select leaves it. */
function formFor(framework, method, release = '') {
  const s = structuredClone(DEFAULT_SETTINGS);
  s.train.framework = framework;
  s.train.release = release;
  s.train.method = method;
  return applyFramework(s, vram);
}

function requestFor(s) {
  return buildRequest(s, config, catalog, 0, frameworkForm(vram, frameworkName(s.train), s.train.method));
}

/** The CLI flags that say what the request says: one per leaf, from the fields table. */
function flagsOf(req) {
  const flags = ['--model-config', presetFile];
  const walk = (obj, prefix) => {
    for (const [key, value] of Object.entries(obj)) {
      const path = prefix ? `${prefix}.${key}` : key;
      if (path === 'model' || value === null) continue;
      const f = FIELDS.find((x) => x.path === path);
      if (!f && value && typeof value === 'object' && !Array.isArray(value)) {
        walk(value, path);
        continue;
      }
      expect(f?.cli, `${path} has a CLI flag`).toBeTruthy();
      flags.push(f.cli, Array.isArray(value) ? value.join(',') : String(value));
    }
  };
  walk(req, '');
  return flags;
}

describe('before the full module has loaded', () => {
  it('has no recipe and builds no request for a framework other than hf, nor for a release', () => {
    for (const [framework, release] of [
      ['unsloth', ''],
      ['torchtune', '0.2.1'],
      ['hf', '4.44.0'],
    ]) {
      const s = structuredClone(DEFAULT_SETTINGS);
      s.train.framework = framework;
      s.train.release = release;
      expect(frameworkForm(vram, frameworkName(s.train), 'lora'), framework).toBeUndefined();
      expect(applyFramework(s, vram), framework).toBeUndefined();
      expect(pageRequestFor(s, config, vram), framework).toBeNull();
    }
    expect(() => vram.frameworkDefaults({ framework: 'unsloth' })).toThrow(
      expect.objectContaining({ code: vram.notInModule, path: 'train.framework' }),
    );
  });

  it("answers hf at its newest release from the core module, and the form's request is hf's own", () => {
    const hf = vram.frameworkDefaults({ framework: 'hf', method: 'qlora' });
    expect(hf.label).toBe(fieldInfo('train.framework').labels.hf);
    expect(hf.defaults).toEqual([]);
    const releases = fieldInfo('train.framework').releases.hf;
    expect(hf.release).toBe(releases[releases.length - 1].version);
    expect(frameworkForm(vram, 'hf', 'lora')).toEqual({});
    const req = pageRequestFor(structuredClone(DEFAULT_SETTINGS), config, vram);
    expect(req.train.framework).toBeUndefined();
    // The page's first estimate leaves the time to the full module (state.js withoutTime).
    expect(vram.estimate(withoutTime(req)).framework.name).toBe('hf');
  });
});

describe('the framework select', () => {
  beforeAll(async () => {
    await vram.loadFull();
  });

  it('offers every framework the core names, labelled and with its releases from the fields table', () => {
    expect(FRAMEWORKS).toEqual(vram.version().frameworks);
    expect(FRAMEWORKS.length).toBeGreaterThanOrEqual(9);
    const { labels, releases } = fieldInfo('train.framework');
    for (const framework of FRAMEWORKS) {
      const answer = vram.frameworkDefaults({ framework });
      expect(labels[framework], framework).toBe(answer.label);
      const list = releases[framework];
      expect(answer.release, framework).toBe(list[list.length - 1].version);
      for (const r of list) expect(Object.keys(r).sort(), framework).toEqual(['date', 'version']);
    }
  });

  it("fills the form with the framework's recipe for the method, and undoes it for hf", () => {
    const tt = formFor('torchtune', 'lora');
    expect(tt.train.precision).toBe('bf16');
    expect(tt.train.grad_checkpointing).toBe('full');
    expect(tt.train.lora.alpha).toBe(16);
    expect(tt.train.lora.targets).toBe('q_proj,v_proj,o_proj,gate_proj,up_proj,down_proj');
    const full = formFor('torchtune', 'full');
    expect(full.train.optimizer).toBe('paged_adamw_8bit');
    expect(full.train.optimizer_in_backward).toBe(true);
    const back = applyFramework({ ...structuredClone(tt), train: { ...tt.train, framework: 'hf' } }, vram);
    for (const path of FRAMEWORK_FORM_PATHS) {
      const get = (o) => path.split('.').reduce((x, k) => x?.[k], o);
      expect(get(back), path).toEqual(get(DEFAULT_SETTINGS));
    }
  });

  it('leaves the framework defaults out of the request, so the core applies and lists them', () => {
    const req = requestFor(formFor('unsloth', 'qlora'));
    expect(req.train.framework).toBe('unsloth');
    expect(req.train.lora).toEqual({});
    expect(req.train.optimizer).toBeUndefined();
    const r = vram.estimate(withoutTime(req));
    const applied = r.framework.defaults_applied.map((d) => d.path);
    expect(applied).toEqual(
      expect.arrayContaining(['train.lora.rank', 'train.activation_offload', 'train.optimizer']),
    );
    for (const d of r.framework.defaults_applied) expect(d.source, d.path).toMatch(/\S/);
  });

  it('sends a field the user changed away from the framework default, false included', () => {
    const s = formFor('unsloth', 'lora');
    s.train.activation_offload = false;
    s.train.lora.rank = 64;
    const req = requestFor(s);
    expect(req.train.activation_offload).toBe(false);
    expect(req.train.lora.rank).toBe(64);
    const r = vram.estimate(withoutTime(req));
    expect(r.framework.defaults_applied.map((d) => d.path)).not.toContain('train.activation_offload');
  });

  it('gives the same bytes as vram-probe estimate --framework for every framework and method', async () => {
    let compared = 0;
    for (const framework of FRAMEWORKS) {
      for (const method of METHODS) {
        const req = requestFor(formFor(framework, method));
        const run = spawnSync(probe, ['estimate', ...flagsOf(req), '--json'], { encoding: 'utf8' });
        expect(run.status, `${framework} ${method}: ${run.stdout}${run.stderr}`).toBe(0);
        expect(run.stdout, `${framework} ${method}`).toBe(`${await estimateRaw(JSON.stringify(req))}\n`);
        compared++;
      }
    }
    expect(compared).toBe(FRAMEWORKS.length * METHODS.length);
  });

  it('a release gives the same bytes as vram-probe estimate --framework NAME@RELEASE (issue 29)', async () => {
    const { releases } = fieldInfo('train.framework');
    for (const framework of FRAMEWORKS) expect(releases[framework]?.length, framework).toBeGreaterThan(0);
    for (const [framework, release, method] of [
      ['torchtune', '0.2.1', 'qlora'],
      ['torchtune', '0.1.0', 'lora'],
      ['unsloth', '2024.1', 'qlora'],
      ['litgpt', '0.0', 'lora'],
      ['hf', '4.15.0', 'full'],
    ]) {
      const req = requestFor(formFor(framework, method, release));
      expect(req.train.framework).toBe(`${framework}@${release}`);
      const r = vram.estimate(req);
      expect(r.framework.release).toBe(release);
      expect(r.framework.release_given).toBe(true);
      const run = spawnSync(probe, ['estimate', ...flagsOf(req), '--json'], { encoding: 'utf8' });
      expect(run.status, `${framework}@${release}: ${run.stdout}${run.stderr}`).toBe(0);
      expect(run.stdout, `${framework}@${release}`).toBe(`${await estimateRaw(JSON.stringify(req))}\n`);
    }
    // torchtune's recipes changed with the release: the form follows.
    expect(formFor('torchtune', 'lora', '0.2.1').train.lora.targets).toBe('q_proj,v_proj');
    expect(formFor('torchtune', 'lora', '0.2.1').train.optimizer).toBe('adamw_torch');
  });

  it('three frameworks give three different QLoRA estimates of the same model', () => {
    const peaks = ['torchtune', 'litgpt', 'unsloth'].map(
      (fw) => vram.estimate(requestFor(formFor(fw, 'qlora'))).peak_bytes,
    );
    expect(new Set(peaks).size).toBe(3);
  });
});

// Importing a run's own configuration files (issue 15): the page parses each
// file (JSON as JSON, anything else as YAML 1.2 with the npm `yaml` package,
// the same core schema as yaml-cpp's tree in `vram-probe import`) and hands
// the trees to the core's one mapping (core/src/import), so the page and the
// CLI give the same request for the same files.

import { batch, signal } from '@preact/signals';
import { choosePreset, loadHubModel } from './actions.js';
import { coreDefault } from './fields.js';
import { getPath, putPath } from './paths.js';
import { PRESET_IDS, hasPreset, loadPreset } from './presets.js';
import {
  applyFramework,
  defaultSettings,
  estimator,
  formValueOf,
  model,
  modelStatus,
  withRecipe,
} from './state.js';

/** Largest file read (core/include/vram/import.h kMaxImportBytes: 10 MiB). */
export const MAX_IMPORT_BYTES = 10 * 1024 * 1024;

/**
 * A file's text as the JSON tree the core reads, under the rules of one
 * imported file (lib/config-text.js, the CLI's rules); rejects with an Error
 * naming the file and the line. The reader and the YAML package (about 30
 * KiB gzip, README "Speed and size") are loaded on the first import.
 */
export async function parseConfigText(name, text) {
  const { readConfigText } = await import('./config-text.js');
  return readConfigText(name, text);
}

/** A dropped or chosen File -> {file, content}; refuses files over the limit before reading them. */
export async function readConfigFile(file) {
  if (file.size > MAX_IMPORT_BYTES) {
    throw new Error(
      `${file.name} is ${file.size} bytes, over the import limit of ${MAX_IMPORT_BYTES} (10 MiB)`,
    );
  }
  return { file: file.name, content: await parseConfigText(file.name, await file.text()) };
}

/**
 * Runs the core's import over parsed files; when the files name a model with
 * a bundled preset and hold no config.json, the preset's config.json is added
 * as one more file (as `vram-probe import` does) and the import runs again.
 * Resolves to the core's {request, model, files}; rejects with EstimatorError.
 * Asynchronous: the import lives in the second WebAssembly module
 * (vram_io.wasm), loaded on the first import.
 */
export async function importParsedFiles(vram, files) {
  const presets = PRESET_IDS;
  let result = await vram.importFiles({ files, presets });
  const m = result.model;
  if (!result.request.model && m?.preset) {
    const preset = await loadPreset(m.preset);
    if (preset) {
      result = await vram.importFiles({
        files: [...files, { file: `preset:${preset.id}`, content: preset.config }],
        presets,
      });
    }
  }
  return result;
}

/** {a: {b: 1}} -> {'a.b': 1}; lists are values. */
export function flattenRequest(obj, prefix = '', out = {}) {
  for (const [k, v] of Object.entries(obj ?? {})) {
    const path = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) flattenRequest(v, path, out);
    else out[path] = v;
  }
  return out;
}

/**
 * Settings for an import's request: the core's defaults (not the page's
 * start), the framework's recipe for the imported method, then every field
 * the files set, in the form's boxes where it has one and in
 * `settings.imported` otherwise, so the page estimates what `vram-probe
 * estimate --from FILE...` does. Fields edited afterwards win. undefined
 * while the framework's recipe loads (state.js frameworkForm); without an
 * estimator (vram null) the form's own start stands for the recipe.
 */
export function importedSettings(request, vram) {
  const { model: _model, task: _task, ...fields } = request;
  const flat = flattenRequest(fields);
  const next = defaultSettings();
  next.task = 'train';
  next.train.framework = flat['train.framework'] ?? coreDefault('train.framework');
  next.train.method = flat['train.method'] ?? coreDefault('train.method');
  const s = applyFramework(next, vram);
  if (s === undefined) return undefined;
  s.imported = {};
  for (const [path, value] of Object.entries(flat)) {
    if (path === 'train.framework' || path === 'train.method') continue;
    if (getPath(s, path) !== undefined) putPath(s, path, formValueOf(path, value));
    else s.imported[path] = value;
  }
  return s;
}

/** The last import: {files: [{file, kind, used, not_understood, ignored}], model, error} or null. */
export const lastImport = signal(null);

/**
 * Reads the files, runs the import and puts its request in the form and its
 * model in the model box (the bundled preset, else config.json from the Hub).
 * Errors (a file too large, malformed, of no known kind, files that
 * disagree) land in lastImport.error, naming the file and the key.
 */
export async function importFiles(fileList) {
  const vram = estimator.value;
  if (!vram) {
    lastImport.value = {
      error: { message: 'The estimator is still loading; drop the files again in a moment.' },
    };
    return;
  }
  let parsed;
  try {
    parsed = await Promise.all([...fileList].map(readConfigFile));
  } catch (e) {
    lastImport.value = { error: { message: e.message } };
    return;
  }
  await importParsed(vram, parsed);
}

/** importFiles for already-parsed {file, content} entries (pasted text). */
export async function importParsed(vram, parsed) {
  let result;
  try {
    result = await importParsedFiles(vram, parsed);
  } catch (e) {
    lastImport.value = { error: { message: e.message, path: e.path, code: e.code } };
    return;
  }
  const config = result.request.model?.config;
  batch(() => {
    // The files' fields at once; a framework's recipe under them as soon as
    // the full module that holds it has loaded (no request before).
    withRecipe(importedSettings(result.request, null), (_now, v) =>
      importedSettings(result.request, v),
    );
    if (config) {
      const id =
        result.model?.preset ?? result.model?.id ?? parsed.find((f) => f.content === config)?.file;
      if (result.model?.preset && hasPreset(result.model.preset)) choosePreset(result.model.preset);
      else {
        model.value = { source: 'paste', id: id ?? 'imported config.json', config };
        modelStatus.value = { state: 'idle', message: '' };
      }
    }
    lastImport.value = { files: result.files, model: result.model };
  });
  if (!config && result.model?.id) loadHubModel(result.model.id);
}

/** Clears the import report (the form keeps what the import set). */
export function clearImport() {
  lastImport.value = null;
}

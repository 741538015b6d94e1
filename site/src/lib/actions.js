// What the model box and the URL do to the state: load a preset, fetch from
// the Hub, take a pasted config, restore from and write to the URL hash.

import { batch, computed, effect } from '@preact/signals';
import { utf8Length } from './format.js';
import { loadToken } from './hub.js';
import { MAX_INPUT_BYTES } from './limits.js';
import { pinned, restorePin } from './pin.js';
import { clearPlan } from './plan.js';
import { loadPreset, loadedPreset } from './presets.js';
import {
  DEFAULT_PRESET,
  fillFrameworkDefaults,
  model,
  modelStatus,
  namesRecipe,
  setPreset,
  settings,
  versionInfo,
  withRecipe,
} from './state.js';
import { parse, serialize, sizeModel } from './url-state.js';
import { tooLargeMessage } from './limits.js';

/**
 * The token the user pasted (the ModelBox mirrors it to sessionStorage).
 * Read from sessionStorage when this module loads, before anything can fetch:
 * a `#m=hf:<id>` link is restored (and fetched) in the App's first effect,
 * and must not go out without the session's token (issue 17).
 */
let hubToken = loadToken();
export function setHubToken(token) {
  hubToken = token;
}

let hubRequest = 0;

/**
 * Fetches <id>/config.json from the Hub and makes it the model. On failure the
 * previous model stays and modelStatus carries the reason in words.
 */
export async function loadHubModel(idText, { token = hubToken || loadToken() } = {}) {
  const ticket = ++hubRequest;
  modelStatus.value = {
    state: 'loading',
    message: `Fetching config.json of ${idText.trim()} from the Hub…`,
  };
  try {
    // The Hub reader is a chunk of its own (hub-fetch.js), loaded with the first Hub model.
    const { fetchHubConfig } = await import('./hub-fetch.js');
    const { id, config } = await fetchHubConfig(idText, { token });
    if (ticket !== hubRequest) return;
    const known = (versionInfo.value?.supported_model_types ?? []).includes(config.model_type);
    if (known) {
      batch(() => {
        model.value = { source: 'hf', id, config };
        modelStatus.value = { state: 'idle', message: '' };
      });
      // The checkpoint's tensor list cross-checks the exact count; the
      // estimate does not wait for it.
      loadCheckpoint(ticket, id, token, false);
      return;
    }
    modelStatus.value = {
      state: 'loading',
      message: `model_type “${config.model_type ?? '?'}” has no exact adapter: reading the checkpoint's tensor list (safetensors headers) from the Hub…`,
    };
    await loadCheckpoint(ticket, id, token, true, config);
  } catch (error) {
    if (ticket !== hubRequest) return;
    modelStatus.value = { state: 'error', message: error.message, kind: error.kind };
  }
}

/**
 * Reads the model's safetensors headers (fetchHubTensors) and adds the
 * inventory to the model: the core then builds an unknown architecture from
 * it, or cross-checks a known one. `required`: the model cannot be estimated
 * without it (its failure is the model box's error); otherwise a failure is
 * kept as `checkpointError` and the estimate goes on without the cross-check.
 */
async function loadCheckpoint(ticket, id, token, required, config = null) {
  let inventory = null;
  try {
    const { fetchHubTensors } = await import('./hub-fetch.js');
    inventory = await fetchHubTensors(id, { token });
  } catch (error) {
    if (ticket !== hubRequest) return;
    if (required) throw error;
    model.value = { ...model.value, checkpointError: error.message };
    return;
  }
  if (ticket !== hubRequest) return;
  if (!inventory) {
    if (required) {
      modelStatus.value = {
        state: 'error',
        message: `model_type “${config?.model_type ?? '?'}” of ${id} is not one the estimator knows, and the repository has no safetensors weights to read its tensors from.`,
        kind: 'unsupported',
      };
    }
    return;
  }
  batch(() => {
    model.value = required
      ? { source: 'hf', id, config, safetensors: inventory }
      : { ...model.value, safetensors: inventory };
    if (required) modelStatus.value = { state: 'idle', message: '' };
  });
}

/**
 * Parses pasted or dropped config.json text and makes it the model. Returns
 * true on success; on failure modelStatus says why.
 */
export function loadPastedConfig(text, name = 'pasted config.json') {
  // The core's input limit, before JSON.parse reads megabytes on the page's thread.
  const bytes = utf8Length(text);
  if (bytes > MAX_INPUT_BYTES) {
    modelStatus.value = {
      state: 'error',
      message: `That is ${(bytes / 1024 ** 2).toFixed(1)} MiB; inputs are limited to 16 MiB (a config.json is a few KiB). Paste the model's config.json itself.`,
      kind: 'out_of_range',
    };
    return false;
  }
  let config;
  try {
    config = JSON.parse(text);
  } catch (e) {
    modelStatus.value = {
      state: 'error',
      message: `That is not valid JSON (${e.message}). Paste the whole config.json file.`,
      kind: 'bad_json',
    };
    return false;
  }
  if (!config || typeof config !== 'object' || Array.isArray(config)) {
    modelStatus.value = {
      state: 'error',
      message: 'A config.json is a JSON object ({ "model_type": …, "hidden_size": … }).',
      kind: 'bad_json',
    };
    return false;
  }
  // A whole request ({"model": {"config": …}}) or a model-info body also works.
  if (config.model?.config && typeof config.model.config === 'object') config = config.model.config;
  else if (config.config && typeof config.config === 'object' && !config.model_type)
    config = config.config;
  batch(() => {
    hubRequest++;
    model.value = { source: 'paste', id: name, config };
    modelStatus.value = { state: 'idle', message: '' };
  });
  return true;
}

/**
 * Reads a dropped or chosen config.json file and makes it the model; a file
 * larger than the core's input limit is refused before it is read.
 */
export async function loadConfigFile(file) {
  const tooLarge = tooLargeMessage(file);
  if (tooLarge) {
    modelStatus.value = { state: 'error', message: tooLarge, kind: 'out_of_range' };
    return false;
  }
  return loadPastedConfig(await file.text(), file.name);
}

export function choosePreset(id) {
  hubRequest++;
  return setPreset(id);
}

/**
 * "I only know the size": the model becomes a parameter count the core sizes
 * (model.size). The core checks the text; its error reaches the page as the
 * estimate's error, naming model.size.
 */
export function chooseSize(text) {
  const t = String(text ?? '').trim();
  if (!t) return false;
  // A bare number counts billions, as seed 004's `quick 7` does.
  const size = /^[0-9]*\.?[0-9]+$/.test(t) ? `${t}B` : t;
  clearPlan();
  model.value = sizeModel(size);
  modelStatus.value = { state: 'idle', message: '' };
  return true;
}

/**
 * A Hub model that is also a bundled preset: the preset's config.json (its
 * chunk, lib/presets.js) stands in while the Hub fetch is in flight or has
 * failed, unless the model has changed meanwhile.
 */
function presetWhileFetching(waiting) {
  loadPreset(waiting.id).then(
    (p) => {
      if (p && model.peek() === waiting) model.value = { ...waiting, config: p.config };
    },
    () => {},
  );
}

/** Restores model and settings from a hash; Hub models are fetched again. */
export function restoreFromHash(hash) {
  const { model: m, settings: s, given, pin } = parse(hash);
  batch(() => {
    clearPlan();
    // A link naming a framework but not every field its recipe sets (typed
    // by hand, or written before the select existed): the recipe fills the
    // rest once the estimator, and the full module that holds the framework
    // tables, have loaded; no request is sent before (recipeWaiting).
    withRecipe(
      s,
      namesRecipe(s.train) ? (now, vram) => fillFrameworkDefaults(now, vram, given) : null,
    );
    if (!m) {
      setPreset(DEFAULT_PRESET);
    } else if (m.source === 'preset') {
      if (!setPreset(m.id)) {
        setPreset(DEFAULT_PRESET);
        modelStatus.value = {
          state: 'error',
          message: `The link names a preset this page does not bundle (${m.id}); showing ${DEFAULT_PRESET} instead.`,
        };
      }
    } else if (m.source === 'paste' || m.source === 'size') {
      model.value = m;
    } else if (m.source === 'hf') {
      // The link may name a model that is also bundled: keep it a Hub model
      // (its config may differ) but show the preset's numbers if offline.
      model.value = { source: 'hf', id: m.id, config: loadedPreset(m.id)?.config ?? null };
    }
  });
  if (m?.source === 'hf' && !model.peek().config) presetWhileFetching(model.peek());
  if (m?.source === 'hf') loadHubModel(m.id);
  restorePin(pin, hubToken || loadToken());
}

/** The hash for the current state. */
// Serialised once per change of the state it reads: the URL sync and the
// share link both ask for it, on every keystroke.
const linkHash = computed(() => serialize(model.value, settings.value, pinned.value));

export function currentHash() {
  return linkHash.value;
}

/**
 * Keeps the URL in step with the state (replaceState: no history entry per
 * keystroke) and restores the state when the user edits the hash or goes
 * back. Returns a function that stops both.
 */
export function syncUrl(win = window) {
  let writing = '';
  const stop = effect(() => {
    const hash = currentHash();
    if (hash !== win.location.hash) {
      writing = hash;
      win.history.replaceState(null, '', hash);
    }
  });
  const onHashChange = () => {
    if (win.location.hash !== writing) restoreFromHash(win.location.hash);
  };
  win.addEventListener('hashchange', onHashChange);
  return () => {
    stop();
    win.removeEventListener('hashchange', onHashChange);
  };
}

// "Compare two setups" (issue 18): pin the current estimate, change anything,
// and see both side by side. The pinned setup is a model and the form's
// settings, kept in the link (url-state.js, `pin=`) like the page's own, and
// estimated by the same core call; nothing of the pinned result is stored, so
// a reload recomputes it.

import { computed, signal } from '@preact/signals';
import { hasPreset, loadPreset, loadedPreset } from './presets.js';
import { estimator, model, onThisThread, requestFor, settings, withCheckpoint } from './state.js';

/** The pinned setup: {model: {source, id, config}, settings}, or null. */
export const pinned = signal(null);

/** Pins the page's current model and settings. */
export function pinCurrent() {
  const m = model.value;
  if (!m?.config) return;
  pinned.value = { model: m, settings: structuredClone(settings.value) };
}

export function unpin() {
  pinned.value = null;
}

let pinFetch = 0;

/**
 * Restores a pinned setup read from a link ({model: {source, id, config?},
 * settings} or null). A Hub model is fetched again (with the session's
 * token), unless the page's own model is the same one.
 */
export function restorePin(pin, token = '') {
  pinFetch++;
  if (!pin?.model) {
    pinned.value = null;
    return;
  }
  const m = pin.model;
  const ticket = pinFetch;
  // A preset's config.json may still be a chunk to load (lib/presets.js):
  // the pin holds config null meanwhile, as for a Hub fetch in flight.
  const withPreset = (config) => {
    if (ticket !== pinFetch || !pinned.value || pinned.value.model.config) return;
    pinned.value = { ...pinned.value, model: { ...pinned.value.model, config } };
  };
  if (m.source === 'preset') {
    if (!hasPreset(m.id)) {
      pinned.value = null;
      return;
    }
    const p = loadedPreset(m.id);
    pinned.value = {
      model: { source: 'preset', id: m.id, config: p?.config ?? null },
      settings: pin.settings,
    };
    if (p) return;
    loadPreset(m.id).then(
      (loaded) => withPreset(loaded.config),
      (error) => {
        if (ticket === pinFetch && pinned.value) pinned.value = { ...pinned.value, error };
      },
    );
    return;
  }
  if (m.source === 'paste') {
    pinned.value = { model: m, settings: pin.settings };
    return;
  }
  const own = model.value;
  const config = own?.source === 'hf' && own.id === m.id && own.config ? own.config : null;
  pinned.value = {
    model: { source: 'hf', id: m.id, config: config ?? loadedPreset(m.id)?.config ?? null },
    settings: pin.settings,
  };
  if (config) return;
  // A bundled preset of the same id stands in until the Hub answers.
  if (!pinned.value.model.config)
    loadPreset(m.id).then(
      (p) => p && withPreset(p.config),
      () => {},
    );
  import('./hub-fetch.js')
    .then(({ fetchHubConfig }) => fetchHubConfig(m.id, { token }))
    .then(
      ({ id, config: fetched }) => {
        if (ticket !== pinFetch || !pinned.value) return;
        pinned.value = { ...pinned.value, model: { source: 'hf', id, config: fetched } };
      },
      (error) => {
        if (ticket !== pinFetch || !pinned.value) return;
        pinned.value = { ...pinned.value, error };
      },
    );
}

/**
 * The pinned setup's estimate: {result} or {error}, or null without a pin,
 * its config (a Hub fetch in flight) or the estimator.
 */
export const pinnedOutcome = computed(() => {
  const p = pinned.value;
  const vram = estimator.value;
  if (!p || !vram) return null;
  if (p.error) return { error: p.error };
  if (!p.model?.config) return null;
  try {
    // A model read from its checkpoint's tensors carries them (withCheckpoint).
    const request = withCheckpoint(requestFor(p.settings, p.model.config, vram), p.model);
    // null while the full module, which holds the pinned framework's recipe, loads.
    if (!request) return null;
    const result = onThisThread(vram, () => vram.estimate(request));
    // null while the full module loads (a pinned Gemma on a first visit).
    return result === undefined ? null : { result };
  } catch (error) {
    return { error };
  }
});

/**
 * Rows of a side-by-side comparison: the union of two lists of {key, label,
 * bytes} in the order they first appear, each {key, label, before, after}
 * with null where a setup has no such entry.
 */
export function pairRows(before = [], after = []) {
  const rows = new Map();
  for (const x of before)
    rows.set(x.key, { key: x.key, label: x.label, before: x.bytes, after: null });
  for (const x of after) {
    const row = rows.get(x.key) ?? { key: x.key, label: x.label, before: null, after: null };
    row.after = x.bytes;
    rows.set(x.key, row);
  }
  return [...rows.values()];
}

/**
 * What differs between two setups, as the link carries them: [{key, path,
 * before, after}] with the link's values ('' where a setup leaves the field
 * at its default); `path` is the settings path, 'model' for the model.
 */
export function setupDiff(before, after, serialize, urlKeys) {
  const a = new URLSearchParams(serialize(before.model, before.settings).slice(1));
  const b = new URLSearchParams(serialize(after.model, after.settings).slice(1));
  const paths = new Map([['m', 'model'], ...urlKeys]);
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  return keys
    .filter((k) => (a.get(k) ?? '') !== (b.get(k) ?? ''))
    .map((k) => ({
      key: k,
      path: paths.get(k) ?? k,
      before: a.get(k) ?? '',
      after: b.get(k) ?? '',
    }));
}

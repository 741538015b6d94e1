// "Compare two setups" (issue 18): pin the current estimate, change anything,
// and see both side by side. The pinned setup is a model and the form's
// settings, kept in the link (url-state.js, `pin=`) like the page's own, and
// estimated by the same core call; nothing of the pinned result is stored, so
// a reload recomputes it.

import { signal } from '@preact/signals';
import { hasPreset, loadPreset, loadedPreset } from './presets.js';
import { model, settings } from './state.js';

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

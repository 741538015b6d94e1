// Bundled model presets: the real config.json files the core's tests check
// parameter counts against (tests/fixtures/models, one copy in the repo),
// shipped with the page so it works with no network. File names are
// "<org>__<name>.json" for the Hub id "<org>/<name>".
//
// The first bundle holds the list of ids and the default model's config.json
// only: every other config is its own small chunk, fetched when that preset
// is chosen (issue 18: they were 53 KB of the first bundle). A non-eager
// import.meta.glob maps each file to a `() => import(file)` loader, and the
// ids come from the file names, so listing the presets loads none of them
// (https://vite.dev/guide/features#glob-import). The chunks are .js files,
// which the service worker precaches (vite.config.js globPatterns), so every
// preset still works offline after one visit.

// The page's default model (state.js DEFAULT_PRESET), statically imported:
// the first estimate needs it, and a lazy chunk would be one more round trip
// before it. The globs below leave it out (a `!` pattern), so it is not also
// a chunk of its own.
import defaultConfig from '../../../tests/fixtures/models/meta-llama__Llama-3.2-1B.json';

export const DEFAULT_PRESET = 'meta-llama/Llama-3.2-1B';

const loaders = {
  ...import.meta.glob(
    [
      '../../../tests/fixtures/models/*__*.json',
      '!../../../tests/fixtures/models/meta-llama__Llama-3.2-1B.json',
    ],
    { import: 'default' },
  ),
  ...import.meta.glob('../../../tests/fixtures/validation/*__*.json', { import: 'default' }),
};

function idFromPath(path) {
  const file = path
    .split('/')
    .pop()
    .replace(/\.json$/, '');
  return file.replace('__', '/');
}

/** Hub id -> () => Promise<config>. */
const byId = new Map([
  [DEFAULT_PRESET, () => Promise.resolve(defaultConfig)],
  ...Object.entries(loaders).map(([path, load]) => [idFromPath(path), load]),
]);

/** Every preset's Hub id, sorted by organisation then name. */
export const PRESET_IDS = [...byId.keys()].sort((a, b) =>
  a.localeCompare(b, 'en', { sensitivity: 'base' }),
);

/** Whether a preset with this Hub id is bundled (nothing is loaded). */
export function hasPreset(id) {
  return byId.has(id);
}

/** The presets loaded so far, by id: {id, config}. */
const loaded = new Map([[DEFAULT_PRESET, { id: DEFAULT_PRESET, config: defaultConfig }]]);

/** The preset with this Hub id if its config is already loaded ({id, config}), else undefined. */
export function loadedPreset(id) {
  return loaded.get(id);
}

/**
 * The preset with this Hub id, {id, config}, loading its chunk the first
 * time; resolves to undefined for an id that is not bundled. A failed load
 * (a network error before the service worker has the chunk) rejects, and
 * the next call tries again.
 */
export async function loadPreset(id) {
  const known = loaded.get(id);
  if (known) return known;
  const load = byId.get(id);
  if (!load) return undefined;
  const preset = { id, config: await load() };
  loaded.set(id, preset);
  return preset;
}

// Bundled model presets: the real config.json files the core's tests check
// parameter counts against (tests/fixtures/models, one copy in the repo),
// compiled into the page so it works with no network. File names are
// "<org>__<name>.json" for the Hub id "<org>/<name>".

const modules = {
  ...import.meta.glob('../../../tests/fixtures/models/*__*.json', {
    eager: true,
    import: 'default',
  }),
  ...import.meta.glob('../../../tests/fixtures/validation/*__*.json', {
    eager: true,
    import: 'default',
  }),
};

function idFromPath(path) {
  const file = path
    .split('/')
    .pop()
    .replace(/\.json$/, '');
  return file.replace('__', '/');
}

/** Every preset as {id, config}, sorted by organisation then name. */
export const PRESETS = Object.entries(modules)
  .map(([path, config]) => ({ id: idFromPath(path), config }))
  .sort((a, b) => a.id.localeCompare(b.id, 'en', { sensitivity: 'base' }));

/** The preset with this Hub id, or undefined. */
export function findPreset(id) {
  return PRESETS.find((p) => p.id === id);
}

// The request fields as the core declares them (core/src/fields.cpp): each
// field's default, allowed values, limits, label, vram-probe flag and URL key.
//
// fields.json is `vram-probe fields --json`, committed; `make fields` writes
// it and `make fields-check` (part of `make test`) fails when it differs from
// the core's live output, and tests/wasm/fields.test.js compares it with the
// WASM module's fields(). A committed copy rather than a call into the module
// at start-up: the form's start values, the URL parser and the labels are
// needed synchronously, at first paint and when a shared link is read, before
// the module (a lazily loaded chunk and its .wasm) has arrived. The built
// page's copy has no `doc` strings, which the page does not show
// (vite.config.js pageFields).
import table from './fields.json';

/** Every request field, in docs/schema.md order. */
export const FIELDS = Object.freeze(table.fields);

const BY_PATH = new Map(FIELDS.map((f) => [f.path, f]));

/** The declaration of a request path, or undefined. */
export function fieldInfo(path) {
  return BY_PATH.get(path);
}

/** The core's default of a declared field (null where absence means something). */
export function coreDefault(path) {
  const f = BY_PATH.get(path);
  if (!f) throw new Error(`${path} is not a request field (core/src/fields.cpp)`);
  return f.default;
}

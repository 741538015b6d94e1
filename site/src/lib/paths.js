// Dotted paths ("train.lora.rank") into the settings and request objects.

/** The value at a dotted path of an object, or undefined. */
export function getPath(obj, path) {
  return path.split('.').reduce((o, k) => o?.[k], obj);
}

/** Sets a dotted path in an object (mutates it; missing parents become {}). */
export function putPath(obj, path, value) {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = o[k] ??= {};
  o[keys[keys.length - 1]] = value;
}

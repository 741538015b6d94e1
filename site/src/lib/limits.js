// The core's input rules (core/include/vram/fields.h, namespace limits), for
// what the page reads before the WASM module sees it. The module reports the
// same numbers in version().limits; site/tests/wasm/strict.test.js checks
// that they agree.

/** limits::kMaxInputBytes: the largest JSON input (request, config.json, probe report), 16 MiB. */
export const MAX_INPUT_BYTES = 16 * 1024 * 1024;

/** A file's size against MAX_INPUT_BYTES, checked before the file is read: a message, or null. */
export function tooLargeMessage(file) {
  // A File always has a size; anything without one is left to its reader.
  if (!(file.size > MAX_INPUT_BYTES)) return null;
  return `${file.name} is ${(file.size / 1024 ** 2).toFixed(1)} MiB; inputs are limited to 16 MiB.`;
}

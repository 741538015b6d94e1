// The core's input limit on the page (issue 17 part 4): a pasted config and a
// config embedded in a link (also a pinned one) are checked against
// MAX_INPUT_BYTES (lib/limits.js, the core's limits::kMaxInputBytes) before
// they are parsed or decoded whole.
import { describe, expect, it, vi } from 'vitest';
import { loadPastedConfig } from '../../src/lib/actions.js';
import { utf8Length } from '../../src/lib/format.js';
import { MAX_INPUT_BYTES } from '../../src/lib/limits.js';
import { modelStatus } from '../../src/lib/state.js';
import { parse, serialize, toBase64Url, URL_LIMITS } from '../../src/lib/url-state.js';
import { defaultSettings } from '../../src/lib/state.js';

describe('the input size limit', () => {
  it('counts UTF-8 bytes', () => {
    expect(utf8Length('abc')).toBe(3);
    expect(utf8Length('é')).toBe(2);
    expect(utf8Length('€')).toBe(3);
    expect(utf8Length('😀')).toBe(4);
  });

  it('refuses a pasted config over the limit, in words, without parsing it', () => {
    const jsonParse = vi.spyOn(JSON, 'parse');
    const text = `{"model_type": "llama", "pad": "${'x'.repeat(MAX_INPUT_BYTES)}"}`;
    expect(loadPastedConfig(text)).toBe(false);
    expect(jsonParse).not.toHaveBeenCalled();
    jsonParse.mockRestore();
    expect(modelStatus.value.kind).toBe('out_of_range');
    expect(modelStatus.value.message).toMatch(/inputs are limited to 16 MiB/);
    // Multi-byte text is measured in bytes, not characters.
    const wide = `{"pad": "${'€'.repeat(Math.ceil(MAX_INPUT_BYTES / 3))}"}`;
    expect(wide.length).toBeLessThan(MAX_INPUT_BYTES);
    expect(loadPastedConfig(wide)).toBe(false);
  });

  it('ignores a config in a link longer than the limit, and reads one within it', () => {
    const small = { model_type: 'llama', hidden_size: 64 };
    expect(parse(`#m=cfg:${toBase64Url(JSON.stringify(small))}`).model.config).toEqual(small);
    expect(parse(`#m=cfg:${'A'.repeat(URL_LIMITS.config + 4)}`).model).toBeNull();
  });

  it('keeps a pinned setup within the limit in the link, and reads it back', () => {
    const model = { source: 'paste', id: 'pasted', config: { model_type: 'llama' } };
    const hash = serialize(model, defaultSettings(), { model, settings: defaultSettings() });
    expect(parse(hash).pin.model.config).toEqual(model.config);
    expect(parse(`#pin=${'A'.repeat(URL_LIMITS.pin + 4)}`).pin).toBeNull();
  });
});

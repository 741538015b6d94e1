// What a link may do (issue 17 part 4): a `#m=hf:<id>` link is fetched with
// the session's Hub token, never before it is read; every URL-state field has
// a length limit; and a pinned setup ("Compare two setups") travels in the
// link and comes back from it.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { restoreFromHash } from '../../src/lib/actions.js';
import { defaultSettings } from '../../src/lib/state.js';
import { parse, serialize, URL_LIMITS } from '../../src/lib/url-state.js';
import { hubResponse, MODELS } from './fixtures.js';

afterEach(() => {
  vi.unstubAllGlobals();
  sessionStorage.clear();
});

describe('a link naming a Hub model', () => {
  it("is fetched with the session's token in its very first request", async () => {
    sessionStorage.setItem('vram-planner.hf-token', 'hf_session_token');
    const fetch = vi.fn(async () => hubResponse(200, MODELS['meta-llama/Llama-3.2-1B'].config));
    vi.stubGlobal('fetch', fetch);
    restoreFromHash('#m=hf:meta-llama/Llama-3.2-1B&task=train');
    await vi.waitFor(() => expect(fetch).toHaveBeenCalled());
    const [url, init] = fetch.mock.calls[0];
    expect(url).toBe('https://huggingface.co/meta-llama/Llama-3.2-1B/resolve/main/config.json');
    expect(init.headers.Authorization).toBe('Bearer hf_session_token');
  });
});

describe('the length limits of the link', () => {
  it('ignores a model id, a text field or a number longer than its limit', () => {
    const longId = `org/${'x'.repeat(URL_LIMITS.model_id)}`;
    expect(parse(`#m=hf:${longId}`).model).toBeNull();
    expect(parse('#m=hf:org/name').model).toEqual({ source: 'hf', id: 'org/name' });

    const targets = 'q_proj,'.repeat(Math.ceil(URL_LIMITS.text / 7));
    const s = parse(`#targets=${targets}&seq=${'1'.repeat(URL_LIMITS.number + 1)}`).settings;
    expect(s.train.lora.targets).toBe(defaultSettings().train.lora.targets);
    expect(s.train.seq_len).toBe(defaultSettings().train.seq_len);
    expect(parse('#seq=4096').settings.train.seq_len).toBe(4096);
  });
});

describe('a pinned setup in the link', () => {
  it('round-trips through serialize and parse, beside the current one', () => {
    const now = defaultSettings();
    now.train.seq_len = 8192;
    const before = defaultSettings();
    before.train.seq_len = 1024;
    before.train.method = 'full';
    const model = { source: 'preset', id: 'meta-llama/Llama-3.2-1B' };
    const pinModel = { source: 'preset', id: 'Qwen/Qwen3-0.6B' };
    const hash = serialize(model, now, { model: pinModel, settings: before });
    const back = parse(hash);
    expect(back.settings.train.seq_len).toBe(8192);
    expect(back.pin.model).toEqual(pinModel);
    expect(back.pin.settings.train.seq_len).toBe(1024);
    expect(back.pin.settings.train.method).toBe('full');
  });
});

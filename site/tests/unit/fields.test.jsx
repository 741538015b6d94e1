// The page's request vocabulary comes from the core's table of fields
// (fields.json): the link's keys, the select choices and the field names in
// error messages.
import { describe, expect, it } from 'vitest';
import { FIELDS, fieldInfo } from '../../src/lib/fields.js';
import { URL_KEYS } from '../../src/lib/url-state.js';
import {
  ATTENTIONS,
  CHECKPOINTING,
  ENGINES,
  FSDP_STRATEGIES,
  KV_DTYPES,
  METHODS,
  PRECISIONS,
  TASKS,
  WEIGHT_DTYPES,
  describePath,
} from '../../src/lib/vocabulary.js';

describe('the link', () => {
  it("uses the core's URL key for every request field that has one, and each key once", () => {
    const keys = URL_KEYS.map(([key]) => key);
    expect(new Set(keys).size).toBe(keys.length);
    for (const f of FIELDS.filter((x) => x.url)) {
      expect(URL_KEYS.find(([key]) => key === f.url)?.[1], f.url).toBe(f.path);
    }
    // The page's own keys are for settings outside the request.
    for (const [key, path] of URL_KEYS) {
      if (!fieldInfo(path))
        expect(['freeze', 'rel', 'np', 'planfw', 'hostram'], key).toContain(key);
    }
  });
});

describe('the select choices', () => {
  it.each([
    ['task', TASKS],
    ['train.method', METHODS],
    ['train.precision', PRECISIONS],
    ['train.grad_checkpointing', CHECKPOINTING],
    ['train.attention', ATTENTIONS],
    ['infer.engine', ENGINES],
    ['infer.weights_dtype', WEIGHT_DTYPES],
    ['infer.kv_dtype', KV_DTYPES],
    ['parallel.fsdp', FSDP_STRATEGIES],
  ])('of %s are values the core accepts', (path, options) => {
    const f = fieldInfo(path);
    const accepted = [...f.values, ...Object.keys(f.aliases)];
    for (const o of options) expect(accepted, `${path} ${o.value}`).toContain(o.value);
  });
});

describe('field names in messages', () => {
  it("are the core's labels", () => {
    expect(describePath('train.micro_batch')).toBe(
      'Training › per_device_train_batch_size (train.micro_batch)',
    );
    expect(describePath('train.lora.rank')).toBe(
      `Training › ${fieldInfo('train.lora.rank').label} (train.lora.rank)`,
    );
  });
});

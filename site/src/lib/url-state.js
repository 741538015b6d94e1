// The whole page state in the URL hash, serialised and parsed here and only
// here, so a result can be shared and a shared link restores it. The hash
// (not the query) keeps the state out of server logs and works on any static
// host. The Hub token is never part of it.
//
//   #m=preset:meta-llama/Llama-3.2-1B&task=train&method=lora&mb=1&seq=2048...
//
// Model sources: preset:<id>, hf:<id>[@rev] (fetched again on load), and
// cfg:<base64url of the pasted config.json>. A pasted DeepSpeed config travels
// as ds=<base64url of its text> when it is valid JSON and short enough
// (DEEPSPEED_URL_LIMIT characters encoded); a longer one stays out of the link.

import { FIELDS as TABLE_FIELDS } from './fields.js';
import { MAX_INPUT_BYTES } from './limits.js';
import { getPath, putPath } from './paths.js';
import { defaultSettings, parseDeepspeed } from './state.js';
import {
  ATTENTIONS,
  CHECKPOINTING,
  PADDINGS,
  ENGINES,
  ENTRYPOINTS,
  FSDP_STRATEGIES,
  FSDP_VERSIONS,
  KV_DTYPES,
  LINKS,
  METHODS,
  NVLS_MODES,
  PLAN_FRAMEWORKS,
  PRECISIONS,
  REDUCE_DTYPES,
  TASKS,
  WEIGHT_DTYPES,
} from './vocabulary.js';

// The form's choices for the request fields it shows as selects: a link
// value must be one of them. (Each choice is a value the core accepts:
// tests/unit/fields.test.jsx.)
const CHOICES = {
  task: TASKS,
  // Every framework the core's table names (fields.json).
  'train.framework': (TABLE_FIELDS.find((f) => f.path === 'train.framework')?.values ?? []).map(
    (value) => ({ value }),
  ),
  'train.method': METHODS,
  'train.precision': PRECISIONS,
  'train.grad_checkpointing': CHECKPOINTING,
  'train.attention': ATTENTIONS,
  'train.padding': PADDINGS,
  'infer.engine': ENGINES,
  'infer.entrypoint': ENTRYPOINTS,
  'infer.weights_dtype': WEIGHT_DTYPES,
  'infer.kv_dtype': KV_DTYPES,
  'parallel.fsdp': FSDP_STRATEGIES,
  'parallel.fsdp_version': FSDP_VERSIONS,
  'parallel.fsdp_reduce_dtype': REDUCE_DTYPES,
  'parallel.nvls': NVLS_MODES,
  'hardware.link': LINKS,
};

// Where the form holds a field differently from its JSON type: any HF
// Trainer optim name (the estimator says which it knows), the target list as
// its text, alpha as the whole number of its box.
const FORM_KINDS = {
  'train.optimizer': 'name',
  'train.lora.targets': 'text',
  'train.lora.alpha': 'int',
  'overheads.cuda_context_bytes': 'int',
  'overheads.nccl_bytes': 'int',
  deepspeed: 'deepspeed',
  'time.prices': 'prices',
};

/**
 * time.prices (card name -> USD per GPU-hour) as a link value:
 * "H100 80GB:2.5|RTX 4090 24GB:0.4" ('' when empty); card names hold no ':' or
 * '|'. The core checks the names against its catalog.
 */
export function pricesForUrl(prices) {
  return Object.entries(prices ?? {})
    .filter(([name, usd]) => Number.isFinite(usd) && usd > 0 && !/[:|]/.test(name))
    .map(([name, usd]) => `${name}:${usd}`)
    .join('|');
}

/** A link's prices= value back to an object, or null when any entry is invalid. */
export function pricesFromUrl(value) {
  const out = {};
  for (const entry of String(value).split('|')) {
    const colon = entry.lastIndexOf(':');
    const name = entry.slice(0, colon);
    const usd = Number(entry.slice(colon + 1));
    if (colon < 1 || name.length > 64 || !Number.isFinite(usd) || usd <= 0) return null;
    out[name] = usd;
  }
  return out;
}

const KIND_OF_TYPE = { int: 'int', number: 'num', bool: 'bool', string: 'text', list: 'text' };

// URL key -> [settings path, kind, allowed values for 'enum']: the request
// fields' keys from the core's table (fields.json), then the page's own.
const FIELDS = [
  ...TABLE_FIELDS.filter((f) => f.url).map((f) => {
    const options = CHOICES[f.path];
    const kind = FORM_KINDS[f.path] ?? (options ? 'enum' : KIND_OF_TYPE[f.type]);
    return [f.url, f.path, kind, options];
  }),
  ['freeze', 'train.freeze_modules', 'text'],
  // The framework's release (train.framework NAME@RELEASE; '' = the newest).
  ['rel', 'train.release', 'version'],
  // llama.cpp --parallel (infer.batch of a GGUF engine; 0 = the release's default).
  ['np', 'infer.parallel', 'int'],
  ['planfw', 'planner.framework', 'enum', PLAN_FRAMEWORKS],
  ['hostram', 'planner.host_ram_gib', 'num'],
];

/** The URL keys of the link, with the settings path each one sets. */
export const URL_KEYS = Object.freeze(FIELDS.map(([key, path]) => [key, path]));

/** Longest base64url DeepSpeed config the link carries. */
export const DEEPSPEED_URL_LIMIT = 2000;

/**
 * The longest value each kind of link field may have; a longer one is ignored
 * like any other invalid value (issue 17: a hostile link must not make the
 * page decode or parse megabytes). A Hub id is at most 96 characters of name
 * (huggingface_hub validate_repo_id) plus an organisation and a revision;
 * free-text fields (LoRA target modules, freeze modules, the allocator
 * configuration) are a few names; a number has at most 16 digits (2^53).
 * A pasted config.json in the link (m=cfg:...) may be as large as the core
 * accepts any input (MAX_INPUT_BYTES, 16 MiB), base64url-encoded; a pinned
 * setup (pin=, "Compare two setups") is a link of its own, base64url-encoded:
 * its config plus 64 KiB of fields at most.
 */
export const URL_LIMITS = {
  model_id: 256,
  text: 1024,
  number: 32,
  config: Math.ceil(MAX_INPUT_BYTES / 3) * 4,
  // imp=: the request fields an imported file set that the form has no box
  // for (settings.imported), as base64url JSON.
  imported: 8192,
};
URL_LIMITS.pin = Math.ceil((URL_LIMITS.config + 65536) / 3) * 4;
Object.freeze(URL_LIMITS);

// Request fields an import may set without a box on the form: any field of
// the core's table (fields.json) that the link's own keys do not carry.
const IMPORTABLE = new Set(
  TABLE_FIELDS.filter((f) => !f.url && f.path.includes('.')).map((f) => f.path),
);

/** settings.imported as a link value ('' when empty or too long). */
export function importedForUrl(imported) {
  const entries = Object.entries(imported ?? {}).filter(([path]) => IMPORTABLE.has(path));
  if (!entries.length) return '';
  const enc = toBase64Url(JSON.stringify(Object.fromEntries(entries)));
  return enc.length <= URL_LIMITS.imported ? enc : '';
}

/**
 * A link's imp= value back to settings.imported: only fields of the core's
 * table, each a number, a boolean, a short string or a list of short
 * strings (the core checks the values themselves); anything else drops the
 * whole value, so an edited link cannot smuggle keys the core would refuse.
 */
export function importedFromUrl(value) {
  let obj;
  try {
    obj = JSON.parse(fromBase64Url(value));
  } catch {
    return null;
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return null;
  const short = (v) => typeof v === 'string' && v.length <= 256;
  const ok = (v) =>
    (typeof v === 'number' && Number.isFinite(v)) ||
    typeof v === 'boolean' ||
    short(v) ||
    (Array.isArray(v) && v.length <= 64 && v.every(short));
  const out = {};
  for (const [path, v] of Object.entries(obj)) {
    if (!IMPORTABLE.has(path) || !ok(v)) return null;
    out[path] = v;
  }
  return out;
}

/** The DeepSpeed config text as a link value, or '' when invalid or too long. */
export function deepspeedForUrl(text) {
  const t = String(text ?? '').trim();
  if (!t || !parseDeepspeed(t).config) return '';
  const enc = toBase64Url(t);
  return enc.length <= DEEPSPEED_URL_LIMIT ? enc : '';
}

export function toBase64Url(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function fromBase64Url(s) {
  const b64 = s.replace(/-/g, '+').replace(/_/g, '/');
  const bin = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

/**
 * A model known only by its parameter count ("7B"): the core builds it
 * (request model.size, quick sizing) and flags the estimate approximate.
 */
export function sizeModel(size) {
  const s = String(size).trim();
  return { source: 'size', id: `${s} parameters (quick sizing)`, size: s, config: null };
}

/**
 * State -> hash string (with the leading '#').
 * @param {{source: string, id: string, config: object}} model
 * @param {object} settings
 * @param {{model: object, settings: object} | null} pin the pinned setup of
 *   "Compare two setups", carried as pin=<base64url of its own link>
 */
export function serialize(model, settings, pin = null) {
  const q = new URLSearchParams();
  if (model) {
    if (model.source === 'paste') q.set('m', `cfg:${toBase64Url(JSON.stringify(model.config))}`);
    else if (model.source === 'size') q.set('m', `size:${model.size}`);
    else q.set('m', `${model.source === 'hf' ? 'hf' : 'preset'}:${model.id}`);
  }
  for (const [key, path, kind] of FIELDS) {
    if (key === 'gpu' && settings.gpu.mode === 'custom') continue;
    if (key === 'gib' && settings.gpu.mode !== 'custom') continue;
    let v = getPath(settings, path);
    if (kind === 'deepspeed') v = deepspeedForUrl(v);
    if (kind === 'prices') v = pricesForUrl(v);
    if (v === '' || v === undefined || v === null) continue;
    q.set(key, kind === 'bool' ? (v ? '1' : '0') : String(v));
  }
  const imp = importedForUrl(settings.imported);
  if (imp) q.set('imp', imp);
  if (pin?.model && pin.settings) {
    const inner = toBase64Url(serialize(pin.model, pin.settings).slice(1));
    if (inner.length <= URL_LIMITS.pin) q.set('pin', inner);
  }
  // URLSearchParams encodes '/' and ':' too; keep model ids readable.
  return `#${q.toString().replace(/%2F/g, '/').replace(/%3A/g, ':').replace(/%40/g, '@')}`;
}

/**
 * Hash string -> {model: {source, id, config?} | null, settings, given, pin}.
 * Unknown keys and invalid values are ignored (the defaults stay), so an old
 * or edited link still opens; `given` lists the settings paths the link set;
 * `pin` is the pinned setup ({model, settings}) or null.
 */
export function parse(hash, { nested = false } = {}) {
  const q = new URLSearchParams(String(hash || '').replace(/^#/, ''));
  const settings = defaultSettings();
  const given = [];
  for (const [key, path, kind, options] of FIELDS) {
    if (!q.has(key)) continue;
    const raw = q.get(key);
    if (kind !== 'deepspeed' && raw.length > URL_LIMITS.text) continue;
    let v;
    if (kind === 'int') {
      if (raw.length > URL_LIMITS.number) continue;
      if (!/^\d+$/.test(raw)) continue;
      v = Number(raw);
      if (!Number.isSafeInteger(v)) continue;
    } else if (kind === 'num') {
      if (raw.length > URL_LIMITS.number) continue;
      v = Number(raw);
      if (!Number.isFinite(v) || v <= 0) continue;
    } else if (kind === 'bool') {
      if (raw !== '0' && raw !== '1') continue;
      v = raw === '1';
    } else if (kind === 'version') {
      if (!/^[0-9][0-9A-Za-z.+_-]{0,31}$/.test(raw)) continue;
      v = raw;
    } else if (kind === 'name') {
      if (!/^[a-z0-9_]{1,64}$/.test(raw)) continue;
      v = raw;
    } else if (kind === 'deepspeed') {
      if (raw.length > DEEPSPEED_URL_LIMIT) continue;
      try {
        v = fromBase64Url(raw);
      } catch {
        continue;
      }
      if (!parseDeepspeed(v).config) continue;
    } else if (kind === 'prices') {
      v = pricesFromUrl(raw);
      if (!v) continue;
    } else if (kind === 'enum') {
      const o = options.find((x) => String(x.value) === raw);
      if (!o) continue;
      v = o.value;
    } else {
      v = raw;
    }
    putPath(settings, path, v);
    given.push(path);
  }
  if (q.has('gib') && !q.has('gpu')) settings.gpu.mode = 'custom';
  const imp = q.get('imp');
  if (imp && imp.length <= URL_LIMITS.imported) {
    const fields = importedFromUrl(imp);
    if (fields) settings.imported = fields;
  }

  let model = null;
  const m = q.get('m');
  const mLimit = m?.startsWith('cfg:') ? 4 + URL_LIMITS.config : URL_LIMITS.model_id;
  if (m && m.length <= mLimit) {
    const colon = m.indexOf(':');
    const kind = m.slice(0, colon);
    const rest = m.slice(colon + 1);
    if (kind === 'preset' && rest) model = { source: 'preset', id: rest };
    else if (kind === 'hf' && rest) model = { source: 'hf', id: rest };
    else if (kind === 'size' && /^[0-9.eE+]{1,24}[BMTbmt]?$/.test(rest)) model = sizeModel(rest);
    else if (kind === 'cfg' && rest) {
      try {
        const config = JSON.parse(fromBase64Url(rest));
        if (config && typeof config === 'object')
          model = { source: 'paste', id: 'pasted config.json', config };
      } catch {
        model = null;
      }
    }
  }
  let pin = null;
  const rawPin = nested ? null : q.get('pin');
  if (rawPin && rawPin.length <= URL_LIMITS.pin) {
    try {
      const inner = parse(fromBase64Url(rawPin), { nested: true });
      if (inner.model) pin = { model: inner.model, settings: inner.settings };
    } catch {
      pin = null;
    }
  }
  return { model, settings, given, pin };
}

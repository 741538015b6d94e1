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

import { defaultSettings, parseDeepspeed } from './state.js';
import {
  ATTENTIONS,
  CHECKPOINTING,
  ENGINES,
  FSDP_STRATEGIES,
  FSDP_VERSIONS,
  KV_DTYPES,
  METHODS,
  NVLS_MODES,
  PLAN_FRAMEWORKS,
  PRECISIONS,
  REDUCE_DTYPES,
  TASKS,
  WEIGHT_DTYPES,
} from './vocabulary.js';

// URL key -> [settings path, kind, allowed values for 'enum'].
const FIELDS = [
  ['task', 'task', 'enum', TASKS],
  ['method', 'train.method', 'enum', METHODS],
  ['mb', 'train.micro_batch', 'int'],
  ['seq', 'train.seq_len', 'int'],
  ['ga', 'train.grad_accum', 'int'],
  ['prec', 'train.precision', 'enum', PRECISIONS],
  // Any HF Trainer optim name: the estimator says which it knows.
  ['optim', 'train.optimizer', 'name'],
  ['gc', 'train.grad_checkpointing', 'enum', CHECKPOINTING],
  ['attn', 'train.attention', 'enum', ATTENTIONS],
  ['fused', 'train.fused_loss', 'bool'],
  ['r', 'train.lora.rank', 'int'],
  ['alpha', 'train.lora.alpha', 'int'],
  ['targets', 'train.lora.targets', 'text'],
  ['freeze', 'train.freeze_modules', 'text'],
  ['aoff', 'train.activation_offload', 'bool'],
  ['oib', 'train.optimizer_in_backward', 'bool'],
  ['eng', 'infer.engine', 'enum', ENGINES],
  ['bs', 'infer.batch', 'int'],
  ['ctx', 'infer.context_len', 'int'],
  ['prompt', 'infer.prompt_len', 'int'],
  ['wdt', 'infer.weights_dtype', 'enum', WEIGHT_DTYPES],
  ['kvdt', 'infer.kv_dtype', 'enum', KV_DTYPES],
  ['gmu', 'infer.gpu_memory_utilization', 'num'],
  ['seqs', 'infer.max_num_seqs', 'int'],
  ['mbt', 'infer.max_num_batched_tokens', 'int'],
  ['blk', 'infer.block_size', 'int'],
  ['eager', 'infer.enforce_eager', 'bool'],
  ['gpus', 'parallel.gpus', 'int'],
  ['tp', 'parallel.tp', 'int'],
  ['pp', 'parallel.pp', 'int'],
  ['zero', 'parallel.zero', 'int'],
  ['fsdp', 'parallel.fsdp', 'enum', FSDP_STRATEGIES],
  ['cp', 'parallel.cp', 'int'],
  ['offload', 'parallel.offload_optimizer', 'bool'],
  ['offp', 'parallel.offload_params', 'bool'],
  ['sp', 'parallel.sequence_parallel', 'bool'],
  ['gpn', 'parallel.gpus_per_node', 'int'],
  ['nodes', 'parallel.nodes', 'int'],
  ['ep', 'parallel.ep', 'int'],
  ['vp', 'parallel.vp', 'int'],
  ['dopt', 'parallel.distributed_optimizer', 'bool'],
  ['mgf32', 'parallel.main_grads_fp32', 'bool'],
  ['fsdpv', 'parallel.fsdp_version', 'enum', FSDP_VERSIONS],
  ['rdt', 'parallel.fsdp_reduce_dtype', 'enum', REDUCE_DTYPES],
  ['nccl', 'parallel.nccl_channels', 'int'],
  ['nvls', 'parallel.nvls', 'enum', NVLS_MODES],
  ['ds', 'deepspeed', 'deepspeed'],
  ['planfw', 'planner.framework', 'enum', PLAN_FRAMEWORKS],
  // Measured overheads in bytes (vram-probe overheads / nccl reports).
  ['cudactx', 'overheads.cuda_context_bytes', 'int'],
  ['ncclb', 'overheads.nccl_bytes', 'int'],
  ['gpu', 'gpu.name', 'text'],
  ['gib', 'gpu.memory_gib', 'num'],
];

/** Longest base64url DeepSpeed config the link carries. */
export const DEEPSPEED_URL_LIMIT = 2000;

/** The DeepSpeed config text as a link value, or '' when invalid or too long. */
export function deepspeedForUrl(text) {
  const t = String(text ?? '').trim();
  if (!t || !parseDeepspeed(t).config) return '';
  const enc = toBase64Url(t);
  return enc.length <= DEEPSPEED_URL_LIMIT ? enc : '';
}

function get(obj, path) {
  return path.split('.').reduce((o, k) => o?.[k], obj);
}

function put(obj, path, value) {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = o[k];
  o[keys[keys.length - 1]] = value;
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
 * State -> hash string (with the leading '#').
 * @param {{source: string, id: string, config: object}} model
 * @param {object} settings
 */
export function serialize(model, settings) {
  const q = new URLSearchParams();
  if (model) {
    if (model.source === 'paste') q.set('m', `cfg:${toBase64Url(JSON.stringify(model.config))}`);
    else q.set('m', `${model.source === 'hf' ? 'hf' : 'preset'}:${model.id}`);
  }
  for (const [key, path, kind] of FIELDS) {
    if (key === 'gpu' && settings.gpu.mode === 'custom') continue;
    if (key === 'gib' && settings.gpu.mode !== 'custom') continue;
    let v = get(settings, path);
    if (kind === 'deepspeed') v = deepspeedForUrl(v);
    if (v === '' || v === undefined || v === null) continue;
    q.set(key, kind === 'bool' ? (v ? '1' : '0') : String(v));
  }
  // URLSearchParams encodes '/' and ':' too; keep model ids readable.
  return `#${q.toString().replace(/%2F/g, '/').replace(/%3A/g, ':').replace(/%40/g, '@')}`;
}

/**
 * Hash string -> {model: {source, id, config?} | null, settings}. Unknown keys
 * and invalid values are ignored (the defaults stay), so an old or edited
 * link still opens.
 */
export function parse(hash) {
  const q = new URLSearchParams(String(hash || '').replace(/^#/, ''));
  const settings = defaultSettings();
  for (const [key, path, kind, options] of FIELDS) {
    if (!q.has(key)) continue;
    const raw = q.get(key);
    let v;
    if (kind === 'int') {
      if (!/^\d+$/.test(raw)) continue;
      v = Number(raw);
      if (!Number.isSafeInteger(v)) continue;
    } else if (kind === 'num') {
      v = Number(raw);
      if (!Number.isFinite(v) || v <= 0) continue;
    } else if (kind === 'bool') {
      if (raw !== '0' && raw !== '1') continue;
      v = raw === '1';
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
    } else if (kind === 'enum') {
      const o = options.find((x) => String(x.value) === raw);
      if (!o) continue;
      v = o.value;
    } else {
      v = raw;
    }
    put(settings, path, v);
  }
  if (q.has('gib') && !q.has('gpu')) settings.gpu.mode = 'custom';

  let model = null;
  const m = q.get('m');
  if (m) {
    const colon = m.indexOf(':');
    const kind = m.slice(0, colon);
    const rest = m.slice(colon + 1);
    if (kind === 'preset' && rest) model = { source: 'preset', id: rest };
    else if (kind === 'hf' && rest) model = { source: 'hf', id: rest };
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
  return { model, settings };
}

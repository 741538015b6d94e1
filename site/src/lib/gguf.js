// GGUF files: their headers read with @huggingface/gguf (HTTP range
// requests, so no weights are downloaded; a dropped file is sliced in the
// browser), turned into the request's `model.gguf` inventory
// (docs/schema.md) exactly as `vram-probe estimate --gguf FILE` reads a
// local file (core/src/gguf/header.cpp), and a Hub repository's quant files
// listed. This module is its own chunk: a first visit does not load it.

import { HUB_ORIGIN, HubError, parseModelId } from './hub.js';

// The metadata rule both front ends apply (vram/gguf.h metadata rule): keys
// under "tokenizer." are dropped; a value is kept when it is a bool, a
// finite number (integers within ±2^53), a string of at most 1024 bytes, or
// an array of at most 65536 bools or numbers.
export const MAX_KEPT_STRING = 1024;
export const MAX_KEPT_ARRAY = 65536;

// gguf.h enum gguf_type.
const T = { U64: 10, I64: 11, F32: 6, F64: 12, BOOL: 7, STRING: 8, ARRAY: 9 };
const utf8 = new TextEncoder();

function keptScalar(type, value) {
  if (type === T.STRING) {
    return typeof value === 'string' && utf8.encode(value).length <= MAX_KEPT_STRING
      ? value
      : undefined;
  }
  if (type === T.BOOL) return Boolean(value);
  if (typeof value === 'bigint') {
    return value <= BigInt(Number.MAX_SAFE_INTEGER) + 1n &&
      value >= -(BigInt(Number.MAX_SAFE_INTEGER) + 1n)
      ? Number(value)
      : undefined;
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  if (type !== T.F32 && type !== T.F64 && Math.abs(value) > 2 ** 53) return undefined;
  return value;
}

function keptValue({ type, subType, value }) {
  if (type !== T.ARRAY) return keptScalar(type, value);
  if (subType === T.STRING || subType === T.ARRAY || !Array.isArray(value)) return undefined;
  if (value.length > MAX_KEPT_ARRAY) return undefined;
  const out = [];
  for (const v of value) {
    const k = keptScalar(subType, v);
    if (k === undefined) return undefined;
    out.push(k);
  }
  return out;
}

/**
 * The `model.gguf` inventory of @huggingface/gguf's parse (called with
 * typedMetadata: true) of the file `file`; `shard` is set for the tensors of
 * a split file's later parts.
 */
export function toGgufInventory(parsed, file, shards = []) {
  const metadata = {};
  for (const [key, typed] of Object.entries(parsed.typedMetadata ?? {})) {
    if (key === 'version' || key === 'tensor_count' || key === 'kv_count') continue;
    if (key.startsWith('tokenizer.')) continue;
    const v = keptValue(typed);
    if (v !== undefined) metadata[key] = v;
  }
  const tensorsOf = (p, shard) =>
    p.tensorInfos.map((t) => ({
      name: t.name,
      shape: t.shape.map(Number),
      type: t.dtype,
      offset: Number(t.offset),
      ...(shard === undefined ? {} : { shard }),
    }));
  const split = shards.length > 0;
  const tensors = tensorsOf(parsed, split ? 0 : undefined);
  shards.forEach((p, i) => tensors.push(...tensorsOf(p, i + 1)));
  return { file, version: parsed.typedMetadata.version.value, metadata, tensors };
}

/** A fetch that answers range requests from a Blob (a dropped file): nothing leaves the page. */
export function blobFetch(blob) {
  return async (_url, init = {}) => {
    const range = /bytes=(\d+)-(\d+)/.exec(init.headers?.Range ?? init.headers?.range ?? '');
    const start = range ? Number(range[1]) : 0;
    const end = Math.min(range ? Number(range[2]) : blob.size - 1, blob.size - 1);
    return new Response(blob.slice(start, end + 1), {
      status: 206,
      headers: { 'content-range': `bytes ${start}-${end}/${blob.size}` },
    });
  };
}

async function parseHeader(url, fetchImpl) {
  const { gguf } = await import('@huggingface/gguf');
  return gguf(url, { fetch: fetchImpl, typedMetadata: true });
}

/** A dropped or opened .gguf file's inventory (its header only). */
export async function readGgufFile(file) {
  try {
    const parsed = await parseHeader(
      `https://local.file/${encodeURIComponent(file.name)}`,
      blobFetch(file),
    );
    return toGgufInventory(parsed, file.name);
  } catch (e) {
    throw new HubError(
      'gguf',
      `${file.name} is not a GGUF file llama.cpp reads: ${e?.message ?? e}`,
    );
  }
}

// gguf-split's names (llama.cpp llama_split_prefix): NAME-00001-of-00003.gguf.
const SHARD = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/;

function fileUrl(id, path) {
  const repo = id.repo
    .split('/')
    .map((p) => encodeURIComponent(p))
    .join('/');
  const p = path
    .split('/')
    .map((x) => encodeURIComponent(x))
    .join('/');
  return `${HUB_ORIGIN}/${repo}/resolve/${encodeURIComponent(id.revision)}/${p}`;
}

/**
 * A repository's GGUF files, from the Hub's tree API: one entry per model
 * file (a split file once, by its first part), each {path, size, shards,
 * projector} (projector: a multimodal projector, `mmproj` in its name).
 */
export async function listGgufFiles(idText, { token = '', fetch: fetchImpl = fetch } = {}) {
  const id = parseModelId(idText);
  if (!id) throw new HubError('invalid_id', `“${idText}” is not a Hugging Face repository id.`);
  const headers = token ? { Authorization: `Bearer ${token.trim()}` } : {};
  const url = `${HUB_ORIGIN}/api/models/${id.repo}/tree/${encodeURIComponent(id.revision)}?recursive=true`;
  let response;
  try {
    response = await fetchImpl(url, { headers });
  } catch {
    throw new HubError('offline', `Could not reach the Hugging Face Hub to list ${id.repo}.`);
  }
  if (response.status === 401 || response.status === 403) {
    throw new HubError(
      'gated',
      `${id.repo} is gated or private (${response.status}): paste a token with read access.`,
    );
  }
  if (!response.ok)
    throw new HubError('not_found', `No repository ${id.repo} on the Hub (${response.status}).`);
  const entries = await response.json();
  const files = [];
  for (const e of Array.isArray(entries) ? entries : []) {
    if (e?.type !== 'file' || !String(e.path).endsWith('.gguf')) continue;
    const m = SHARD.exec(e.path);
    if (m && m[2] !== '00001') continue;
    const parts = m ? Number(m[3]) : 1;
    const size = m
      ? entries
          .filter((x) => SHARD.exec(x.path)?.[1] === m[1])
          .reduce((a, x) => a + (x.lfs?.size ?? x.size ?? 0), 0)
      : (e.lfs?.size ?? e.size ?? 0);
    files.push({ path: e.path, size, shards: parts, projector: /mmproj/i.test(e.path) });
  }
  files.sort((a, b) => Number(a.projector) - Number(b.projector) || a.size - b.size);
  return { id, files };
}

/** The inventory of one of the repository's files (every part of a split one), headers only. */
export async function fetchGgufInventory(id, entry, { token = '', fetch: fetchImpl = fetch } = {}) {
  const headers = token ? { Authorization: `Bearer ${token.trim()}` } : {};
  const withAuth = (url, init = {}) =>
    fetchImpl(url, { ...init, headers: { ...init.headers, ...headers } });
  const first = await parseHeader(fileUrl(id, entry.path), withAuth);
  const rest = [];
  const m = SHARD.exec(entry.path);
  for (let i = 2; m && i <= entry.shards; i++) {
    const part = `${m[1]}-${String(i).padStart(5, '0')}-of-${m[3]}.gguf`;
    rest.push(await parseHeader(fileUrl(id, part), withAuth));
  }
  return toGgufInventory(first, entry.path.split('/').pop(), rest);
}

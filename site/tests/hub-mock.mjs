// A Hugging Face Hub serving a few repository files the way the real one
// answers @huggingface/hub's requests (its fileExists, fileDownloadInfo and
// WebBlob): HEAD /<repo>/raw/<rev>/<path> (200 or 404), GET
// /<repo>/resolve/<rev>/<path> with `Range: bytes=a-b` (206 with
// Content-Range and an ETag) or without (200). Used by the Vitest suite
// (as a fetch) and the Chromium test (as a route handler); nothing touches
// the network.

import { GgufWriter } from './gguf-writer.mjs';

/** A .safetensors file: 8-byte little-endian header length, JSON header, zero-filled data. */
export function safetensorsBytes(tensors) {
  const size = { BF16: 2, F16: 2, F32: 4, I32: 4, U8: 1 };
  const header = {};
  let offset = 0;
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1) * size[t.dtype];
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + n] };
    offset += n;
  }
  header.__metadata__ = { format: 'pt' };
  let text = JSON.stringify(header);
  while (text.length % 8) text += ' ';
  const bytes = new Uint8Array(8 + text.length + offset);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(text.length), true);
  bytes.set(new TextEncoder().encode(text), 8);
  return bytes;
}

// A small decoder with a model_type no adapter knows: hidden 64, 2 layers,
// 4 heads of 16 (2 KV heads), per-head q/k norms, MLP 128, vocab 256.
export const TINY = { H: 64, I: 128, V: 256, KV: 32, L: 2, HEAD_DIM: 16 };

function layer(l) {
  const { H, I, KV, HEAD_DIM } = TINY;
  const p = `model.layers.${l}.`;
  return [
    { name: `${p}self_attn.q_proj.weight`, dtype: 'BF16', shape: [H, H] },
    { name: `${p}self_attn.k_proj.weight`, dtype: 'BF16', shape: [KV, H] },
    { name: `${p}self_attn.v_proj.weight`, dtype: 'BF16', shape: [KV, H] },
    { name: `${p}self_attn.o_proj.weight`, dtype: 'BF16', shape: [H, H] },
    { name: `${p}self_attn.q_norm.weight`, dtype: 'BF16', shape: [HEAD_DIM] },
    { name: `${p}self_attn.k_norm.weight`, dtype: 'BF16', shape: [HEAD_DIM] },
    { name: `${p}mlp.gate_proj.weight`, dtype: 'BF16', shape: [I, H] },
    { name: `${p}mlp.up_proj.weight`, dtype: 'BF16', shape: [I, H] },
    { name: `${p}mlp.down_proj.weight`, dtype: 'BF16', shape: [H, I] },
    { name: `${p}input_layernorm.weight`, dtype: 'BF16', shape: [H] },
    { name: `${p}post_attention_layernorm.weight`, dtype: 'BF16', shape: [H] },
  ];
}

/** Its parameter count, by hand. */
export const TINY_PARAMS = (() => {
  const { H, I, V, KV, L, HEAD_DIM } = TINY;
  return 2 * V * H + L * (2 * H * H + 2 * KV * H + 3 * H * I + 2 * H + 2 * HEAD_DIM) + H;
})();

/** The repository's files: config.json, an index and two shards. */
export function tinyRepo(modelType = 'tiny_newarch') {
  const { H, V } = TINY;
  const first = [{ name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [V, H] }, ...layer(0)];
  const second = [
    ...layer(1),
    { name: 'model.norm.weight', dtype: 'BF16', shape: [H] },
    { name: 'lm_head.weight', dtype: 'BF16', shape: [V, H] },
  ];
  const a = 'model-00001-of-00002.safetensors';
  const b = 'model-00002-of-00002.safetensors';
  const weight_map = {};
  for (const t of first) weight_map[t.name] = a;
  for (const t of second) weight_map[t.name] = b;
  const shardA = safetensorsBytes(first);
  const shardB = safetensorsBytes(second);
  const enc = (o) => new TextEncoder().encode(JSON.stringify(o));
  return {
    'config.json': enc({
      model_type: modelType,
      architectures: ['TinyNewArchForCausalLM'],
      hidden_size: TINY.H,
      num_hidden_layers: TINY.L,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: TINY.HEAD_DIM,
      intermediate_size: TINY.I,
      vocab_size: TINY.V,
      tie_word_embeddings: false,
      torch_dtype: 'bfloat16',
    }),
    'model.safetensors.index.json': enc({
      metadata: { total_size: 2 * TINY_PARAMS },
      weight_map,
    }),
    [a]: shardA,
    [b]: shardB,
  };
}

function header(headers, name) {
  if (!headers) return undefined;
  if (typeof headers.get === 'function') return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : headers[key];
}

/**
 * The Hub's answer to one request for `repo`'s `files`: {status, headers, body}.
 * Other repositories and paths are 404 with X-Error-Code as the Hub sends it.
 */
export function hubAnswer(repo, files, method, url, requestHeaders) {
  const u = new URL(url);
  const prefix = `/${repo}/`;
  const notFound = (code) => ({
    status: 404,
    headers: { 'x-error-code': code, 'content-type': 'application/json' },
    body: new TextEncoder().encode(JSON.stringify({ error: code })),
  });
  // The tree API (huggingface_hub list_repo_tree): every file with its size.
  const tree = u.pathname.match(/^\/api\/models\/(.+)\/tree\/[^/]+$/);
  if (tree) {
    if (tree[1] !== repo) return notFound('RepoNotFound');
    const list = Object.entries(files).map(([path, body]) => ({
      type: 'file',
      path,
      size: files.sizes?.[path] ?? body.length,
      ...(path.endsWith('.gguf') ? { lfs: { size: files.sizes?.[path] ?? body.length } } : {}),
    }));
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: new TextEncoder().encode(JSON.stringify(list.filter((e) => e.path !== 'sizes'))),
    };
  }
  if (!u.pathname.startsWith(prefix)) return notFound('RepoNotFound');
  const m = u.pathname.slice(prefix.length).match(/^(raw|resolve)\/([^/]+)\/(.+)$/);
  if (!m) return notFound('EntryNotFound');
  const path = decodeURIComponent(m[3]);
  const body = files[path];
  if (!body) return notFound('EntryNotFound');
  const base = {
    etag: `"${path.length}-${body.length}"`,
    'accept-ranges': 'bytes',
    'content-type': path.endsWith('.json') ? 'application/json' : 'application/octet-stream',
    'access-control-expose-headers': 'content-range, etag, x-error-code',
  };
  if (method === 'HEAD') {
    return { status: 200, headers: { ...base, 'content-length': String(body.length) }, body: null };
  }
  const range = header(requestHeaders, 'range');
  const r = range && /^bytes=(\d+)-(\d*)$/.exec(range);
  if (r) {
    const start = Number(r[1]);
    const end = Math.min(r[2] === '' ? body.length - 1 : Number(r[2]), body.length - 1);
    return {
      status: 206,
      headers: {
        ...base,
        'content-range': `bytes ${start}-${end}/${body.length}`,
        'content-length': String(end - start + 1),
      },
      body: body.slice(start, end + 1),
    };
  }
  return { status: 200, headers: { ...base, 'content-length': String(body.length) }, body };
}

/** The same Hub as a fetch function (Vitest), recording the requests. */
export function hubFetch(repo, files, calls = []) {
  return async (input, init = {}) => {
    // A string, a URL (WebBlob keeps one) or a Request.
    const url = typeof input === 'object' && 'method' in input ? input.url : String(input);
    const method = (init.method ?? 'GET').toUpperCase();
    calls.push({ url, method, headers: init.headers ?? {} });
    const a = hubAnswer(repo, files, method, url, init.headers);
    const res = new Response(a.body, { status: a.status, headers: a.headers });
    Object.defineProperty(res, 'url', { value: url });
    return res;
  };
}

// ggml types (ggml.h enum ggml_type) and bytes per block of 256 or 32
// values (ggml.c type_traits) for the GGUF fixtures below.
const GGML = {
  F32: { id: 0, block: 1, bytes: 4 },
  F16: { id: 1, block: 1, bytes: 2 },
  Q8_0: { id: 8, block: 32, bytes: 34 },
  Q4_K: { id: 12, block: 256, bytes: 144 },
  Q6_K: { id: 14, block: 256, bytes: 210 },
};

/**
 * A GGUF file of a Llama-shaped model (`shape`: layers, embd, ffn, heads,
 * kv heads, vocab, context), its matrices in `matrix` and its output layer
 * and ffn_down in `output`; norms F32, the token embedding as the matrices.
 */
export function llamaGguf(
  { layers, embd, ffn, heads, kv, vocab, ctx },
  matrix = 'Q8_0',
  output = matrix,
) {
  const w = new GgufWriter()
    .str('general.architecture', 'llama')
    .u32('llama.block_count', layers)
    .u32('llama.context_length', ctx)
    .u32('llama.embedding_length', embd)
    .u32('llama.feed_forward_length', ffn)
    .u32('llama.attention.head_count', heads)
    .u32('llama.attention.head_count_kv', kv)
    .f32('llama.rope.freq_base', 500000)
    .f32('llama.attention.layer_norm_rms_epsilon', 1e-5)
    .u32('llama.vocab_size', vocab);
  const add = (name, ne, type) => {
    const t = GGML[type];
    w.tensor(name, ne, t.id, (ne.reduce((a, b) => a * b, 1) / t.block) * t.bytes);
  };
  const kvDim = (embd / heads) * kv;
  add('token_embd.weight', [embd, vocab], matrix);
  for (let l = 0; l < layers; l++) {
    const p = `blk.${l}.`;
    add(`${p}attn_norm.weight`, [embd], 'F32');
    add(`${p}attn_q.weight`, [embd, embd], matrix);
    add(`${p}attn_k.weight`, [embd, kvDim], matrix);
    add(`${p}attn_v.weight`, [embd, kvDim], output);
    add(`${p}attn_output.weight`, [embd, embd], matrix);
    add(`${p}ffn_norm.weight`, [embd], 'F32');
    add(`${p}ffn_gate.weight`, [embd, ffn], matrix);
    add(`${p}ffn_up.weight`, [embd, ffn], matrix);
    add(`${p}ffn_down.weight`, [ffn, embd], output);
  }
  add('output_norm.weight', [embd], 'F32');
  add('output.weight', [embd, vocab], output);
  return w;
}

/** A CLIP-style vision projector file (llama.cpp --mmproj): two F16 matrices. */
export function mmprojGguf() {
  return new GgufWriter()
    .str('general.architecture', 'clip')
    .bool('clip.has_vision_encoder', true)
    .u32('clip.vision.embedding_length', 1024)
    .tensor('mm.0.weight', [1024, 4096], GGML.F16.id, 1024 * 4096 * 2)
    .tensor('mm.2.weight', [4096, 4096], GGML.F16.id, 4096 * 4096 * 2);
}

/** Llama-3.1-8B's shape (its config.json). */
export const LLAMA_8B = {
  layers: 32,
  embd: 4096,
  ffn: 14336,
  heads: 32,
  kv: 8,
  vocab: 128256,
  ctx: 131072,
};

/**
 * A GGUF repository as bartowski's and unsloth's look: three quant files and
 * a projector, each served as its header alone (the page reads nothing
 * else) while the tree lists the whole file's size.
 */
export function ggufRepo() {
  const files = {
    'Llama-8B-Q4_K_M.gguf': llamaGguf(LLAMA_8B, 'Q4_K', 'Q6_K'),
    'Llama-8B-Q8_0.gguf': llamaGguf(LLAMA_8B, 'Q8_0'),
    'Llama-8B-F16.gguf': llamaGguf(LLAMA_8B, 'F16'),
    'mmproj-Llama-8B-f16.gguf': mmprojGguf(),
  };
  const out = { sizes: {} };
  for (const [path, w] of Object.entries(files)) {
    out[path] = w.bytes({ data: false });
    // The header padded to the alignment (32), then each tensor's data padded likewise.
    const data = w.tensors.reduce((a, t) => a + Math.ceil(t.size / 32) * 32, 0);
    out.sizes[path] = Math.ceil(out[path].length / 32) * 32 + data;
  }
  return out;
}

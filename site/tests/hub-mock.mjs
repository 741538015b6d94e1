// A Hugging Face Hub serving a few repository files the way the real one
// answers @huggingface/hub's requests (its fileExists, fileDownloadInfo and
// WebBlob): HEAD /<repo>/raw/<rev>/<path> (200 or 404), GET
// /<repo>/resolve/<rev>/<path> with `Range: bytes=a-b` (206 with
// Content-Range and an ETag) or without (200). Used by the Vitest suite
// (as a fetch) and the Chromium test (as a route handler); nothing touches
// the network.

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

// Small real GGUF files for the page's tests and the fuzzer's seeds: the
// header layout of ggml/src/gguf.cpp, byte by byte (tests/core/gguf_writer.h
// writes the same in C++). `bytes({data: false})` is the header alone,
// `bytes()` the whole file with a zero data section.

const TYPE = { u32: 4, i32: 5, f32: 6, bool: 7, str: 8, arr: 9, u64: 10 };
const enc = new TextEncoder();

export class GgufWriter {
  constructor() {
    this.kv = [];
    this.tensors = [];
  }
  u32(key, v) {
    this.kv.push({ key, type: TYPE.u32, write: (w) => w.u32(v) });
    return this;
  }
  f32(key, v) {
    this.kv.push({ key, type: TYPE.f32, write: (w) => w.f32(v) });
    return this;
  }
  bool(key, v) {
    this.kv.push({ key, type: TYPE.bool, write: (w) => w.u8(v ? 1 : 0) });
    return this;
  }
  str(key, v) {
    this.kv.push({ key, type: TYPE.str, write: (w) => w.str(v) });
    return this;
  }
  i32s(key, values) {
    this.kv.push({
      key,
      type: TYPE.arr,
      write: (w) => {
        w.u32(TYPE.i32);
        w.u64(values.length);
        for (const v of values) w.i32(v);
      },
    });
    return this;
  }
  strs(key, values) {
    this.kv.push({
      key,
      type: TYPE.arr,
      write: (w) => {
        w.u32(TYPE.str);
        w.u64(values.length);
        for (const v of values) w.str(v);
      },
    });
    return this;
  }
  /** A tensor of ggml type id `type`, ggml dimensions (ne0 first), `size` data bytes. */
  tensor(name, ne, type, size) {
    this.tensors.push({ name, ne, type, size });
    return this;
  }
  bytes({ data = true, version = 3, alignment = 32 } = {}) {
    const w = new Bytes();
    w.raw(enc.encode('GGUF'));
    w.u32(version);
    w.u64(this.tensors.length);
    w.u64(this.kv.length);
    for (const { key, type, write } of this.kv) {
      w.str(key);
      w.u32(type);
      write(w);
    }
    let offset = 0;
    for (const t of this.tensors) {
      w.str(t.name);
      w.u32(t.ne.length);
      for (const n of t.ne) w.u64(n);
      w.u32(t.type);
      w.u64(offset);
      offset += Math.ceil(t.size / alignment) * alignment;
    }
    if (!data) return w.done();
    const head = Math.ceil(w.length / alignment) * alignment;
    const out = new Uint8Array(head + offset);
    out.set(w.done());
    return out;
  }
}

class Bytes {
  constructor() {
    this.buf = new Uint8Array(1 << 16);
    this.view = new DataView(this.buf.buffer);
    this.length = 0;
  }
  room(n) {
    if (this.length + n <= this.buf.length) return;
    const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    bigger.set(this.buf);
    this.buf = bigger;
    this.view = new DataView(bigger.buffer);
  }
  raw(bytes) {
    this.room(bytes.length);
    this.buf.set(bytes, this.length);
    this.length += bytes.length;
  }
  u8(v) {
    this.room(1);
    this.view.setUint8(this.length, v);
    this.length += 1;
  }
  u32(v) {
    this.room(4);
    this.view.setUint32(this.length, v, true);
    this.length += 4;
  }
  i32(v) {
    this.room(4);
    this.view.setInt32(this.length, v, true);
    this.length += 4;
  }
  f32(v) {
    this.room(4);
    this.view.setFloat32(this.length, v, true);
    this.length += 4;
  }
  u64(v) {
    this.room(8);
    this.view.setBigUint64(this.length, BigInt(v), true);
    this.length += 8;
  }
  str(s) {
    const b = enc.encode(s);
    this.u64(b.length);
    this.raw(b);
  }
  done() {
    return this.buf.slice(0, this.length);
  }
}

// ggml type ids and bytes per block (ggml.h enum ggml_type, ggml.c type_traits).
export const GGML = {
  F32: [0, 1, 4],
  F16: [1, 1, 2],
  Q4_0: [2, 32, 18],
  Q8_0: [8, 32, 34],
  Q4_K: [12, 256, 144],
  Q5_K: [13, 256, 176],
  Q6_K: [14, 256, 210],
  BF16: [30, 1, 2],
};

/**
 * A Llama-shaped model file: `blocks` layers of width `hidden`, `heads` query
 * and `kvHeads` key/value heads of `hidden / heads`, an `ff`-wide gated MLP,
 * `vocab` tokens; matrices of type `weights` (a GGML key), `output` for the
 * head, norms F32. `name` goes into general.name.
 */
export function llamaGguf({
  blocks = 2,
  hidden = 256,
  heads = 4,
  kvHeads = 2,
  ff = 512,
  vocab = 1024,
  context = 4096,
  weights = 'Q4_K',
  output = 'Q6_K',
  name = 'tiny',
  arch = 'llama',
} = {}) {
  const w = new GgufWriter();
  const headDim = hidden / heads;
  w.str('general.architecture', arch)
    .str('general.name', name)
    .u32(`${arch}.block_count`, blocks)
    .u32(`${arch}.context_length`, context)
    .u32(`${arch}.embedding_length`, hidden)
    .u32(`${arch}.feed_forward_length`, ff)
    .u32(`${arch}.attention.head_count`, heads)
    .u32(`${arch}.attention.head_count_kv`, kvHeads)
    .f32(`${arch}.rope.freq_base`, 500000)
    .strs('tokenizer.ggml.tokens', ['a', 'b']);
  const add = (n, ne, key) => {
    const [id, block, bytes] = GGML[key];
    const count = ne.reduce((a, b) => a * b, 1);
    w.tensor(n, ne, id, (count / block) * bytes);
  };
  add('token_embd.weight', [hidden, vocab], weights);
  for (let l = 0; l < blocks; l++) {
    const p = `blk.${l}.`;
    add(`${p}attn_norm.weight`, [hidden], 'F32');
    add(`${p}attn_q.weight`, [hidden, heads * headDim], weights);
    add(`${p}attn_k.weight`, [hidden, kvHeads * headDim], weights);
    add(`${p}attn_v.weight`, [hidden, kvHeads * headDim], weights);
    add(`${p}attn_output.weight`, [heads * headDim, hidden], weights);
    add(`${p}ffn_norm.weight`, [hidden], 'F32');
    add(`${p}ffn_gate.weight`, [hidden, ff], weights);
    add(`${p}ffn_up.weight`, [hidden, ff], weights);
    add(`${p}ffn_down.weight`, [ff, hidden], weights);
  }
  add('output_norm.weight', [hidden], 'F32');
  add('output.weight', [hidden, vocab], output);
  return w;
}

// The worst-case graph llama.cpp reserves, tensor by tensor
// (infer/llama_cpp_graph.h). Activations are f32 (4 bytes), as llama.cpp
// computes them; which ops run in place is ggml-alloc.c ggml_op_can_inplace.
#include "infer/llama_cpp_graph.h"

#include <map>
#include <string>

#include "memory/ggml_graph.h"

namespace vram::infer::llama_cpp {

namespace {

using memory::ggml::Graph;
using memory::ggml::Op;
using memory::ggml::Tensor;

constexpr int64_t kF32 = 4;
// ggml-cuda.cu MATRIX_ROW_PADDING: a quantized matrix's last row is padded
// to a multiple of 512 elements in a CUDA buffer (get_alloc_size).
constexpr int64_t kMatrixRowPadding = 512;
// ggml_backend_cuda_buffer_type_get_alignment and ggml-impl.h TENSOR_ALIGNMENT.
constexpr int64_t kCudaAlignment = 128;
constexpr int64_t kCpuAlignment = 32;

class Builder {
 public:
  Builder(const gguf::Model& m, const GraphShape& s) : m_(m), s_(s) {
    for (size_t i = 0; i < m.tensors.size(); ++i) index_[m.tensors[i].name] = i;
  }

  Graph build();

 private:
  int32_t cpu() const { return s_.gpus; }
  int64_t T() const { return s_.n_tokens; }

  // A weight as an external tensor on its device, or -1 when the file has none.
  int32_t weight(const std::string& name, int32_t device) {
    auto it = index_.find(name);
    if (it == index_.end() || m_.tensors[it->second].skipped) return -1;
    const std::string key = name + "@" + std::to_string(device);
    if (auto w = weights_.find(key); w != weights_.end()) return w->second;
    const gguf::Tensor& t = m_.tensors[it->second];
    Tensor x;
    x.name = name;
    x.bytes = t.bytes;
    if (t.type->quantized && !t.ne.empty() && t.ne[0] % kMatrixRowPadding != 0) {
      // what a copy of it takes in a CUDA buffer (op offload)
      x.bytes += (kMatrixRowPadding - t.ne[0] % kMatrixRowPadding) / t.type->block * t.type->bytes;
    }
    x.external = x.weight = true;
    x.home = device;
    return weights_[key] = g_.add(x);
  }
  int32_t blk_weight(int64_t il, const char* name, int32_t device) {
    return weight("blk." + std::to_string(il) + "." + name + ".weight", device);
  }
  int64_t rows(const std::string& name) const {  // a matrix's ne[1] (its outputs)
    auto it = index_.find(name);
    return it == index_.end() || m_.tensors[it->second].ne.size() < 2 ? 0 : m_.tensors[it->second].ne[1];
  }
  int32_t input(const char* name, int64_t bytes) {
    Tensor x;
    x.name = name;
    x.bytes = bytes;
    x.input = true;
    return g_.add(x);
  }
  // mul_mat(w, x): out x cols f32; offloadable with >= 32 columns (CUDA's
  // op_offload_min_batch_size, get_op_batch_size ne[1]).
  int32_t matmul(const char* name, int32_t w, int32_t x, int64_t out, int64_t cols) {
    const int32_t r = g_.op(name, Op::kNew, out * cols * kF32, {w, x});
    g_.tensors()[static_cast<size_t>(r)].offloadable = cols >= 32;
    return r;
  }
  int32_t in_place(const char* name, int32_t x, int32_t w = -1) {
    const int64_t bytes = g_.tensors()[static_cast<size_t>(x)].bytes;
    std::vector<int32_t> src = {x};
    if (w >= 0) src.push_back(w);
    const int32_t r = g_.op(name, Op::kInPlace, bytes, src);
    g_.tensors()[static_cast<size_t>(r)].offloadable = T() >= 32;  // get_op_batch_size: ggml_nrows
    return r;
  }
  // rms_norm then mul by the norm's weight, both in place.
  int32_t norm(int32_t x, int32_t w) {
    const int32_t n = in_place("norm", x);
    return w >= 0 ? in_place("norm_w", n, w) : n;
  }
  int32_t kv_view(int64_t il, bool k);
  int32_t attention(int64_t il, int32_t x, int32_t dev);
  int32_t scores(int64_t il, int32_t q, int32_t dev, int64_t heads, int64_t dv);
  int32_t ffn(int64_t il, int32_t x, int32_t dev);
  int32_t moe(int64_t il, int32_t x, int32_t dev);

  const gguf::Model& m_;
  const GraphShape& s_;
  Graph g_;
  std::map<std::string, size_t> index_;
  std::map<std::string, int32_t> weights_;
  int32_t pos_ = -1, mask_ = -1, mask_swa_ = -1, idxs_ = -1, idxs_swa_ = -1;
  int32_t mask_f16_ = -1, mask_swa_f16_ = -1;
};

// The K or V cache of block il as the graph reads it: the whole cache
// (init_full), on its device.
int32_t Builder::kv_view(int64_t il, bool k) {
  const auto& hp = m_.hp;
  const bool swa = hp.swa.empty() ? false : hp.swa[static_cast<size_t>(il)];
  const int64_t cells = swa ? s_.kv_cells_swa : s_.kv_cells;
  const gguf::GgmlType* type = k ? s_.type_k : s_.type_v;
  const int64_t width = k ? hp.k_width(il) : hp.v_width(il);
  Tensor cache;
  cache.name = k ? "cache_k" : "cache_v";
  cache.bytes = width / type->block * type->bytes * cells * s_.n_stream;
  cache.external = true;
  cache.home = s_.kv_device[static_cast<size_t>(il)];
  return g_.add(cache);
}

// kq = k q (f32, n_kv x n_tokens per head), softmax in place, kqv = v kq,
// then the heads made contiguous (build_attn_mha without Flash Attention);
// with it, one FLASH_ATTN_EXT result of n_tokens x heads x head size.
int32_t Builder::scores(int64_t il, int32_t q, int32_t dev, int64_t heads, int64_t dv) {
  const auto& hp = m_.hp;
  const bool swa = hp.swa.empty() ? false : hp.swa[static_cast<size_t>(il)];
  const int64_t cells = swa ? s_.kv_cells_swa : s_.kv_cells;
  const int32_t k = g_.view("k", kv_view(il, true));
  const int32_t v = g_.view("v", kv_view(il, false));
  int32_t& mask = swa ? mask_swa_ : mask_;
  (void)dev;
  if (s_.flash_attn) {
    // The f16 cast of the mask (build_attn_inp_kv: ggml_cast) enters the
    // graph with its first use.
    int32_t& cast = swa ? mask_swa_f16_ : mask_f16_;
    if (cast < 0) cast = g_.op("kq_mask_f16", Op::kNew, cells * T() * 2, {mask});
    return g_.op("fattn", Op::kNew, dv * heads * T() * kF32, {q, k, v, cast});
  }
  const int32_t kq = g_.op("kq", Op::kNew, cells * T() * heads * kF32, {k, q});
  const int32_t soft = g_.op("kq_soft_max", Op::kInPlace, cells * T() * heads * kF32, {kq, mask});
  const int32_t kqv = g_.op("kqv", Op::kNew, dv * T() * heads * kF32, {v, soft});
  return g_.op("kqv_cont", Op::kNew, dv * heads * T() * kF32, {g_.view("kqv_permuted", kqv)});
}

// Q, K, V projections (separate, or fused attn_qkv), RoPE in place, the
// writes into the cache, attention, the output projection (build_attn).
int32_t Builder::attention(int64_t il, int32_t x, int32_t dev) {
  const auto& hp = m_.hp;
  const int64_t heads = hp.n_head[static_cast<size_t>(il)];
  const int64_t kw = hp.k_width(il), vw = hp.v_width(il);
  int32_t q = -1, k = -1, v = -1;
  if (const int32_t wqkv = blk_weight(il, "attn_qkv", dev); wqkv >= 0) {
    const int32_t qkv = matmul("qkv", wqkv, x, heads * hp.head_k + kw + vw, T());
    // Q and K are views of the fused result: RoPE writes new tensors.
    q = g_.op("q_rope", Op::kNew, heads * hp.head_k * T() * kF32, {g_.view("q", qkv)});
    k = g_.op("k_rope", Op::kNew, kw * T() * kF32, {g_.view("k", qkv)});
    v = g_.op("v", Op::kNew, vw * T() * kF32, {g_.view("v", qkv)});
  } else {
    const int32_t wq = blk_weight(il, "attn_q", dev);
    q = wq >= 0 ? matmul("q", wq, x, heads * hp.head_k, T()) : x;
    q = g_.op("q_rope", Op::kInPlace, heads * hp.head_k * T() * kF32, {g_.view("q_3d", q), pos_});
    const int32_t wv = blk_weight(il, "attn_v", dev);
    v = wv >= 0 ? matmul("v", wv, x, vw, T()) : x;
    const int32_t wk = blk_weight(il, "attn_k", dev);
    k = wk >= 0 ? matmul("k", wk, x, kw, T()) : x;
    k = g_.op("k_rope", Op::kInPlace, kw * T() * kF32, {g_.view("k_3d", k), pos_});
  }
  const bool swa = hp.swa.empty() ? false : hp.swa[static_cast<size_t>(il)];
  const int32_t idx = swa ? idxs_swa_ : idxs_;
  // set_rows into the cache: no storage of its own, run where the cache is.
  Tensor set_k;
  set_k.name = "cpy_k";
  set_k.op = Op::kView;
  set_k.src = {kv_view(il, true), k, idx};
  g_.add(set_k);
  Tensor set_v = set_k;
  set_v.name = "cpy_v";
  set_v.src = {kv_view(il, false), v, idx};
  g_.add(set_v);
  const int32_t attn = scores(il, g_.view("q_permuted", q), dev, heads, hp.head_v);
  const int32_t wo = blk_weight(il, "attn_output", dev);
  return wo >= 0 ? matmul("attn_out", wo, g_.view("attn_2d", attn), hp.n_embd, T()) : attn;
}

// The dense feed-forward: up, gate, the gated activation (GLU, not in place),
// down (build_ffn with LLM_FFN_PAR); without a gate, the activation in place.
int32_t Builder::ffn(int64_t il, int32_t x, int32_t dev) {
  const std::string p = "blk." + std::to_string(il) + ".";
  const int32_t wu = blk_weight(il, "ffn_up", dev);
  if (wu < 0) return x;
  const int64_t ff = rows(p + "ffn_up.weight");
  const int32_t up = matmul("ffn_up", wu, x, ff, T());
  const int32_t wg = blk_weight(il, "ffn_gate", dev);
  int32_t act = -1;
  if (wg >= 0) {
    const int32_t gate = matmul("ffn_gate", wg, x, ff, T());
    act = g_.op("ffn_glu", Op::kNew, ff * T() * kF32, {gate, up});
  } else {
    act = in_place("ffn_act", up);
  }
  const int32_t wd = blk_weight(il, "ffn_down", dev);
  return matmul("ffn_down", wd, act, m_.hp.n_embd, T());
}

// build_moe_ffn: router logits and softmax, the top-k selection and weights,
// MUL_MAT_ID for up, gate and down over n_expert_used slots per token, the
// weighting, and the slots summed; a shared expert beside it.
int32_t Builder::moe(int64_t il, int32_t x, int32_t dev) {
  const auto& hp = m_.hp;
  const std::string p = "blk." + std::to_string(il) + ".";
  const int64_t k = std::max<int64_t>(hp.n_expert_used, 1);
  const int64_t ne = hp.n_expert;
  const int64_t ff = rows(p + "ffn_up_exps.weight") > 0 ? rows(p + "ffn_up_exps.weight") : hp.n_ff_exp;
  const int32_t logits = matmul("ffn_moe_logits", blk_weight(il, "ffn_gate_inp", dev), x, ne, T());
  const int32_t probs = g_.op("ffn_moe_probs", Op::kInPlace, ne * T() * kF32, {logits});
  const int32_t ids = g_.op("ffn_moe_argsort", Op::kNew, ne * T() * 4, {probs});
  const int32_t wts = g_.op("ffn_moe_weights", Op::kNew, k * T() * kF32, {probs, g_.view("ffn_moe_topk", ids)});
  auto mmid = [&](const char* name, const char* w, int32_t in, int64_t out) {
    const int32_t r = g_.op(name, Op::kNew, out * k * T() * kF32, {blk_weight(il, w, dev), in, ids});
    g_.tensors()[static_cast<size_t>(r)].offloadable = T() >= 32;  // get_op_batch_size ne[2]
    return r;
  };
  const int32_t up = mmid("ffn_moe_up", "ffn_up_exps", x, ff);
  int32_t act = -1;
  if (blk_weight(il, "ffn_gate_exps", dev) >= 0) {
    const int32_t gate = mmid("ffn_moe_gate", "ffn_gate_exps", x, ff);
    act = g_.op("ffn_moe_glu", Op::kNew, ff * k * T() * kF32, {gate, up});
  } else {
    act = in_place("ffn_moe_act", up);
  }
  const int32_t down = mmid("ffn_moe_down", "ffn_down_exps", act, hp.n_embd);
  const int32_t weighted = g_.op("ffn_moe_weighted", Op::kInPlace, hp.n_embd * k * T() * kF32, {down, wts});
  int32_t out = g_.op("ffn_moe_out", Op::kNew, hp.n_embd * T() * kF32, {g_.view("expert_0", weighted)});
  if (blk_weight(il, "ffn_up_shexp", dev) >= 0) {
    const int64_t fs = rows(p + "ffn_up_shexp.weight");
    const int32_t su = matmul("ffn_shexp_up", blk_weight(il, "ffn_up_shexp", dev), x, fs, T());
    const int32_t sg = matmul("ffn_shexp_gate", blk_weight(il, "ffn_gate_shexp", dev), x, fs, T());
    const int32_t sa = g_.op("ffn_shexp_glu", Op::kNew, fs * T() * kF32, {sg, su});
    const int32_t sd = matmul("ffn_shexp_down", blk_weight(il, "ffn_down_shexp", dev), sa, hp.n_embd, T());
    out = in_place("ffn_moe_plus_shexp", out, sd);
  }
  return out;
}

Graph Builder::build() {
  const auto& hp = m_.hp;
  const int64_t cells = s_.kv_cells * s_.n_stream, cells_swa = s_.kv_cells_swa * s_.n_stream;
  // Inputs (llm_graph_input_*): token ids, positions, the KQ masks (f32,
  // n_kv x n_tokens per stream; with Flash Attention cast to f16), the cache
  // write indices, the output rows.
  const int32_t tokens = input("inp_tokens", T() * 4);
  pos_ = input("inp_pos", T() * 4);
  mask_ = input("kq_mask", cells / s_.n_stream * T() * kF32);
  idxs_ = input("kv_idxs", T() * 8);
  if (hp.any_swa()) {
    mask_swa_ = input("kq_mask_swa", cells_swa / s_.n_stream * T() * kF32);
    idxs_swa_ = input("kv_idxs_swa", T() * 8);
  }
  const int32_t out_ids = input("inp_out_ids", s_.n_outputs * 4);
  // The token embedding stays on the CPU (llama-model.cpp load_tensors):
  // get_rows there, its result copied to the first layer's device.
  int32_t cur = g_.op("inp_embd", Op::kNew, hp.n_embd * T() * kF32, {weight("token_embd.weight", cpu()), tokens});
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    if (hp.n_nextn > 0 && il >= hp.n_layer - hp.n_nextn) break;
    const int32_t dev = s_.layer_device[static_cast<size_t>(il)];
    const int32_t in = cur;
    int32_t x = norm(in, blk_weight(il, "attn_norm", dev));
    int32_t a = hp.n_head_kv[static_cast<size_t>(il)] > 0 ? attention(il, x, dev) : x;
    a = norm(a, blk_weight(il, "post_attention_norm", dev));
    const bool last = il + 1 == hp.n_layer - hp.n_nextn;
    int32_t res = in;
    if (last) {  // the rows of the outputs only (n_outputs = n_tokens in the reserve)
      a = g_.op("attn_out_rows", Op::kNew, hp.n_embd * s_.n_outputs * kF32, {a, out_ids});
      res = g_.op("inp_sa_rows", Op::kNew, hp.n_embd * s_.n_outputs * kF32, {in, out_ids});
    }
    const int32_t ffn_inp = in_place("ffn_inp", a, res);
    x = norm(ffn_inp, blk_weight(il, "ffn_norm", dev));
    int32_t f = blk_weight(il, "ffn_gate_inp", dev) >= 0 ? moe(il, x, dev) : ffn(il, x, dev);
    f = norm(f, blk_weight(il, "post_ffw_norm", dev));
    cur = in_place("l_out", f, ffn_inp);
  }
  const int32_t out_dev = s_.output_device;
  cur = norm(cur, weight("output_norm.weight", out_dev));
  const std::string head = m_.has_output ? "output.weight" : "token_embd.weight";
  const int32_t logits = matmul("result_output", weight(head, out_dev), cur, hp.n_vocab, s_.n_outputs);
  g_.tensors()[static_cast<size_t>(logits)].output = true;
  return std::move(g_);
}

}  // namespace

std::vector<int64_t> compute_buffers(const gguf::Model& m, const GraphShape& s) {
  memory::ggml::Backends b;
  b.count = s.gpus + 1;
  for (int32_t i = 0; i < s.gpus; ++i) b.alignment.push_back(kCudaAlignment);
  b.alignment.push_back(kCpuAlignment);
  b.op_offload = s.op_offload;
  b.copies = s.copies;
  Builder builder(m, s);
  return memory::ggml::reserve(builder.build(), b);
}

}  // namespace vram::infer::llama_cpp

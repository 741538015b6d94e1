// llama-quantize's presets and its per-tensor type rules (gguf/quant_preset.h),
// from ggml-org/llama.cpp ec98e2002 src/llama-quant.cpp (vendored in
// ollama/ollama f63eea3d2 as llama/llama.cpp/src/llama-quant.cpp):
// llama_model_quantize_impl (the default type per ftype, which tensors are
// quantized) and llama_tensor_get_type (the mix), line by line.
#include "gguf/quant_preset.h"

#include <algorithm>
#include <cctype>

namespace vram::gguf {

namespace {

// ggml_type ids (ggml.h).
enum T : int {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

// llama_ftype ids (include/llama.h).
enum F : int {
  ALL_F32 = 0,
  MOSTLY_F16 = 1,
  MOSTLY_Q4_0 = 2,
  MOSTLY_Q4_1 = 3,
  MOSTLY_Q8_0 = 7,
  MOSTLY_Q5_0 = 8,
  MOSTLY_Q5_1 = 9,
  MOSTLY_Q2_K = 10,
  MOSTLY_Q3_K_S = 11,
  MOSTLY_Q3_K_M = 12,
  MOSTLY_Q3_K_L = 13,
  MOSTLY_Q4_K_S = 14,
  MOSTLY_Q4_K_M = 15,
  MOSTLY_Q5_K_S = 16,
  MOSTLY_Q5_K_M = 17,
  MOSTLY_Q6_K = 18,
  MOSTLY_IQ2_XXS = 19,
  MOSTLY_IQ2_XS = 20,
  MOSTLY_Q2_K_S = 21,
  MOSTLY_IQ3_XS = 22,
  MOSTLY_IQ3_XXS = 23,
  MOSTLY_IQ1_S = 24,
  MOSTLY_IQ4_NL = 25,
  MOSTLY_IQ3_S = 26,
  MOSTLY_IQ3_M = 27,
  MOSTLY_IQ2_S = 28,
  MOSTLY_IQ2_M = 29,
  MOSTLY_IQ4_XS = 30,
  MOSTLY_IQ1_M = 31,
  MOSTLY_BF16 = 32,
  MOSTLY_TQ1_0 = 36,
  MOSTLY_TQ2_0 = 37,
  MOSTLY_MXFP4_MOE = 38,
};

// llama_model_quantize_impl: default_type per ftype (note IQ2_S -> IQ2_XS
// and IQ2_M -> IQ2_S, as the source has them).
const std::vector<Preset> kPresets = {
    {"Q4_0", MOSTLY_Q4_0, Q4_0},
    {"Q4_1", MOSTLY_Q4_1, Q4_1},
    {"MXFP4_MOE", MOSTLY_MXFP4_MOE, MXFP4},
    {"Q5_0", MOSTLY_Q5_0, Q5_0},
    {"Q5_1", MOSTLY_Q5_1, Q5_1},
    {"IQ2_XXS", MOSTLY_IQ2_XXS, IQ2_XXS},
    {"IQ2_XS", MOSTLY_IQ2_XS, IQ2_XS},
    {"IQ2_S", MOSTLY_IQ2_S, IQ2_XS},
    {"IQ2_M", MOSTLY_IQ2_M, IQ2_S},
    {"IQ1_S", MOSTLY_IQ1_S, IQ1_S},
    {"IQ1_M", MOSTLY_IQ1_M, IQ1_M},
    {"TQ1_0", MOSTLY_TQ1_0, TQ1_0},
    {"TQ2_0", MOSTLY_TQ2_0, TQ2_0},
    {"Q2_K", MOSTLY_Q2_K, Q2_K},
    {"Q2_K_S", MOSTLY_Q2_K_S, Q2_K},
    {"IQ3_XXS", MOSTLY_IQ3_XXS, IQ3_XXS},
    {"IQ3_S", MOSTLY_IQ3_S, IQ3_S},
    {"IQ3_M", MOSTLY_IQ3_M, IQ3_S},
    {"IQ3_XS", MOSTLY_IQ3_XS, IQ3_S},
    {"Q3_K_S", MOSTLY_Q3_K_S, Q3_K},
    {"Q3_K_M", MOSTLY_Q3_K_M, Q3_K},
    {"Q3_K_L", MOSTLY_Q3_K_L, Q3_K},
    {"IQ4_NL", MOSTLY_IQ4_NL, IQ4_NL},
    {"IQ4_XS", MOSTLY_IQ4_XS, IQ4_XS},
    {"Q4_K_S", MOSTLY_Q4_K_S, Q4_K},
    {"Q4_K_M", MOSTLY_Q4_K_M, Q4_K},
    {"Q5_K_S", MOSTLY_Q5_K_S, Q5_K},
    {"Q5_K_M", MOSTLY_Q5_K_M, Q5_K},
    {"Q6_K", MOSTLY_Q6_K, Q6_K},
    {"Q8_0", MOSTLY_Q8_0, Q8_0},
    {"F16", MOSTLY_F16, F16},
    {"BF16", MOSTLY_BF16, BF16},
    {"F32", ALL_F32, F32},
};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

bool has(const std::string& name, const char* part) { return name.find(part) != std::string::npos; }

// ggml_n_dims: dimensions up to the last one above 1.
int n_dims(const Tensor& t) {
  int n = 1;
  for (size_t i = 1; i < t.ne.size(); ++i) {
    if (t.ne[i] > 1) n = static_cast<int>(i) + 1;
  }
  return n;
}

// llama_model_quantize_impl: `quantize &= ...` — which tensors are quantized at all.
bool quantized(const Tensor& t) {
  const std::string& n = t.name;
  if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) return false;
  if (n_dims(t) < 2 || has(n, "_norm.weight") || has(n, "ffn_gate_inp.weight")) return false;
  for (const char* skip : {"altup", "laurel", "per_layer_model_proj", "ssm_conv1d.weight", "shortconv.conv.weight",
                           "time_mix_", "attn_rel_b.weight", ".position_embd."}) {
    if (has(n, skip)) return false;
  }
  return n != "position_embd.weight" && n != "token_types.weight";
}

// The quantize_state_impl counters llama_tensor_get_type reads.
struct State {
  const Model& m;
  int ftype;
  bool seventy_b;
  int n_attention_wv = 0, i_attention_wv = 0;
  int i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
  bool has_output = false;
  int64_t n_gqa() const {  // hparams.n_gqa() of layer 0
    const auto& hp = m.hp;
    return hp.n_head_kv.empty() || hp.n_head_kv[0] == 0 ? 0 : hp.n_head[0] / hp.n_head_kv[0];
  }
};

bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }  // use_more_bits

bool any_of(int f, std::initializer_list<int> fs) { return std::find(fs.begin(), fs.end(), f) != fs.end(); }

// The layer of an expert tensor (layer_info: "blk.%d." when n_expert > 1),
// else the running counter.
int layer_of(const State& s, const Tensor& t, int counter) { return s.m.hp.n_expert > 1 ? t.layer : counter; }

int output_type(const State& s, const Tensor& t, int type) {
  const int f = s.ftype;
  if (f == MOSTLY_MXFP4_MOE) return Q8_0;
  if (s.m.hp.arch == "falcon" || t.ne[0] % ggml_type(type)->block != 0) return Q8_0;
  if (any_of(f,
             {MOSTLY_IQ2_XXS, MOSTLY_IQ2_XS, MOSTLY_IQ3_XXS, MOSTLY_IQ1_S, MOSTLY_IQ2_S, MOSTLY_IQ2_M, MOSTLY_IQ1_M})) {
    return Q5_K;
  }
  return type != Q8_0 ? Q6_K : type;
}

int low_bit_type(State& s, const Tensor& t, int type) {  // the IQ1 / IQ2 branch
  const int f = s.ftype;
  const auto& hp = s.m.hp;
  const std::string& n = t.name;
  if (has(n, "attn_v.weight")) {
    if (s.n_gqa() >= 4 || hp.n_expert >= 4) {
      type = Q4_K;
    } else {
      type = f == MOSTLY_IQ2_S || f == MOSTLY_IQ2_M ? IQ3_S : Q2_K;
    }
    ++s.i_attention_wv;
  } else if (hp.n_expert == 8 && has(n, "attn_k.weight")) {
    type = Q4_K;
  } else if (has(n, "ffn_down")) {
    if (s.i_ffn_down < hp.n_layer / 8) type = f == MOSTLY_IQ2_S || f == MOSTLY_IQ2_M ? IQ3_S : Q2_K;
    ++s.i_ffn_down;
  } else if (has(n, "attn_output.weight")) {
    if (hp.n_expert == 8) {
      type = Q5_K;
    } else if (f == MOSTLY_IQ1_S || f == MOSTLY_IQ1_M) {
      type = IQ2_XXS;
    } else if (f == MOSTLY_IQ2_S || f == MOSTLY_IQ2_M) {
      type = IQ3_S;
    }
  }
  return type;
}

int attn_v_type(State& s, int type) {
  const int f = s.ftype;
  const auto& hp = s.m.hp;
  const int64_t gqa = s.n_gqa();
  if (f == MOSTLY_Q2_K) {
    type = gqa >= 4 ? Q4_K : Q3_K;
  } else if (f == MOSTLY_Q2_K_S && gqa >= 4) {
    type = Q4_K;
  } else if (f == MOSTLY_IQ3_XXS) {
    type = gqa >= 4 ? Q4_K : IQ3_S;  // no imatrix (llama-quantize without --imatrix)
  } else if ((f == MOSTLY_IQ3_XS || f == MOSTLY_IQ3_S) && gqa >= 4) {
    type = Q4_K;
  } else if (f == MOSTLY_IQ3_M) {
    type = Q4_K;
  } else if (f == MOSTLY_Q3_K_M) {
    type = s.i_attention_wv < 2 ? Q5_K : Q4_K;
  } else if (f == MOSTLY_Q3_K_L) {
    type = Q5_K;
  } else if ((f == MOSTLY_IQ4_NL || f == MOSTLY_IQ4_XS) && gqa >= 4) {
    type = Q5_K;
  } else if ((f == MOSTLY_Q4_K_M || f == MOSTLY_Q5_K_M) && more_bits(s.i_attention_wv, s.n_attention_wv)) {
    type = Q6_K;
  } else if (f == MOSTLY_Q4_K_S && s.i_attention_wv < 4) {
    type = Q5_K;
  }
  if (s.seventy_b && (type == Q3_K || type == Q4_K)) type = Q5_K;
  if (hp.n_expert == 8) type = Q8_0;
  ++s.i_attention_wv;
  return type;
}

int ffn_down_type(State& s, const Tensor& t, int type) {
  const int f = s.ftype;
  const bool falcon = s.m.hp.arch == "falcon";
  const int n = static_cast<int>(s.m.hp.n_layer);
  const int i = layer_of(s, t, s.i_ffn_down);
  if (f == MOSTLY_Q2_K) {
    type = Q3_K;
  } else if (f == MOSTLY_Q2_K_S) {
    if (i < n / 8) type = Q4_K;
  } else if (f == MOSTLY_IQ3_XXS) {
    type = i < n / 8 ? Q4_K : Q3_K;  // no imatrix
  } else if (f == MOSTLY_Q3_K_M) {
    type = i < n / 16 ? Q5_K : !falcon || more_bits(i, n) ? Q4_K : Q3_K;
  } else if (f == MOSTLY_IQ3_M && (i < n / 8 || (s.m.hp.n_expert == 8 && more_bits(i, n)))) {
    type = Q4_K;
  } else if (f == MOSTLY_Q3_K_L) {
    type = falcon ? Q4_K : Q5_K;
  } else if (f == MOSTLY_Q4_K_M) {
    if (falcon) {
      type = i < n / 16 ? Q6_K : more_bits(i, n) ? Q5_K : Q4_K;
    } else if (more_bits(i, n)) {
      type = Q6_K;
    }
  } else if (i < n / 8 && (f == MOSTLY_IQ4_NL || f == MOSTLY_IQ4_XS)) {
    type = Q5_K;  // no imatrix
  } else if (f == MOSTLY_Q5_K_M && more_bits(i, n)) {
    type = Q6_K;
  } else if (f == MOSTLY_Q4_K_S && !falcon && i < n / 8) {
    type = Q5_K;
  }
  ++s.i_ffn_down;
  return type;
}

int attn_output_type(const State& s, int type) {
  const int f = s.ftype;
  if (s.m.hp.arch == "falcon") return f == MOSTLY_Q3_K_L ? Q4_K : type;
  if (s.m.hp.n_expert == 8) {
    return any_of(f, {MOSTLY_Q2_K, MOSTLY_IQ3_XS, MOSTLY_IQ3_XXS, MOSTLY_Q3_K_S, MOSTLY_Q3_K_M, MOSTLY_IQ4_NL,
                      MOSTLY_Q4_K_S, MOSTLY_Q4_K_M, MOSTLY_IQ3_S, MOSTLY_IQ3_M, MOSTLY_IQ4_XS})
               ? Q5_K
               : type;
  }
  if (f == MOSTLY_Q2_K) return Q3_K;
  if (f == MOSTLY_IQ3_XXS) return IQ3_S;
  if (f == MOSTLY_Q3_K_M) return Q4_K;
  if (f == MOSTLY_Q3_K_L) return Q5_K;
  if (f == MOSTLY_IQ3_M) return Q4_K;
  return type;
}

// llama_tensor_get_type's fallback when a row does not hold whole blocks.
int fallback(const Tensor& t, int type) {
  if (t.ne[0] % ggml_type(type)->block == 0) return type;
  switch (type) {
    case TQ1_0:
    case TQ2_0:
      type = Q4_0;
      break;
    case Q4_K:
      type = Q5_0;
      break;
    case Q5_K:
      type = Q5_1;
      break;
    case Q6_K:
      type = Q8_0;
      break;
    case IQ2_XXS:
    case IQ2_XS:
    case IQ2_S:
    case IQ3_XXS:
    case IQ3_S:
    case IQ1_S:
    case IQ1_M:
    case Q2_K:
    case Q3_K:
    case IQ4_XS:
      type = IQ4_NL;
      break;
    default:
      type = F16;  // llama-quantize stops ("Unsupported tensor size encountered"); F16 is the bound
  }
  return t.ne[0] % ggml_type(type)->block == 0 ? type : F16;
}

int tensor_type(State& s, const Tensor& t, int type) {
  const int f = s.ftype;
  const std::string& n = t.name;
  if (n == "output.weight" || (!s.has_output && n == "token_embd.weight")) {
    type = output_type(s, t, type);
  } else if (f == MOSTLY_MXFP4_MOE) {
    type = t.ne.size() > 2 && t.ne[2] > 1 ? MXFP4 : Q8_0;
  } else if (n == "token_embd.weight" || n == "per_layer_token_embd.weight") {
    if (any_of(f, {MOSTLY_IQ2_XXS, MOSTLY_IQ2_XS, MOSTLY_IQ1_S, MOSTLY_IQ1_M})) type = Q2_K;
    if (any_of(f, {MOSTLY_IQ2_S, MOSTLY_IQ2_M, MOSTLY_IQ3_XXS})) type = IQ3_S;
    if (any_of(f, {MOSTLY_TQ1_0, MOSTLY_TQ2_0})) type = Q4_K;
  } else if (any_of(f, {MOSTLY_IQ2_XXS, MOSTLY_IQ2_XS, MOSTLY_IQ1_S, MOSTLY_IQ2_S, MOSTLY_IQ2_M, MOSTLY_IQ1_M})) {
    type = low_bit_type(s, t, type);
  } else if (has(n, "attn_v.weight")) {
    type = attn_v_type(s, type);
  } else if (has(n, "attn_k.weight")) {
    if (s.m.hp.n_expert == 8) {
      type = Q8_0;
    } else if (f == MOSTLY_IQ3_XS) {
      type = IQ3_XXS;
    } else if (f == MOSTLY_IQ3_XXS) {
      type = IQ2_S;
    }
  } else if (has(n, "attn_q.weight")) {
    if (f == MOSTLY_IQ3_XS) type = IQ3_XXS;
    if (f == MOSTLY_IQ3_XXS) type = IQ2_S;
  } else if (has(n, "ffn_down")) {
    type = ffn_down_type(s, t, type);
  } else if (has(n, "attn_output.weight")) {
    type = attn_output_type(s, type);
  } else if (has(n, "attn_qkv.weight")) {
    if (any_of(f, {MOSTLY_Q3_K_M, MOSTLY_Q3_K_L, MOSTLY_IQ3_M})) type = Q4_K;
    if (f == MOSTLY_Q4_K_M) type = Q5_K;
    if (f == MOSTLY_Q5_K_M) type = Q6_K;
  } else if (has(n, "ffn_gate") || has(n, "ffn_up")) {
    int& counter = has(n, "ffn_gate") ? s.i_ffn_gate : s.i_ffn_up;
    const int nl = static_cast<int>(s.m.hp.n_layer);
    const int i = layer_of(s, t, counter);
    if (f == MOSTLY_IQ3_XS && i >= nl / 8 && i < 7 * nl / 8) type = IQ3_XXS;
    ++counter;
  }
  return fallback(t, type);
}

}  // namespace

const std::vector<Preset>& presets() { return kPresets; }

const Preset* preset_named(std::string_view name) {
  // quantize.cpp QUANT_OPTIONS aliases.
  if (iequals(name, "Q4_K")) name = "Q4_K_M";
  if (iequals(name, "Q5_K")) name = "Q5_K_M";
  if (iequals(name, "Q3_K")) name = "Q3_K_M";
  for (const auto& p : kPresets) {
    if (iequals(name, p.name)) return &p;
  }
  return nullptr;
}

std::string ftype_name(int64_t ftype) {
  for (const auto& p : kPresets) {
    if (p.ftype == ftype) return p.name;
  }
  return "";
}

void apply_preset(Model& m, const Preset& p, bool seventy_b) {
  // llama_model_quantize_impl walks ml.weights_map, ordered by
  // llama-model-loader.h weight_name_comparer (block number, -1 outside the
  // blocks, then name): the order of its counters and of the file it writes.
  std::stable_sort(m.tensors.begin(), m.tensors.end(), [](const Tensor& a, const Tensor& b) {
    return a.layer != b.layer ? a.layer < b.layer : a.name < b.name;
  });
  State s{m, p.ftype, seventy_b};
  for (const auto& t : m.tensors) {
    if (has(t.name, "attn_v.weight") || has(t.name, "attn_qkv.weight") || has(t.name, "attn_kv_b.weight")) {
      ++s.n_attention_wv;
    } else if (t.name == "output.weight") {
      s.has_output = true;
    }
  }
  const GgmlType* def = ggml_type(p.type);
  for (auto& t : m.tensors) {
    if (!quantized(t)) continue;
    int type = p.type;
    if (def->quantized) type = tensor_type(s, t, type);  // --pure off
    t.type = ggml_type(type);
    t.bytes = t.elements / t.type->block * t.type->bytes;
  }
  // Offsets as gguf_write lays the data out: each tensor padded to the
  // default alignment of 32 bytes (gguf.cpp GGUF_DEFAULT_ALIGNMENT).
  int64_t offset = 0;
  for (auto& t : m.tensors) {
    t.offset = offset;
    offset += (t.bytes + 31) / 32 * 32;
  }
  m.file_type = p.ftype;
}

}  // namespace vram::gguf

// Tensors -> ModelSpec: one ParamGroup per module name and shape (repeated
// over layers and experts), each with its dequantised parameter count, and
// the architecture facts inferred from the shapes (vram/checkpoint.h).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "checkpoint/inventory.h"
#include "checkpoint/names.h"
#include "families/llama_like.h"
#include "vram/checkpoint.h"
#include "vram/families.h"

namespace vram::detail {

namespace {

struct Module {
  std::string path;
  Placement pl;
  const TensorIn* main = nullptr;
  Attr main_kind = Attr::kWeight;
  const TensorIn* bias = nullptr;
  const TensorIn* scales = nullptr;  // GPTQ / AWQ scales: [in / group, out]
  const TensorIn* g_idx = nullptr;   // GPTQ g_idx: [in]
  bool bnb4 = false;                 // bitsandbytes 4-bit QuantState tensors present
  int64_t bytes = 0;
  std::vector<std::string> names;
};

// One module's layout once dequantised.
struct Layout {
  ModuleKind kind = ModuleKind::kOther;
  int64_t in = 0, out = 0;
  int64_t copies = 1;  // fused experts hold `copies` experts in one tensor
  int64_t numel = 0;   // parameters of one copy, bias included
  bool bias = false;
  bool needs_dims = false;  // bitsandbytes 4-bit: the packed bytes do not say in and out
};

struct Group {
  Placement pl;
  Layout lay;
  std::map<int64_t, int64_t> per_layer;  // layer -> copies
  int64_t copies = 0;
  bool extra_layer = false;
  std::vector<std::string> names;
};

// The config object facts come from: text_config for VLMs.
const json* text_config(const json* cfg) {
  if (cfg == nullptr || !cfg->is_object()) return nullptr;
  if (auto it = cfg->find("text_config"); it != cfg->end() && it->is_object()) return &*it;
  return cfg;
}

std::optional<int64_t> cfg_int(const json* c, std::initializer_list<const char*> keys) {
  if (c == nullptr) return std::nullopt;
  for (const char* k : keys) {
    auto it = c->find(k);
    if (it != c->end() && it->is_number_integer() && it->get<int64_t>() > 0) return it->get<int64_t>();
  }
  return std::nullopt;
}

// Bits of a packed integer weight: quantization_config.bits (GPTQ, AWQ),
// w_bit (old AutoAWQ configs), or compressed-tensors config_groups.*.weights.num_bits.
std::optional<int64_t> packed_bits(const json* cfg) {
  if (cfg == nullptr || !cfg->is_object()) return std::nullopt;
  auto q = cfg->find("quantization_config");
  if (q == cfg->end() || !q->is_object()) return std::nullopt;
  if (auto b = cfg_int(&*q, {"bits", "w_bit"})) return b;
  if (auto g = q->find("config_groups"); g != q->end() && g->is_object()) {
    for (const auto& [_, grp] : g->items()) {
      if (auto w = grp.find("weights"); grp.is_object() && w != grp.end() && w->is_object()) {
        if (auto b = cfg_int(&*w, {"num_bits"})) return b;
      }
    }
  }
  return std::nullopt;
}

// A plain, FP8, int8 or bitsandbytes weight: its layout from its shape.
Layout weight_layout(const Module& m) {
  Layout l;
  const TensorIn& t = *m.main;
  const auto& s = t.shape;
  const Role role = m.pl.role;
  if (m.bnb4) {
    // bitsandbytes Params4bit: two 4-bit values per stored byte
    // (functional.py quantize_4bit packs pairs); the logical shape is in
    // the quant_state blob, not the header.
    l.kind = ModuleKind::kLinear;
    l.numel = 2 * t.numel;
    l.needs_dims = true;
  } else if (s.size() == 2 && role == Role::kEmbedding) {
    l.kind = ModuleKind::kEmbedding;
    l.in = s[0];
    l.out = s[1];
    l.numel = t.numel;
  } else if (s.size() == 2) {
    l.kind = ModuleKind::kLinear;  // nn.Linear.weight is [out_features, in_features]
    l.out = s[0];
    l.in = s[1];
    l.numel = t.numel;
  } else if (s.size() == 1 && role == Role::kNorm) {
    l.kind = ModuleKind::kNorm;
    l.out = s[0];
    l.numel = t.numel;
  } else if (s.size() == 3 && role == Role::kExperts) {
    l.kind = ModuleKind::kLinear;  // stacked per-expert nn.Linear weights [experts, out, in]
    l.copies = s[0];
    l.out = s[1];
    l.in = s[2];
    l.numel = s[1] * s[2];
  } else {
    l.numel = t.numel;  // convolutions, scalars
  }
  return l;
}

// GPTQ / AWQ qweight or compressed-tensors weight_packed: int32 words of
// `bits`-bit values.
Layout packed_layout(const Module& m, int64_t bits, std::vector<std::string>& notes) {
  Layout l;
  const TensorIn& t = *m.main;
  const auto& s = t.shape;
  if (m.main->name.size() >= 14 && m.main->name.rfind("weight_packed") == m.main->name.size() - 13 && s.size() == 2) {
    // compressed-tensors pack-quantized: weight_packed [out, in x bits / 32] int32.
    l.kind = ModuleKind::kLinear;
    l.out = s[0];
    l.in = s[1] * (32 / bits);
    l.numel = l.in * l.out;
  } else if (s.size() == 2 && m.scales != nullptr && m.scales->shape.size() == 2) {
    // GPTQ qweight [in x bits / 32, out] with g_idx [in] (auto_gptq
    // QuantLinear); AWQ qweight [in, out x bits / 32] (autoawq WQLinear_GEMM).
    // Both keep scales [in / group, out].
    l.kind = ModuleKind::kLinear;
    l.out = m.scales->shape[1];
    if (s[1] == l.out) {
      l.in = m.g_idx != nullptr && m.g_idx->shape.size() == 1 ? m.g_idx->shape[0] : s[0] * (32 / bits);
    } else {
      l.in = s[0];
    }
    l.numel = l.in * l.out;
  } else {
    l.numel = t.numel * (32 / bits);
    notes.push_back(m.main->name + ": packed weight without scales; counted as " + std::to_string(32 / bits) +
                    " values per int32");
  }
  return l;
}

// A bare parameter (kRaw) or MXFP4 blocks (kBlocks).
Layout raw_or_blocks_layout(const Module& m) {
  Layout l;
  const TensorIn& t = *m.main;
  const auto& s = t.shape;
  if (m.main_kind == Attr::kRaw) {
    if (s.size() == 3 && m.pl.role == Role::kExperts) {
      // gpt-oss / Llama 4 fused experts: nn.Parameter [experts, hidden, 2 x
      // expert width] (modeling_gpt_oss.py GptOssExperts.gate_up_proj,
      // modeling_llama4.py Llama4TextExperts).
      l.kind = ModuleKind::kLinear;
      l.copies = s[0];
      l.in = s[1];
      l.out = s[2];
      l.numel = s[1] * s[2];
    } else {
      l.numel = t.numel;
    }
    return l;
  }
  // MXFP4: blocks of 32 FP4 values in 16 bytes, one E8M0 scale per block
  // (OCP Microscaling spec v1.0 §5; transformers integrations/mxfp4.py
  // convert_moe_packed_tensors): [experts, out, in / 32, 16].
  l.kind = ModuleKind::kLinear;
  if (s.size() == 4) {
    l.copies = s[0];
    l.out = s[1];
    l.in = s[2] * s[3] * 2;
  } else if (s.size() == 3) {
    l.out = s[0];
    l.in = s[1] * s[2] * 2;
  } else {
    l.kind = ModuleKind::kOther;
  }
  l.numel = l.kind == ModuleKind::kLinear ? l.in * l.out : 2 * t.numel;
  return l;
}

Layout layout_of(const Module& m, int64_t bits, std::vector<std::string>& notes) {
  Layout l;
  switch (m.main_kind) {
    case Attr::kWeight:
      l = weight_layout(m);
      break;
    case Attr::kPacked:
      l = packed_layout(m, bits, notes);
      break;
    case Attr::kRaw:
    case Attr::kBlocks:
      l = raw_or_blocks_layout(m);
      break;
    default:
      l.numel = m.main->numel;
  }
  if (m.bias != nullptr) {
    const int64_t per_copy = m.bias->numel / std::max<int64_t>(l.copies, 1);
    l.numel += per_copy;
    l.bias = true;
  }
  if (m.pl.role == Role::kUnplaced) {
    // Not knowing what it is, it is neither a LoRA target nor quantised:
    // kept whole in its dtype, the larger choice.
    l.kind = ModuleKind::kOther;
  }
  return l;
}

const char* component_of(const Placement& pl) {
  if (pl.stack == "vision_tower") return comp::kVision;
  if (pl.stack == "projector") return comp::kProjector;
  if (pl.stack == "audio_tower") return "audio_tower";
  switch (pl.role) {
    case Role::kEmbedding:
      return comp::kEmbeddings;
    case Role::kAttention:
      return comp::kAttention;
    case Role::kMlp:
    case Role::kSharedMlp:
      return comp::kMlp;
    case Role::kExperts:
      return comp::kExperts;
    case Role::kRouter:
      return comp::kRouter;
    case Role::kNorm:
      return comp::kNorms;
    case Role::kHead:
      return comp::kLmHead;
    default:
      return comp::kOther;
  }
}

std::string join_names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// ---- tensors -> modules -------------------------------------------------------
// Which module each tensor belongs to, and what it is to it (weight, bias,
// quantisation metadata); buffers are counted apart. Also decides the
// checkpoint's quantisation.
std::map<std::string, Module> collect_modules(const std::vector<TensorIn>& tensors, const std::string& path,
                                              CheckpointSummary& sum) {
  std::set<std::string> names;
  for (const auto& t : tensors) names.insert(t.name);
  std::map<std::string, Module> modules;
  for (const auto& t : tensors) {
    const NameParts np = split_name(t.name, static_cast<int64_t>(t.shape.size()), names);
    if (np.kind == Attr::kBuffer) {
      sum.buffers.push_back(t.name);
      sum.buffer_elements += t.numel;
      sum.replicated_bytes += t.bytes;
      continue;
    }
    Module& m = modules[np.module];
    m.path = np.module;
    m.bytes += t.bytes;
    m.names.push_back(t.name);
    switch (np.kind) {
      case Attr::kWeight:
      case Attr::kPacked:
      case Attr::kBlocks:
      case Attr::kRaw:
        if (m.main != nullptr) {
          fail(errc::kInconsistent, path + ".tensors",
               "tensors " + m.main->name + " and " + t.name + " both hold the weight of module " + np.module);
        }
        m.main = &t;
        m.main_kind = np.kind;
        if (np.kind == Attr::kPacked) sum.quantization = np.attr == "qweight" ? "gptq" : "compressed_tensors";
        if (np.kind == Attr::kBlocks) sum.quantization = "mxfp4";
        if (np.kind == Attr::kWeight && t.dtype.rfind("F8_", 0) == 0 && sum.quantization.empty()) {
          sum.quantization = "fp8";
        }
        break;
      case Attr::kBias:
        m.bias = &t;
        break;
      default:  // kQuantMeta
        if (np.attr == "scales") m.scales = &t;
        if (np.attr == "g_idx") m.g_idx = &t;
        if (np.attr.rfind("absmax", 0) == 0 || np.attr.rfind("quant_state", 0) == 0 ||
            np.attr.rfind("quant_map", 0) == 0) {
          m.bnb4 = true;
          sum.quantization = "bnb_4bit";
        }
        if (np.attr == "SCB" && sum.quantization.empty()) sum.quantization = "bnb_8bit";
        break;
    }
  }
  return modules;
}

// ---- modules -> layouts ---------------------------------------------------------
struct Placed {
  const Module* m;
  Layout lay;
};

// Each module's place in the model and its dequantised layout; splits the
// stored bytes into what tensor parallelism splits and what it replicates.
std::vector<Placed> place_modules(std::map<std::string, Module>& modules, bool encoder_decoder, const json* config,
                                  ModelSpec& spec) {
  CheckpointSummary& sum = spec.checkpoint;
  const std::optional<int64_t> cfg_bits = packed_bits(config);
  int64_t bits = cfg_bits.value_or(4);
  if (bits != 2 && bits != 4 && bits != 8) bits = 4;
  std::vector<Placed> placed;
  bool packed_seen = false;
  for (auto& [p, m] : modules) {
    m.pl = place(p, encoder_decoder);
    if (m.main == nullptr && m.bias == nullptr) {
      sum.replicated_bytes += m.bytes;  // scales of a module without weights (FP8 k_scale / v_scale)
      continue;
    }
    if (m.main == nullptr) {
      Layout l;
      l.numel = m.bias->numel;
      placed.push_back({&m, l});
    } else {
      if (m.main_kind == Attr::kPacked) packed_seen = true;
      // GPTQ and AWQ both store qweight; AWQ packs along the output
      // dimension (qweight [in, out x bits / 32]).
      if (m.main_kind == Attr::kPacked && m.scales != nullptr && m.main->shape.size() == 2 &&
          m.scales->shape.size() == 2 && m.main->shape[1] != m.scales->shape[1]) {
        sum.quantization = "awq";
      }
      placed.push_back({&m, layout_of(m, bits, spec.notes)});
    }
    const Layout& l = placed.back().lay;
    const bool split = l.kind == ModuleKind::kLinear || l.kind == ModuleKind::kEmbedding;
    (split ? sum.split_bytes : sum.replicated_bytes) += m.bytes;
  }
  if (packed_seen && !cfg_bits) {
    spec.notes.push_back(
        "packed integer weights: quantization_config.bits not given, 4 bits assumed where g_idx "
        "does not give the input size");
  }
  return placed;
}

// ---- layers -------------------------------------------------------------------------
// The decoder's depth: the highest layer number seen, capped by the config's
// num_hidden_layers (layers past it are multi-token-prediction weights).
int64_t stack_depth(const std::vector<Placed>& placed, const json* tc, const std::string& path, ModelSpec& spec) {
  int64_t max_layer = -1;
  for (const auto& x : placed) {
    if (x.m->pl.stack == "text" && x.m->pl.layer >= 0 && !x.m->pl.mtp) {
      max_layer = std::max(max_layer, x.m->pl.layer);
    }
  }
  if (max_layer < 0) {
    fail(errc::kUnsupportedModel, path + ".tensors",
         path +
             ".tensors: no repeated decoder layers recognised (module names layers.N, h.N, blocks.N, block.N or "
             "layer.N): the stack cannot be inferred from these tensor names");
  }
  int64_t L = max_layer + 1;
  const auto cfg_layers = cfg_int(tc, {"num_hidden_layers", "n_layer", "num_layers", "n_layers"});
  if (cfg_layers && *cfg_layers < L) {
    spec.notes.push_back("the checkpoint holds layers " + std::to_string(*cfg_layers) + ".." + std::to_string(L - 1) +
                         " past config num_hidden_layers (" + std::to_string(*cfg_layers) +
                         "): multi-token-prediction weights transformers does not load; counted as stored weights");
    L = *cfg_layers;
  } else if (cfg_layers && *cfg_layers > L) {
    spec.notes.push_back("config num_hidden_layers is " + std::to_string(*cfg_layers) + " but the checkpoint holds " +
                         std::to_string(L) + " layers: the checkpoint's count is used");
  }
  return L;
}

// ---- modules -> groups ---------------------------------------------------------------
// Modules of the same place and layout, gathered over layers and experts.
struct Groups {
  std::map<std::string, Group> by_key;
  std::vector<std::string> order;

  const Group& at(const std::string& k) const { return by_key.at(k); }
  // The first per-layer text group of `role` whose leaf is one of `leaves`.
  const Group* find(std::initializer_list<const char*> leaves, Role role) const {
    for (const auto& k : order) {
      const Group& g = at(k);
      if (g.pl.stack != "text" || g.pl.layer < 0 || g.extra_layer || g.pl.role != role) continue;
      for (const char* leaf : leaves) {
        if (g.pl.leaf == leaf) return &g;
      }
    }
    return nullptr;
  }
};

Groups group_modules(const std::vector<Placed>& placed, int64_t L) {
  Groups gs;
  for (const auto& x : placed) {
    const Placement& pl = x.m->pl;
    const Layout& l = x.lay;
    const bool extra = pl.stack == "text" && (pl.layer >= L || pl.mtp);
    const std::string key = pl.stack + "|" + pl.canonical + "|" + std::to_string(static_cast<int>(l.kind)) + "|" +
                            std::to_string(l.in) + "x" + std::to_string(l.out) + "|" + std::to_string(l.numel) +
                            (l.bias ? "b" : "") + (extra ? "|extra" : "");
    auto [it, fresh] = gs.by_key.try_emplace(key);
    Group& g = it->second;
    if (fresh) {
      g.pl = pl;
      g.lay = l;
      g.extra_layer = extra;
      gs.order.push_back(key);
    }
    g.per_layer[pl.layer] += l.copies;
    g.copies += l.copies;
    if (pl.role == Role::kUnplaced || extra) {
      for (const auto& n : x.m->names) g.names.push_back(n);
    }
  }
  return gs;
}

// ---- facts from the shapes -------------------------------------------------------------
// The hidden size, the vocabulary, tied embeddings and learned positions,
// from the embedding, head and final norm outside the layers.
void infer_embeddings(const Groups& gs, const json* tc, const std::string& path, ModelSpec& spec) {
  LayerStack& t = spec.text;
  const Group* embed = nullptr;
  const Group* head = nullptr;
  const Group* pos = nullptr;
  int64_t final_norm = 0;
  for (const auto& k : gs.order) {
    const Group& g = gs.at(k);
    if (g.pl.stack != "text" || g.pl.layer >= 0) continue;
    if (g.pl.role == Role::kEmbedding && g.lay.kind == ModuleKind::kEmbedding) {
      const bool positional =
          g.pl.leaf.find("position") != std::string::npos || g.pl.leaf == "wpe" || g.pl.leaf == "token_type_embeddings";
      if (positional && pos == nullptr) pos = &g;
      if (!positional && embed == nullptr) embed = &g;
    }
    if (g.pl.role == Role::kHead && head == nullptr) head = &g;
    if (g.pl.role == Role::kNorm && final_norm == 0) final_norm = g.lay.out;
  }
  const Group* q = gs.find({"q_proj", "query", "q", "wq"}, Role::kAttention);
  int64_t hidden = embed != nullptr ? embed->lay.out : final_norm > 0 ? final_norm : q != nullptr ? q->lay.in : 0;
  if (auto h = cfg_int(tc, {"hidden_size", "d_model", "n_embd"}); h && hidden == 0) hidden = *h;
  if (hidden <= 0) {
    fail(errc::kUnsupportedModel, path + ".tensors",
         path +
             ".tensors: the hidden size cannot be inferred (no embedding, final norm or query projection "
             "recognised)");
  }
  t.hidden = hidden;
  spec.vocab = embed != nullptr  ? embed->lay.in
               : head != nullptr ? head->lay.out
                                 : cfg_int(tc, {"vocab_size"}).value_or(0);
  if (spec.vocab <= 0) {
    fail(errc::kUnsupportedModel, path + ".tensors",
         path + ".tensors: the vocabulary cannot be inferred (no token embedding or output head recognised)");
  }
  spec.tie_word_embeddings = head == nullptr && embed != nullptr;
  if (spec.tie_word_embeddings) spec.notes.push_back("no output head stored: tied to the input embeddings");
  t.position_encoding = pos != nullptr ? "learned" : "";
  spec.max_position_embeddings = pos != nullptr ? pos->lay.in : cfg_int(tc, {"max_position_embeddings"}).value_or(0);
}

// The query and key/value widths: exact from q/k/v (or a fused q/k/v with
// the config's head counts), split into heads by head_dim (config head_dim,
// else the per-head q_norm's width, else hidden / heads from the config, else
// 128 or the largest power of two dividing the widths).
void infer_attention(const Groups& gs, const json* tc, const std::string& path, ModelSpec& spec) {
  LayerStack& t = spec.text;
  const int64_t hidden = t.hidden;
  const Group* q = gs.find({"q_proj", "query", "q", "wq"}, Role::kAttention);
  const Group* k = gs.find({"k_proj", "key", "k", "wk"}, Role::kAttention);
  const Group* v = gs.find({"v_proj", "value", "v", "wv"}, Role::kAttention);
  const Group* qkv = gs.find({"qkv_proj", "query_key_value", "c_attn", "Wqkv", "wqkv", "qkv"}, Role::kAttention);
  const Group* qn = gs.find({"q_norm", "q_layernorm"}, Role::kNorm);
  int64_t q_out = q != nullptr ? q->lay.out : 0;
  int64_t kv_out = k != nullptr ? k->lay.out : v != nullptr ? v->lay.out : 0;
  const auto cfg_heads = cfg_int(tc, {"num_attention_heads", "n_head", "num_heads"});
  const auto cfg_kv = cfg_int(tc, {"num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num"});
  int64_t head_dim = cfg_int(tc, {"head_dim", "attention_head_size"}).value_or(0);
  if (head_dim == 0 && qn != nullptr && q_out > 0 && qn->lay.out < q_out && q_out % qn->lay.out == 0) {
    head_dim = qn->lay.out;
  }
  if (q_out == 0 && qkv != nullptr) {
    // Fused q/k/v: with the config's head counts the split is exact; without
    // them the three are assumed equal (multi-head attention).
    const int64_t w = qkv->lay.out;
    if (cfg_heads && head_dim == 0) head_dim = hidden / *cfg_heads;
    if (cfg_heads && head_dim > 0 && w > *cfg_heads * head_dim) {
      q_out = *cfg_heads * head_dim;
      kv_out = (w - q_out) / 2;
    } else {
      q_out = w / 3;
      kv_out = w / 3;
      spec.notes.push_back("fused q/k/v projection (" + qkv->pl.leaf +
                           ") without num_attention_heads / num_key_value_heads: split in three equal parts (MHA)");
    }
  }
  if (q_out == 0) {
    q_out = hidden;
    kv_out = hidden;
    spec.exact = false;
    spec.inexact.push_back(
        "no attention projections recognised: activations and KV cache are those of a hidden-wide multi-head "
        "attention layer in every layer (an upper bound for attention-free layers)");
  }
  if (kv_out == 0) kv_out = q_out;
  if (head_dim == 0 && cfg_heads && q_out % *cfg_heads == 0) head_dim = q_out / *cfg_heads;
  if (head_dim == 0) {
    // 128 (Llama, Mistral, Qwen), else the largest power of two dividing both widths.
    head_dim = 128;
    while (head_dim > 1 && (q_out % head_dim != 0 || kv_out % head_dim != 0)) head_dim /= 2;
    spec.notes.push_back("head_dim not in the config: " + std::to_string(head_dim) +
                         " assumed (the KV cache depends only on the key/value widths, which are exact)");
  }
  if (q_out % head_dim != 0 || kv_out % head_dim != 0) {
    fail(errc::kInconsistent, path + ".tensors",
         path + ".tensors: query width " + std::to_string(q_out) + " and key/value width " + std::to_string(kv_out) +
             " are not multiples of head_dim " + std::to_string(head_dim));
  }
  t.heads = std::max<int64_t>(q_out / head_dim, 1);
  t.kv_heads = std::max<int64_t>(kv_out / head_dim, 1);
  if (t.heads % t.kv_heads != 0) t.kv_heads = t.heads;
  if (cfg_kv && *cfg_kv != t.kv_heads && k != nullptr) {
    spec.notes.push_back("config num_key_value_heads " + std::to_string(*cfg_kv) + " disagrees with k_proj's width (" +
                         std::to_string(t.kv_heads) + " heads of " + std::to_string(head_dim) + "): the shape is used");
  }
  t.head_dim = head_dim;
  t.v_head_dim = head_dim;
  t.attention = attention_kind(t.heads, t.kv_heads);
  t.qk_norm = qn != nullptr && qn->lay.out == head_dim;
}

// The MLP: gate/up width (fused gate_up: half), plain fc1 otherwise.
void infer_mlp(const Groups& gs, ModelSpec& spec) {
  LayerStack& t = spec.text;
  const Group* gate = gs.find({"gate_proj", "w1", "wi_0", "gate"}, Role::kMlp);
  const Group* up =
      gs.find({"up_proj", "w3", "wi_1", "c_fc", "fc1", "dense_h_to_4h", "wi", "intermediate", "up"}, Role::kMlp);
  const Group* gate_up = gs.find({"gate_up_proj"}, Role::kMlp);
  t.mlp = (gate != nullptr || gate_up != nullptr) ? MlpKind::kGated : MlpKind::kPlain;
  t.intermediate = gate_up != nullptr ? gate_up->lay.out / 2
                   : up != nullptr    ? up->lay.out
                   : gate != nullptr  ? gate->lay.out
                                      : 0;
}

// Routed experts: how many per layer, their width, the layers that have
// them, experts per token (config) and the shared experts' width.
std::set<int64_t> infer_experts(const Groups& gs, const json* tc, ModelSpec& spec) {
  LayerStack& t = spec.text;
  std::set<int64_t> moe_layer_set;
  const Group* ex_gate = nullptr;
  const Group* ex_up = nullptr;
  const Group* ex_fused = nullptr;
  for (const auto& key : gs.order) {
    const Group& g = gs.at(key);
    if (g.pl.stack != "text" || g.pl.role != Role::kExperts || g.extra_layer) continue;
    int64_t per_layer = 0;
    for (const auto& [layer, n] : g.per_layer) {
      if (layer >= 0) moe_layer_set.insert(layer);
      per_layer = std::max(per_layer, n);
    }
    t.experts = std::max(t.experts, per_layer);
    if (g.pl.leaf == "gate_up_proj") ex_fused = &g;
    if (g.pl.leaf == "gate_proj" || g.pl.leaf == "w1") ex_gate = &g;
    if (g.pl.leaf == "up_proj" || g.pl.leaf == "w3" || g.pl.leaf == "fc1") ex_up = &g;
  }
  if (t.experts > 0) {
    t.moe_layers = static_cast<int64_t>(moe_layer_set.size());
    t.expert_intermediate = ex_fused != nullptr  ? ex_fused->lay.out / 2
                            : ex_up != nullptr   ? ex_up->lay.out
                            : ex_gate != nullptr ? ex_gate->lay.out
                                                 : t.intermediate;
    if (ex_fused != nullptr || ex_gate != nullptr) t.mlp = MlpKind::kGated;
    const auto topk = cfg_int(tc, {"num_experts_per_tok", "num_experts_per_token", "moe_topk", "top_k",
                                   "num_selected_experts", "experts_per_token"});
    t.experts_per_token = std::min(topk.value_or(2), t.experts);
    if (!topk) {
      spec.notes.push_back("experts per token not in the config (num_experts_per_tok): 2 assumed (Mixtral's)");
    }
    const Group* sh_up = nullptr;
    for (const auto& key : gs.order) {
      const Group& g = gs.at(key);
      if (g.pl.stack == "text" && g.pl.role == Role::kSharedMlp && !g.extra_layer &&
          (g.pl.leaf == "up_proj" || g.pl.leaf == "w3" || g.pl.leaf == "fc1")) {
        sh_up = &g;
      }
    }
    if (sh_up != nullptr) t.shared_expert_intermediate = sh_up->lay.out * std::max<int64_t>(sh_up->lay.copies, 1);
    if (t.intermediate == 0) t.intermediate = t.expert_intermediate;
  }
  if (t.intermediate == 0) t.intermediate = 4 * t.hidden;
  return moe_layer_set;
}

// Norms (a bias makes them LayerNorms), norm sites per layer, activation.
void infer_norms(const Groups& gs, const json* tc, ModelSpec& spec) {
  LayerStack& t = spec.text;
  bool norm_bias = false;
  std::set<std::string> layer_norms;
  for (const auto& key : gs.order) {
    const Group& g = gs.at(key);
    if (g.pl.stack == "text" && g.pl.role == Role::kNorm) {
      norm_bias = norm_bias || g.lay.bias;
      if (g.pl.layer >= 0 && !g.extra_layer && g.lay.out == t.hidden) layer_norms.insert(g.pl.canonical);
    }
  }
  t.norm = norm_bias ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  t.norms_per_layer = std::max<int64_t>(static_cast<int64_t>(layer_norms.size()), 1);
  t.activation = tc != nullptr && tc->contains("hidden_act") && (*tc)["hidden_act"].is_string()
                     ? (*tc)["hidden_act"].get<std::string>()
                     : (t.mlp == MlpKind::kGated ? "silu" : "gelu");
  t.causal = true;
  if (tc != nullptr && (tc->contains("sliding_window") || tc->contains("layer_types"))) {
    spec.notes.push_back(
        "sliding-window layers are not read from a checkpoint: every layer caches the full context "
        "(an upper bound for the KV cache)");
  }
}

// ---- groups -> ParamGroups ----------------------------------------------------------
// One group's ParamGroup(s): which layers it repeats over (every layer, the
// sparse or the dense ones, or one group per layer it is on).
void emit_group(const Group& g, const std::set<int64_t>& moe_layer_set, ModelSpec& spec,
                std::map<std::string, LayerStack>& towers) {
  CheckpointSummary& sum = spec.checkpoint;
  const LayerStack& t = spec.text;
  const int64_t L = t.layers;
  ParamGroup pg;
  pg.module = g.pl.leaf;
  pg.component = component_of(g.pl);
  pg.stack = g.pl.stack;
  pg.kind = g.lay.kind;
  pg.in_features = g.lay.in;
  pg.out_features = g.lay.out;
  pg.bias = g.lay.bias;
  pg.numel = g.lay.numel;
  if (g.lay.needs_dims && pg.kind == ModuleKind::kLinear) {
    // bitsandbytes 4-bit: one side of every decoder Linear is the hidden size.
    if (pg.numel % t.hidden == 0) {
      pg.in_features = g.pl.output_side ? pg.numel / t.hidden : t.hidden;
      pg.out_features = g.pl.output_side ? t.hidden : pg.numel / t.hidden;
      if (pg.bias) pg.numel = pg.in_features * pg.out_features + pg.out_features;
    } else {
      pg.kind = ModuleKind::kOther;
    }
  }
  if (g.pl.role == Role::kUnplaced && !g.extra_layer) {
    for (const auto& n : g.names) sum.unplaced.push_back(n);
    sum.unplaced_params += pg.numel * g.copies;
    pg.module = g.pl.canonical;
  }
  if (g.pl.role == Role::kExperts && t.experts > 0) {
    pg.active_num = t.experts_per_token;
    pg.active_den = t.experts;
  }
  if (g.extra_layer) {
    sum.extra_layer_params += pg.numel * g.copies;
    pg.module = g.pl.canonical;
    pg.component = comp::kOther;
    pg.kind = ModuleKind::kOther;
    pg.instances = g.copies;
    spec.groups.push_back(pg);
    return;
  }
  if (g.pl.stack != "text") {
    LayerStack& st = towers[g.pl.stack];
    st.name = g.pl.stack;
    for (const auto& [layer, _] : g.per_layer) st.layers = std::max(st.layers, layer + 1);
    if (g.pl.role == Role::kNorm && g.lay.out > st.hidden) st.hidden = g.lay.out;
    pg.instances = g.copies;
    spec.groups.push_back(pg);
    return;
  }
  std::set<int64_t> layers;
  for (const auto& [layer, _] : g.per_layer) layers.insert(layer);
  std::set<int64_t> all_layers, dense_layers;
  for (int64_t i = 0; i < L; ++i) {
    all_layers.insert(i);
    if (!moe_layer_set.count(i)) dense_layers.insert(i);
  }
  const int64_t per = g.per_layer.begin()->second;
  const bool uniform =
      std::all_of(g.per_layer.begin(), g.per_layer.end(), [&](const auto& e) { return e.second == per; });
  if (layers.count(-1)) {
    pg.instances = g.copies;
  } else if (uniform && layers == all_layers) {
    pg.layers = LayerSet::kEvery;
    pg.instances = g.copies;
  } else if (uniform && !moe_layer_set.empty() && layers == moe_layer_set) {
    pg.layers = LayerSet::kMoe;
    pg.instances = g.copies;
  } else if (uniform && !dense_layers.empty() && !moe_layer_set.empty() && layers == dense_layers) {
    pg.layers = LayerSet::kDense;
    pg.instances = g.copies;
  } else {
    for (const auto& [layer, n] : g.per_layer) {  // a module on some layers only: one group per layer
      ParamGroup one = pg;
      one.layer_index = layer;
      one.instances = n;
      spec.groups.push_back(one);
    }
    return;
  }
  spec.groups.push_back(pg);
}

// The towers (vision, audio, encoder) and the checkpoint's totals and
// inexact parts, once every group is emitted.
void finish_spec(std::map<std::string, LayerStack>& towers, bool encoder_decoder, ModelSpec& spec) {
  CheckpointSummary& sum = spec.checkpoint;
  for (auto& [name, st] : towers) {
    st.heads = 1;
    st.kv_heads = 1;
    st.head_dim = st.hidden;
    st.v_head_dim = st.hidden;
    st.causal = name == "encoder" ? false : st.causal;
    spec.extra_stacks.push_back(st);
    if (name != "encoder") {
      spec.notes.push_back(name +
                           ": weights counted exactly; its activations are not modelled (no image or audio "
                           "input sizes from a checkpoint)");
    }
  }
  if (encoder_decoder) {
    spec.notes.push_back(
        "encoder-decoder checkpoint: the decoder's cross-attention cache and the encoder's "
        "activations are not modelled");
  }
  for (const auto& g : spec.groups) sum.params += g.total();
  if (!sum.unplaced.empty()) {
    spec.exact = false;
    std::vector<std::string> shown(sum.unplaced.begin(),
                                   sum.unplaced.begin() + std::min<size_t>(sum.unplaced.size(), 8));
    spec.inexact.push_back(std::to_string(sum.unplaced.size()) + " tensors (" + std::to_string(sum.unplaced_params) +
                           " parameters) match no known module name: counted as weights at their stored size, "
                           "trainable under full training, neither quantised nor LoRA targets; their activations "
                           "are not modelled (" +
                           join_names(shown) + (sum.unplaced.size() > shown.size() ? ", ..." : "") + ")");
  }
}

}  // namespace

void build_from_tensors(const std::vector<TensorIn>& tensors, const json* config, const std::string& path,
                        ModelSpec& spec) {
  const json* tc = text_config(config);
  bool encoder_decoder = false;
  for (const auto& t : tensors) {
    if (t.name.rfind("decoder.", 0) == 0 || t.name.find(".decoder.") != std::string::npos) encoder_decoder = true;
  }
  std::map<std::string, Module> modules = collect_modules(tensors, path, spec.checkpoint);
  const std::vector<Placed> placed = place_modules(modules, encoder_decoder, config, spec);
  const int64_t L = stack_depth(placed, tc, path, spec);
  const Groups groups = group_modules(placed, L);
  spec.text.name = "text";
  spec.text.layers = L;
  infer_embeddings(groups, tc, path, spec);
  infer_attention(groups, tc, path, spec);
  infer_mlp(groups, spec);
  const std::set<int64_t> moe_layer_set = infer_experts(groups, tc, spec);
  infer_norms(groups, tc, spec);
  std::map<std::string, LayerStack> towers;
  for (const auto& key : groups.order) emit_group(groups.at(key), moe_layer_set, spec, towers);
  finish_spec(towers, encoder_decoder, spec);
}

}  // namespace vram::detail

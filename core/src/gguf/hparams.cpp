// Hyperparameters from a GGUF file's metadata, as llama.cpp ec98e2002
// llama-model.cpp load_hparams reads them (gguf/model.h).
#include <algorithm>

#include "gguf/model.h"

namespace vram::gguf {

namespace {

// Interleaved sliding-window attention, per architecture (llama-model.cpp
// load_hparams, ec98e2002; llama-hparams.cpp set_swa_pattern: with
// `dense_first` layer il is SWA unless il % pattern == 0, otherwise unless
// il % pattern == pattern - 1).
struct SwaRule {
  const char* arch;
  int64_t pattern;
  bool dense_first;
  int64_t default_window;  // when the file has no <arch>.attention.sliding_window
  bool needs_window;       // SWA only when the file's window is > 0
  bool chunked;            // llama4: chunked attention of n_swa tokens
  const char* source;
};

const SwaRule kSwaRules[] = {
    {"llama4", 4, false, 8192, false, true,
     "LLM_ARCH_LLAMA4: chunked 8192, 3 chunked - 1 full (unless the window is 0)"},
    {"afmoe", 4, false, 0, true, false, "LLM_ARCH_AFMOE: 3 sliding - 1 full when n_swa > 0"},
    {"gemma2", 2, false, 4096, false, false, "LLM_ARCH_GEMMA2: n_swa 4096 by default, pattern 2"},
    {"gemma3", 6, false, 0, true, false, "LLM_ARCH_GEMMA3: pattern 6 when n_swa > 0"},
    {"gemma3n", 5, false, 0, false, false, "LLM_ARCH_GEMMA3N: pattern 5"},
    {"gemma-embedding", 6, false, 0, false, false, "LLM_ARCH_GEMMA_EMBEDDING: symmetric, pattern 6"},
    {"cohere2", 4, false, 0, false, false, "LLM_ARCH_COHERE2: pattern 4"},
    {"olmo2", 4, false, 0, true, false, "LLM_ARCH_OLMO2: pattern 4 when n_swa > 0"},
    {"gpt-oss", 2, false, 0, false, false, "LLM_ARCH_OPENAI_MOE: pattern 2"},
    {"smallthinker", 4, true, 4096, true, false, "LLM_ARCH_SMALLTHINKER: n_swa 4096, dense first, pattern 4"},
};

std::string key(const Hparams& hp, const char* k) { return hp.arch + "." + k; }

int64_t scalar(const JsonReader& md, const std::string& k, int64_t fallback, int64_t lo, int64_t hi) {
  return md.int_or(k, fallback, lo, hi);
}

// llama_model_loader::get_key_or_arr: one value for every layer, or an array
// of n_layer values.
std::vector<int64_t> per_layer(const JsonReader& md, const std::string& k, int64_t n_layer,
                               const std::vector<int64_t>& fallback) {
  const json* v = md.get(k);
  if (v == nullptr) return fallback;
  const std::string p = md.child_path(k);
  if (v->is_array()) {
    if (static_cast<int64_t>(v->size()) != n_layer) {
      fail(errc::kInconsistent, p,
           p + " holds " + std::to_string(v->size()) + " values for " + std::to_string(n_layer) + " layers");
    }
    std::vector<int64_t> out;
    for (const json& x : *v) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > kMaxSize) {
        fail(errc::kOutOfRange, p, p + " must hold integers from 0 to 2^24");
      }
      out.push_back(x.get<int64_t>());
    }
    return out;
  }
  return std::vector<int64_t>(static_cast<size_t>(n_layer), md.int_req(k, 0, kMaxSize));
}

void read_swa(const JsonReader& md, Hparams& hp) {
  hp.swa.assign(static_cast<size_t>(hp.n_layer), false);
  const std::string wk = key(hp, "attention.sliding_window");
  const bool found = md.has(wk);
  const int64_t window = scalar(md, wk, 0, 0, kMaxSize);
  const SwaRule* rule = nullptr;
  for (const auto& r : kSwaRules) {
    if (hp.arch == r.arch) rule = &r;
  }
  int64_t pattern = 0;
  bool dense_first = false;
  if (rule != nullptr) {
    const bool off = (rule->needs_window && window == 0) || (hp.arch == "llama4" && found && window == 0);
    if (!off) {
      pattern = rule->pattern;
      dense_first = rule->dense_first;
      hp.chunked = rule->chunked;
      hp.n_swa = hp.arch == "llama4" || hp.arch == "smallthinker" ? rule->default_window
                 : found                                          ? window
                                                                  : rule->default_window;
    }
  } else if (hp.arch == "exaone4" && hp.n_layer == 64) {
    // LLM_ARCH_EXAONE4: the 32B (64 layers) has n_swa 4096, pattern 4; the
    // file's window, when given, wins.
    pattern = 4;
    hp.n_swa = found ? window : 4096;
  }
  if (pattern == 0 || hp.n_swa == 0) return;
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    hp.swa[static_cast<size_t>(il)] = dense_first ? il % pattern != 0 : il % pattern < pattern - 1;
  }
}

}  // namespace

Hparams read_hparams(const json& meta, const std::vector<Tensor>& tensors, const std::string& path) {
  const JsonReader md(meta, path);
  Hparams hp;
  hp.arch = md.str_or("general.architecture", "");
  hp.n_layer = md.int_req(key(hp, "block_count"), 1, 65536);
  hp.n_embd = md.int_req(key(hp, "embedding_length"), 1, kMaxSize);
  hp.n_ctx_train = scalar(md, key(hp, "context_length"), 0, 0, int64_t{1} << 32);
  hp.n_head = per_layer(md, key(hp, "attention.head_count"), hp.n_layer, std::vector<int64_t>(hp.n_layer, 0));
  hp.n_head_kv = per_layer(md, key(hp, "attention.head_count_kv"), hp.n_layer, hp.n_head);
  hp.n_ff = per_layer(md, key(hp, "feed_forward_length"), hp.n_layer, std::vector<int64_t>(hp.n_layer, 0));
  // n_embd_head_k = n_embd / n_head(0) unless key_length says (the same for v).
  const int64_t head0 = hp.n_head.empty() ? 0 : hp.n_head[0];
  const int64_t even = head0 > 0 && hp.n_embd % head0 == 0 ? hp.n_embd / head0 : 0;
  hp.head_k = scalar(md, key(hp, "attention.key_length"), even, 0, kMaxSize);
  hp.head_v = scalar(md, key(hp, "attention.value_length"), even, 0, kMaxSize);
  for (size_t il = 0; il < hp.n_head_kv.size(); ++il) {
    if (hp.n_head_kv[il] > 0 && (hp.head_k == 0 || hp.head_v == 0)) {
      fail(errc::kMissingField, md.child_path(key(hp, "attention.key_length")),
           md.child_path(key(hp, "attention.key_length")) + " is required: " + key(hp, "embedding_length") +
               " does not divide into the heads of " + key(hp, "attention.head_count"));
    }
  }
  hp.n_expert = scalar(md, key(hp, "expert_count"), 0, 0, 65536);
  hp.n_expert_used = scalar(md, key(hp, "expert_used_count"), 0, 0, 65536);
  hp.n_ff_exp = scalar(md, key(hp, "expert_feed_forward_length"), 0, 0, kMaxSize);
  hp.causal = md.bool_or(key(hp, "attention.causal"), true);
  hp.n_vocab = scalar(md, key(hp, "vocab_size"), 0, 0, kMaxSize);
  for (const auto& t : tensors) {
    if (hp.n_vocab == 0 && t.name == "token_embd.weight" && t.ne.size() >= 2) hp.n_vocab = t.ne[1];
  }
  read_swa(md, hp);
  if (hp.arch == "gemma3n") hp.kv_from_start = 20;  // LLM_ARCH_GEMMA3N: n_layer_kv_from_start = 20
  // LLM_ARCH_GLM4_MOE, LLM_ARCH_BAILINGMOE2: the NextN (multi-token
  // prediction) layers at the end keep no KV and are not loaded.
  const int64_t nextn = scalar(md, key(hp, "nextn_predict_layers"), 0, 0, hp.n_layer);
  if ((hp.arch == "glm4moe" || hp.arch == "bailingmoe2") && nextn > 0) {
    hp.n_nextn = nextn;
    hp.kv_from_start = hp.n_layer - nextn;
  }
  return hp;
}

}  // namespace vram::gguf

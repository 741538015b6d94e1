// Private: the llama.cpp engines' settings (issue 30) — what a request says,
// and what llama.cpp, Ollama and LM Studio make of what it leaves out, by
// release.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/model.h"
#include "vram/request.h"

namespace vram::infer::llama_cpp {

// infer.engine llama_cpp, ollama or lmstudio.
bool is_engine(const std::string& engine);

// Reads the llama.cpp fields of `infer` into req.infer.llama (fields other
// engines do not take are errors naming them, and the reverse).
void parse_options(const JsonReader& infer, Request& req);

// A llama.cpp source whose memory rules differ from the next one's: how the
// context is padded and split, the SWA cache, the defaults.
struct Era {
  const char* name;    // infer.engine_version for llama_cpp
  const char* source;  // the llama.cpp commit read
  bool pad_256;        // n_ctx padded to 256 (PR #17046); else 256 with Flash Attention, 32 without
  bool streams;        // one KV stream per sequence (kv_unified false); else one cache for all
  bool swa_cache;      // a smaller cache for sliding-window layers (llama_kv_cache_iswa)
  bool all_layers;     // llama_model_default_params n_gpu_layers 999; else 0
  bool fa_auto;        // flash_attn_type AUTO by default; else off
  int64_t n_ctx;       // common.h n_ctx default (0 = the model's context_length)
  bool np_auto;        // llama-server: --parallel left out = 4 slots sharing one unified KV cache
  bool fit;            // --fit on by default: unset context and -ngl shrink to keep 1 GiB free per GPU
};

// Everything the estimate needs, defaults applied.
struct Resolved {
  std::string engine;
  const Era* era = nullptr;
  int64_t n_ctx = 0;      // KV cells in all (padded)
  int64_t n_ctx_seq = 0;  // per sequence
  int64_t n_seq = 1;      // n_seq_max (--parallel)
  int64_t n_stream = 1;
  int64_t kv_cells = 0;      // per stream, full-attention layers
  int64_t kv_cells_swa = 0;  // per stream, sliding-window layers
  int64_t n_batch = 2048;
  int64_t n_ubatch = 512;
  bool flash_attn = false;
  const gguf::GgmlType* type_k = nullptr;
  const gguf::GgmlType* type_v = nullptr;
  int64_t gpu_layers = 0;        // resolved -ngl: blocks counted from the last, output layer past n_layer
  bool gpu_layers_auto = false;  // Ollama: its own placement (the largest that fits)
  int32_t gpus = 1;
  std::vector<double> split;  // cumulative fractions, one per GPU
  std::string split_mode = "layer";
  bool kv_offload = true;
  bool mmap = true;
  bool swa_full = false;
  bool kv_unified = false;
  bool embeddings = false;  // the output buffer holds embeddings too (Ollama's runner)
  bool fit_ctx = false;     // --fit may shrink the context (the user left --ctx-size out)
  bool fit_layers = false;  // --fit may lower -ngl (the user left --n-gpu-layers out)
  int64_t n_ctx_train = 0;
  std::vector<std::string> assumptions;
};

// The request's settings for `m`, defaults filled; `total_vram` is the sum
// of the GPUs' memory (Ollama's num_ctx tiers), 0 without a card.
Resolved resolve(const Request& req, const gguf::Model& m, int64_t total_vram);

// The same settings with another -ngl or context (the fit searches).
Resolved with_layers(Resolved r, int64_t gpu_layers);
Resolved with_context(Resolved r, const gguf::Model& m, int64_t n_ctx_requested);

}  // namespace vram::infer::llama_cpp

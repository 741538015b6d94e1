// Private: a GGUF file as llama.cpp loads it (issue 30).
//
// The request's `model.gguf` inventory (vram/gguf.h) becomes a Model: every
// tensor with its ggml type, bytes and the layer llama.cpp assigns it to
// (llama-arch.cpp LLM_TENSOR_INFOS: input, a repeating block, or output),
// and the hyperparameters llama.cpp reads from the metadata
// (llama-model.cpp load_hparams) that size the KV cache and the compute
// graph. The same Model comes from an HF config and a llama-quantize preset
// (gguf/quant_preset.h), so both estimate alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vram/gguf.h"
#include "vram/json_reader.h"
#include "vram/model.h"

namespace vram::gguf {

// Where llama.cpp puts a tensor: LLM_TENSOR_LAYER_INPUT (always the CPU),
// LLM_TENSOR_LAYER_REPEATING (block `layer`'s device), LLM_TENSOR_LAYER_OUTPUT
// (the device of the layer past the last).
enum class Part { kInput, kLayer, kOutput };

struct Tensor {
  std::string name;
  const GgmlType* type = nullptr;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the row length
  int64_t elements = 0;
  int64_t bytes = 0;    // ggml_nbytes
  int64_t offset = -1;  // in the data section, -1 when not known (a preset)
  int32_t shard = 0;    // the file of a split GGUF it is in (0-based)
  int32_t layer = -1;   // blk.N
  Part part = Part::kOutput;
  bool skipped = false;  // never loaded (llama-model.cpp TENSOR_SKIP: NextN layers)
};

// llama-hparams.h, as llama-model.cpp load_hparams fills it from the metadata.
struct Hparams {
  std::string arch;
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  std::vector<int64_t> n_head;     // per layer
  std::vector<int64_t> n_head_kv;  // per layer (0: no attention)
  std::vector<int64_t> n_ff;       // per layer
  int64_t head_k = 0;              // n_embd_head_k
  int64_t head_v = 0;              // n_embd_head_v
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;
  int64_t n_swa = 0;           // sliding window (or chunk, llama4) length
  std::vector<bool> swa;       // per layer: a sliding-window layer
  bool chunked = false;        // LLAMA_SWA_TYPE_CHUNKED (llama4)
  int64_t kv_from_start = -1;  // n_layer_kv_from_start: later layers keep no KV of their own
  int64_t n_nextn = 0;         // NextN layers at the end: neither KV nor loaded weights
  bool causal = true;

  int64_t k_width(int64_t il) const { return head_k * n_head_kv[static_cast<size_t>(il)]; }  // n_embd_k_gqa
  int64_t v_width(int64_t il) const { return head_v * n_head_kv[static_cast<size_t>(il)]; }  // n_embd_v_gqa
  bool has_kv(int64_t il) const;
  bool any_swa() const;
};

struct Model {
  std::string file;
  std::string name;         // general.name
  int64_t file_type = -1;   // general.file_type (llama_ftype), -1 when absent
  bool projector = false;   // a multimodal projector (mmproj: general.architecture "clip")
  bool has_output = false;  // a separate output.weight (else the embedding is loaded again as the head)
  Hparams hp;
  std::vector<Tensor> tensors;
  std::vector<std::string> notes;

  int64_t total_bytes() const;
};

// `model.gguf` (at `path`) -> Model. Every field is checked as the header
// reader checks the file; an architecture whose memory llama.cpp sizes
// differently (recurrent and hybrid state) fails with `unsupported`.
Model read_model(const json& inventory, const std::string& path);

// A request's `model` object (at `path`) with `gguf` and/or `mmproj`: the
// spec from the GGUF file (model.config, if also given, is not read: the
// file is what llama.cpp runs), or from the other sources with a projector
// file attached (spec.mmproj).
Result<ModelSpec> model_from_sources(const json& model, const std::string& path);

// Hyperparameters from the metadata (llama-model.cpp load_hparams).
Hparams read_hparams(const json& meta, const std::vector<Tensor>& tensors, const std::string& path);

// Which part and block a GGUF tensor name belongs to.
Part part_of(const std::string& name, int32_t& layer);

}  // namespace vram::gguf

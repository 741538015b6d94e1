// llama.cpp's memory, device by device (infer/llama_cpp.h). Sources are
// ggml-org/llama.cpp ec98e2002 (vendored in ollama/ollama f63eea3d2,
// llama/llama.cpp/src) and ggml-org/ggml d99724f2.
#include "infer/llama_cpp.h"

#include <algorithm>
#include <memory>

#include "fit.h"
#include "gguf/from_spec.h"
#include "gguf/model.h"
#include "gguf/quant_preset.h"
#include "infer/llama_cpp_graph.h"
#include "infer/llama_cpp_options.h"
#include "memory/overheads.h"
#include "memory/timeline.h"
#include "vram/gpus.h"

namespace vram::infer::llama_cpp {

namespace {

// ggml_backend_cuda_buffer_type_get_alignment, ggml-impl.h TENSOR_ALIGNMENT,
// ggml-cuda.cu MATRIX_ROW_PADDING.
constexpr int64_t kCudaAlign = 128;
constexpr int64_t kCpuAlign = 32;
constexpr int64_t kRowPadding = 512;

int64_t align(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// ggml_backend_cuda_buffer_type_get_alloc_size: a quantized matrix's last
// row padded to a multiple of 512 elements; each tensor aligned to 128 B
// (ggml_backend_alloc_ctx_tensors_from_buft).
int64_t cuda_bytes(const gguf::Tensor& t) {
  int64_t b = t.bytes;
  if (t.type->quantized && !t.ne.empty() && t.ne[0] % kRowPadding != 0) {
    b += (kRowPadding - t.ne[0] % kRowPadding) / t.type->block * t.type->bytes;
  }
  return align(b, kCudaAlign);
}

// Which backend holds each block and the output layer: the last -ngl blocks
// and, when -ngl exceeds n_layer, the output layer go to the GPUs, split by
// the cumulative shares; the token embedding stays on the CPU
// (llama-model.cpp load_tensors: i_gpu_start, act_gpu_layers, dev_input).
struct Placement {
  std::vector<int32_t> layer;
  int32_t output = 0;
  int32_t cpu = 1;
  int64_t offloaded = 0;  // "offloaded %d/%d layers to GPU"
};

Placement place(const gguf::Model& m, const Resolved& r) {
  Placement p;
  p.cpu = r.gpus;
  const int64_t n = m.hp.n_layer;
  const int64_t start = std::max<int64_t>(n - r.gpu_layers, 0);
  const int64_t act = std::min<int64_t>(r.gpu_layers, n + 1);
  p.offloaded = act;
  auto dev = [&](int64_t il) -> int32_t {
    if (il < start || il - start >= act) return p.cpu;
    const float at = static_cast<float>(il - start) / static_cast<float>(act);
    const auto it = std::upper_bound(r.split.begin(), r.split.end(), static_cast<double>(at));
    return static_cast<int32_t>(std::min<int64_t>(it - r.split.begin(), r.gpus - 1));
  };
  for (int64_t il = 0; il < n; ++il) p.layer.push_back(dev(il));
  p.output = dev(n);
  return p;
}

int32_t device_of(const gguf::Tensor& t, const Placement& p) {
  if (t.part == gguf::Part::kInput) return p.cpu;
  if (t.part == gguf::Part::kLayer) return p.layer[static_cast<size_t>(t.layer)];
  return p.output;
}

// One K or V cache tensor: ggml_row_size(type, n_embd_gqa) x cells x streams.
int64_t kv_tensor(const gguf::Model& m, const Resolved& r, int64_t il, bool k) {
  const bool swa = !m.hp.swa.empty() && m.hp.swa[static_cast<size_t>(il)];
  const gguf::GgmlType* type = k ? r.type_k : r.type_v;
  const int64_t width = k ? m.hp.k_width(il) : m.hp.v_width(il);
  if (width % type->block != 0) {
    fail(errc::kInconsistent, k ? "infer.cache_type_k" : "infer.cache_type_v",
         std::string("a ") + type->name + " cache needs rows of whole " + std::to_string(type->block) +
             "-value blocks; layer " + std::to_string(il) + " caches " + std::to_string(width) + " values per token");
  }
  return width / type->block * type->bytes * (swa ? r.kv_cells_swa : r.kv_cells) * r.n_stream;
}

// One layer's keys and values per token of context (a K and a V row,
// ggml_row_size of each cache type), and the device its cache is on: the
// layer's own, or the host with --no-kv-offload.
int64_t kv_bytes_per_token(const gguf::Model& m, const Resolved& r, int64_t il) {
  return m.hp.k_width(il) / r.type_k->block * r.type_k->bytes + m.hp.v_width(il) / r.type_v->block * r.type_v->bytes;
}

int32_t kv_device(const Resolved& r, const Placement& p, int64_t il) {
  return r.kv_offload ? p.layer[static_cast<size_t>(il)] : p.cpu;
}

// The weights on every backend (GPUs, then the host): CUDA tensors with
// their padding; host tensors as the CPU buffer llama.cpp maps (the file's
// range from the first to the last CPU tensor, llama_model_loader
// get_mapping_range) or allocates (--no-mmap).
void place_weights(const gguf::Model& m, const Resolved& r, const Placement& p, std::vector<DeviceUse>& d) {
  struct Span {
    int64_t lo = INT64_MAX, hi = 0;
  };
  std::map<int32_t, Span> spans;  // per shard
  bool offsets = true;
  auto add = [&](const gguf::Tensor& t, int32_t dev) {
    DeviceUse& u = d[static_cast<size_t>(dev)];
    if (dev == p.cpu) {
      u.weights_bytes += align(t.bytes, kCpuAlign);
      offsets = offsets && t.offset >= 0;
      Span& s = spans[t.shard];
      s.lo = std::min(s.lo, t.offset);
      s.hi = std::max(s.hi, t.offset + t.bytes);
    } else {
      u.weights_bytes += cuda_bytes(t);
    }
  };
  for (const auto& t : m.tensors) {
    if (t.skipped) continue;
    add(t, device_of(t, p));
    // No output.weight: the embedding is loaded again on the output layer's
    // device (TENSOR_DUPLICATED), unless that is the CPU buffer it is in.
    if (!m.has_output && t.name == "token_embd.weight" && p.output != p.cpu) add(t, p.output);
  }
  DeviceUse& host = d[static_cast<size_t>(p.cpu)];
  host.mapped_bytes = 0;
  if (r.mmap && offsets) {
    for (const auto& [_, s] : spans) host.mapped_bytes += s.hi > s.lo ? s.hi - s.lo : 0;
  } else if (r.mmap) {
    host.mapped_bytes = host.weights_bytes;
  }
  for (int64_t il = 0; il < m.hp.n_layer; ++il) d[static_cast<size_t>(p.layer[static_cast<size_t>(il)])].layers += 1;
  d[static_cast<size_t>(p.output)].output_layer = true;
}

GraphShape shape_of(const gguf::Model& m, const Resolved& r, const Placement& p) {
  GraphShape s;
  s.n_tokens = std::min(r.n_ctx, r.n_ubatch);
  s.n_outputs = s.n_tokens;
  s.n_stream = r.n_stream;
  s.kv_cells = r.kv_cells;
  s.kv_cells_swa = r.kv_cells_swa;
  s.flash_attn = r.flash_attn;
  s.type_k = r.type_k;
  s.type_v = r.type_v;
  s.gpus = r.gpus;
  s.layer_device = p.layer;
  for (int64_t il = 0; il < m.hp.n_layer; ++il) {
    s.kv_device.push_back(kv_device(r, p, il));
  }
  s.output_device = p.output;
  // llama-context.cpp: pipeline parallelism (GGML_SCHED_MAX_COPIES = 4 input
  // copies) with several GPUs, every layer offloaded, layer split, KV offload.
  const bool pipeline = r.gpus > 1 && r.gpu_layers > m.hp.n_layer && r.split_mode == "layer" && r.kv_offload;
  s.copies = pipeline ? 4 : 1;
  return s;
}

// Every backend's buffers for one setting.
std::vector<DeviceUse> buffers(const gguf::Model& m, const gguf::Model* proj, const Resolved& r, const Placement& p,
                               int64_t context) {
  std::vector<DeviceUse> d(static_cast<size_t>(r.gpus) + 1);
  for (int32_t g = 0; g < r.gpus; ++g) d[static_cast<size_t>(g)].device = "CUDA" + std::to_string(g);
  d.back().device = "CPU";
  place_weights(m, r, p, d);
  if (proj != nullptr) {
    // mtmd (clip.cpp): the projector's weights on the first GPU.
    for (const auto& t : proj->tensors) d[0].weights_bytes += cuda_bytes(t);
  }
  for (int64_t il = 0; il < m.hp.n_layer; ++il) {
    if (!m.hp.has_kv(il)) continue;
    const int32_t dev = r.kv_offload ? p.layer[static_cast<size_t>(il)] : p.cpu;
    const int64_t a = dev == p.cpu ? kCpuAlign : kCudaAlign;
    d[static_cast<size_t>(dev)].kv_bytes += align(kv_tensor(m, r, il, true), a) + align(kv_tensor(m, r, il, false), a);
  }
  // llama_context::output_reserve: (n_vocab + n_embd with embeddings) x
  // n_seq_max floats, in the first GPU's host (pinned) buffer.
  d.back().output_bytes = (m.hp.n_vocab + (r.embeddings ? m.hp.n_embd : 0)) * r.n_seq * 4;
  const std::vector<int64_t> compute = compute_buffers(m, shape_of(m, r, p));
  for (size_t b = 0; b < d.size(); ++b) d[b].compute_bytes = compute[b];
  for (size_t b = 0; b < d.size(); ++b) {
    DeviceUse& u = d[b];
    u.context_bytes = b + 1 < d.size() ? context : 0;
    u.total_bytes = u.weights_bytes + u.kv_bytes + u.compute_bytes + u.output_bytes + u.context_bytes;
  }
  return d;
}

int64_t busiest_gpu(const std::vector<DeviceUse>& d) {
  size_t best = 0;
  for (size_t g = 0; g + 1 < d.size(); ++g) {
    if (d[g].total_bytes > d[best].total_bytes) best = g;
  }
  return static_cast<int64_t>(best);
}

// The model llama.cpp loads: the request's GGUF file, or the HF config
// converted and quantized with the weights_dtype preset.
std::shared_ptr<const gguf::Model> model_of(const Request& req, std::vector<std::string>& notes) {
  if (req.model.gguf) {
    if (req.infer.llama.weights_dtype_given && req.infer.weights_dtype != "checkpoint") {
      fail(errc::kInconsistent, "infer.weights_dtype",
           "infer.weights_dtype " + req.infer.weights_dtype +
               ": the GGUF file (model.gguf) already says every tensor's type; leave weights_dtype out");
    }
    return req.model.gguf;
  }
  std::string name = req.infer.weights_dtype;
  if (name == "bf16" || name == "fp16" || name == "fp32")
    name = name == "fp16" ? "F16" : name == "bf16" ? "BF16" : "F32";
  const gguf::Preset* preset = gguf::preset_named(name);
  if (preset == nullptr) {
    std::string names;
    for (const auto& x : gguf::presets()) names += (names.empty() ? "" : ", ") + std::string(x.name);
    fail(errc::kUnknownValue, "infer.weights_dtype",
         "infer.weights_dtype " + req.infer.weights_dtype +
             " is not a llama-quantize type; a llama.cpp engine takes a GGUF (model.gguf) or one of: " + names);
  }
  if (!req.infer.llama.weights_dtype_given) {
    notes.push_back(
        "infer.weights_dtype BF16: the config converted to a BF16 GGUF (name a llama-quantize type, "
        "Q4_K_M, to size a quantized file)");
  }
  notes.push_back(std::string("weights: ") + preset->name +
                  " as llama-quantize types each tensor (llama-quant.cpp llama_tensor_get_type, ec98e2002)");
  return std::make_shared<gguf::Model>(gguf::model_from_spec(req.model, *preset, "model.config", notes));
}

// The busiest GPU as a timeline: its weights layer by layer (load), then the
// KV cache and the compute buffer llama_context reserves at start-up
// (prefill: the worst-case graph of n_ubatch tokens; decode reuses them).
memory::Timeline gpu_timeline(const gguf::Model& m, const Resolved& r, const Placement& p, const DeviceUse& u,
                              int32_t g) {
  memory::Timeline tl;
  int64_t placed = 0;
  for (int64_t il = 0; il < m.hp.n_layer; ++il) {
    if (p.layer[static_cast<size_t>(il)] != g) continue;
    int64_t b = 0;
    for (const auto& t : m.tensors) {
      if (!t.skipped && t.part == gguf::Part::kLayer && t.layer == il) b += cuda_bytes(t);
    }
    tl.alloc("weights", "weights", b, {}, memory::Residence::kAllocated, static_cast<int32_t>(il));
    placed += b;
  }
  tl.alloc("weights", "weights", u.weights_bytes - placed);  // the output layer, a projector
  tl.mark("load", "model loaded (load_tensors)");
  for (int64_t il = 0; il < m.hp.n_layer; ++il) {
    const int32_t dev = r.kv_offload ? p.layer[static_cast<size_t>(il)] : p.cpu;
    if (dev != g || !m.hp.has_kv(il)) continue;
    tl.alloc("kv_cache", "KV cache",
             align(kv_tensor(m, r, il, true), kCudaAlign) + align(kv_tensor(m, r, il, false), kCudaAlign), {},
             memory::Residence::kAllocated, static_cast<int32_t>(il));
  }
  tl.alloc("compute_buffer", "compute buffer", u.compute_bytes);
  tl.mark("prefill", "prompt processing: the compute buffer reserved for n_ubatch tokens");
  tl.mark("decode", "generation: the same buffers, reserved once at start-up");
  return tl;
}

struct Run {
  std::shared_ptr<const gguf::Model> model;
  Resolved r;
  Placement p;
  std::vector<DeviceUse> d;
};

Run run(const Request& req, const Resolved& r, std::shared_ptr<const gguf::Model> model) {
  Run x{std::move(model), r, {}, {}};
  x.p = place(*x.model, x.r);
  x.d = buffers(*x.model, req.model.mmproj.get(), x.r, x.p, memory::context_bytes(req));
  return x;
}

int64_t gpu_peak(const Run& x) { return x.d[static_cast<size_t>(busiest_gpu(x.d))].total_bytes; }

// Ollama places layers itself (its estimator, then the runner's -ngl): the
// most that fit the card, all of them without one.
Run place_auto(const Request& req, Run x) {
  const auto card = fit::chosen_gpu(req);
  if (!x.r.gpu_layers_auto) return x;
  if (!card) {
    x.r.assumptions.push_back("num_gpu: every layer on the GPU (Ollama places as many as fit; no gpu named)");
    return x;
  }
  const int64_t n = x.model->hp.n_layer + 1;
  const int64_t best = fit::largest_fitting(
      [&](int64_t ngl) { return gpu_peak(run(req, with_layers(x.r, ngl), x.model)) <= card->capacity; }, n);
  x.r.assumptions.push_back("num_gpu " + std::to_string(best) +
                            ": the layers that fit the card (Ollama places them with its own estimate)");
  return run(req, with_layers(x.r, best), x.model);
}

// llama.cpp's --fit (2025-12, on by default; src/llama.cpp llama_params_fit_impl at ec98e2002): with every GPU's
// projected use (model + context + compute: everything but the CUDA context, which the free memory it reads
// already lacks) short of 1 GiB free (common.h fit_params_target), first the context the user left at 0 shrinks,
// from the model's context_length, by the deficit over the KV bytes per cell, not below 4096 (fit_params_min_ctx);
// then, if -ngl was left out, the GPUs take as many layers as keep the margin.
constexpr int64_t kFitMargin = int64_t{1} << 30;
constexpr int64_t kFitMinCtx = 4096;

int64_t fit_deficit(const Run& x, int64_t capacity) {
  int64_t surplus = 0;
  for (size_t g = 0; g + 1 < x.d.size(); ++g) surplus += capacity - x.d[g].total_bytes - kFitMargin;
  return surplus < 0 ? -surplus : 0;
}

bool fits_with_margin(const Run& x, int64_t capacity) {
  for (size_t g = 0; g + 1 < x.d.size(); ++g) {
    if (x.d[g].total_bytes + kFitMargin > capacity) return false;
  }
  return true;
}

Run place_fit(const Request& req, Run x) {
  const auto card = fit::chosen_gpu(req);
  if ((!x.r.fit_ctx && !x.r.fit_layers) || !card || fits_with_margin(x, card->capacity)) return x;
  auto& notes = x.r.assumptions;
  const int64_t deficit = fit_deficit(x, card->capacity);
  const int64_t n_ctx_train = x.r.n_ctx_train;
  if (x.r.fit_ctx && deficit > 0 && n_ctx_train > kFitMinCtx) {
    int64_t kv = 0;
    for (size_t g = 0; g + 1 < x.d.size(); ++g) kv += x.d[g].kv_bytes;
    const int64_t per_cell = std::max<int64_t>(kv / n_ctx_train, 1);
    const int64_t cut = std::min((deficit + per_cell - 1) / per_cell, n_ctx_train - kFitMinCtx);
    x = run(req, with_context(x.r, *x.model, n_ctx_train - cut), x.model);
    notes.push_back("--fit: context reduced from " + std::to_string(n_ctx_train) + " to " +
                    std::to_string(n_ctx_train - cut) + " to keep 1 GiB free on each GPU");
    if (fits_with_margin(x, card->capacity)) return x;
  }
  if (!x.r.fit_layers) return x;
  const int64_t n = x.model->hp.n_layer + 1;
  const int64_t best = fit::largest_fitting(
      [&](int64_t ngl) { return fits_with_margin(run(req, with_layers(x.r, ngl), x.model), card->capacity); }, n);
  notes.push_back("--fit: --n-gpu-layers " + std::to_string(best) + ", the layers that keep 1 GiB free on each GPU" +
                  (x.model->hp.n_expert > 0 ? " (llama.cpp first moves a MoE model's expert tensors to host "
                                              "memory instead; whole layers are modelled)"
                                            : ""));
  return run(req, with_layers(x.r, best), x.model);
}

std::vector<Component> components_of(const DeviceUse& u, const Run& x) {
  const Resolved& r = x.r;
  const std::string kv = std::string(r.type_k->name) + "/" + r.type_v->name;
  return {
      {"weights", "Weights (model buffer)", u.weights_bytes,
       std::to_string(u.layers) + " layers" + (u.output_layer ? " + output layer" : "") + " in their ggml types",
       Pool::kAllocated},
      {"kv_cache", "KV cache", u.kv_bytes,
       std::to_string(r.kv_cells) + " cells x " + std::to_string(r.n_stream) + " stream(s), " + kv +
           (x.model->hp.any_swa() ? ", sliding-window layers " + std::to_string(r.kv_cells_swa) + " cells" : ""),
       Pool::kAllocated},
      {"compute_buffer", "Compute buffer", u.compute_bytes,
       "ggml-alloc's plan of the worst-case graph: " + std::to_string(std::min(r.n_ctx, r.n_ubatch)) +
           " tokens, flash attention " + (r.flash_attn ? "on" : "off"),
       Pool::kAllocated},
      {"cuda_context", "CUDA context", u.context_bytes, "512 MiB prior (overheads.cuda_context_bytes overrides)",
       Pool::kOutside},
  };
}

// What one decode step reads, on the GPUs and in host memory (the time
// model's input, speed/infer_time.cpp): every weight where it was placed but
// the token embedding, of which get_rows reads one row a token (it is read
// whole only as the output layer of a model without output.weight), and the
// keys and values of each layer where its cache is (the layer's device, or
// the host with --no-kv-offload).
struct DecodeReads {
  int64_t gpu_weights = 0, host_weights = 0, gpu_kv_per_token = 0, host_kv_per_token = 0;
};

DecodeReads decode_reads(const Run& x) {
  const gguf::Model& m = *x.model;
  const auto& hp = m.hp;
  DecodeReads out;
  auto read = [&](int64_t bytes, int32_t dev) { (dev == x.p.cpu ? out.host_weights : out.gpu_weights) += bytes; };
  for (const auto& t : m.tensors) {
    if (t.skipped) continue;
    if (t.part != gguf::Part::kInput) read(t.bytes, device_of(t, x.p));
    if (!m.has_output && t.name == "token_embd.weight") read(t.bytes, x.p.output);
  }
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    if (!hp.has_kv(il)) continue;
    const int64_t bytes = kv_bytes_per_token(m, x.r, il);
    (kv_device(x.r, x.p, il) == x.p.cpu ? out.host_kv_per_token : out.gpu_kv_per_token) += bytes;
  }
  return out;
}

std::vector<std::pair<std::string, int64_t>> facts_of(const Run& x) {
  const auto& hp = x.model->hp;
  const Resolved& r = x.r;
  int64_t kv = 0, per_token = 0, weights = 0, gpu = 0;
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    if (!hp.has_kv(il)) continue;
    kv += kv_tensor(*x.model, r, il, true) + kv_tensor(*x.model, r, il, false);
    per_token += kv_bytes_per_token(*x.model, r, il);
  }
  for (const auto& t : x.model->tensors) weights += t.skipped ? 0 : t.bytes;
  for (size_t g = 0; g + 1 < x.d.size(); ++g) gpu += x.d[g].total_bytes;
  const DecodeReads reads = decode_reads(x);
  return {{"ctx_size", r.n_ctx},
          {"n_ctx_seq", r.n_ctx_seq},
          {"parallel", r.n_seq},
          {"kv_cells", r.kv_cells},
          {"kv_cells_swa", r.kv_cells_swa},
          {"n_batch", r.n_batch},
          {"n_ubatch", r.n_ubatch},
          {"flash_attn", r.flash_attn ? 1 : 0},
          {"gpu_layers", x.p.offloaded},
          {"layers_total", hp.n_layer + 1},
          {"kv_cache_bytes", kv},
          {"kv_bytes_per_token", per_token},
          {"weights_bytes", weights},
          {"gpu_bytes", gpu},
          {"host_bytes", x.d.back().total_bytes},
          {"decode_gpu_weights_bytes", reads.gpu_weights},
          {"decode_host_weights_bytes", reads.host_weights},
          {"kv_gpu_bytes_per_token", reads.gpu_kv_per_token},
          {"kv_host_bytes_per_token", reads.host_kv_per_token}};
}

Estimate assemble(const Run& x) {
  Estimate e;
  const int32_t g = static_cast<int32_t>(busiest_gpu(x.d));
  const DeviceUse& u = x.d[static_cast<size_t>(g)];
  const memory::Timeline tl = gpu_timeline(*x.model, x.r, x.p, u, g);
  for (const auto& mo : memory::replay(tl)) {
    Phase ph;
    ph.key = mo.phase;
    ph.label = mo.label;
    ph.allocated_bytes = ph.reserved_bytes = mo.allocated;
    ph.device_bytes = mo.allocated + u.context_bytes;
    ph.parts = mo.parts;
    ph.parts["cuda_context"] = u.context_bytes;
    if (ph.device_bytes > e.peak_bytes || e.peak_phase.empty()) {
      e.peak_bytes = ph.device_bytes;
      e.peak_phase = ph.key;
    }
    e.phases.push_back(std::move(ph));
  }
  e.peak_allocated_bytes = e.peak_reserved_bytes = e.peak_bytes - u.context_bytes;
  e.components = components_of(u, x);
  e.facts = facts_of(x);
  e.devices = x.d;
  e.engine = x.r.engine;
  e.assumptions = x.r.assumptions;
  for (const auto& n : x.model->notes) e.assumptions.push_back(n);
  return e;
}

Run prepare(const Request& req) {
  std::vector<std::string> notes;
  auto model = model_of(req, notes);
  int64_t vram = 0;
  if (const auto card = fit::chosen_gpu(req)) vram = card->total * req.parallel.gpus;
  Resolved r = resolve(req, *model, vram);
  r.assumptions.insert(r.assumptions.begin(), notes.begin(), notes.end());
  if (req.model.mmproj) {
    r.assumptions.push_back(
        "model.mmproj: its weights on the first GPU (mtmd); its image encoder's compute "
        "buffer is not modelled");
  }
  return place_fit(req, place_auto(req, run(req, r, std::move(model))));
}

}  // namespace

Result<Estimate> estimate(const Request& req) {
  return attempt<Estimate>([&]() -> Estimate { return assemble(prepare(req)); });
}

void fit(const Request& req, int64_t capacity, Estimate& e) {
  const Run base = prepare(req);
  const int64_t n = base.model->hp.n_layer + 1;
  const int64_t layers = fit::largest_fitting(
      [&](int64_t ngl) { return gpu_peak(run(req, with_layers(base.r, ngl), base.model)) <= capacity; }, n);
  e.facts.push_back({"max_gpu_layers", layers});
  // The longest context, in steps of 256 cells, at this -ngl (Ollama: num_ctx).
  const bool ollama = base.r.engine == "ollama";
  const int64_t limit = base.model->hp.n_ctx_train > 0 ? base.model->hp.n_ctx_train : limits::kMaxSeq;
  const int64_t steps = fit::largest_fitting(
      [&](int64_t k) {
        const int64_t ctx = k * 256 * (ollama ? base.r.n_seq : 1);
        return gpu_peak(run(req, with_context(base.r, *base.model, ctx), base.model)) <= capacity;
      },
      limit / 256);
  e.facts.push_back({"max_ctx_size", steps * 256});
}

json devices_json(const Estimate& e) {
  json out = json::array();
  for (const auto& d : e.devices) {
    json j = {{"device", d.device},
              {"weights_bytes", d.weights_bytes},
              {"kv_bytes", d.kv_bytes},
              {"compute_bytes", d.compute_bytes},
              {"output_bytes", d.output_bytes},
              {"context_bytes", d.context_bytes},
              {"total_bytes", d.total_bytes},
              {"layers", d.layers},
              {"output_layer", d.output_layer}};
    if (d.device == "CPU") j["mapped_bytes"] = d.mapped_bytes;
    out.push_back(j);
  }
  return out;
}

}  // namespace vram::infer::llama_cpp

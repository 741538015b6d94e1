// The result of an estimate: named components, phases of a step, the peak
// and the fit. Types only; estimate.h runs the estimate.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace vram {

// Where a component lives: in tensors the PyTorch caching allocator counts
// (memory_allocated) or outside it (CUDA context, NCCL, paged/managed memory).
enum class Pool { kAllocated, kOutside };

struct Component {
  std::string key;      // stable id: "weights", "gradients", "optimizer_states", ...
  std::string label;    // for people
  int64_t bytes = 0;    // the component's largest size over the step
  std::string formula;  // the formula with the values plugged in
  Pool pool = Pool::kAllocated;
};

struct Phase {
  std::string key;  // "forward", "loss", "backward_start", "backward", "optimizer_step", ...
  std::string label;
  int64_t allocated_bytes = 0;           // torch.cuda.memory_allocated at that moment
  int64_t reserved_bytes = 0;            // allocator view (allocated + block rounding + fragmentation)
  int64_t device_bytes = 0;              // what nvidia-smi shows for the process: reserved + outside
  std::map<std::string, int64_t> parts;  // component key -> bytes live in this phase
};

// The fit verdict. A paged optimizer's states live in CUDA managed memory,
// which the driver evicts to host RAM when the card is full (bitsandbytes
// paged optimizers, QLoRA paper §3 "Paged Optimizers"): a job whose other
// memory fits still runs, paging states in and out at a throughput cost.
inline constexpr const char* kFits = "fits";                        // everything fits, nothing pages
inline constexpr const char* kFitsWithPaging = "fits_with_paging";  // only managed states overflow the card
inline constexpr const char* kDoesNotFit = "does_not_fit";          // even without the managed states

struct Fit {
  std::string gpu;
  int64_t total_bytes = 0;     // what nvidia-smi shows as the card's total
  int64_t capacity_bytes = 0;  // what a process can really use
  bool fits = false;           // the job runs on the card (with paging when verdict says so)
  std::string verdict = kDoesNotFit;
  int64_t paged_bytes = 0;       // managed bytes that do not fit the card and page to host RAM
  double utilization = 0;        // peak / capacity
  bool headroom_ok = false;      // peak <= kHeadroomFraction * total (seed 000)
  bool headroom_applies = true;  // false where an engine sizes itself to the card (vLLM)
  int64_t max_micro_batch = 0;   // largest micro-batch that fits (training), 0 if none
  // Longest sequence at the request's micro-batch that fits (training), 0 if
  // none, at most train::kMaxSearchedSeqLen.
  int64_t max_seq_len = 0;
  // With a paged optimizer: the largest micro-batch that runs, its states
  // paging as needed (training), 0 if none.
  int64_t max_micro_batch_with_paging = 0;
  // What those searches ran (training): steps built and checked against the
  // card, and the caching-allocator replays among them (train/estimate_train.h
  // FitSearch).
  int64_t search_probes = 0;
  int64_t search_replays = 0;
};

struct GpuRow {
  std::string name;
  int64_t capacity_bytes = 0;
  bool fits = false;
  std::string verdict = kDoesNotFit;
  double utilization = 0;
  bool headroom_ok = false;
  bool headroom_applies = true;
  std::string refused;  // why the card cannot run the job (bf16, FlashAttention-2, FP8), "" when it can
};

// One pipeline rank of a multi-GPU training layout (result parallel.stages).
struct StageSummary {
  int64_t stage = 0;
  int64_t layers = 0;
  int64_t moe_layers = 0;
  int64_t params = 0;    // parameters held by one rank of this stage (after tp / ep)
  double in_flight = 1;  // micro-batches of activations held at the schedule's peak
  bool embeddings = false;
  bool head = false;
  int64_t peak_bytes = 0;
};

// One device of a llama.cpp engine's estimate (infer.engine llama_cpp,
// ollama, lmstudio): the buffers llama.cpp allocates there, as its start-up
// log names them (model, KV, compute, output buffer), plus the CUDA context.
struct DeviceUse {
  std::string device;         // "CUDA0", "CUDA1", ..., "CPU" (host memory)
  int64_t weights_bytes = 0;  // model buffer(s): the weights placed here
  int64_t mapped_bytes = 0;   // host: the CPU_Mapped buffer llama.cpp logs (the file range it maps)
  int64_t kv_bytes = 0;       // KV cache buffer
  int64_t compute_bytes = 0;  // compute buffer (the reserved worst-case graph)
  int64_t output_bytes = 0;   // output (logits) buffer, host
  int64_t context_bytes = 0;  // CUDA context (GPUs)
  int64_t total_bytes = 0;    // what the device must hold
  int64_t layers = 0;         // repeating layers whose weights are here
  bool output_layer = false;  // the output layer's weights are here
};

// A figure a serving engine prints at start-up about its own memory, as the
// estimate expects it to print it (vLLM "Available KV cache memory: 51.38
// GiB", SGLang "KV Cache is allocated. #tokens: ..."): `value` in `unit`
// ("GiB", "tokens", "blocks", "x"), `text` the line.
struct EngineLine {
  std::string key;  // "vllm.available_kv_cache", "sglang.max_total_num_tokens", ...
  double value = 0;
  std::string unit;
  std::string text;
};

struct Estimate {
  std::vector<Component> components;
  std::vector<Phase> phases;
  int64_t peak_bytes = 0;            // device view at the peak phase (what must fit)
  int64_t peak_allocated_bytes = 0;  // torch.cuda.max_memory_allocated
  int64_t peak_reserved_bytes = 0;   // torch.cuda.max_memory_reserved
  // Training: the lower end of the reserved range, the job's two steps
  // replayed alone (without the smaller jobs before them); 0 when not replayed.
  int64_t peak_reserved_low_bytes = 0;
  int64_t managed_bytes = 0;  // CUDA managed memory (paged optimizer states), part of peak_bytes
  std::string peak_phase;
  int64_t params_trainable = 0;
  int64_t tokens_per_micro_batch = 0;
  std::vector<std::string> assumptions;
  std::vector<std::string> warnings;
  // Task-specific answers (inference: kv_bytes_per_token, max_concurrent_sequences,
  // max_context_len, ...), serialised as the result's `infer` object.
  std::vector<std::pair<std::string, int64_t>> facts;
  // Inference with vLLM or SGLang: the memory lines the engine prints at start-up.
  std::vector<EngineLine> engine_log;
  std::string engine;
  std::string engine_release;        // vLLM / SGLang: the release whose rules applied
  std::vector<StageSummary> stages;  // pipeline ranks (training with pp > 1)
  std::vector<DeviceUse> devices;    // llama.cpp engines: every GPU, then the host
  bool has_fit = false;
  Fit fit;
  std::vector<GpuRow> gpus;
};

}  // namespace vram

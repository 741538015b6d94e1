// Quick sizing (issue 16, seed 004's `gpu-mem-calc quick 7`): a decoder of a
// given parameter count, shaped by the rules today's open dense models follow,
// estimated like any other model and flagged approximate with the error this
// approximation was measured to have against exact presets.
//
// Shape rules, each read off the configs in tests/fixtures/models (Llama 3.x,
// Mistral 7B, Qwen2.5 7B) and the public Llama 3 / Qwen2.5 model cards:
// - head_dim 128 (Llama 3 1B-405B, Mistral 7B, Qwen2.5 7B-72B);
// - grouped-query attention with 8 key/value heads (Llama 3 every size,
//   Mistral 7B, Qwen2.5 14B-72B);
// - gated SiLU MLP (SwiGLU, Shazeer 2020) of width 3.5 x hidden rounded to 256
//   (Llama 3.1 8B 14336 / 4096, 70B 28672 / 8192, Mistral 7B 14336 / 4096);
// - RMSNorm, no biases, RoPE (LlamaForCausalLM);
// - vocabulary 128256 (the Llama 3 tokenizer); embeddings tied below 5 B
//   parameters (Llama 3.2 1B / 3B and Qwen2.5 0.5B-3B tie; 7B and up do not);
// - depth against width: hidden / layers near 112, the median of Llama 3.2 1B
//   (2048 / 16 = 128), 3B (3072 / 28 = 110), Llama 3.1 8B (128), 70B (102),
//   405B (16384 / 126 = 130), Qwen2.5 7B (3584 / 28 = 128), 14B (5120 / 48 =
//   107), 32B (5120 / 64 = 80), 72B (8192 / 80 = 102).
// For each width of 8, 16, 24, ... heads of 128 the depth is the whole number
// of layers that comes closest to the requested count; among the widths whose
// count is within 5 % of the request the one whose hidden / layers is closest
// to 112 (on a log scale) wins, else the closest count.
#include <cmath>
#include <string>

#include "vram/families.h"
#include "vram/json_reader.h"

namespace vram {

namespace {

constexpr int64_t kHeadDim = 128;
constexpr int64_t kKvHeads = 8;
constexpr int64_t kVocab = 128256;
constexpr double kAspect = 112.0;
constexpr int64_t kTieBelow = int64_t{5'000'000'000};
constexpr int64_t kMinParams = int64_t{100'000'000};
constexpr int64_t kMaxParams = int64_t{2'000'000'000'000};

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

struct Shape {
  int64_t heads = 0, hidden = 0, layers = 0, intermediate = 0;
  bool tie = false;
  int64_t params = 0;
};

// LlamaForCausalLM's count for a shape (modeling_llama.py: q/k/v/o, gate/up/
// down, two RMSNorms per layer, final norm, embeddings, lm_head unless tied).
int64_t llama_params(const Shape& s) {
  const int64_t h = s.hidden, kv = kKvHeads * kHeadDim;
  const int64_t per_layer = 2 * h * h + 2 * h * kv + 3 * h * s.intermediate + 2 * h;
  return s.layers * per_layer + kVocab * h * (s.tie ? 1 : 2) + h;
}

Shape pick_shape(int64_t target) {
  Shape best;
  double best_score = 1e300;
  bool best_within = false;
  for (int64_t heads = kKvHeads; heads <= 256; heads += kKvHeads) {
    Shape s;
    s.heads = heads;
    s.hidden = heads * kHeadDim;
    s.intermediate = round_up(static_cast<int64_t>(std::llround(3.5 * static_cast<double>(s.hidden))), 256);
    s.tie = target < kTieBelow;
    s.layers = 0;
    const int64_t fixed = llama_params(s);
    s.layers = 1;
    const int64_t per_layer = llama_params(s) - fixed;
    s.layers = std::max<int64_t>(1, std::llround(static_cast<double>(target - fixed) / static_cast<double>(per_layer)));
    s.params = llama_params(s);
    const double miss = std::fabs(static_cast<double>(s.params - target)) / static_cast<double>(target);
    const bool within = miss <= 0.05;
    const double aspect = std::fabs(std::log(static_cast<double>(s.hidden) / static_cast<double>(s.layers) / kAspect));
    const double score = within ? aspect : miss;
    if ((within && !best_within) || (within == best_within && score < best_score)) {
      best = s;
      best_score = score;
      best_within = within;
    }
  }
  return best;
}

// "7B", "1.5b", "350M", "7e9", "70000000000" or a JSON number of parameters.
int64_t parse_size(const json& v, const std::string& path) {
  double n = 0;
  if (v.is_number()) {
    n = v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    n = std::strtod(s.c_str(), &end);
    const std::string unit = end == nullptr ? "" : std::string(end);
    if (end == s.c_str()) {
      fail(errc::kWrongType, path, path + " " + quoted(s) + " is not a size: write e.g. \"7B\", \"1.5B\" or \"350M\"");
    }
    if (unit == "B" || unit == "b") {
      n *= 1e9;
    } else if (unit == "M" || unit == "m") {
      n *= 1e6;
    } else if (unit == "T" || unit == "t") {
      n *= 1e12;
    } else if (!unit.empty()) {
      fail(errc::kUnknownValue, path,
           path + " " + quoted(s) + ": unknown unit " + quoted(unit) +
               " (B for billions, M for millions, T for trillions)");
    }
  } else {
    fail(errc::kWrongType, path, path + " must be a parameter count: a number or a string such as \"7B\"");
  }
  if (!std::isfinite(n) || n < static_cast<double>(kMinParams) || n > static_cast<double>(kMaxParams)) {
    fail(errc::kOutOfRange, path,
         path + " must be between 100M and 2T parameters (a bare number counts parameters: write 7B, not 7)");
  }
  return std::llround(n);
}

}  // namespace

json quick_size_config(int64_t params) {
  const Shape s = pick_shape(params);
  return json{
      {"model_type", "llama"},          {"architectures", {"LlamaForCausalLM"}}, {"vocab_size", kVocab},
      {"hidden_size", s.hidden},        {"intermediate_size", s.intermediate},   {"num_hidden_layers", s.layers},
      {"num_attention_heads", s.heads}, {"num_key_value_heads", kKvHeads},       {"head_dim", kHeadDim},
      {"hidden_act", "silu"},           {"max_position_embeddings", 131072},     {"tie_word_embeddings", s.tie},
      {"torch_dtype", "bfloat16"}};
}

Result<ModelSpec> model_from_size(const json& size, const std::string& path) {
  return attempt<ModelSpec>([&]() -> Result<ModelSpec> {
    const int64_t target = parse_size(size, path);
    auto r = model_from_config(quick_size_config(target), path);
    if (!r.ok()) return r.error();
    ModelSpec spec = std::move(r.value());
    const LayerStack& t = spec.text;
    spec.family = "quick_size";
    spec.architecture = "Llama-shaped decoder sized from a parameter count";
    spec.exact = false;
    spec.inexact.push_back(
        "quick sizing: a " + std::to_string(spec.params_total()) + "-parameter decoder (" + std::to_string(t.layers) +
        " layers, hidden " + std::to_string(t.hidden) + ", " + std::to_string(t.heads) +
        " heads, 8 KV heads of 128, "
        "SwiGLU " +
        std::to_string(t.intermediate) + ", vocab 128256" + (spec.tie_word_embeddings ? ", tied" : "") +
        ") shaped like Llama 3 / Qwen2.5 for the requested " + std::to_string(target) +
        "; against exact presets of similar size its peak memory was off by up to " +
        std::to_string(kQuickSizeMaxErrorPct) + " % (median " + std::to_string(kQuickSizeMedianErrorPct) +
        " %, README 'Quick sizing'); give the model's config.json for an exact estimate");
    return spec;
  });
}

Result<json> quick_engine_fields(const std::string& engine) {
  // Each engine at its own defaults, so the estimate is what the engine runs
  // when only the GPU count is given; every other flag still overrides them.
  // - ddp: torch DistributedDataParallel, one full replica per GPU.
  // - deepspeed: ZeRO stage 3 (seed 004's DeepSpeed example, zero_stage=3).
  // - fsdp: FullyShardedDataParallel's default ShardingStrategy.FULL_SHARD
  //   (torch/distributed/fsdp/fully_sharded_data_parallel.py).
  // - megatron: Megatron-LM's defaults, tensor_model_parallel_size 1 and
  //   pipeline 1 (megatron/training/arguments.py), data parallel over the
  //   GPUs; add --tp / --pp for what the model needs.
  if (engine == "ddp") return json{{"train", {{"framework", "hf"}}}};
  if (engine == "deepspeed") return json{{"train", {{"framework", "deepspeed"}}}, {"parallel", {{"zero", 3}}}};
  if (engine == "fsdp") return json{{"train", {{"framework", "hf"}}}, {"parallel", {{"fsdp", "full_shard"}}}};
  if (engine == "megatron") return json{{"train", {{"framework", "megatron"}}}};
  return Error{errc::kUnknownValue, "engine " + quoted(engine) + " is not one of: deepspeed, fsdp, megatron, ddp",
               "engine"};
}

}  // namespace vram

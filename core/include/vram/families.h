// Family adapters: HF config.json -> ModelSpec.
#pragma once

#include <string>
#include <vector>

#include "vram/json_reader.h"
#include "vram/model.h"
#include "vram/status.h"

namespace vram {

// Builds the exact parameter inventory for a config.json object. `path` is the
// JSON path of the config in the request ("model.config") for error messages.
// With `allow_generic`, an unknown model_type is estimated as a generic
// Llama-like decoder and flagged exact=false; otherwise it is an error listing
// the supported types.
Result<ModelSpec> model_from_config(const json& config, const std::string& path, bool allow_generic = false);

// model.custom: explicit sizes for users without a config (seed 004's quick
// mode). Always exact=false unless every size is given.
Result<ModelSpec> model_from_custom(const json& custom, const std::string& path);

// model.size: a Llama-3-shaped decoder of about this many parameters ("7B",
// "1.5B", "350M" or a number), flagged approximate with the error measured
// against exact presets (families/quick_size.cpp states the shape rules;
// tests/core/quick_size_test.cpp measures the error quoted here).
Result<ModelSpec> model_from_size(const json& size, const std::string& path);
// The config.json model_from_size estimates, for a parameter count.
json quick_size_config(int64_t params);
// The request fields quick sizing sets for a training engine (ddp,
// deepspeed, fsdp, megatron): each engine at its own defaults.
Result<json> quick_engine_fields(const std::string& engine);
// Largest and median |peak error| in percent of quick-sized models against the
// exact presets of the same size (README "Quick sizing" has the table).
inline constexpr int kQuickSizeMaxErrorPct = 34;
inline constexpr int kQuickSizeMedianErrorPct = 4;

// model_type values with an exact adapter, sorted.
std::vector<std::string> supported_model_types();

namespace detail {
// Adapter signature: read the config (fail() on bad fields) and fill the
// spec. One per model_type in families/family_list.h, found by
// reach::find_adapter (core/src/reach.h).
using Adapter = void (*)(const JsonReader& cfg, ModelSpec& spec);

// Shared builders for decoder families (families/common.cpp).
void add_linear(ModelSpec& s, const std::string& module, const char* component, const std::string& stack, int64_t in,
                int64_t out, bool bias, int64_t instances);
void add_embedding(ModelSpec& s, const std::string& module, const std::string& stack, int64_t rows, int64_t dim,
                   const char* component = comp::kEmbeddings);
void add_norm(ModelSpec& s, const std::string& module, const std::string& stack, int64_t dim, bool bias,
              int64_t instances);
void add_other(ModelSpec& s, const std::string& module, const char* component, const std::string& stack, int64_t numel,
               int64_t instances);

// Common checks: heads divide hidden (unless head_dim is explicit), kv heads
// divide heads.
void check_heads(const JsonReader& cfg, const LayerStack& st, const char* heads_key, const char* kv_key,
                 bool head_dim_explicit);
}  // namespace detail

}  // namespace vram

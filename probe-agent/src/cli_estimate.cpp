// vram-probe params / estimate / plan / version: the same core the page runs.
//
// Flags follow the seeds' CLI (seed 000 "CLI Reference", seed 001 examples):
// each one writes one field of the request JSON, so `--request FILE` and flags
// combine (flags win).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_input.h"
#include "commands.h"
#include "gguf_file.h"
#include "safetensors_headers.h"
#include "vram/api.h"
#include "vram/duration_text.h"
#include "vram/fields.h"
#include "vram/import.h"
#include "vram/number_text.h"

namespace vram::cli {

namespace {

int print_error(const json& err, bool as_json) {
  if (as_json) {
    std::printf("%s\n", err.dump(2).c_str());
  } else {
    const auto& e = err["error"];
    std::fprintf(stderr, "vram-probe: error [%s] %s%s\n", e.value("code", "").c_str(), e.value("message", "").c_str(),
                 e.value("path", "").empty() ? "" : (" (at " + e.value("path", "") + ")").c_str());
    std::printf("%s\n", err.dump(2).c_str());
  }
  return 1;
}

json usage_error(const std::string& path, const std::string& message) {
  return error_json({errc::kBadJson, message, path});
}

std::string gib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%8.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  return buf;
}

bool truthy(const std::string& v, bool& ok) {
  ok = true;
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  ok = false;
  return false;
}

// A numeric flag's value, parsed as strictly as the request field it sets
// (issue 17): plain decimal only (std::from_chars: no hex, no leading '+' or
// spaces, no trailing text, no inf/nan), an integer for an integer field, and
// within the field's limits from the core's table (vram/fields.h), scaled by
// the flag's unit first (--cuda-context-gib 1e300 is out of range, never a
// wrapped byte count). Values are never clamped. On failure `error` is the
// {"error": ...} object naming the field.
std::optional<json> strict_number(const std::string& flag, const std::string& v, const FieldSpec& f, json& error) {
  const char* first = v.data();
  const char* last = v.data() + v.size();
  const bool integer = f.type == FieldType::kInt && f.cli_unit <= 0;
  auto wrong = [&](const char* code, const std::string& why) -> std::optional<json> {
    error = error_json({code, flag + " '" + v + "': " + why, f.path});
    return std::nullopt;
  };
  // Limits as the table states them: integers for integer fields (bytes too).
  const auto limit = [&](double x) {
    return f.type == FieldType::kInt ? json(static_cast<int64_t>(x)).dump() : json(x).dump();
  };
  const std::string range = f.min && f.max ? " between " + limit(*f.min) + " and " + limit(*f.max) : "";
  if (integer) {
    int64_t i = 0;
    const auto [ptr, ec] = std::from_chars(first, last, i);
    if (ec == std::errc::result_out_of_range) return wrong(errc::kOutOfRange, f.path + " must be" + range);
    if (ec != std::errc() || ptr != last) return wrong(errc::kWrongType, f.path + " must be a decimal integer" + range);
    if ((f.min && static_cast<double>(i) < *f.min) || (f.max && static_cast<double>(i) > *f.max)) {
      return wrong(errc::kOutOfRange, f.path + " must be" + range);
    }
    return json(i);
  }
  double d = 0;
  const auto [ptr, ec] = std::from_chars(first, last, d, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) return wrong(errc::kOutOfRange, "the number is out of range");
  if (ec != std::errc() || ptr != last || !std::isfinite(d)) return wrong(errc::kWrongType, "must be a decimal number");
  if (f.cli_unit > 0) {
    // The flag's unit (GiB, MiB) times the value must land in the byte
    // field's limits before it becomes an integer.
    const double bytes = d * f.cli_unit;
    if ((f.min && bytes < *f.min) || (f.max && bytes > *f.max) || !std::isfinite(bytes)) {
      return wrong(errc::kOutOfRange,
                   f.path + " must be" + range + " bytes (" + flag + " x " + limit(f.cli_unit) + ")");
    }
    return json(static_cast<int64_t>(std::llround(bytes)));
  }
  if ((f.min && d < *f.min) || (f.max && d > *f.max)) return wrong(errc::kOutOfRange, f.path + " must be" + range);
  return json(d);
}

void set_path(json& j, const std::string& dotted, json value) {
  json* cur = &j;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) {
      (*cur)[key] = std::move(value);
      return;
    }
    if (!cur->contains(key) || !(*cur)[key].is_object()) (*cur)[key] = json::object();
    cur = &(*cur)[key];
    start = dot + 1;
  }
}

// The keys `vram-probe import` lists as not understood, on stderr, so an
// estimate from the files never drops one silently (issue 33); stdout keeps
// the estimate's bytes, the page's.
void warn_not_understood(const json& imported) {
  for (const auto& f : imported["files"]) {
    for (const auto& n : f["not_understood"]) {
      std::fprintf(stderr, "vram-probe: warning: %s: %s not understood: %s\n", f["file"].get<std::string>().c_str(),
                   n["key"].get<std::string>().c_str(), n["why"].get<std::string>().c_str());
    }
  }
}

// The checkpoint's inventory (model.safetensors): what is stored, by dtype,
// and the cross-check against the model's exact count.
void print_checkpoint(const json& c) {
  std::printf(
      "\n  checkpoint: %s tensors, %s bytes as stored (%s)\n", vram::fmt_int(c["tensors"].get<int64_t>()).c_str(),
      vram::fmt_int(c["stored_bytes"].get<int64_t>()).c_str(),
      c["quantization"].get<std::string>().empty() ? "not quantised" : c["quantization"].get<std::string>().c_str());
  for (const auto& [dtype, n] : c["elements_by_dtype"].items()) {
    std::printf("    %-10s %20s elements\n", dtype.c_str(), vram::fmt_int(n.get<int64_t>()).c_str());
  }
  std::printf("    parameters (dequantised) %s\n", vram::fmt_int(c["params"].get<int64_t>()).c_str());
  const json& x = c["cross_check"];
  if (x["matches"].get<bool>()) {
    std::printf("    cross-check: the model's count equals the checkpoint's\n");
  } else {
    std::printf("    cross-check: checkpoint - model = %s parameters\n",
                vram::fmt_int(x["difference"].get<int64_t>()).c_str());
    for (const auto& e : x["explained"]) {
      std::printf("      %s: %s\n", e["reason"].get<std::string>().c_str(),
                  vram::fmt_int(e["params"].get<int64_t>()).c_str());
    }
  }
  if (!c["unplaced"].empty()) {
    std::printf("    %zu unplaced tensors (counted as weights):", c["unplaced"].size());
    size_t shown = 0;
    for (const auto& n : c["unplaced"]) {
      if (shown++ == 6) {
        std::printf(" ...");
        break;
      }
      std::printf(" %s", n.get<std::string>().c_str());
    }
    std::printf("\n");
  }
}

// DIR/config.json next to a checkpoint directory or index, when present.
std::string directory_config(const std::string& tensors) {
  std::error_code ec;
  std::filesystem::path p(tensors);
  const std::filesystem::path dir = std::filesystem::is_directory(p, ec) ? p : p.parent_path();
  const std::filesystem::path cfg = dir / "config.json";
  if (!std::filesystem::exists(cfg, ec)) return "";
  std::fprintf(stderr, "vram-probe: using %s\n", cfg.string().c_str());
  return cfg.string();
}

void print_params_table(const json& m) {
  std::printf("%s  (%s, family %s)\n", m.value("architecture", "").c_str(), m.value("model_type", "").c_str(),
              m.value("family", "").c_str());
  std::printf("  total parameters   %20s%s\n", vram::fmt_int(m["params_total"].get<int64_t>()).c_str(),
              m["exact"].get<bool>() ? "  (exact)" : "  (APPROXIMATE)");
  if (m["params_active"].get<int64_t>() != m["params_total"].get<int64_t>()) {
    std::printf("  active per token   %20s\n", vram::fmt_int(m["params_active"].get<int64_t>()).c_str());
  }
  std::printf("\n  %-16s %20s\n", "component", "parameters");
  for (const auto& row : m["breakdown"]) {
    std::printf("  %-16s %20s\n", row["component"].get<std::string>().c_str(),
                vram::fmt_int(row["params"].get<int64_t>()).c_str());
  }
  const auto& f = m["facts"];
  std::printf(
      "\n  layers %lld, hidden %lld, heads %lld (kv %lld, head_dim %lld), intermediate %lld, vocab %lld, %s, %s\n",
      static_cast<long long>(f["layers"].get<int64_t>()), static_cast<long long>(f["hidden"].get<int64_t>()),
      static_cast<long long>(f["heads"].get<int64_t>()), static_cast<long long>(f["kv_heads"].get<int64_t>()),
      static_cast<long long>(f["head_dim"].get<int64_t>()), static_cast<long long>(f["intermediate"].get<int64_t>()),
      static_cast<long long>(f["vocab"].get<int64_t>()), f["attention"].get<std::string>().c_str(),
      f["tie_word_embeddings"].get<bool>() ? "tied embeddings" : "untied lm_head");
  for (const auto& r : m["inexact"]) std::printf("  ! %s\n", r.get<std::string>().c_str());
  for (const auto& n : m["notes"]) std::printf("  note: %s\n", n.get<std::string>().c_str());
  if (m.contains("checkpoint")) print_checkpoint(m["checkpoint"]);
}

// One row per pipeline rank (result.parallel.stages): the layers it holds, the
// micro-batches of activations it keeps in flight (fractional with virtual
// stages), whether it holds the embeddings or the head and loss, its peak.
void print_stage_table(const json& pl) {
  const int64_t busiest = pl.value("busiest_stage", int64_t{-1});
  std::printf("\n  %5s %7s %5s %10s  %-11s %12s\n", "stage", "layers", "MoE", "in flight", "holds", "peak");
  for (const auto& st : pl["stages"]) {
    const int64_t stage = st["stage"].get<int64_t>();
    const double in_flight = st["in_flight"].get<double>();
    char flight[32];
    if (in_flight == std::floor(in_flight)) {
      std::snprintf(flight, sizeof flight, "%lld", static_cast<long long>(in_flight));
    } else {
      std::snprintf(flight, sizeof flight, "%.2f", in_flight);
    }
    std::string holds;
    if (st.value("embeddings", false)) holds = "embeddings";
    if (st.value("head", false)) holds += holds.empty() ? "head" : "+head";
    const int64_t moe = st.value("moe_layers", int64_t{0});
    std::printf("  %5lld %7lld %5s %10s  %-11s %12s%s\n", static_cast<long long>(stage),
                static_cast<long long>(st["layers"].get<int64_t>()), moe > 0 ? std::to_string(moe).c_str() : "-",
                flight, holds.empty() ? "-" : holds.c_str(), gib(st["peak_bytes"].get<int64_t>()).c_str(),
                stage == busiest ? "  <- busiest" : "");
  }
}

void print_suggestions(const json& r);

// A llama.cpp engine's buffers per device, in MiB as its start-up log prints
// them ("CUDA0 model buffer size", "KV buffer size", "compute buffer size").
void print_llama_devices(const json& in) {
  const auto num = [&](const char* k) { return static_cast<long long>(in[k].get<int64_t>()); };
  std::printf("\n%s: %lld of %lld layers on the GPU, --ctx-size %lld (%lld sequence(s) of %lld), flash attention %s\n",
              in["engine"].get<std::string>().c_str(), num("gpu_layers"), num("layers_total"), num("ctx_size"),
              num("parallel"), num("n_ctx_seq"), in["flash_attn"].get<int64_t>() != 0 ? "on" : "off");
  std::printf("  %-8s %13s %13s %13s %13s %13s %13s\n", "device", "model buffer", "KV buffer", "compute buf",
              "output buf", "CUDA context", "total");
  const auto mib = [](const json& d, const char* k) { return d.value(k, int64_t{0}) / 1048576.0; };
  for (const auto& d : in["devices"]) {
    std::printf("  %-8s %9.2f MiB %9.2f MiB %9.2f MiB %9.2f MiB %9.2f MiB %9.2f MiB\n",
                d["device"].get<std::string>().c_str(), mib(d, "weights_bytes"), mib(d, "kv_bytes"),
                mib(d, "compute_bytes"), mib(d, "output_bytes"), mib(d, "context_bytes"), mib(d, "total_bytes"));
  }
  if (in.contains("max_gpu_layers")) std::printf("  largest --n-gpu-layers that fits: %lld", num("max_gpu_layers"));
  if (in.contains("max_ctx_size")) std::printf("; longest --ctx-size that fits: %lld", num("max_ctx_size"));
  std::printf("\n");
}

// vLLM's / SGLang's start-up lines as the estimate expects them, each
// text once (a figure's line can repeat inside the line before it).
void print_engine_log(const json& in) {
  if (!in.contains("engine_log")) return;
  std::printf("\n  %s should print at start-up:", in["engine"] == "vllm" ? "vLLM" : "SGLang");
  std::string last;
  for (const auto& l : in["engine_log"]) {
    const std::string text = l["text"].get<std::string>();
    if (last.find(text) == std::string::npos) std::printf("\n    %s", text.c_str());
    last = text;
  }
}

// "1.23-1.57" from a time object's {low, high}.
std::string span(const json& range, double scale = 1) {
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.3g", v);
    return std::string(buf);
  };
  return num(range["low"].get<double>() * scale) + "-" + num(range["high"].get<double>() * scale);
}

// "327-399 us" from a duration's {low, high} in seconds, as the core's
// formulas write it.
std::string duration_span(const json& range) {
  return format_seconds(range["low"].get<double>(), range["high"].get<double>());
}

// The result's `time` object (the time model): the step or the decode speed,
// the run and its cost, then each term and assumption.
void print_time(const json& r) {
  if (!r.contains("time")) return;
  const json& t = r["time"];
  if (t["gpu"].is_null()) {
    std::printf("\nTime: %s\n", t.value("unavailable", std::string("no GPU")).c_str());
    return;
  }
  if (t["task"] == "train") {
    std::printf("\nTime on %lld x %s: %s s a step, %s tokens/s per GPU, MFU %s %%",
                static_cast<long long>(t["gpus"].get<int64_t>()), t["gpu"].get<std::string>().c_str(),
                span(t["step_seconds"]).c_str(), span(t["tokens_per_second_per_gpu"]).c_str(),
                span(t["mfu"], 100).c_str());
    if (!t["run_hours"].is_null()) std::printf("; run %s h", span(t["run_hours"]).c_str());
    if (!t["usd"].is_null()) std::printf(", $%s", span(t["usd"]).c_str());
  } else {
    std::printf("\nSpeed on %s (%s): TTFT %s s, decode %s tokens/s a sequence, %s tokens/s at batch %lld",
                t["gpu"].get<std::string>().c_str(), t["engine"].get<std::string>().c_str(),
                span(t["ttft_seconds"]).c_str(), span(t["decode_tokens_per_second_per_sequence"]).c_str(),
                span(t["decode_tokens_per_second"]).c_str(), static_cast<long long>(t["batch"].get<int64_t>()));
    if (!t["usd_per_million_output_tokens"].is_null()) {
      std::printf(", $%s per million output tokens", span(t["usd_per_million_output_tokens"]).c_str());
    }
  }
  if (!t["price"].is_null()) std::printf(" (at $%.3g per GPU-hour)", t["price"]["usd_per_gpu_hour"].get<double>());
  std::printf("\n");
  for (const auto& x : t["terms"]) {
    std::printf("  %-36s %17s   %s\n", x["label"].get<std::string>().c_str(), duration_span(x["seconds"]).c_str(),
                x["formula"].get<std::string>().c_str());
  }
  for (const auto& a : t["assumptions"]) std::printf("  assumed: %s\n", a.get<std::string>().c_str());
}

// The layout line: degrees, nodes, experts per rank, NCCL buffers, the
// fewest GPUs that fit, and the stage table.
void print_layout(const json& pl) {
  std::printf("\nLayout: %s", pl.value("layout", std::string("")).c_str());
  for (const char* k : {"gpus", "dp", "tp", "pp", "cp", "shard_group"}) {
    if (pl.contains(k)) std::printf(", %s %lld", k, static_cast<long long>(pl[k].get<int64_t>()));
  }
  // Degrees that are 1 by default are printed only when they split something.
  for (const char* k : {"ep", "vp"}) {
    if (pl.contains(k) && pl[k].get<int64_t>() > 1) {
      std::printf(", %s %lld", k, static_cast<long long>(pl[k].get<int64_t>()));
    }
  }
  if (pl.contains("nodes") && pl["nodes"].get<int64_t>() > 1) {
    std::printf(", %lld nodes x %lld GPUs", static_cast<long long>(pl["nodes"].get<int64_t>()),
                static_cast<long long>(pl.value("gpus_per_node", int64_t{0})));
  }
  if (pl.contains("experts_per_rank")) {
    std::printf("; %lld experts per rank", static_cast<long long>(pl["experts_per_rank"].get<int64_t>()));
  }
  if (pl.contains("nccl_bytes")) std::printf("; NCCL buffers %s", gib(pl["nccl_bytes"].get<int64_t>()).c_str());
  if (pl.contains("first_stage_peak_bytes") && !pl.contains("stages")) {
    std::printf("; first stage %s, last stage %s", gib(pl["first_stage_peak_bytes"].get<int64_t>()).c_str(),
                gib(pl["last_stage_peak_bytes"].get<int64_t>()).c_str());
  }
  if (pl.contains("min_gpus_to_fit")) {
    const int64_t n = pl["min_gpus_to_fit"].get<int64_t>();
    if (n > 0) {
      std::printf("\n  fewest GPUs for this layout to fit: %lld", static_cast<long long>(n));
    } else {
      std::printf("\n  no data-parallel size up to 4096 makes this layout fit");
    }
  }
  std::printf("\n");
  if (pl.contains("stages")) print_stage_table(pl);
}

void print_estimate_table(const json& r) {
  const auto& m = r["model"];
  std::printf("%s  %s, %s params (%s trainable)\n", r["task"].get<std::string>() == "train" ? "TRAIN" : "INFER",
              m.value("architecture", m.value("model_type", "")).c_str(),
              vram::fmt_int(m["params_total"].get<int64_t>()).c_str(),
              vram::fmt_int(m["params_trainable"].get<int64_t>()).c_str());
  std::printf("\nPeak per GPU: %s at phase '%s'  (allocated %s, reserved %s)\n",
              gib(r["peak_bytes"].get<int64_t>()).c_str(), r["peak_phase"].get<std::string>().c_str(),
              gib(r["peak_allocated_bytes"].get<int64_t>()).c_str(),
              gib(r["peak_reserved_bytes"].get<int64_t>()).c_str());
  std::printf("\n  %-34s %12s   %s\n", "component", "size", "how");
  for (const auto& c : r["components"]) {
    std::printf("  %-34s %12s   %s\n", c["label"].get<std::string>().c_str(), gib(c["bytes"].get<int64_t>()).c_str(),
                c["formula"].get<std::string>().c_str());
  }
  std::printf("\n  %-44s %12s\n", "phase", "device view");
  for (const auto& p : r["phases"]) {
    const bool peak = p["key"] == r["peak_phase"];
    std::printf("  %-44s %12s%s\n", p["label"].get<std::string>().c_str(), gib(p["bytes"].get<int64_t>()).c_str(),
                peak ? "  <- peak" : "");
  }
  if (!r["fit"].is_null()) {
    const auto& f = r["fit"];
    // The verdict's words are the core's (fit.words), the same as the page's.
    std::printf("\nFit on %s: %s, %.1f%% of %s usable", f["gpu"].get<std::string>().c_str(),
                f["words"].get<std::string>().c_str(), 100.0 * f["utilization"].get<double>(),
                gib(f["capacity_bytes"].get<int64_t>()).c_str());
    if (f.contains("max_micro_batch")) {
      std::printf("; largest micro-batch that fits: %lld", static_cast<long long>(f["max_micro_batch"].get<int64_t>()));
    }
    if (f.contains("max_seq_len")) {
      std::printf("; longest sequence that fits: %lld tokens", static_cast<long long>(f["max_seq_len"].get<int64_t>()));
    }
    std::printf("\n");
  }
  if (r.contains("parallel")) print_layout(r["parallel"]);
  if (r.contains("infer") && r["infer"].contains("devices")) {
    print_llama_devices(r["infer"]);
  } else if (r.contains("infer")) {
    const auto& in = r["infer"];
    std::printf("\nServing (%s): KV %s B per token (%s B per layer), cache %s", in["engine"].get<std::string>().c_str(),
                vram::fmt_int(in["kv_bytes_per_token"].get<int64_t>()).c_str(),
                vram::fmt_int(in["kv_bytes_per_token_per_layer"].get<int64_t>()).c_str(),
                gib(in["kv_cache_bytes"].get<int64_t>()).c_str());
    if (in.contains("max_concurrent_sequences")) {
      std::printf("\n  max concurrent sequences at %lld tokens: %lld; max context at batch %lld: %s tokens",
                  static_cast<long long>(in["context_len"].get<int64_t>()),
                  static_cast<long long>(in["max_concurrent_sequences"].get<int64_t>()),
                  static_cast<long long>(in["batch"].get<int64_t>()),
                  vram::fmt_int(in["max_context_len"].get<int64_t>()).c_str());
    }
    print_engine_log(in);
    std::printf("\n");
  }
  std::printf("\nGPUs that fit:");
  int n = 0;
  for (const auto& g : r["gpus"]) {
    if (g["fits"].get<bool>())
      std::printf("%s %s (%.0f%%)", n++ ? "," : "", g["name"].get<std::string>().c_str(),
                  100.0 * g["utilization"].get<double>());
  }
  std::printf("%s\n", n == 0 ? " none in the catalog" : "");
  for (const auto& a : r["assumptions"]) std::printf("  assumed: %s\n", a.get<std::string>().c_str());
  for (const auto& w : r["warnings"]) std::printf("  WARNING: %s\n", w.get<std::string>().c_str());
  print_time(r);
  print_suggestions(r);
}

const char* kEstimateHelp = R"(usage: vram-probe estimate [--request FILE | --model-config FILE] [options] [--json]

Model:     --request FILE            a request JSON (docs/schema.md); flags below override it
           --from FILE               an Axolotl / LLaMA-Factory / torchtune / LitGPT recipe, TrainingArguments,
                                     adapter_config.json, config.json, DeepSpeed or accelerate config
                                     (repeatable; see `vram-probe import --help`); flags win over it
           --model-config FILE       an HF config.json (sets model.config)
           --safetensors PATH        model.safetensors.index.json, a directory or a .safetensors file: reads
                                     only the headers (sets model.safetensors; any architecture; serving then
                                     sizes the weights as stored unless --weights-dtype names one)
           --gguf FILE               a .gguf file (the first shard of a split one): reads only its header (sets
                                     model.gguf; the model of --engine llama_cpp|ollama|lmstudio)
           --mmproj FILE             a multimodal projector .gguf (llama.cpp --mmproj; sets model.mmproj)
           --allow-generic           estimate unknown model types as a generic decoder (approximate)
           --model-size SIZE         quick sizing: a Llama-3-shaped decoder of SIZE parameters (7B, 1.5B, 350M;
                                     approximate, see `vram-probe quick --help`)
Task:      --task train|infer
Training:  --method full|lora|qlora|freeze   --lora  --qlora (shortcuts)
           --framework hf|torchtune|litgpt|unsloth|axolotl|llama_factory|torchtitan|megatron|deepspeed|
                       fsdp_qlora
                     [@RELEASE] (torchtune@0.2, unsloth@2024.8, hf@4.44: its defaults and the rules of its
                     library versions fill the fields left out; no release: the newest; `vram-probe version`
                     lists the releases)
           --torch-version V  --transformers-version V  --peft-version V  --trl-version V
           --bitsandbytes-version V  --torchao-version V  --flash-attn-version V
                     (override one library of the release: versions.<library>)
           --per-device-batch N  --seq-len N  --grad-accum N
           --dtype fp32|bf16|fp16|amp_bf16|amp_fp16|mixed_bf16
           --optimizer NAME (HF optim names: adamw_torch, adamw_torch_fused, adamw_bnb_8bit, paged_adamw_8bit,
                             adafactor, sgd, sgd_momentum, lion_32bit, ...)
           --grad-checkpoint true|false|selective|selective_op  --flashattn true|false
           --attention eager|sdpa|flash_attention_2|xformers
           --padding max_length|packed|longest (longest: batches padded to their longest sample vary in length,
                     and the allocator replay keeps the blocks of each; torchtune and LitGPT default to it)
           --fused-loss true|false  --liger true|false (fused loss + fused norms)
           --loss standard|chunked|fused  --loss-chunks N (chunked: the output layer and an fp32
                     cross-entropy per chunk of the sequence, torchtune's CEWithChunkedOutputLoss: 8)
           --kernels standard|unsloth (unsloth: Unsloth's fused LoRA / RMSNorm / RoPE / cross-entropy kernels;
                     --framework unsloth sets it)
           --activation-offload true|false  --optimizer-in-backward true|false
           --compile true|false (torch.compile: accepted, not modelled; the estimate stays eager mode's)
           --lora-rank N  --lora-alpha X  --lora-dropout X  --lora-target-modules q_proj,v_proj|all-linear
                     (add lm_head for LoRA on the output layer; all-linear leaves it out, as PEFT does)
           --trainable-modules lm_head,layers.31  (method freeze)  --images-per-sample N (VLMs)
Inference: --batch N  --context-len N (vLLM --max-model-len, SGLang --context-length)  --prompt-len N
           --weights-dtype bf16|fp8|int8|gptq|awq|nf4|nf4-dq  --kv-dtype bf16|fp8
           --engine hf|vllm|sglang|litgpt|llama_cpp|ollama|lmstudio  --engine-version RELEASE (vLLM 0.11.1, SGLang
                     0.5.4: its rules apply; --engine vllm@0.11.1 is the same)
           vLLM:   --gpu-memory-utilization X  --max-num-seqs N  --max-num-batched-tokens N  --block-size N
                   --enforce-eager  --max-model-len N  --tensor-parallel-size N  --pipeline-parallel-size N
                   --kv-cache-dtype bf16|fp8  --entrypoint server|offline (vllm serve / the LLM class: other defaults)
           SGLang: --mem-fraction-static X  --chunked-prefill-size N  --cuda-graph-max-bs N  --context-length N
                   --disable-cuda-graph  (--tp N: its tensor parallel size; without --gpus, inference takes tp x pp)
           --images-per-prompt N (VLMs: images in each prompt)
llama.cpp: --engine llama_cpp|ollama|lmstudio  --gguf FILE, or a config with --weights-dtype Q4_K_M|Q5_K_S|IQ4_XS|Q8_0|...
           --ctx-size N (-c, all sequences; Ollama: --context-len is num_ctx)  --parallel N (-np; Ollama:
                     OLLAMA_NUM_PARALLEL)  --n-gpu-layers N  --batch-size N  --ubatch-size N  --flash-attn on|off|auto
           --cache-type-k f16|q8_0|q4_0|...  --cache-type-v TYPE  --kv-unified true  --swa-full true
           --fit false (2025-12: on, the left-out -c and -ngl shrink to keep 1 GiB free)
           --kv-offload false (--no-kv-offload)  --mmap false (--no-mmap)  --split-mode layer|none
           --tensor-split 3,1  --engine-version 2025-12|2025-10|2025-05 (Ollama: its version, 0.6.7)
Parallel:  --gpus N  --dp N  --tp N  --pp N  --cp N  --zero 0-3  --fsdp full_shard|shard_grad_op|hybrid_shard|no_shard
           --gpus-per-node N | --nodes N  --offload-optimizer true  --offload-params true  --sequence-parallel true
           --ep N (expert parallel, MoE; divides the experts and dp x cp)  --vp N (virtual stages per rank, pp > 1)
           --distributed-optimizer true|false (Megatron, shards fp32 main params + states over dp; not with ZeRO/FSDP)
           --main-grads-fp32 true|false (Megatron fp32 main-grad buffer, default true)
           --fsdp-version 1|2 (FlatParameter / fully_shard)  --fsdp-reduce-dtype bf16|fp16|fp32 (default: param dtype)
           --fsdp-sync-module-states true|false (FSDP1: each unit broadcast from rank 0 while built; default by release)
           --nccl-channels 1-64 (default 32)  --nvls true|false (NVLink SHARP buffers; default by GPU)
           --deepspeed-config ds_config.json  (zero_optimization, micro-batch, accumulation, bf16)
GPU:       --gpu NAME (e.g. "H100 80GB", A100-40GB, 4090)  --gpu-mem GIB
Overheads: --cuda-context-gib X  --cublas-workspace-mib X  --misc-overhead-gib X
           --fragmentation X (reserved = allocated x (1 + X), replaces the allocator replay)
Allocator: --alloc-conf "expandable_segments:True,max_split_size_mb:128" (PYTORCH_CUDA_ALLOC_CONF)
           --expandable-segments true|false  --max-split-size-mb N (> 20)
Factors:   --attn-act-factor X  --mlp-act-factor X  --logits-factor X  --grad-ckpt-factor X (off by default)
Time:      --time true|false (the result's time object: step time, tokens/s, MFU, run hours, cost; default true)
           --run-tokens N | --samples N [--mean-len N] [--epochs X]   the run's size, for its hours and cost
           --gpu-hour-usd X (the card's price per GPU-hour; absent: the default table's)
           --link nvlink5|nvlink4|nvlink3|nvlink2|nvlink_bridge|xgmi|pcie5|pcie4|pcie3 (default: by GPU)
           --network-gbps X (a node's backend network, Gbit/s)  --host-memory-gbs X (CPU RAM bandwidth)
           --matmul-tflops X  --memory-gbs X  (the card's measured rates; needed with --gpu-mem)
Output:    --json  the result object (same bytes as the page's WASM module)
           --suggest  when the job does not fit (or fits above the 80% headroom rule): add `suggestions`, the
                     changes that would make it fit, cheapest first, each a patch of request fields with its
                     re-estimated peak and its cost (the page's "What would make it fit")
)";

}  // namespace

int run_params(const std::vector<std::string>& args) {
  std::string file, tensors;
  bool as_json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      as_json = true;
    } else if ((args[i] == "--config" || args[i] == "--model-config") && i + 1 < args.size()) {
      // --model-config is estimate's name for the same file; both work here.
      file = args[++i];
    } else if (args[i] == "--safetensors" && i + 1 < args.size()) {
      tensors = args[++i];
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::printf(
          "usage: vram-probe params --config FILE [--json]   (--model-config FILE, as estimate calls it, too)\n"
          "       vram-probe params --safetensors model.safetensors.index.json|DIR|FILE.safetensors [--config FILE] "
          "[--json]\n"
          "  --safetensors reads only the safetensors headers (names, dtypes, shapes) and counts every tensor as\n"
          "  stored; a DIR's config.json is used when --config is not given. With a known model_type the exact\n"
          "  count is cross-checked against the checkpoint.\n");
      return 0;
    } else {
      return print_error(usage_error(args[i], "unknown argument '" + args[i] + "' (see --help)"), as_json) + 1;
    }
  }
  if (file.empty() && tensors.empty()) {
    return print_error(usage_error("--config", "--config FILE or --safetensors PATH is required"), as_json) + 1;
  }
  json model = json::object();
  if (!tensors.empty()) {
    auto inv = read_safetensors_inventory(tensors);
    if (!inv.ok()) return print_error(error_json(inv.error()), as_json);
    model["safetensors"] = inv.value();
    if (file.empty()) file = directory_config(tensors);
  }
  if (!file.empty()) {
    json err;
    auto parsed = read_json_file(file, "config", err);
    if (!parsed) return print_error(err, as_json);
    model["config"] = std::move(*parsed);
  }
  const json result = model_info(model);
  if (result.contains("error")) return print_error(result, as_json);
  if (as_json) {
    std::printf("%s\n", result.dump(2).c_str());
  } else {
    print_params_table(result);
  }
  return 0;
}

namespace {

// Flags of the seeds' CLI that name a field the table gives another flag.
const std::map<std::string, std::string> kFlagAliases = {
    {"--micro-batch", "train.micro_batch"},
    {"--precision", "train.precision"},
    // llama.cpp's own spellings.
    {"--parallel", "infer.batch"},
    {"--num-ctx", "infer.context_len"},
    // The serving engines' own flag names (vllm serve --help, SGLang
    // server_args.py): the same fields.
    {"--max-model-len", "infer.context_len"},
    {"--context-length", "infer.context_len"},
    {"--tensor-parallel-size", "parallel.tp"},
    {"--pipeline-parallel-size", "parallel.pp"},
    {"--kv-cache-dtype", "infer.kv_dtype"},
    {"--disable-cuda-graph", "infer.enforce_eager"},
};

// Shortcuts that set fields to fixed or derived values.
const std::vector<std::pair<std::string, std::string>> kShortcutFlags = {
    {"--lora", "train.method"},      {"--qlora", "train.method"},     {"--flashattn", "train.attention"},
    {"--liger", "train.fused_loss"}, {"--liger", "train.fused_norm"}, {"--no-kv-offload", "infer.kv_offload"},
    {"--no-mmap", "infer.mmap"},
};

}  // namespace

std::vector<std::pair<std::string, std::string>> request_flags() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : request_fields()) {
    if (!f.cli.empty()) out.emplace_back(f.cli, f.path);
  }
  for (const auto& [flag, path] : kFlagAliases) out.emplace_back(flag, path);
  out.insert(out.end(), kShortcutFlags.begin(), kShortcutFlags.end());
  return out;
}

const char* estimate_help() { return kEstimateHelp; }

namespace {

// --suggest: the estimate's result with `suggestions` (and their goal and
// notes) from the core's suggest(), the same as the page's WASM suggest().
std::string with_suggestions(json& result, const std::string& request_text) {
  const json s = json::parse(suggest_json(request_text));
  if (s.contains("error")) {
    result["suggestions_error"] = s["error"];
  } else {
    result["suggestions"] = s["suggestions"];
    result["suggestions_goal"] = s["goal"];
    result["suggestions_notes"] = s["notes"];
  }
  return result.dump(2);
}

void print_suggestions(const json& r) {
  if (!r.contains("suggestions")) return;
  const std::string goal = r.value("suggestions_goal", std::string("none"));
  if (goal == "none") {
    std::printf("\nSuggestions: none needed (fits within the headroom rule)\n");
    return;
  }
  std::printf("\nWhat would make it %s (cheapest first):\n", goal == "fit" ? "fit" : "fit within the headroom rule");
  if (r["suggestions"].empty()) std::printf("  nothing the planner tries\n");
  for (const auto& s : r["suggestions"]) {
    std::printf("  %-52s %s  %-26s cost (%s): %s\n", s["title"].get<std::string>().c_str(),
                gib(s["peak_bytes"].get<int64_t>()).c_str(), s["words"].get<std::string>().substr(0, 26).c_str(),
                s["cost"]["kind"].get<std::string>().c_str(), s["cost"]["text"].get<std::string>().c_str());
    if (s.contains("time") && s["time"].is_object()) {
      // The time model's step after the change (issue 31).
      const json& t = s["time"];
      std::string line = "step " + span(t["step_seconds"]) + " s";
      if (t["vs_base"].is_number()) {
        char buf[48];
        std::snprintf(buf, sizeof buf, " (x%.2f the job's as asked)", t["vs_base"].get<double>());
        line += buf;
      }
      if (t["usd_per_million_tokens"].is_object()) line += ", $" + span(t["usd_per_million_tokens"]) + " per M tokens";
      std::printf("  %-52s %s\n", "", line.c_str());
    }
    std::printf("  %-52s patch %s\n", "", s["patch"].dump().c_str());
  }
}

// What a request command runs and prints: `estimate` or `plan`.
struct RequestCommand {
  const char* help;
  std::string (*core)(const std::string&);  // estimate_json or plan_json: the page's functions
  void (*print)(const json&);
  bool plan;              // accepts the planner's flags
  bool exporter = false;  // accepts --format and --model-id (vram-probe export)
};

// A switch that may take a value: vLLM's --enforce-eager and SGLang's
// --disable-cuda-graph stand alone; a following true|false is their value.
bool switch_value(const std::vector<std::string>& args, size_t& i) {
  if (i + 1 >= args.size()) return true;
  bool word = true;
  const bool next = truthy(args[i + 1], word);
  if (!word) return true;
  ++i;
  return next;
}

// The command line: flags that set request fields (the field table's, then
// the CLI's aliases and shortcuts, kExtraFlags), the files, the output mode.
struct CommandLine {
  bool as_json = false;
  bool suggest = false;
  std::vector<std::pair<std::string, json>> sets;
  std::string request_file, config_file;
  std::vector<std::string> from_files;  // --from: configuration files (vram-probe import)
};

// A request field's flag and its value `v`, read by the field's type: a file
// (config, safetensors or GGUF headers, a JSON object), a switch, a list, a
// number, a string. An exit code on an error.
std::optional<int> set_field(const std::string& a, const std::string& v, const FieldSpec& spec, CommandLine& f) {
  bool ok = true;
  if (spec.path == "model.config") {
    f.config_file = v;
  } else if (spec.path == "model.safetensors") {  // headers of local files, not a JSON file
    auto inv = read_safetensors_inventory(v);
    if (!inv.ok()) return print_error(error_json(inv.error()), f.as_json);
    f.sets.emplace_back(spec.path, inv.value());
  } else if (spec.path == "model.gguf" || spec.path == "model.mmproj") {  // a GGUF file's header
    auto inv = read_gguf_file(v, spec.path);
    if (!inv.ok()) return print_error(error_json(inv.error()), f.as_json);
    f.sets.emplace_back(spec.path, inv.value());
  } else if (spec.type == FieldType::kObject) {
    json err;
    auto obj = read_json_file(v, spec.path, err);
    if (!obj) return print_error(err, f.as_json);
    f.sets.emplace_back(spec.path, std::move(*obj));
  } else if (spec.type == FieldType::kBool) {
    const bool b = truthy(v, ok);
    if (!ok) return print_error(usage_error(a, a + " needs true or false, got '" + v + "'"), f.as_json) + 1;
    f.sets.emplace_back(spec.path, b);
  } else if (spec.path == "train.grad_checkpointing") {  // true|false|selective|selective_op
    const bool b = truthy(v, ok);
    f.sets.emplace_back(spec.path, ok ? json(b) : json(v));
  } else if (spec.type == FieldType::kList) {
    json list = json::array();
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (!item.empty()) list.push_back(item);
    }
    // PEFT's "all-linear" is a string, not a one-name list.
    f.sets.emplace_back(spec.path, v == "all-linear" ? json("all-linear") : list);
  } else if (spec.type == FieldType::kInt || spec.type == FieldType::kNumber) {
    // --cuda-context-gib: GiB or MiB on the command line, bytes in the request.
    json err;
    const auto n = strict_number(a, v, spec, err);
    if (!n) return print_error(err, f.as_json);
    f.sets.emplace_back(spec.path, *n);
  } else {
    f.sets.emplace_back(spec.path, v);
  }
  return std::nullopt;
}

// Reads `args` into `f`; an exit code when the command ends here (--help, a usage or input error).
std::optional<int> parse_command_line(const std::vector<std::string>& args, const RequestCommand& cmd, CommandLine& f) {
  for (const auto& a : args) f.as_json = f.as_json || a == "--json";
  std::map<std::string, const FieldSpec*> table_flags;
  for (const auto& spec : request_fields()) {
    if (!spec.cli.empty()) table_flags[spec.cli] = &spec;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto need = [&](std::string& out) {
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return true;
    };
    std::string v;
    bool ok = true;
    if (a == "--json") continue;
    if (!cmd.plan && a == "--suggest") {
      f.suggest = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::printf("%s", cmd.help);
      return 0;
    }
    if (a == "--request") {
      if (!need(f.request_file)) return print_error(usage_error(a, a + " needs a file"), f.as_json) + 1;
    } else if (a == "--from") {
      if (!need(v)) return print_error(usage_error(a, a + " needs a file"), f.as_json) + 1;
      f.from_files.push_back(v);
    } else if (cmd.exporter && (a == "--format" || a == "--model-id")) {
      if (!need(v)) return print_error(usage_error(a, a + " needs a value"), f.as_json) + 1;
      f.sets.emplace_back(a == "--format" ? "export.format" : "export.model_id", v);
    } else if (cmd.plan && (a == "--framework" || a == "--top")) {
      if (!need(v)) return print_error(usage_error(a, a + " needs a value"), f.as_json) + 1;
      if (a == "--framework") {
        f.sets.emplace_back("plan.framework", v);
      } else {
        // plan.top is the planner's option, not a request field: parsed as
        // strictly, its range is checked where it is read (api.cpp plan).
        FieldSpec top;
        top.path = "plan.top";
        top.type = FieldType::kInt;
        json err;
        const auto n = strict_number(a, v, top, err);
        if (!n) return print_error(err, f.as_json);
        f.sets.emplace_back("plan.top", *n);
      }
    } else if (cmd.plan && (a == "--allow-offload" || a == "--allow-checkpointing")) {
      if (!need(v)) return print_error(usage_error(a, a + " needs true or false"), f.as_json) + 1;
      const bool b = truthy(v, ok);
      if (!ok) return print_error(usage_error(a, a + " needs true or false, got '" + v + "'"), f.as_json) + 1;
      f.sets.emplace_back(a == "--allow-offload" ? "plan.allow_offload" : "plan.allow_checkpointing", b);
    } else if (a == "--lora" || a == "--qlora") {
      f.sets.emplace_back("train.method", a == "--lora" ? "lora" : "qlora");
    } else if (a == "--no-kv-offload" || a == "--no-mmap") {  // llama.cpp's switches
      f.sets.emplace_back(a == "--no-mmap" ? "infer.mmap" : "infer.kv_offload", false);
    } else if (a == "--flashattn" || a == "--liger") {
      if (!need(v)) return print_error(usage_error(a, a + " needs true or false"), f.as_json) + 1;
      const bool b = truthy(v, ok);
      if (!ok) return print_error(usage_error(a, a + " needs true or false, got '" + v + "'"), f.as_json) + 1;
      if (a == "--flashattn") f.sets.emplace_back("train.attention", b ? "flash_attention_2" : "eager");
      if (a == "--liger") {
        f.sets.emplace_back("train.fused_loss", b);
        f.sets.emplace_back("train.fused_norm", b);
      }
    } else if (const auto alias = kFlagAliases.find(a); alias != kFlagAliases.end() || table_flags.count(a) != 0) {
      const FieldSpec& spec = alias != kFlagAliases.end() ? field(alias->second) : *table_flags.at(a);
      if (spec.path == "model.allow_generic") {  // a switch, no value
        f.sets.emplace_back(spec.path, true);
        continue;
      }
      // vLLM's --enforce-eager and SGLang's --disable-cuda-graph are switches;
      // a following true|false is taken as their value.
      if (spec.path == "infer.enforce_eager") {
        f.sets.emplace_back(spec.path, switch_value(args, i));
        continue;
      }
      if (!need(v)) {
        return print_error(usage_error(a, a + (spec.type == FieldType::kObject ? " needs a file" : " needs a value")),
                           f.as_json) +
               1;
      }
      if (auto code = set_field(a, v, spec, f)) return code;
    } else {
      return print_error(usage_error(a, "unknown argument '" + a + "' (see --help)"), f.as_json) + 1;
    }
  }
  return std::nullopt;
}

// The request the command line gives: the --request file's, the --from
// files' over it, --model-config, then every flag; an exit code on an error.
std::optional<int> assemble_request(const CommandLine& f, const RequestCommand& cmd, const std::string& request_text,
                                    json& req) {
  if (!f.request_file.empty()) {
    try {
      req = parse_json_text(request_text, "");
    } catch (const Failure& e) {
      return print_error(error_json(e.error()), f.as_json);
    }
    if (!req.is_object())
      return print_error(error_json({errc::kWrongType, "the request must be a JSON object", ""}), f.as_json);
  }
  if (!f.from_files.empty()) {
    // The files' request over the --request file's; the flags below win over both.
    const json imported = import_config_files(f.from_files);
    if (imported.contains("error")) return print_error(imported, f.as_json);
    warn_not_understood(imported);
    if (!req.is_object()) req = json::object();
    req.merge_patch(imported["request"]);
    // export: the recipe's model id, unless --model-id names one.
    if (cmd.exporter && imported["model"].is_object() &&
        std::none_of(f.sets.begin(), f.sets.end(), [](const auto& s) { return s.first == "export.model_id"; })) {
      const json& m = imported["model"];
      set_path(req, "export.model_id", m["preset"].is_string() ? m["preset"] : m["id"]);
    }
  }
  if (!f.config_file.empty()) {
    json err;
    auto cfg = read_json_file(f.config_file, "model.config", err);
    if (!cfg) return print_error(err, f.as_json);
    set_path(req, "model.config", std::move(*cfg));
  }
  for (const auto& [path, val] : f.sets) set_path(req, path, val);
  return std::nullopt;
}

// The core's answer (`request_text`, the page's bytes), printed.
int answer(const CommandLine& f, const RequestCommand& cmd, const std::string& request_text) {
  std::string out = cmd.core(request_text);
  json result = json::parse(out);
  if (f.suggest && !result.contains("error")) out = with_suggestions(result, request_text);
  if (result.contains("error")) {
    if (f.as_json) {
      std::printf("%s\n", out.c_str());
      return 1;
    }
    return print_error(result, false);
  }
  if (f.as_json) {
    std::printf("%s\n", out.c_str());
  } else {
    cmd.print(result);
  }
  return 0;
}

int run_request_command(const std::vector<std::string>& args, const RequestCommand& cmd) {
  CommandLine f;
  if (const auto exit = parse_command_line(args, cmd, f)) return *exit;
  std::string request_text;
  if (!f.request_file.empty()) {
    json err;
    if (!read_text_file(f.request_file, "", request_text, err)) return print_error(err, f.as_json);
  }
  // A request file with no flags goes to the core as text, exactly as the page
  // sends it, so every answer (errors included) is byte-identical to WASM.
  if (!f.request_file.empty() && f.config_file.empty() && f.sets.empty() && f.from_files.empty()) {
    return answer(f, cmd, request_text);
  }
  json req = json::object();
  if (const auto exit = assemble_request(f, cmd, request_text, req)) return *exit;
  // Same code path and same bytes as the WASM module's estimate() / plan().
  return answer(f, cmd, req.dump());
}

// The planner's answer: the ranked layouts and the flags of the best one.
void print_plan_table(const json& r) {
  const json& p = r["plan"];
  std::printf("Layouts for %lld x %s (%s usable each), %s: %lld considered, %lld fit\n\n",
              static_cast<long long>(p["gpus"].get<int64_t>()), p["gpu"].get<std::string>().c_str(),
              gib(p["capacity_bytes"].get<int64_t>()).c_str(), p["framework"].get<std::string>().c_str(),
              static_cast<long long>(p["considered"].get<int64_t>()),
              static_cast<long long>(p["fitting"].get<int64_t>()));
  std::printf("  #  %-64s %10s %6s  %-5s %6s %15s %13s %6s %7s\n", "layout", "peak", "use", "fits", "max mb", "step s",
              "$ / M tokens", "step x", "dp traffic");
  for (const auto& c : p["candidates"]) {
    const bool fits = c["fits"].get<bool>();
    // The time model's step and cost (issue 31), "-" without speed figures.
    const json& t = c["time"];
    const std::string step = t.is_null() ? "-" : span(t["step_seconds"]);
    const std::string usd =
        t.is_null() || t["usd_per_million_tokens"].is_null() ? "-" : span(t["usd_per_million_tokens"]);
    std::printf("%3lld  %-64s %10s %5.0f%%  %-5s %6lld %15s %13s %6.2f %6.1fx\n",
                static_cast<long long>(c["rank"].get<int64_t>()), c["label"].get<std::string>().c_str(),
                gib(c["peak_bytes"].get<int64_t>()).c_str(), 100.0 * c["utilization"].get<double>(),
                !fits                          ? "no"
                : c["headroom_ok"].get<bool>() ? "yes"
                                               : "tight",
                static_cast<long long>(c["max_micro_batch"].get<int64_t>()), step.c_str(), usd.c_str(),
                c["step_time_factor"].get<double>(), c["comm_factor"].get<double>());
  }
  for (const auto& n : p["notes"]) std::printf("\nnote: %s", n.get<std::string>().c_str());
  if (!p["candidates"].empty() && p["candidates"][0]["fits"].get<bool>()) {
    const json& best = p["candidates"][0];
    std::string flags;
    for (const auto& [k, v] : best["parallel"].items()) {
      if (k != "gpus" && v == 1) continue;  // degrees of 1 are the defaults
      std::string name = k;
      for (char& ch : name) ch = ch == '_' ? '-' : ch;
      flags += " --" + name + " " + (v.is_string() ? v.get<std::string>() : v.dump());
    }
    if (best["grad_checkpointing"] != "none") flags += " --grad-checkpoint true";
    std::printf("\n\nbest: vram-probe estimate ...%s\n", flags.c_str());
    for (const auto& w : best["why"]) std::printf("  - %s\n", w.get<std::string>().c_str());
  } else {
    std::printf("\n\nnothing fits: more GPUs, a larger card, LoRA/QLoRA or a shorter sequence\n");
  }
}

const char* kPlanHelp =
    R"(usage: vram-probe plan [--request FILE | --model-config FILE] --gpus N --gpu NAME [options] [--json]

Searches every layout of N GPUs the framework can run (tensor x pipeline x context x expert x data
parallel, its sharding, activation checkpointing; CPU offload only when nothing else fits), estimates
each, and ranks them: fits with the 80% headroom first, then fits, then the closest to fitting (peak /
capacity, or host RAM for offload; a note names the closest when nothing fits); among equals no offload,
the least recompute and pipeline bubble, the least tensor parallel, the least data-parallel traffic.

Planner: --framework deepspeed|fsdp|megatron (default deepspeed; fsdp or megatron when the request
           already uses them)  --top N (default 10)  --allow-offload true|false
           --allow-checkpointing true|false
Every `vram-probe estimate` option sets the workload (model, method, micro-batch, sequence,
grad accumulation, precision, optimizer, NCCL and bucket settings); see `vram-probe estimate --help`.
Output:    --json  the plan object (same bytes as the page's WASM plan())
)";

}  // namespace

int run_estimate(const std::vector<std::string>& args) {
  return run_request_command(args, {kEstimateHelp, &estimate_json, &print_estimate_table, false});
}

namespace {

const char* kExportHelp =
    R"(usage: vram-probe export --format FORMAT [--request FILE | --from FILE... | --model-config FILE] [options] [--json]

Writes the file that reproduces the estimated training job in a framework, from the same request
`vram-probe estimate` takes (every estimate option applies; see `vram-probe estimate --help`):
  deepspeed      ds_config.json (ZeRO stage, offload, micro-batch, accumulation, bf16, buckets)
  accelerate     an `accelerate config` YAML (DeepSpeed or FSDP plugin, processes, mixed precision)
  trainer        HF TrainingArguments / TRL SFTConfig keys as JSON (DeepSpeed inline, FSDP)
  axolotl        an Axolotl YAML recipe
  llama_factory  a LLaMA-Factory YAML recipe
  torchtune      a torchtune recipe YAML (and the `tune run` overrides in its header)
Imported again (`vram-probe import`, `estimate --from`), the file gives the same request fields.
           --model-id ORG/NAME   the Hub id the recipe names (default: the config's _name_or_path)
Output:    the file's text; --json  {"format", "file", "text"}
)";

void print_export(const json& r) { std::printf("%s", r["text"].get<std::string>().c_str()); }

}  // namespace

int run_export(const std::vector<std::string>& args) {
  RequestCommand cmd{kExportHelp, &export_json, &print_export, false};
  cmd.exporter = true;
  return run_request_command(args, cmd);
}

int run_plan(const std::vector<std::string>& args) {
  return run_request_command(args, {kPlanHelp, &plan_json, &print_plan_table, true});
}

int run_version(const std::vector<std::string>& /*args*/) {
  std::printf("%s\n", version_with_releases_json().c_str());
  return 0;
}

}  // namespace vram::cli

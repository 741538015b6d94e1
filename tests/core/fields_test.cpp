// The table of request fields (vram/fields.h) against docs/schema.md and
// against parse_request: every documented field is declared exactly once,
// every declaration is documented, and each declared default and limit is
// what the parser applies.
#include "vram/fields.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "fixtures.h"
#include "test_paths.h"
#include "vram/optimizers.h"
#include "vram/request.h"

namespace vram {
namespace {

// The dotted paths in the first cell of every row of docs/schema.md's
// "## Request" table. A cell names one or more fields: "`parallel.cp`,
// `.offload_params`" — a name starting with "." continues the first name's
// parent ("parallel").
std::vector<std::string> documented_request_fields() {
  std::ifstream in(std::string(VRAM_SOURCE_DIR) + "/docs/schema.md");
  std::string line;
  bool in_request = false;
  std::vector<std::string> out;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_request = line == "## Request";
    if (!in_request || line.rfind("| `", 0) != 0) continue;
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    std::string parent;
    for (size_t open = cell.find('`'); open != std::string::npos; open = cell.find('`', open)) {
      const size_t close = cell.find('`', open + 1);
      std::string name = cell.substr(open + 1, close - open - 1);
      open = close + 1;
      if (name[0] == '.') {
        name = parent + name;
      } else {
        const size_t dot = name.rfind('.');
        parent = dot == std::string::npos ? "" : name.substr(0, dot);
      }
      out.push_back(name);
    }
  }
  return out;
}

TEST(Fields, SchemaRequestSectionIsParsed) {
  const auto documented = documented_request_fields();
  // A sanity floor, so a changed heading cannot make the next tests vacuous.
  ASSERT_GT(documented.size(), 60u);
  EXPECT_NE(std::find(documented.begin(), documented.end(), "train.lora.use_dora"), documented.end());
  EXPECT_NE(std::find(documented.begin(), documented.end(), "infer.enforce_eager"), documented.end());
}

TEST(Fields, EveryDocumentedFieldHasExactlyOneDeclaration) {
  for (const auto& path : documented_request_fields()) {
    const auto n = std::count_if(request_fields().begin(), request_fields().end(),
                                 [&](const FieldSpec& f) { return f.path == path; });
    EXPECT_EQ(n, 1) << path << " in docs/schema.md is declared " << n << " times in core/src/fields.cpp";
  }
}

TEST(Fields, EveryDeclarationIsDocumentedOnce) {
  const auto documented = documented_request_fields();
  for (const auto& f : request_fields()) {
    EXPECT_EQ(std::count(documented.begin(), documented.end(), f.path), 1)
        << f.path << " is declared but not documented once in docs/schema.md's request section";
  }
}

TEST(Fields, FlagsAndUrlKeysAreUnique) {
  std::set<std::string> flags, keys;
  for (const auto& f : request_fields()) {
    if (!f.cli.empty()) EXPECT_TRUE(flags.insert(f.cli).second) << f.cli;
    if (!f.url.empty()) EXPECT_TRUE(keys.insert(f.url).second) << f.url;
    EXPECT_FALSE(f.label.empty()) << f.path;
    EXPECT_FALSE(f.doc.empty()) << f.path;
  }
}

// The parser's rows (known_fields, find_field) are the table's rows without
// their faces, in the same order (fields.cpp keeps the faces apart so the
// first-visit WASM module carries none of their text).
TEST(Fields, TheParsersRowsAreTheTableWithoutFaces) {
  const auto& table = request_fields();
  const auto& known = known_fields();
  ASSERT_EQ(known.size(), table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(known[i].path, table[i].path);
    EXPECT_EQ(known[i].type, table[i].type);
    EXPECT_EQ(known[i].default_value, table[i].default_value);
    EXPECT_EQ(known[i].values, table[i].values);
    EXPECT_EQ(known[i].min, table[i].min);
    EXPECT_EQ(known[i].max, table[i].max);
    EXPECT_EQ(known[i].cli_unit, table[i].cli_unit);
    EXPECT_TRUE(known[i].label.empty() && known[i].cli.empty() && known[i].url.empty() && known[i].doc.empty())
        << known[i].path;
    EXPECT_EQ(&field(table[i].path), &known[i]);
  }
}

TEST(Fields, OptimizerValuesAreTheOptimizerTable) {
  EXPECT_EQ(field("train.optimizer").values, optimizer_names());
  for (const auto& [alias, name] : optimizer_aliases()) {
    ASSERT_NE(find_optimizer(alias), nullptr);
    EXPECT_EQ(find_optimizer(alias)->name, name);
  }
}

class FieldsParseTest : public ::testing::Test {
 protected:
  // A minimal request with the field's parent objects present and empty, so
  // the parser visits them and applies its fallbacks.
  static json minimal_request(const std::string& path) {
    json req = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}}};
    json* cur = &req;
    size_t start = 0;
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
      const std::string key = path.substr(start, dot - start);
      if (!cur->contains(key)) (*cur)[key] = json::object();
      cur = &(*cur)[key];
      start = dot + 1;
    }
    return req;
  }

  static json with_value(const std::string& path, const json& value) {
    json req = minimal_request(path);
    req[json::json_pointer("/" + [&] {
      std::string p = path;
      std::replace(p.begin(), p.end(), '.', '/');
      return p;
    }())] = value;
    return req;
  }

  static Request parse(const json& req) {
    auto r = parse_request(req);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? r.value() : Request{};
  }
};

// How to read each scalar field with a default back out of a parsed Request.
const std::map<std::string, std::function<json(const Request&)>>& readers() {
  static const std::map<std::string, std::function<json(const Request&)>> kReaders = {
      {"model.allow_generic", [](const Request& r) { return r.model.exact ? json(false) : json(true); }},
      {"task", [](const Request& r) { return r.task == Task::kTrain ? "train" : "infer"; }},
      {"train.method", [](const Request& r) { return to_string(r.train.method); }},
      {"train.framework", [](const Request& r) { return r.framework; }},
      {"train.micro_batch", [](const Request& r) { return r.train.micro_batch; }},
      {"train.seq_len", [](const Request& r) { return r.train.seq_len; }},
      {"train.grad_accum", [](const Request& r) { return r.train.grad_accum; }},
      {"train.zero_grad_set_to_none", [](const Request& r) { return r.train.zero_grad_set_to_none; }},
      {"train.softmax_saves_input", [](const Request& r) { return r.train.softmax_saves_input; }},
      {"train.keeps_previous_logits", [](const Request& r) { return r.train.keeps_previous_logits; }},
      {"train.loss_shift_copy", [](const Request& r) { return r.train.loss_shift_copy; }},
      {"train.logits_upcast_in_model", [](const Request& r) { return r.train.logits_upcast_in_model; }},
      {"train.keeps_fused_qkv", [](const Request& r) { return r.train.keeps_fused_qkv; }},
      {"train.returns_kv_cache", [](const Request& r) { return r.train.returns_kv_cache; }},
      {"train.precision", [](const Request& r) { return to_string(r.train.precision); }},
      {"train.optimizer", [](const Request& r) { return r.train.optimizer; }},
      {"train.grad_checkpointing", [](const Request& r) { return to_string(r.train.checkpointing); }},
      {"train.attention", [](const Request& r) { return to_string(r.train.attention); }},
      {"train.kernels", [](const Request& r) { return to_string(r.train.kernels); }},
      {"train.padding", [](const Request& r) { return to_string(r.train.padding); }},
      {"train.fused_loss", [](const Request& r) { return r.train.fused_loss; }},
      {"train.loss", [](const Request& r) { return to_string(r.train.loss); }},
      {"train.keeps_logits", [](const Request& r) { return r.train.keeps_logits; }},
      {"train.outputs_fp32", [](const Request& r) { return r.train.outputs_fp32; }},
      {"train.loss_chunks", [](const Request& r) { return r.train.loss_chunks; }},
      {"train.loss_upcast", [](const Request& r) { return r.train.loss_upcast; }},
      {"train.fused_norm", [](const Request& r) { return r.train.fused_norm; }},
      {"train.sdpa_gqa_native", [](const Request& r) { return r.train.sdpa_gqa_native; }},
      {"train.lora.rank", [](const Request& r) { return r.train.lora.rank; }},
      {"train.lora.alpha", [](const Request& r) { return r.train.lora.alpha; }},
      {"train.lora.dropout", [](const Request& r) { return r.train.lora.dropout; }},
      {"train.lora.adapter_fp32", [](const Request& r) { return r.train.lora.adapter_fp32; }},
      {"train.lora.use_dora", [](const Request& r) { return r.train.lora.use_dora; }},
      {"train.lora.fused_qkv", [](const Request& r) { return r.train.lora.fused_qkv; }},
      {"train.quant.double_quant", [](const Request& r) { return r.train.quant.double_quant; }},
      {"train.quant.blocksize", [](const Request& r) { return r.train.quant.blocksize; }},
      {"train.quant.prepare_kbit", [](const Request& r) { return r.train.quant.prepare_kbit; }},
      {"train.quant.saves_input", [](const Request& r) { return r.train.quant.saves_input; }},
      {"train.quant.quantizer",
       [](const Request& r) {
         return json(!r.train.quant.torchao            ? "bitsandbytes"
                     : r.train.quant.torchao_unchunked ? "torchao_unchunked"
                                                       : "torchao");
       }},
      {"train.trainable_modules", [](const Request& r) { return r.train.trainable_modules; }},
      {"train.images_per_sample", [](const Request& r) { return r.train.images_per_sample; }},
      {"train.activation_offload", [](const Request& r) { return r.train.activation_offload; }},
      {"train.optimizer_in_backward", [](const Request& r) { return r.train.optimizer_in_backward; }},
      {"train.compile", [](const Request& r) { return r.train.compile; }},
      {"infer.batch", [](const Request& r) { return r.infer.batch; }},
      {"infer.context_len", [](const Request& r) { return r.infer.context_len; }},
      {"infer.weights_dtype", [](const Request& r) { return r.infer.weights_dtype; }},
      {"infer.kv_dtype", [](const Request& r) { return r.infer.kv_dtype; }},
      {"infer.images_per_prompt", [](const Request& r) { return r.infer.images_per_prompt; }},
      {"infer.engine", [](const Request& r) { return r.infer.engine; }},
      {"infer.gpu_memory_utilization", [](const Request& r) { return r.infer.gpu_memory_utilization; }},
      {"infer.block_size", [](const Request& r) { return r.infer.block_size; }},
      {"infer.enforce_eager", [](const Request& r) { return !r.infer.cuda_graphs; }},
      {"infer.n_ubatch", [](const Request& r) { return r.infer.llama.n_ubatch; }},
      {"infer.cache_type_k", [](const Request& r) { return r.infer.llama.cache_type_k; }},
      {"infer.kv_offload", [](const Request& r) { return r.infer.llama.kv_offload; }},
      {"infer.mmap", [](const Request& r) { return r.infer.llama.mmap; }},
      {"infer.split_mode", [](const Request& r) { return r.infer.llama.split_mode; }},
      {"infer.entrypoint", [](const Request& r) { return r.infer.entrypoint; }},
      {"parallel.gpus", [](const Request& r) { return r.parallel.gpus; }},
      {"parallel.tp", [](const Request& r) { return r.parallel.tp; }},
      {"parallel.pp", [](const Request& r) { return r.parallel.pp; }},
      {"parallel.zero", [](const Request& r) { return r.parallel.zero; }},
      {"parallel.fsdp", [](const Request& r) { return r.parallel.fsdp; }},
      {"parallel.offload_optimizer", [](const Request& r) { return r.parallel.offload_optimizer; }},
      {"parallel.cp", [](const Request& r) { return r.parallel.cp; }},
      {"parallel.offload_params", [](const Request& r) { return r.parallel.offload_params; }},
      {"parallel.sequence_parallel", [](const Request& r) { return r.parallel.sequence_parallel; }},
      {"parallel.gpus_per_node", [](const Request& r) { return r.parallel.gpus_per_node; }},
      {"parallel.gradient_as_bucket_view", [](const Request& r) { return r.parallel.gradient_as_bucket_view; }},
      {"parallel.ep", [](const Request& r) { return r.parallel.ep; }},
      {"parallel.vp", [](const Request& r) { return r.parallel.vp; }},
      {"parallel.distributed_optimizer", [](const Request& r) { return r.parallel.distributed_optimizer; }},
      {"parallel.main_grads_fp32", [](const Request& r) { return r.parallel.main_grads_fp32; }},
      {"parallel.fsdp_version", [](const Request& r) { return r.parallel.fsdp_version; }},
      {"parallel.fsdp_sync_module_states", [](const Request& r) { return r.parallel.fsdp_sync_module_states; }},
      {"parallel.fsdp_adapter_units", [](const Request& r) { return r.parallel.fsdp_adapter_units; }},
      {"parallel.nccl_channels", [](const Request& r) { return r.parallel.nccl_channels; }},
      {"parallel.stage3_param_persistence_threshold",
       [](const Request& r) { return r.parallel.stage3_param_persistence_threshold; }},
      {"parallel.stage3_prefetch_bucket_size", [](const Request& r) { return r.parallel.stage3_prefetch_bucket_size; }},
      {"parallel.stage3_max_live_parameters", [](const Request& r) { return r.parallel.stage3_max_live_parameters; }},
      {"parallel.reduce_bucket_size", [](const Request& r) { return r.parallel.reduce_bucket_size; }},
      {"parallel.contiguous_gradients", [](const Request& r) { return r.parallel.contiguous_gradients; }},
      {"overheads.misc_bytes", [](const Request& r) { return r.overheads.misc_bytes; }},
      {"allocator.conf", [](const Request& r) { return r.allocator.conf; }},
      {"allocator.expandable_segments",
       [](const Request& r) { return r.allocator.expandable_segments.value_or(false); }},
      {"time.enabled", [](const Request& r) { return r.time.enabled; }},
      {"time.epochs", [](const Request& r) { return r.time.epochs; }},
  };
  return kReaders;
}

// The version the request itself named for `library`, else null.
json asked_version(const Request& r, const std::string& library) {
  for (const LibraryVersion& v : r.framework_job.versions) {
    if (v.library == library && v.from == "versions." + library) return v.version;
  }
  return json();
}

// Fields whose null default stands for "absent", read back as null: a
// reader per field, grouped by the part of the request it belongs to.
using AbsentReaders = std::map<std::string, std::function<json(const Request&)>>;

// Training, the model and the framework's library versions.
void training_absent(AbsentReaders& r) {
  r.insert({
      {"train.dropout", [](const Request& r) { return r.train.dropout < 0 ? json() : json(r.train.dropout); }},
      {"train.loss_chunk_size",
       [](const Request& r) { return r.train.loss_chunk_size > 0 ? json(r.train.loss_chunk_size) : json(); }},
      // versions.*: absent means the framework release's own (vram/releases.h).
      {"versions.torch", [](const Request& r) { return asked_version(r, "torch"); }},
      {"versions.transformers", [](const Request& r) { return asked_version(r, "transformers"); }},
      {"versions.peft", [](const Request& r) { return asked_version(r, "peft"); }},
      {"versions.trl", [](const Request& r) { return asked_version(r, "trl"); }},
      {"versions.bitsandbytes", [](const Request& r) { return asked_version(r, "bitsandbytes"); }},
      {"versions.torchao", [](const Request& r) { return asked_version(r, "torchao"); }},
      {"versions.flash_attn", [](const Request& r) { return asked_version(r, "flash_attn"); }},
      // model.size: absent means the model comes from model.config (not quick sizing).
      {"model.size",
       [](const Request& r) { return r.model.family == "quick_size" ? json(r.model.params_total()) : json(); }},
      {"train.lora.targets",
       [](const Request& r) {
         return r.train.lora.targets.empty() && !r.train.lora.all_linear ? json() : json(r.train.lora.targets);
       }},
  });
}

// Inference: the engines' own defaults when a setting is left out.
void inference_absent(AbsentReaders& r) {
  r.insert({
      {"infer.prompt_len",
       [](const Request& r) { return r.infer.prompt_len == 0 ? json() : json(r.infer.prompt_len); }},
      // The llama.cpp settings whose absence means the engine's default.
      {"infer.ctx_size",
       [](const Request& r) { return r.infer.llama.ctx_size ? json(*r.infer.llama.ctx_size) : json(); }},
      {"infer.n_gpu_layers",
       [](const Request& r) { return r.infer.llama.n_gpu_layers ? json(*r.infer.llama.n_gpu_layers) : json(); }},
      {"infer.n_batch", [](const Request& r) { return r.infer.llama.n_batch ? json(*r.infer.llama.n_batch) : json(); }},
      {"infer.flash_attn",
       [](const Request& r) { return r.infer.llama.flash_attn ? json(*r.infer.llama.flash_attn) : json(); }},
      {"infer.cache_type_v",
       [](const Request& r) { return r.infer.llama.cache_type_v ? json(*r.infer.llama.cache_type_v) : json(); }},
      {"infer.swa_full",
       [](const Request& r) { return r.infer.llama.swa_full ? json(*r.infer.llama.swa_full) : json(); }},
      {"infer.kv_unified",
       [](const Request& r) { return r.infer.llama.kv_unified ? json(*r.infer.llama.kv_unified) : json(); }},
      {"infer.fit", [](const Request& r) { return r.infer.llama.fit ? json(*r.infer.llama.fit) : json(); }},
      {"infer.engine_version",
       [](const Request& r) { return r.infer.engine_version ? json(*r.infer.engine_version) : json(); }},
      // vLLM's and SGLang's own defaults by GPU (infer/vllm.cpp, infer/sglang.cpp).
      {"infer.max_num_seqs",
       [](const Request& r) { return r.infer.max_num_seqs == 0 ? json() : json(r.infer.max_num_seqs); }},
      {"infer.max_num_batched_tokens",
       [](const Request& r) {
         return r.infer.max_num_batched_tokens == 0 ? json() : json(r.infer.max_num_batched_tokens);
       }},
      {"infer.mem_fraction_static",
       [](const Request& r) { return r.infer.mem_fraction_static == 0 ? json() : json(r.infer.mem_fraction_static); }},
      {"infer.chunked_prefill_size",
       [](const Request& r) {
         return r.infer.chunked_prefill_size == 0 ? json() : json(r.infer.chunked_prefill_size);
       }},
      {"infer.cuda_graph_max_bs",
       [](const Request& r) { return r.infer.cuda_graph_max_bs == 0 ? json() : json(r.infer.cuda_graph_max_bs); }},
  });
}

// The layout, the card, the overheads, the allocator and the calibration.
void setup_absent(AbsentReaders& r) {
  r.insert({
      {"parallel.overlap_comm",
       [](const Request& r) { return r.parallel.overlap_comm_given ? json(r.parallel.overlap_comm) : json(); }},
      {"parallel.fsdp_param_dtype",
       [](const Request& r) { return r.parallel.fsdp_param_bytes == 0 ? json() : json(r.parallel.fsdp_param_bytes); }},
      {"parallel.fsdp_reduce_dtype",
       [](const Request& r) {
         return r.parallel.fsdp_reduce_bytes == 0 ? json() : json(r.parallel.fsdp_reduce_bytes);
       }},
      {"parallel.nvls", [](const Request& r) { return r.parallel.nvls ? json(*r.parallel.nvls) : json(); }},
      {"gpu.name", [](const Request& r) { return r.gpu.name.empty() ? json() : json(r.gpu.name); }},
      {"gpu.memory_gib", [](const Request& r) { return r.gpu.memory_gib ? json(*r.gpu.memory_gib) : json(); }},
      {"overheads.cuda_context_bytes",
       [](const Request& r) {
         return r.overheads.cuda_context_bytes ? json(*r.overheads.cuda_context_bytes) : json();
       }},
      {"overheads.cublas_workspace_bytes",
       [](const Request& r) {
         return r.overheads.cublas_workspace_bytes ? json(*r.overheads.cublas_workspace_bytes) : json();
       }},
      {"overheads.fragmentation",
       [](const Request& r) { return r.overheads.fragmentation ? json(*r.overheads.fragmentation) : json(); }},
      {"overheads.nccl_bytes",
       [](const Request& r) { return r.overheads.nccl_bytes ? json(*r.overheads.nccl_bytes) : json(); }},
      {"allocator.max_split_size_mb",
       [](const Request& r) { return r.allocator.max_split_size_mb ? json(*r.allocator.max_split_size_mb) : json(); }},
      {"calibration.attention",
       [](const Request& r) { return r.calibration.attention ? json(*r.calibration.attention) : json(); }},
      {"calibration.mlp", [](const Request& r) { return r.calibration.mlp ? json(*r.calibration.mlp) : json(); }},
      {"calibration.logits",
       [](const Request& r) { return r.calibration.logits ? json(*r.calibration.logits) : json(); }},
      {"calibration.checkpointing",
       [](const Request& r) { return r.calibration.checkpointing ? json(*r.calibration.checkpointing) : json(); }},
  });
}

// The time model's run size, price and hardware rates.
void time_absent(AbsentReaders& r) {
  r.insert({
      {"time.tokens", [](const Request& r) { return r.time.tokens ? json(*r.time.tokens) : json(); }},
      {"time.samples", [](const Request& r) { return r.time.samples ? json(*r.time.samples) : json(); }},
      {"time.mean_len", [](const Request& r) { return r.time.mean_len ? json(*r.time.mean_len) : json(); }},
      {"time.gpu_hour_usd", [](const Request& r) { return r.time.gpu_hour_usd ? json(*r.time.gpu_hour_usd) : json(); }},
      {"hardware.link", [](const Request& r) { return r.hardware.link ? json(to_string(*r.hardware.link)) : json(); }},
      {"hardware.network_gbps",
       [](const Request& r) { return r.hardware.network_gbps ? json(*r.hardware.network_gbps) : json(); }},
      {"hardware.host_memory_gbs",
       [](const Request& r) { return r.hardware.host_memory_gbs ? json(*r.hardware.host_memory_gbs) : json(); }},
      {"hardware.matmul_tflops",
       [](const Request& r) { return r.hardware.matmul_tflops ? json(*r.hardware.matmul_tflops) : json(); }},
      {"hardware.memory_gbs",
       [](const Request& r) { return r.hardware.memory_gbs ? json(*r.hardware.memory_gbs) : json(); }},
  });
}

const AbsentReaders& absent_readers() {
  static const AbsentReaders kReaders = [] {
    AbsentReaders r;
    training_absent(r);
    inference_absent(r);
    setup_absent(r);
    time_absent(r);
    return r;
  }();
  return kReaders;
}

// Objects, and values the parser derives from other fields (dp from the
// degrees, nodes from gpus_per_node, sharding onto zero / fsdp).
const std::set<std::string> kNotReadBack = {"model.config",   "model.custom",       "model.safetensors", "model.gguf",
                                            "model.mmproj",   "infer.tensor_split", "deepspeed",         "parallel.dp",
                                            "parallel.nodes", "parallel.sharding",  "time.prices"};

TEST_F(FieldsParseTest, EveryScalarDefaultIsWhatTheParserApplies) {
  for (const auto& f : request_fields()) {
    if (kNotReadBack.count(f.path) != 0) continue;
    const json req = minimal_request(f.path);
    const Request parsed = parse(req);
    if (f.default_value.is_null()) {
      ASSERT_EQ(absent_readers().count(f.path), 1u) << f.path << " needs an absent reader in fields_test.cpp";
      EXPECT_EQ(absent_readers().at(f.path)(parsed), json()) << f.path;
    } else {
      ASSERT_EQ(readers().count(f.path), 1u) << f.path << " needs a reader in fields_test.cpp";
      EXPECT_EQ(readers().at(f.path)(parsed), f.default_value) << f.path << " from " << req.dump();
    }
  }
}

TEST_F(FieldsParseTest, TheStructDefaultsAreTheTableDefaults) {
  // A Request nobody parsed holds the same defaults (request.h initialisers).
  const Request blank;
  for (const auto& [path, read] : readers()) {
    if (path == "model.allow_generic" || path == "task") continue;
    EXPECT_EQ(read(blank), field(path).default_value) << path;
  }
}

TEST_F(FieldsParseTest, EveryNumericLimitIsTheParsersLimit) {
  for (const auto& f : request_fields()) {
    if (!f.max) continue;
    const bool integral = f.type == FieldType::kInt;
    auto value = [&](double v) { return integral ? json(static_cast<int64_t>(v)) : json(v); };
    for (const auto& [inside, outside] : {std::pair{*f.max, *f.max + 1}, std::pair{*f.min, *f.min - 1}}) {
      auto in = parse_request(with_value(f.path, value(inside)));
      if (!in.ok()) {  // a limit value may break the layout, never the range
        EXPECT_FALSE(in.error().code == errc::kOutOfRange && in.error().path == f.path)
            << f.path << " = " << inside << ": " << in.error().message;
      }
      auto out = parse_request(with_value(f.path, value(outside)));
      ASSERT_FALSE(out.ok()) << f.path << " = " << outside << " was accepted";
      EXPECT_EQ(out.error().code, errc::kOutOfRange) << f.path << ": " << out.error().message;
      EXPECT_EQ(out.error().path, f.path);
    }
  }
}

TEST_F(FieldsParseTest, EveryAcceptedEnumNameParses) {
  for (const auto& f : request_fields()) {
    if (f.type != FieldType::kEnum) continue;
    for (const auto& name : f.accepted()) {
      auto r = parse_request(with_value(f.path, name));
      if (!r.ok()) {
        EXPECT_FALSE(r.error().code == errc::kUnknownValue && r.error().path == f.path)
            << f.path << " = " << name << ": " << r.error().message;
      }
    }
  }
}

TEST_F(FieldsParseTest, AliasesMeanTheirCanonicalValue) {
  const Request lightning = parse(with_value("train.precision", "bf16-mixed"));
  EXPECT_EQ(lightning.train.precision, Precision::kAmpBf16);
  const Request fa3 = parse(with_value("train.attention", "flash_attention_3"));
  EXPECT_EQ(fa3.train.attention, AttentionImpl::kFlash2);
  EXPECT_EQ(field("train.precision").canonical("bf16-mixed"), "amp_bf16");
  EXPECT_EQ(field("train.precision").canonical("bf17"), std::nullopt);
}

TEST_F(FieldsParseTest, AnUnknownPrecisionListsEveryAcceptedName) {
  auto r = parse_request(with_value("train.precision", "bf17"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "train.precision \"bf17\" is not one of: 16-mixed, 32-true, amp_bf16, amp_fp16, bf16, bf16-mixed, "
            "bf16-true, bfloat16, float16, float32, fp16, fp16-mixed, fp16-true, fp32, mixed_bf16");
}

TEST_F(FieldsParseTest, RequestZeroKnobsAreReadLikeTheDeepSpeedConfigs) {
  // docs/schema.md lists them as parallel fields; before the table they were
  // read from a pasted DeepSpeed config only.
  const Request r = parse(with_value("parallel.reduce_bucket_size", 200000000));
  EXPECT_EQ(r.parallel.reduce_bucket_size, 200000000);
}

TEST(Fields, TableJsonCarriesEveryField) {
  const json t = fields_table();
  EXPECT_EQ(t["schema"], "vram-planner/1");
  ASSERT_EQ(t["fields"].size(), request_fields().size());
  const json& rank = t["fields"][std::distance(
      request_fields().begin(), std::find_if(request_fields().begin(), request_fields().end(),
                                             [](const FieldSpec& f) { return f.path == "train.lora.rank"; }))];
  EXPECT_EQ(rank["default"], 8);
  EXPECT_EQ(rank["cli"], "--lora-rank");
  EXPECT_EQ(rank["url"], "r");
  EXPECT_EQ(rank["max"], 65536);
}

}  // namespace
}  // namespace vram

#include "vram/request.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>

#include "import/import_context.h"
#include "memory/caching_allocator.h"
#include "reach.h"
#include "vram/checkpoint.h"
#include "vram/families.h"
#include "vram/fields.h"
#include "vram/gpus.h"
#include "vram/optimizers.h"
#include "vram/releases.h"

namespace vram {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kAmpBf16:
      return "amp_bf16";
    case Precision::kAmpFp16:
      return "amp_fp16";
    case Precision::kMixedBf16:
      return "mixed_bf16";
  }
  return "?";
}

const char* to_string(Method m) {
  switch (m) {
    case Method::kFull:
      return "full";
    case Method::kLora:
      return "lora";
    case Method::kQlora:
      return "qlora";
    case Method::kFreeze:
      return "freeze";
  }
  return "?";
}

const char* to_string(AttentionImpl a) {
  switch (a) {
    case AttentionImpl::kEager:
      return "eager";
    case AttentionImpl::kSdpa:
      return "sdpa";
    case AttentionImpl::kFlash2:
      return "flash_attention_2";
    case AttentionImpl::kXformers:
      return "xformers";
  }
  return "?";
}

const char* to_string(Padding p) {
  switch (p) {
    case Padding::kMaxLength:
      return "max_length";
    case Padding::kPacked:
      return "packed";
    case Padding::kLongest:
      return "longest";
  }
  return "?";
}

const char* to_string(LossKind k) {
  switch (k) {
    case LossKind::kStandard:
      return "standard";
    case LossKind::kChunked:
      return "chunked";
    case LossKind::kFused:
      return "fused";
  }
  return "?";
}

const char* to_string(Kernels k) {
  switch (k) {
    case Kernels::kStandard:
      return "standard";
    case Kernels::kUnsloth:
      return "unsloth";
  }
  return "?";
}

const char* to_string(Checkpointing c) {
  switch (c) {
    case Checkpointing::kNone:
      return "none";
    case Checkpointing::kFull:
      return "full";
    case Checkpointing::kSelective:
      return "selective";
    case Checkpointing::kSelectiveOp:
      return "selective_op";
  }
  return "?";
}

std::optional<std::string> enum_value(const JsonReader& r, const std::string& key, const FieldSpec& f) {
  const auto v = r.str_opt(key);
  if (!v) return std::nullopt;
  if (auto c = f.canonical(*v)) return c;
  std::string allowed;
  for (const auto& k : f.accepted()) allowed += (allowed.empty() ? "" : ", ") + k;
  fail(errc::kUnknownValue, r.child_path(key),
       r.child_path(key) + " " + vram::quoted(*v) + " is not one of: " + allowed);
}

namespace {

// The enum constant whose to_string is `name` (a canonical value of the table).
template <typename E, size_t N>
E enum_named(const std::string& name, const E (&all)[N]) {
  for (E e : all) {
    if (name == to_string(e)) return e;
  }
  std::abort();  // the table and to_string disagree: fields_test catches it
}

constexpr Method kAllMethods[] = {Method::kFull, Method::kLora, Method::kQlora, Method::kFreeze};
constexpr Precision kAllPrecisions[] = {Precision::kFp32,    Precision::kBf16,    Precision::kFp16,
                                        Precision::kAmpBf16, Precision::kAmpFp16, Precision::kMixedBf16};
constexpr AttentionImpl kAllAttention[] = {AttentionImpl::kEager, AttentionImpl::kSdpa, AttentionImpl::kFlash2,
                                           AttentionImpl::kXformers};
constexpr Kernels kAllKernels[] = {Kernels::kStandard, Kernels::kUnsloth};
constexpr Padding kAllPadding[] = {Padding::kMaxLength, Padding::kPacked, Padding::kLongest};
constexpr LossKind kAllLoss[] = {LossKind::kStandard, LossKind::kChunked, LossKind::kFused};
constexpr Checkpointing kAllCheckpointing[] = {Checkpointing::kNone, Checkpointing::kFull, Checkpointing::kSelective,
                                               Checkpointing::kSelectiveOp};

// r[key] as the enum E, `fallback` when absent; `given` says whether it was there.
template <typename E, size_t N>
E pick(const JsonReader& r, const std::string& key, const char* path, const E (&all)[N], E fallback,
       bool* given = nullptr) {
  const auto v = enum_value(r, key, field(path));
  if (given != nullptr) *given = v.has_value();
  return v ? enum_named(*v, all) : fallback;
}

// The default of a declared enum field as E.
template <typename E, size_t N>
E default_of(const char* path, const E (&all)[N]) {
  return enum_named(field(path).default_value.get<std::string>(), all);
}

using limits::kMaxBatch;
using limits::kMaxSeq;

// train.loss, and train.fused_loss, the older spelling of loss "fused": both
// may be given when they agree.
void parse_loss(const JsonReader& t, TrainOptions& o) {
  bool loss_here = false;
  o.loss = pick(t, "loss", "train.loss", kAllLoss, default_of("train.loss", kAllLoss), &loss_here);
  if (t.has("fused_loss")) {
    const bool fused = t.bool_or("fused_loss", false);
    if (loss_here && fused != (o.loss == LossKind::kFused)) {
      fail(errc::kInconsistent, t.child_path("fused_loss"),
           t.child_path("fused_loss") + " " + (fused ? "true" : "false") + " contradicts " + t.child_path("loss") +
               " " + vram::quoted(to_string(o.loss)) + " (fused_loss true is loss \"fused\")");
    }
    if (!loss_here) o.loss = fused ? LossKind::kFused : LossKind::kStandard;
  }
  o.fused_loss = o.loss == LossKind::kFused;
  o.loss_chunks = t.int_or("loss_chunks", defaults::kLossChunks, 1, limits::kMaxLossChunks);
  o.loss_chunk_size = t.int_or("loss_chunk_size", 0, 1, kMaxSeq);
  o.loss_upcast = t.bool_or("loss_upcast", defaults::kLossUpcast);
}

void parse_train(const JsonReader& t, Request& req) {
  TrainOptions& o = req.train;
  o.method = pick(t, "method", "train.method", kAllMethods, default_of("train.method", kAllMethods));
  o.micro_batch = t.int_or("micro_batch", o.micro_batch, 1, kMaxBatch);
  o.seq_len = t.int_or("seq_len", defaults::kSeqLen, 1, kMaxSeq);
  o.grad_accum = t.int_or("grad_accum", o.grad_accum, 1, limits::kMaxGradAccum);
  o.zero_grad_set_to_none = t.bool_or("zero_grad_set_to_none", o.zero_grad_set_to_none);
  o.softmax_saves_input = t.bool_or("softmax_saves_input", o.softmax_saves_input);
  o.keeps_previous_logits = t.bool_or("keeps_previous_logits", o.keeps_previous_logits);
  o.loss_shift_copy = t.bool_or("loss_shift_copy", o.loss_shift_copy);
  o.logits_upcast_in_model = t.bool_or("logits_upcast_in_model", o.logits_upcast_in_model);
  o.keeps_logits = t.bool_or("keeps_logits", o.keeps_logits);
  o.outputs_fp32 = t.bool_or("outputs_fp32", o.outputs_fp32);
  o.keeps_fused_qkv = t.bool_or("keeps_fused_qkv", o.keeps_fused_qkv);
  o.returns_kv_cache = t.bool_or("returns_kv_cache", o.returns_kv_cache);
  bool precision_here = false;
  o.precision = pick(t, "precision", "train.precision", kAllPrecisions, o.precision, &precision_here);
  o.precision_given = o.precision_given || precision_here;
  if (const auto opt = t.str_opt("optimizer")) {
    if (find_optimizer(*opt) == nullptr) {
      std::string names;
      for (const auto& n : optimizer_names()) names += (names.empty() ? "" : ", ") + n;
      fail(errc::kUnknownValue, t.child_path("optimizer"),
           t.child_path("optimizer") + " " + vram::quoted(*opt) + " is not known; known: " + names);
    }
    o.optimizer = find_optimizer(*opt)->name;
    o.optimizer_given = true;
  }
  if (const json* gc = t.get("grad_checkpointing"); gc != nullptr && gc->is_boolean()) {
    o.checkpointing = gc->get<bool>() ? Checkpointing::kFull : Checkpointing::kNone;
  } else {
    o.checkpointing = pick(t, "grad_checkpointing", "train.grad_checkpointing", kAllCheckpointing,
                           default_of("train.grad_checkpointing", kAllCheckpointing));
  }
  o.attention = pick(t, "attention", "train.attention", kAllAttention, default_of("train.attention", kAllAttention),
                     &o.attention_given);
  o.kernels = pick(t, "kernels", "train.kernels", kAllKernels, default_of("train.kernels", kAllKernels));
  o.padding =
      pick(t, "padding", "train.padding", kAllPadding, default_of("train.padding", kAllPadding), &o.padding_given);
  parse_loss(t, o);
  o.fused_norm = t.bool_or("fused_norm", false);
  o.sdpa_gqa_native = t.bool_or("sdpa_gqa_native", false);
  o.optimizer_in_backward = t.bool_or("optimizer_in_backward", false);
  o.activation_offload = t.bool_or("activation_offload", false);
  o.compile = t.bool_or("compile", defaults::kCompile);
  o.dropout = t.num_or("dropout", -1.0, -1.0, 1.0);
  o.images_per_sample = t.int_or("images_per_sample", 0, 0, 1024);
  o.trainable_modules = t.str_list_or("trainable_modules", {});
  if (auto l = t.object_opt("lora")) {
    o.lora.rank = l->int_or("rank", defaults::kLoraRank, 1, limits::kMaxLoraRank);
    o.lora.alpha = l->num_or("alpha", static_cast<double>(o.lora.rank), 0.0, 1e9);
    o.lora.dropout = l->num_or("dropout", defaults::kLoraDropout, 0.0, 1.0);
    o.lora.adapter_fp32 = l->bool_or("adapter_fp32", defaults::kLoraAdapterFp32);
    o.lora.use_dora = l->bool_or("use_dora", defaults::kLoraUseDora);
    o.lora.fused_qkv = l->bool_or("fused_qkv", defaults::kLoraFusedQkv);
    if (const json* tg = l->get("targets");
        tg != nullptr && tg->is_string() && tg->get<std::string>() == "all-linear") {
      o.lora.all_linear = true;
    } else {
      o.lora.targets = l->str_list_or("targets", {});
      // PEFT takes "all-linear" as a string; accept the one-element list too.
      if (o.lora.targets.size() == 1 && o.lora.targets[0] == "all-linear") {
        o.lora.targets.clear();
        o.lora.all_linear = true;
      }
      if (l->has("targets") && o.lora.targets.empty() && !o.lora.all_linear) {
        fail(errc::kOutOfRange, l->child_path("targets"), l->child_path("targets") + " must name at least one module");
      }
    }
  }
  if (auto q = t.object_opt("quant")) {
    o.quant.double_quant = q->bool_or("double_quant", defaults::kDoubleQuant);
    o.quant.blocksize = q->int_or("blocksize", defaults::kQuantBlocksize, 16, 4096);
    o.quant.prepare_kbit = q->bool_or("prepare_kbit", defaults::kPrepareKbit);
    o.quant.saves_input = q->bool_or("saves_input", defaults::kQuantSavesInput);
    if (const auto v = enum_value(*q, "quantizer", field("train.quant.quantizer"))) {
      o.quant.torchao = v->starts_with("torchao");
      o.quant.torchao_unchunked = *v == "torchao_unchunked";
      o.quant.lightning = *v == "lightning_bitsandbytes";
    }
  }
  if (o.method == Method::kFreeze && o.trainable_modules.empty()) {
    fail(errc::kMissingField, t.child_path("trainable_modules"),
         t.child_path("trainable_modules") + " is required with method \"freeze\" (module names or \"layers.N\")");
  }
}

// llama.cpp and its presets (infer/llama_cpp_options.cpp is_engine, which the
// lite module does not link).
bool llama_engine(const std::string& engine) {
  return engine == "llama_cpp" || engine == "ollama" || engine == "lmstudio";
}

const std::vector<std::string> kFsdpStrategies = {"full_shard", "shard_grad_op", "hybrid_shard", "no_shard"};

// The layouts inference is modelled with: vLLM splits layers over pipeline
// stages (get_pp_indices); the other engines shard with tensor parallelism only.
void check_serving_layout(const Request& req, const std::string& base) {
  const ParallelOptions& o = req.parallel;
  const std::string& engine = req.infer.engine;
  if (llama_engine(engine)) return;  // layers over parallel.gpus
  const bool pp_ok = req.task == Task::kInfer && engine == "vllm";
  if (req.task == Task::kInfer && ((o.pp > 1 && !pp_ok) || o.dp > 1 || o.cp > 1 || o.ep > 1 || o.zero > 0 ||
                                   !o.fsdp.empty() || o.distributed_optimizer)) {
    fail(errc::kUnsupported, base,
         "inference shards with tensor parallelism (parallel.tp), and vLLM also with pipeline parallelism "
         "(parallel.pp); data and context parallel or ZeRO/FSDP serving are not modelled");
  }
}

// A serving engine runs one worker per GPU of its tensor x pipeline layout
// (vllm serve --tensor-parallel-size 2 takes two GPUs): without
// parallel.gpus, inference takes tp x pp of them.
void serving_gpus(const JsonReader& p, Request& req) {
  ParallelOptions& o = req.parallel;
  if (!reach::infers(req) || p.has("gpus") || o.tp * o.pp == 1) return;
  o.gpus = o.tp * o.pp;
  req.assumptions.push_back("parallel.gpus " + std::to_string(o.gpus) +
                            ": tp x pp (inference runs one worker per GPU; parallel.gpus absent)");
}

// The degrees against the GPU count: tp, pp and cp divide it, and dp x tp x
// pp x cp is it.
void check_degrees(const ParallelOptions& o, const std::string& base) {
  auto path = [&](const char* key) { return base + "." + key; };
  // A degree that does not divide the GPUs is the field that is wrong (tp 3
  // on 8 GPUs names parallel.tp, issue 18), not the GPU count.
  for (const auto& [key, product] :
       {std::pair{"tp", o.tp}, std::pair{"pp", o.tp * o.pp}, std::pair{"cp", o.tp * o.pp * o.cp}}) {
    if (o.gpus % product != 0) {
      fail(errc::kInconsistent, path(key),
           path(key) + " (" +
               std::to_string(key == std::string("tp")   ? o.tp
                              : key == std::string("pp") ? o.pp
                                                         : o.cp) +
               ") must divide " + path("gpus") + " (" + std::to_string(o.gpus) +
               ") with the other degrees: tp x pp x cp = " + std::to_string(o.tp * o.pp * o.cp) +
               " leaves no whole data-parallel size");
    }
  }
  if (o.dp * o.tp * o.pp * o.cp != o.gpus) {
    fail(errc::kInconsistent, path("dp"),
         "dp x tp x pp x cp (" + std::to_string(o.dp * o.tp * o.pp * o.cp) + ") must equal " + path("gpus") + " (" +
             std::to_string(o.gpus) + ")");
  }
}

// The sharding and offload switches: one family (ZeRO, FSDP or Megatron's
// distributed optimizer) and what it allows.
void check_sharding(const ParallelOptions& o, const std::string& base) {
  auto path = [&](const char* key) { return base + "." + key; };
  if (!o.fsdp.empty() && std::find(kFsdpStrategies.begin(), kFsdpStrategies.end(), o.fsdp) == kFsdpStrategies.end()) {
    fail(errc::kUnknownValue, path("fsdp"),
         path("fsdp") + " " + vram::quoted(o.fsdp) +
             " is not one of: full_shard, shard_grad_op, hybrid_shard, no_shard");
  }
  if (!o.fsdp.empty() && o.zero > 0) {
    fail(errc::kInconsistent, path("fsdp"), "choose DeepSpeed ZeRO (parallel.zero) or FSDP (parallel.fsdp), not both");
  }
  if (o.offload_params && !offload_params_allowed(o)) {
    fail(errc::kInconsistent, path("offload_params"),
         path("offload_params") + " needs ZeRO stage 3 or FSDP full_shard / hybrid_shard");
  }
  if (o.offload_optimizer && !offload_optimizer_allowed(o)) {
    fail(errc::kInconsistent, path("offload_optimizer"),
         path("offload_optimizer") + " needs ZeRO (parallel.zero >= 1) or FSDP");
  }
  if (o.distributed_optimizer && !distributed_optimizer_allowed(o)) {
    fail(errc::kInconsistent, path("distributed_optimizer"),
         path("distributed_optimizer") +
             " is Megatron-LM's sharded optimizer; it replaces DeepSpeed ZeRO and FSDP, not combines with them");
  }
  // deepspeed/runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible
  // with pipeline parallelism" (Megatron-DeepSpeed pairs pipelines with ZeRO-1).
  if (o.zero >= 2 && o.pp > 1) {
    fail(errc::kInconsistent, path("zero"),
         path("zero") + " " + std::to_string(o.zero) +
             " with pipeline parallelism: DeepSpeed's PipelineEngine allows ZeRO stage 0 or 1 only");
  }
}

// The degrees against the model: experts for ep, layers for vp and pp, heads
// and KV heads for tp.
void check_model_split(const Request& req, const std::string& base) {
  const ParallelOptions& o = req.parallel;
  auto path = [&](const char* key) { return base + "." + key; };
  const LayerStack& t = req.model.text;
  if (o.ep > 1) {
    if (t.experts == 0) {
      fail(errc::kInconsistent, path("ep"),
           path("ep") + " (" + std::to_string(o.ep) +
               ") needs a mixture-of-experts model; this one has no "
               "routed experts");
    }
    if (t.experts % o.ep != 0) {
      fail(errc::kInconsistent, path("ep"),
           path("ep") + " (" + std::to_string(o.ep) + ") must divide the routed experts (" + std::to_string(t.experts) +
               ")");
    }
    // Megatron-core parallel_state: expert-parallel groups are carved out of
    // the data (x context) parallel ranks.
    if ((o.dp * o.cp) % o.ep != 0) {
      fail(errc::kInconsistent, path("ep"),
           path("ep") + " (" + std::to_string(o.ep) + ") must divide dp x cp (" + std::to_string(o.dp * o.cp) +
               "): expert-parallel ranks are data-parallel ranks");
    }
  }
  if (o.vp > 1) {
    if (o.pp == 1) {
      fail(errc::kInconsistent, path("vp"),
           path("vp") + " (virtual pipeline stages) needs pipeline parallelism (parallel.pp > 1)");
    }
    // Megatron arguments.py: layers must split evenly into pp x vp model chunks.
    if (t.layers % (o.pp * o.vp) != 0) {
      fail(errc::kInconsistent, path("vp"),
           "the layers (" + std::to_string(t.layers) + ") must divide into pp x vp (" + std::to_string(o.pp * o.vp) +
               ") model chunks for the interleaved schedule");
    }
  }
  if (t.heads % o.tp != 0) {
    fail(errc::kInconsistent, path("tp"),
         path("tp") + " (" + std::to_string(o.tp) + ") must divide the attention heads (" + std::to_string(t.heads) +
             ")");
  }
  if (req.task == Task::kTrain && t.kv_heads % o.tp != 0 && o.tp % t.kv_heads != 0) {
    fail(errc::kInconsistent, path("tp"),
         path("tp") + " (" + std::to_string(o.tp) + ") and the KV heads (" + std::to_string(t.kv_heads) +
             ") must divide one another (Megatron replicates KV heads only by whole factors)");
  }
  if (o.pp > t.layers) {
    fail(errc::kInconsistent, path("pp"),
         path("pp") + " (" + std::to_string(o.pp) + ") exceeds the layers (" + std::to_string(t.layers) + ")");
  }
}

// Layout sanity (issue 6): the degrees multiply to the GPUs, the model divides
// the way each parallelism cuts it, and the frameworks accept the combination.
// Paths name the field under `base` ("parallel").
void check_layout(const Request& req, const std::string& base) {
  const ParallelOptions& o = req.parallel;
  check_degrees(o, base);
  check_sharding(o, base);
  check_model_split(req, base);
  if (!reach::infers(req)) return;
  // The llama.cpp engines split layers over parallel.gpus themselves (-sm layer).
  const std::string& engine = req.infer.engine;
  const bool layer_split = llama_engine(engine);
  if (layer_split && (o.tp > 1 || o.pp > 1 || o.cp > 1 || o.ep > 1)) {
    fail(errc::kInconsistent, base,
         "llama.cpp splits layers over parallel.gpus (infer.split_mode, infer.tensor_split); tp, pp, cp and ep "
         "are not its settings");
  }
  check_serving_layout(req, base);
}

// parallel.sharding: one field naming the data-parallel strategy, for
// callers that prefer it to zero / fsdp / distributed_optimizer.
void parse_sharding(const JsonReader& p, ParallelOptions& o) {
  const auto sharding = p.str_opt("sharding");
  if (!sharding) return;
  for (const char* k : {"zero", "fsdp", "distributed_optimizer"}) {
    if (p.has(k)) {
      fail(errc::kInconsistent, p.child_path("sharding"),
           "give " + p.child_path("sharding") + " or " + p.child_path(k) + ", not both");
    }
  }
  const std::string& v = *sharding;
  if (v == "ddp" || v == "none") {
    o.zero = 0;
  } else if (v == "zero1" || v == "zero2" || v == "zero3") {
    o.zero = v.back() - '0';
  } else if (std::find(kFsdpStrategies.begin(), kFsdpStrategies.end(), v) != kFsdpStrategies.end()) {
    o.fsdp = v;
  } else if (v == "distributed_optimizer") {
    o.distributed_optimizer = true;
  } else {
    fail(errc::kUnknownValue, p.child_path("sharding"),
         p.child_path("sharding") + " " + vram::quoted(v) +
             " is not one of: ddp, zero1, zero2, zero3, full_shard, shard_grad_op, hybrid_shard, no_shard, "
             "distributed_optimizer");
  }
}

// parallel.nodes and gpus_per_node: either gives the other from parallel.gpus.
void parse_nodes(const JsonReader& p, ParallelOptions& o) {
  if (p.has("nodes")) {
    o.nodes = p.int_req("nodes", 1, limits::kMaxNodes);
    if (o.gpus % o.nodes != 0) {
      fail(errc::kInconsistent, p.child_path("nodes"),
           p.child_path("nodes") + " (" + std::to_string(o.nodes) + ") must divide " + p.child_path("gpus") + " (" +
               std::to_string(o.gpus) + ")");
    }
    if (p.has("gpus_per_node") && o.gpus_per_node * o.nodes != o.gpus) {
      fail(errc::kInconsistent, p.child_path("gpus_per_node"),
           p.child_path("gpus_per_node") + " x " + p.child_path("nodes") + " must equal " + p.child_path("gpus"));
    }
    o.gpus_per_node = o.gpus / o.nodes;
  } else {
    o.nodes = (o.gpus + o.gpus_per_node - 1) / o.gpus_per_node;
  }
}

void parse_parallel(const JsonReader& p, Request& req) {
  ParallelOptions& o = req.parallel;
  o.gpus = p.int_or("gpus", defaults::kGpus, 1, limits::kMaxGpus);
  o.tp = p.int_or("tp", 1, 1, limits::kMaxSmallDegree);
  o.pp = p.int_or("pp", 1, 1, limits::kMaxDegree);
  o.cp = p.int_or("cp", 1, 1, limits::kMaxDegree);
  serving_gpus(p, req);
  // Data parallel fills what tensor, pipeline and context parallel leave.
  o.dp = p.int_or("dp", data_parallel(o), 1, limits::kMaxGpus);
  o.ep = p.int_or("ep", 1, 1, limits::kMaxDegree);
  o.vp = p.int_or("vp", 1, 1, limits::kMaxSmallDegree);
  o.distributed_optimizer = p.bool_or("distributed_optimizer", o.distributed_optimizer);
  o.main_grads_fp32 = p.bool_or("main_grads_fp32", defaults::kMainGradsFp32);
  o.fsdp_version = p.int_or("fsdp_version", defaults::kFsdpVersion, 1, 2);
  o.fsdp_version_given = p.has("fsdp_version");  // a release rule's value: see parse_request_filled
  o.fsdp_sync_module_states = p.bool_or("fsdp_sync_module_states", false);
  o.fsdp_sync_module_states_given =
      p.has("fsdp_sync_module_states");  // a release rule's value: see parse_request_filled
  o.fsdp_adapter_units = p.bool_or("fsdp_adapter_units", defaults::kFsdpAdapterUnits);
  o.fsdp_adapter_units_given = p.has("fsdp_adapter_units");  // a release rule's value: see parse_request_filled
  // FSDP MixedPrecision(param_dtype, reduce_dtype): bytes of the gathered
  // parameters and of the gradient reduction.
  for (auto [key, out] :
       {std::pair{"fsdp_param_dtype", &o.fsdp_param_bytes}, std::pair{"fsdp_reduce_dtype", &o.fsdp_reduce_bytes}}) {
    if (auto v = p.str_opt(key)) {
      if (*v == "bf16" || *v == "fp16") {
        *out = 2;
      } else if (*v == "fp32") {
        *out = 4;
      } else {
        fail(errc::kUnknownValue, p.child_path(key),
             p.child_path(key) + " " + vram::quoted(*v) + " is not one of: bf16, fp16, fp32");
      }
    }
  }
  o.nccl_channels = p.int_or("nccl_channels", o.nccl_channels, 1, limits::kMaxNcclChannels);
  if (p.has("nvls")) o.nvls = p.bool_or("nvls", false);
  o.stage3_param_persistence_threshold =
      p.int_or("stage3_param_persistence_threshold", o.stage3_param_persistence_threshold, 0, limits::kMaxElems);
  // The other ZeRO knobs docs/schema.md lists as parallel fields were read
  // only from a pasted DeepSpeed config; the field table (vram/fields.h)
  // declares them, so the request's own fields now count too.
  o.stage3_prefetch_bucket_size =
      p.int_or("stage3_prefetch_bucket_size", o.stage3_prefetch_bucket_size, 0, limits::kMaxElems);
  o.stage3_max_live_parameters =
      p.int_or("stage3_max_live_parameters", o.stage3_max_live_parameters, 0, limits::kMaxElems);
  o.reduce_bucket_size = p.int_or("reduce_bucket_size", o.reduce_bucket_size, 1, limits::kMaxElems);
  o.contiguous_gradients = p.bool_or("contiguous_gradients", o.contiguous_gradients);
  o.zero = p.int_or("zero", o.zero, 0, 3);
  o.fsdp = p.str_or("fsdp", o.fsdp);
  parse_sharding(p, o);
  o.offload_optimizer = p.bool_or("offload_optimizer", o.offload_optimizer);
  o.offload_params = p.bool_or("offload_params", o.offload_params);
  o.sequence_parallel = p.bool_or("sequence_parallel", false);
  o.gpus_per_node = p.int_or("gpus_per_node", defaults::kGpusPerNode, 1, limits::kMaxSmallDegree);
  parse_nodes(p, o);
  o.gradient_as_bucket_view = p.bool_or("gradient_as_bucket_view", defaults::kGradientAsBucketView);
  if (p.has("overlap_comm")) {
    o.overlap_comm = p.bool_or("overlap_comm", false);
    o.overlap_comm_given = true;
  }
  check_layout(req, p.path());
}

// Byte fields take an integer or a size string ("512MiB", json_reader.h
// parse_size).
void parse_overheads(const JsonReader& o, Request& req) {
  using limits::kMaxOverhead;
  const auto bytes = [&](const char* key) { return o.size_opt(key, SizeUnit::kBytes, 0, kMaxOverhead); };
  req.overheads.cuda_context_bytes = bytes("cuda_context_bytes");
  req.overheads.cublas_workspace_bytes = bytes("cublas_workspace_bytes");
  req.overheads.fragmentation = o.num_opt("fragmentation", 0.0, 4.0);
  req.overheads.misc_bytes = bytes("misc_bytes").value_or(defaults::kMiscBytes);
  req.overheads.nccl_bytes = bytes("nccl_bytes");
}

void parse_calibration(const JsonReader& c, Request& req) {
  req.calibration.attention = c.num_opt("attention", 0.0, 100.0);
  req.calibration.mlp = c.num_opt("mlp", 0.0, 100.0);
  req.calibration.logits = c.num_opt("logits", 0.0, 100.0);
  req.calibration.checkpointing = c.num_opt("checkpointing", 0.0, 100.0);
}

// PYTORCH_CUDA_ALLOC_CONF as request fields; the text is checked here with
// the allocator model's own parser so a bad key is named before estimating.
void parse_allocator(const JsonReader& a, Request& req) {
  AllocatorOptions& o = req.allocator;
  o.conf = a.str_or("conf", "");
  if (!o.conf.empty()) {
    auto parsed = reach::alloc_conf(o.conf, a.child_path("conf"));
    if (!parsed.ok()) {
      fail(parsed.error().code.c_str(), a.child_path("conf"), a.child_path("conf") + ": " + parsed.error().message);
    }
  }
  if (a.has("expandable_segments")) o.expandable_segments = a.bool_or("expandable_segments", false);
  if (a.has("max_split_size_mb")) {
    o.max_split_size_mb = a.int_req("max_split_size_mb", 21, limits::kMaxSplitSizeMb);
  }
}

void parse_gpu(const JsonReader& g, Request& req) {
  if (auto name = g.str_opt("name")) {
    if (find_gpu(*name) == nullptr) {
      std::string names;
      for (const auto& x : gpu_catalog()) names += (names.empty() ? "" : ", ") + std::string(x.name);
      fail(errc::kUnknownValue, g.child_path("name"),
           g.child_path("name") + " " + vram::quoted(*name) + " is not in the catalog (" + names +
               "); give gpu.memory_gib instead");
    }
    req.gpu.name = find_gpu(*name)->name;
  }
  // A number of GiB, or a size string: "80GB" (80 x 10^9 bytes), "80GiB".
  req.gpu.memory_gib = g.gib_opt("memory_gib", 0.25, 65536.0);
}

}  // namespace

int64_t data_parallel(const ParallelOptions& p) { return std::max<int64_t>(p.gpus / (p.tp * p.pp * p.cp), 1); }

// Offloading needs the state sharded: parameters under ZeRO-3 or FSDP
// full / hybrid shard (DeepSpeed offload_param is a stage-3 feature; FSDP
// CPUOffload(offload_params)); optimizer states under any ZeRO stage or FSDP.
bool offload_params_allowed(const ParallelOptions& p) {
  return p.zero == 3 || p.fsdp == "full_shard" || p.fsdp == "hybrid_shard";
}
bool offload_optimizer_allowed(const ParallelOptions& p) { return p.zero > 0 || !p.fsdp.empty(); }
// Megatron-LM's distributed optimizer replaces ZeRO and FSDP.
bool distributed_optimizer_allowed(const ParallelOptions& p) { return p.zero == 0 && p.fsdp.empty(); }

namespace {

// ---- strict input: every key of a request is one the format has ----------

// Keys the parser reads that the field table does not list as fields of
// their own: model.custom's sizes (docs/schema.md), plan() options
// (api.cpp), and LoRA's adapter dtype switch.
const char* const kUndeclaredKeys[] = {
    "model.custom.layers",
    "model.custom.hidden",
    "model.custom.heads",
    "model.custom.kv_heads",
    "model.custom.intermediate",
    "model.custom.vocab",
    "model.custom.head_dim",
    "model.custom.tie_word_embeddings",
    "model.custom.params",
    "plan.framework",
    "plan.top",
    "plan.allow_checkpointing",
    "plan.allow_offload",
    "plan.host_ram_gib",
    "plan.global_batch",
    "train.lora.adapter_fp32",
};

// Objects whose keys are someone else's format and pass unchecked: an HF
// config.json (its keys are the model's, and transformers adds new ones every
// release) and a DeepSpeed config; time.prices, whose keys are card names
// (parse_time checks each against the catalog).
const char* const kOpaqueObjects[] = {"model.config", "deepspeed", "time.prices"};

// Every object path of the request format and the keys it may hold, from the
// field table (vram/fields.h) plus the lists above.
const std::map<std::string, std::set<std::string>>& request_keys() {
  static const auto* tree = [] {
    auto* t = new std::map<std::string, std::set<std::string>>();
    auto add = [&](const std::string& path) {
      size_t start = 0;
      std::string parent;
      while (true) {
        const size_t dot = path.find('.', start);
        const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        (*t)[parent].insert(key);
        if (dot == std::string::npos) break;
        parent = path.substr(0, dot);
        start = dot + 1;
      }
    };
    for (const FieldSpec& f : known_fields()) add(f.path);
    for (const char* k : kUndeclaredKeys) add(k);
    return t;
  }();
  return *tree;
}

// Levenshtein distance (Wagner-Fischer, two rows): how far a typo is from a
// known key.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The known field nearest to `key` found under `parent`: a sibling key first
// (seq_length -> train.seq_len), else the same name anywhere in the format
// (a top-level "seq_len" -> train.seq_len). Empty when nothing is close: at
// most a third of the key's letters (and at least 2) differ.
std::string nearest_field(const std::string& parent, const std::string& key) {
  const auto& tree = request_keys();
  const size_t limit = std::max<size_t>(2, key.size() / 3);
  std::string best;
  size_t best_d = limit + 1;
  auto consider = [&](const std::string& path, const std::string& name) {
    // A key that contains the known one or is contained by it counts as one
    // edit away (lora_rank -> train.lora.rank).
    size_t d = edit_distance(key, name);
    if (name.size() >= 3 && (key.find(name) != std::string::npos || name.find(key) != std::string::npos)) {
      d = std::min<size_t>(d, 1);
    }
    if (d < best_d) {
      best_d = d;
      best = path;
    }
  };
  if (auto it = tree.find(parent); it != tree.end()) {
    for (const auto& k : it->second) consider(parent.empty() ? k : parent + "." + k, k);
  }
  if (!best.empty()) return best;
  for (const auto& [obj, keys] : tree) {
    for (const auto& k : keys) consider(obj.empty() ? k : obj + "." + k, k);
  }
  return best;
}

// Every unknown key under `obj`: into `out`, or the first one thrown.
void check_keys(const json& obj, const std::string& path, std::vector<Error>* out) {
  const auto& tree = request_keys();
  const auto known = tree.find(path);
  if (known == tree.end()) return;
  for (const auto& [key, value] : obj.items()) {
    const std::string child = path.empty() ? key : path + "." + key;
    if (known->second.count(key) == 0) {
      const std::string near = nearest_field(path, key);
      std::string listed;
      for (const auto& k : known->second) listed += (listed.empty() ? "" : ", ") + k;
      Error e{errc::kUnknownField,
              child + " is not a request field" + (near.empty() ? "" : "; did you mean " + near + "?") +
                  (path.empty() ? " (top-level fields: " : " (" + path + " has: ") + listed + ")",
              child};
      if (out == nullptr) fail(std::move(e));
      out->push_back(std::move(e));
      continue;
    }
    const bool opaque =
        std::find(std::begin(kOpaqueObjects), std::end(kOpaqueObjects), child) != std::end(kOpaqueObjects);
    if (!opaque && value.is_object()) check_keys(value, child, out);
  }
}

Result<Request> parse_request_filled(const json& request, FrameworkJob job, std::vector<FrameworkDefault> applied);

// LitGPT computes the attention itself when the model soft-caps its scores
// (litgpt/model.py CausalSelfAttention.scaled_dot_product_attention, from
// 916a84ca, the first with Gemma 2, to 26857050: "with softcapping we cannot
// use SDPA": q @ k.mT, tanh, the mask, F.softmax(dtype=torch.float), the
// cast, @ v): eager attention where LitGPT's default (sdpa) stood, listed in
// the assumptions. A rule of every LitGPT release with Gemma 2.
void litgpt_softcap_attention(Request& req, const std::vector<FrameworkDefault>& applied) {
  const bool defaulted = std::any_of(applied.begin(), applied.end(),
                                     [](const FrameworkDefault& d) { return d.path == "train.attention"; });
  if (req.framework != "litgpt" || !req.model.text.attn_softcap || !defaulted ||
      req.train.attention != AttentionImpl::kSdpa) {
    return;
  }
  req.train.attention = AttentionImpl::kEager;
  req.assumptions.push_back(
      "attention eager: LitGPT computes soft-capped attention scores itself instead of SDPA (litgpt/model.py "
      "scaled_dot_product_attention: \"with softcapping we cannot use SDPA\")");
}
Result<Request> parse_request_framework(const json& request);

}  // namespace

void check_request_keys(const json& request) {
  if (request.is_object()) check_keys(request, "", nullptr);
}

std::vector<Error> unknown_request_keys(const json& request) {
  std::vector<Error> out;
  if (request.is_object()) check_keys(request, "", &out);
  return out;
}

Result<Request> parse_request(const json& request_in) {
  // Every key first: a misspelt field is an error, not a default.
  if (auto e = recover([&] { check_request_keys(request_in); })) return std::move(*e);
  // A `deepspeed` object (a ds_config.json) fills the request fields it sets
  // through the importer's DeepSpeed rules (core/src/import, one mapping for
  // the file and the field); the request's own train / parallel fields win.
  json with_ds;
  std::vector<std::string> ds_notes;
  const bool has_ds = request_in.is_object() && request_in.contains("deepspeed") && !request_in["deepspeed"].is_null();
  if (has_ds) {
    if (!request_in["deepspeed"].is_object()) {
      return Error{errc::kWrongType, "deepspeed must be a DeepSpeed config object", "deepspeed"};
    }
    if (auto e = recover([&] { with_ds = reach::deepspeed_request_fields(request_in["deepspeed"], ds_notes); })) {
      return std::move(*e);
    }
    json own = request_in;
    own.erase("deepspeed");
    with_ds.merge_patch(own);
  }
  const json& request = has_ds ? with_ds : request_in;
  Result<Request> parsed = parse_request_framework(request);
  if (parsed.ok()) {
    for (auto& n : ds_notes) parsed.value().assumptions.push_back(std::move(n));
  }
  return parsed;
}

namespace {

Result<Request> parse_request_framework(const json& request) {
  // train.framework (and its release, and versions) first: its defaults and
  // the rules of its library versions fill what the request leaves out.
  FrameworkJob job;
  std::vector<FrameworkDefault> applied;
  json filled;
  if (auto e = recover([&] { filled = reach::framework_defaults(request, job, applied); })) return std::move(*e);
  return parse_request_filled(filled, std::move(job), std::move(applied));
}

Result<Request> parse_request_filled(const json& request, FrameworkJob job, std::vector<FrameworkDefault> applied) {
  return attempt<Request>([&]() -> Result<Request> {
    JsonReader r(request, "");
    Request req;
    if (!r.has("model")) {
      fail(errc::kMissingField, "model",
           "model is required: model.config (an HF config.json object) or model.custom (explicit sizes)");
    }
    const JsonReader m = r.object_req("model");
    {
      // model.config, model.custom or model.safetensors (vram/checkpoint.h).
      auto spec = model_from_sources(m.raw(), "model");
      if (!spec.ok()) return spec.error();
      req.model = std::move(spec.value());
    }
    // task absent: a request that describes inference (an infer object, or a
    // GGUF file, which only inference engines load) and no training is
    // inference; anything else trains (defaults::kTask). The result's task
    // says which.
    const bool infers = (r.has("infer") || m.has("gguf")) && !r.has("train");
    const std::string task = r.str_or("task", infers ? "infer" : defaults::kTask);
    if (task == "train") {
      req.task = Task::kTrain;
    } else if (task == "infer") {
      req.task = Task::kInfer;
    } else {
      fail(errc::kUnknownValue, "task", "task " + vram::quoted(task) + " must be \"train\" or \"infer\"");
    }
    // The inference half (the infer object, the engines' settings) is read
    // by the builds that estimate inference (reach.h).
    if (req.task == Task::kInfer || r.has("infer")) reach::parse_infer(r, req);
    const json* infer_obj = r.get("infer");
    if (req.model.checkpoint.present && (infer_obj == nullptr || !infer_obj->contains("weights_dtype"))) {
      // A checkpoint's tensor list gives the weights' bytes exactly as stored:
      // serve them so unless the request names a dtype.
      req.infer.weights_dtype = "checkpoint";
      if (task == "infer") {
        req.assumptions.push_back(std::string("infer.weights_dtype checkpoint: the weights as ") +
                                  (req.model.gguf ? "model.gguf" : "model.safetensors") + " stores them (" +
                                  std::to_string(req.model.checkpoint.stored_bytes) + " bytes)");
      }
    }
    if (auto t = r.object_opt("train")) parse_train(*t, req);
    if (auto p = r.object_opt("parallel")) parse_parallel(*p, req);
    if (req.task == Task::kTrain && req.train.optimizer_in_backward && req.train.grad_accum > 1) {
      // torchtune recipes/full_finetune_single_device.py raises for
      // optimizer_in_bwd with gradient_accumulation_steps > 1: a parameter
      // steps as soon as its gradient arrives, so nothing can accumulate.
      fail(errc::kInconsistent, "train.optimizer_in_backward",
           "train.optimizer_in_backward steps each parameter as its gradient arrives, so gradients cannot "
           "accumulate: train.grad_accum must be 1 (it is " +
               std::to_string(req.train.grad_accum) + ")");
    }
    const ParallelOptions& par = req.parallel;
    const bool sharded = par.zero > 0 || (!par.fsdp.empty() && par.fsdp != "no_shard") || par.distributed_optimizer;
    if (req.task == Task::kTrain && sharded && !req.train.precision_given && req.train.method != Method::kQlora) {
      // DeepSpeed's bf16 mode and FSDP's MixedPrecision keep fp32 master
      // weights and states next to the bf16 compute copy.
      req.train.precision = Precision::kMixedBf16;
      req.train.precision_given = true;  // explained by the assumption below, not as a transformers default
      req.assumptions.push_back(
          "precision mixed_bf16: DeepSpeed / FSDP / Megatron keep fp32 master weights and states");
    }
    if (auto o = r.object_opt("overheads")) parse_overheads(*o, req);
    if (auto c = r.object_opt("calibration")) parse_calibration(*c, req);
    if (auto a = r.object_opt("allocator")) parse_allocator(*a, req);
    if (auto g = r.object_opt("gpu")) parse_gpu(*g, req);
    // time.* and hardware.* are the time model's (core/src/speed), read by
    // it alone, only when the result is to carry the time: the first-visit
    // module, which does not carry it, answers such a request with
    // not_in_module at `time` (reach.h).
    if (auto t = r.object_opt("time")) req.time.enabled = t->bool_or("enabled", true);
    if (req.time.enabled) reach::read_time_fields(r, req);
    req.framework = job.framework->name;
    // The release note names a training framework's release (train.framework
    // NAME@RELEASE): an inference job runs no framework recipe.
    if (!job.note.empty() && req.task == Task::kTrain) req.assumptions.push_back(job.note);
    if (!applied.empty()) {
      std::string list;
      for (const auto& d : applied) list += (list.empty() ? "" : ", ") + d.path + " = " + d.value.dump();
      req.assumptions.push_back("framework " + req.framework + "@" + job.release +
                                " defaults (fields the request left out): " + list);
    }
    for (const auto& d : applied) {
      if (d.path == "parallel.fsdp_sync_module_states") req.parallel.fsdp_sync_module_states_given = false;
      if (d.path == "parallel.fsdp_version") req.parallel.fsdp_version_given = false;
      if (d.path == "parallel.fsdp_adapter_units") req.parallel.fsdp_adapter_units_given = false;
    }
    litgpt_softcap_attention(req, applied);
    req.framework_defaults = std::move(applied);
    req.framework_job = std::move(job);
    return req;
  });
}

}  // namespace

std::optional<Error> layout_error(const Request& req) {
  return recover([&] { check_layout(req, "parallel"); });
}

}  // namespace vram

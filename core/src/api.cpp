// The JSON boundary: request text in, result text out, never an exception.
#include "vram/api.h"

#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include "fit.h"
#include "guarded.h"
#include "reach.h"
#include "speed/speed.h"
#include "vram/checkpoint.h"
#include "vram/estimate.h"
#include "vram/families.h"
#include "vram/fields.h"
#include "vram/frameworks.h"
#include "vram/gpus.h"
#include "vram/optimizers.h"
#include "vram/plan.h"
#include "vram/releases.h"
#include "vram/request.h"
#include "vram/utf8.h"

#ifndef VRAM_VERSION
#define VRAM_VERSION "0.0.0"
#endif

namespace vram {

namespace {

const char* attn_name(AttnKind a) {
  switch (a) {
    case AttnKind::kMha:
      return "mha";
    case AttnKind::kGqa:
      return "gqa";
    case AttnKind::kMqa:
      return "mqa";
    case AttnKind::kMla:
      return "mla";
  }
  return "?";
}

json stack_json(const LayerStack& s) {
  json j = {{"layers", s.layers},
            {"hidden", s.hidden},
            {"heads", s.heads},
            {"kv_heads", s.kv_heads},
            {"head_dim", s.head_dim},
            {"intermediate", s.intermediate},
            {"attention", attn_name(s.attention)},
            {"norm", s.norm == NormKind::kRmsNorm ? "rmsnorm" : "layernorm"},
            {"mlp", s.mlp == MlpKind::kGated ? "gated" : "plain"},
            {"activation", s.activation},
            {"causal", s.causal}};
  if (s.v_head_dim != s.head_dim) j["v_head_dim"] = s.v_head_dim;
  if (s.parallel_block) j["parallel_block"] = true;
  if (s.qk_norm) j["qk_norm"] = true;
  if (s.attn_output_gate) j["attn_output_gate"] = true;
  if (s.experts > 0) {
    j["moe"] = {{"layers", s.moe_layers},
                {"experts", s.experts},
                {"experts_per_token", s.experts_per_token},
                {"expert_intermediate", s.expert_intermediate},
                {"shared_expert_intermediate", s.shared_expert_intermediate}};
  }
  if (s.attention == AttnKind::kMla) {
    j["mla"] = {{"q_lora_rank", s.q_lora_rank},
                {"kv_lora_rank", s.kv_lora_rank},
                {"qk_rope_head_dim", s.qk_rope_head_dim},
                {"qk_nope_head_dim", s.qk_nope_head_dim}};
  }
  if (s.sliding_window > 0) j["sliding_window"] = {{"window", s.sliding_window}, {"layers", s.sliding_layers}};
  if (s.ssm_layers > 0) {
    const char* kind = s.ssm_kind == SsmKind::kMamba2          ? "mamba2"
                       : s.ssm_kind == SsmKind::kJambaMamba    ? "jamba_mamba"
                       : s.ssm_kind == SsmKind::kShortConv     ? "short_conv"
                       : s.ssm_kind == SsmKind::kGatedDeltaNet ? "gated_deltanet"
                                                               : "mamba";
    j["ssm"] = {{"kind", kind},
                {"layers", s.ssm_layers},
                {"attention_layers", s.attention_layers()},
                {"with_attention", s.ssm_with_attention},
                {"inner", s.ssm_inner},
                {"state", s.ssm_state},
                {"conv_kernel", s.ssm_conv_kernel},
                {"conv_dim", s.conv_dim()},
                {"state_layers", s.state_layers()}};
  }
  return j;
}

json model_json(const ModelSpec& m) {
  json breakdown = json::array();
  for (const auto& [k, v] : m.params_by_component()) breakdown.push_back({{"component", k}, {"params", v}});
  json modules = json::array();
  for (const auto& g : m.groups) {
    json row = {{"module", g.module},
                {"component", g.component},
                {"stack", g.stack},
                {"params", g.total()},
                {"instances", g.instances}};
    if (g.kind == ModuleKind::kLinear) row["shape"] = {g.out_features, g.in_features};
    modules.push_back(std::move(row));
  }
  json facts = stack_json(m.text);
  facts["vocab"] = m.vocab;
  facts["tie_word_embeddings"] = m.tie_word_embeddings;
  if (m.max_position_embeddings > 0) facts["max_position_embeddings"] = m.max_position_embeddings;
  json stacks = json::object();
  for (const auto& s : m.extra_stacks) stacks[s.name] = stack_json(s);
  json out = {{"model_type", m.model_type},
              {"family", m.family},
              {"architecture", m.architecture},
              {"torch_dtype", m.torch_dtype},
              {"params_total", m.params_total()},
              {"params_active", m.params_active()},
              {"exact", m.exact},
              {"inexact", m.inexact},
              {"notes", m.notes},
              {"breakdown", std::move(breakdown)},
              {"modules", std::move(modules)},
              {"facts", std::move(facts)}};
  if (!stacks.empty()) out["stacks"] = std::move(stacks);
  if (m.checkpoint.present) out["checkpoint"] = checkpoint_json(m);
  if (m.vision.image_size > 0) {
    out["vision"] = {{"image_size", m.vision.image_size},
                     {"patch_size", m.vision.patch_size},
                     {"tokens_per_image", m.vision.tokens_per_image},
                     {"encoder_tokens_per_image", m.vision.encoder_tokens_per_image}};
  }
  return out;
}

// Utilisation rounded to 4 decimals so every platform prints the same digits.
double round4(double x) { return std::round(x * 10000.0) / 10000.0; }

// One row per GPU of the catalog: its verdict for the estimate.
json gpus_json(const Estimate& e) {
  json gpus = json::array();
  for (const auto& g : e.gpus) {
    const bool refused = !g.refused.empty();
    const fit::Verdict v = fit::verdict_of(g.fits, g.verdict, g.headroom_ok, g.headroom_applies);
    json row = {{"name", g.name},
                {"capacity_bytes", g.capacity_bytes},
                {"fits", g.fits},
                {"verdict", g.verdict},
                {"utilization", round4(g.utilization)},
                {"headroom_ok", g.headroom_ok},
                {"status", refused ? "unsupported" : v.status}};
    row["words"] = refused ? std::string("Not supported") : v.words;
    if (refused) row["refused"] = g.refused;
    gpus.push_back(std::move(row));
  }
  return gpus;
}

// Which framework a training estimate assumed and every default it applied.
json framework_json(const Request& req) {
  json applied = json::array();
  for (const auto& d : req.framework_defaults) {
    applied.push_back({{"path", d.path}, {"value", d.value}, {"source", d.source}});
  }
  const FrameworkJob& job = req.framework_job;
  const Framework* fw = job.framework;
  json versions = json::object();
  for (const LibraryVersion& v : job.versions) versions[v.library] = {{"version", v.version}, {"from", v.from}};
  return {{"name", req.framework},
          {"label", fw != nullptr ? fw->label : req.framework},
          {"release", job.release},
          {"release_given", job.release_given},
          {"versions", std::move(versions)},
          {"defaults_applied", std::move(applied)},
          {"not_modelled", fw != nullptr ? json(fw->not_modelled) : json::array()}};
}

// The chosen card's verdict (null without a card).
json fit_json(const Request& req, const Estimate& e) {
  if (!e.has_fit) return nullptr;
  json fit = {{"gpu", e.fit.gpu},
              {"total_bytes", e.fit.total_bytes},
              {"capacity_bytes", e.fit.capacity_bytes},
              {"fits", e.fit.fits},
              {"verdict", e.fit.verdict},
              {"paged_bytes", e.fit.paged_bytes},
              {"utilization", round4(e.fit.utilization)},
              {"headroom_ok", e.fit.headroom_ok},
              {"headroom_fraction", kHeadroomFraction},
              {"headroom_applies", e.fit.headroom_applies}};
  const fit::Verdict v = fit::verdict_of(e.fit, e.fit.headroom_applies);
  fit["status"] = v.status;
  fit["words"] = v.words;
  if (req.task == Task::kTrain) {
    fit["max_micro_batch"] = e.fit.max_micro_batch;
    fit["max_seq_len"] = e.fit.max_seq_len;
    fit["search"] = {{"probes", e.fit.search_probes}, {"replays", e.fit.search_replays}};
    if (e.managed_bytes > 0) fit["max_micro_batch_with_paging"] = e.fit.max_micro_batch_with_paging;
  }
  return fit;
}

// A training estimate's layout facts and, with pipeline stages, one row each.
json parallel_json(const Estimate& e) {
  json par = {{"layout", e.engine}};
  for (const auto& [k, v] : e.facts) par[k] = v;
  if (!e.stages.empty()) {
    json stages = json::array();
    for (const auto& st : e.stages) {
      stages.push_back({{"stage", st.stage},
                        {"layers", st.layers},
                        {"moe_layers", st.moe_layers},
                        {"params", st.params},
                        {"in_flight", round4(st.in_flight)},
                        {"embeddings", st.embeddings},
                        {"head", st.head},
                        {"peak_bytes", st.peak_bytes}});
    }
    par["stages"] = std::move(stages);
  }
  return par;
}

json result_json(const Request& req, const Estimate& e) {
  json comps = json::array();
  for (const auto& c : e.components) {
    comps.push_back({{"key", c.key},
                     {"label", c.label},
                     {"bytes", c.bytes},
                     {"formula", c.formula},
                     {"pool", c.pool == Pool::kAllocated ? "allocated" : "outside"}});
  }
  json phases = json::array();
  for (const auto& p : e.phases) {
    phases.push_back({{"key", p.key},
                      {"label", p.label},
                      {"bytes", p.device_bytes},
                      {"allocated_bytes", p.allocated_bytes},
                      {"reserved_bytes", p.reserved_bytes},
                      {"parts", p.parts}});
  }
  const bool train = req.task == Task::kTrain;
  json model = model_json(req.model);
  model["params_trainable"] = train ? e.params_trainable : 0;
  json out = {{"schema", kSchema},
              {"version", VRAM_VERSION},
              {"task", train ? "train" : "infer"},
              {"model", std::move(model)},
              {"peak_bytes", e.peak_bytes},
              {"peak_allocated_bytes", e.peak_allocated_bytes},
              {"peak_reserved_bytes", e.peak_reserved_bytes},
              {"peak_phase", e.peak_phase},
              {"tokens_per_micro_batch", e.tokens_per_micro_batch},
              {"components", std::move(comps)},
              {"phases", std::move(phases)},
              {"gpus", gpus_json(e)},
              {"assumptions", e.assumptions},
              {"warnings", e.warnings}};
  // The reserved range (issue 33): peak_reserved_bytes is its upper end, the
  // figure the peak and the fit use.
  if (train && e.peak_reserved_low_bytes > 0) out["peak_reserved_low_bytes"] = e.peak_reserved_low_bytes;
  if (train) out["framework"] = framework_json(req);
  out["fit"] = fit_json(req, e);
  if (reach::infers(req)) {
    json inf = {{"engine", e.engine},
                {"batch", req.infer.batch},
                {"context_len", req.infer.context_len},
                {"weights_dtype", req.infer.weights_dtype},
                {"kv_dtype", req.infer.kv_dtype}};
    for (const auto& [k, v] : e.facts) inf[k] = v;
    if (!e.devices.empty()) inf["devices"] = reach::infer_devices_json(e);
    if (!e.engine_release.empty()) inf["engine_release"] = e.engine_release;
    if (!e.engine_log.empty()) {
      json lines = json::array();
      for (const auto& l : e.engine_log) {
        lines.push_back({{"key", l.key}, {"value", l.value}, {"unit", l.unit}, {"text", l.text}});
      }
      inf["engine_log"] = std::move(lines);
    }
    out["infer"] = std::move(inf);
  }
  if (train && !e.facts.empty()) out["parallel"] = parallel_json(e);
  if (train) {
    out["train"] = {
        {"method", to_string(req.train.method)},
        {"precision", to_string(req.train.method == Method::kQlora ? Precision::kBf16 : req.train.precision)},
        {"optimizer", req.train.optimizer},
        {"attention", to_string(req.train.attention)},
        {"grad_checkpointing", to_string(req.train.checkpointing)},
        {"micro_batch", req.train.micro_batch},
        {"seq_len", req.train.seq_len},
        {"grad_accum", req.train.grad_accum}};
  }
  return out;
}
}  // namespace

// The message and path may quote the input (a parse error's "last read"
// bytes, a key): made valid UTF-8 so that dumping the error never throws.
json error_json(const Error& e) {
  return {{"error", {{"code", e.code}, {"message", valid_utf8(e.message)}, {"path", valid_utf8(e.path)}}}};
}

json estimate(const json& request) {
  return guarded([&]() -> json {
    auto req = parse_request(request);
    if (!req.ok()) return error_json(req.error());
    const bool timed = req.value().time.enabled;
    auto est = estimate_request(req.value());
    if (!est.ok()) return error_json(est.error());
    json out = result_json(req.value(), est.value());
    // The time model (issue 31): a step's time, the run's hours and cost.
    if (timed) out["time"] = reach::time_json(request, req.value(), est.value());
    return out;
  });
}

json time(const json& request) {
  return guarded([&]() -> json {
    auto parsed = parse_request(request);
    if (!parsed.ok()) return error_json(parsed.error());
    const Request& req = parsed.value();
    if (!req.time.enabled) {
      return error_json({errc::kInconsistent, "time() answers the time model: time.enabled is false", "time.enabled"});
    }
    // The same refusal as the estimate's (bf16 on a T4): an error, not a time.
    if (auto no = fit::gpu_refusal(req)) return error_json({errc::kInconsistent, no->message, no->path});
    // Training needs nothing of the memory estimate; serving needs its
    // per-device weight and KV bytes (the estimate's own, without the
    // searches that only the fit needs).
    Estimate e;
    if (req.task == Task::kInfer) {
      auto est = reach::estimate_infer(req);
      if (!est.ok()) return error_json(est.error());
      e = std::move(est.value());
    }
    return {{"schema", kSchema}, {"version", VRAM_VERSION}, {"time", reach::time_json(request, req, e)}};
  });
}

json model_info(const json& model) {
  return guarded([&]() -> json {
    JsonReader r(model, "");
    // Accept a whole request, its `model` object, or a bare config.json.
    std::string prefix = "model";
    const json* m = &model;
    if (r.has("model")) {
      m = r.get("model");
      JsonReader(*m, "model");  // fails with wrong_type unless `model` is an object
    } else if (r.has("model_type") && !r.has("config")) {
      auto spec = model_from_config(model, "config");
      if (!spec.ok()) return error_json(spec.error());
      return model_json(spec.value());
    } else {
      prefix = "";
    }
    const std::string base = prefix.empty() ? "" : prefix + ".";
    if (m->contains("config") || m->contains("custom") || m->contains("size") || m->contains("safetensors") ||
        m->contains("gguf")) {
      auto spec = model_from_sources(*m, prefix);
      if (!spec.ok()) return error_json(spec.error());
      return model_json(spec.value());
    }
    return error_json({errc::kMissingField, base + "config",
                       base + "config, " + base + "custom, " + base + "size or " + base + "safetensors is required"});
  });
}

namespace {

// A plan candidate's step time and cost (the time model's, issue 31); null
// when the card has no speed figures.
json candidate_time(const PlanCandidate& c) {
  if (c.step_seconds_high <= 0) return nullptr;
  return speed::step_cost_json({{c.step_seconds_low, c.step_seconds_high},
                                {c.tokens_per_second_per_gpu_low, c.tokens_per_second_per_gpu_high},
                                {c.usd_per_million_tokens_low, c.usd_per_million_tokens_high}});
}

}  // namespace

json plan(const json& request) {
  return guarded([&]() -> json {
    auto req = parse_request(request);
    if (!req.ok()) return error_json(req.error());
    PlanOptions o;
    JsonReader r(request, "");
    // Plan in the family the request already uses unless plan.framework names
    // one: FSDP, or Megatron-LM for its distributed optimizer and for sequence
    // parallel, which only Megatron-LM runs. The page leaves the choice to
    // this rule rather than keeping a copy of it (issue 11).
    const ParallelOptions& layout = req.value().parallel;
    if (!layout.fsdp.empty()) {
      o.framework = "fsdp";
    } else if (layout.distributed_optimizer || layout.sequence_parallel) {
      o.framework = "megatron";
    }
    if (auto p = r.object_opt("plan")) {
      o.framework = p->str_or("framework", o.framework);
      if (o.framework != "deepspeed" && o.framework != "fsdp" && o.framework != "megatron") {
        fail(
            errc::kUnknownValue, p->child_path("framework"),
            p->child_path("framework") + " " + vram::quoted(o.framework) + " is not one of: deepspeed, fsdp, megatron");
      }
      o.top = p->int_or("top", o.top, 1, 1000);
      o.allow_checkpointing = p->bool_or("allow_checkpointing", o.allow_checkpointing);
      o.allow_offload = p->bool_or("allow_offload", o.allow_offload);
      if (auto h = p->num_opt("host_ram_gib", 1.0, 1048576.0)) o.host_ram_gib = *h;
      if (p->has("global_batch")) o.global_batch = p->int_or("global_batch", 1, 1, int64_t{1} << 40);
    }
    auto result = plan_request(req.value(), o);
    if (!result.ok()) return error_json(result.error());
    const Plan& pl = result.value();
    json cands = json::array();
    int64_t rank = 0;
    for (const auto& c : pl.candidates) {
      const ParallelOptions& p = c.layout;
      // The request fields to apply: merge into `parallel` and `train`.
      json par = {{"gpus", p.gpus}, {"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp}, {"cp", p.cp}, {"ep", p.ep}};
      if (p.zero > 0) par["zero"] = p.zero;
      if (!p.fsdp.empty()) par["fsdp"] = p.fsdp;
      if (p.distributed_optimizer) par["distributed_optimizer"] = true;
      if (p.sequence_parallel) par["sequence_parallel"] = true;
      if (p.offload_optimizer) par["offload_optimizer"] = true;
      if (p.offload_params) par["offload_params"] = true;
      // What Apply sets, as request fields (a merge patch): every parallel
      // field, checkpointing, the accumulation that fills the global batch,
      // and the precision the search planned with.
      json train_patch = {{"grad_checkpointing", to_string(c.checkpointing)}, {"grad_accum", c.grad_accum}};
      if (pl.precision_changed) train_patch["precision"] = pl.precision;
      const fit::Verdict v = fit::verdict_of(c.fits, c.fits ? kFits : kDoesNotFit, c.headroom_ok);
      cands.push_back({{"rank", ++rank},
                       {"label", c.label},
                       {"parallel", par},
                       {"apply", {{"parallel", par}, {"train", train_patch}}},
                       {"status", v.status},
                       {"words", v.words},
                       {"grad_accum", c.grad_accum},
                       {"global_batch", c.global_batch},
                       {"host_bytes", c.host_bytes},
                       {"host_fits", c.host_fits},
                       {"grad_checkpointing", to_string(c.checkpointing)},
                       {"peak_bytes", c.peak_bytes},
                       {"utilization", round4(c.utilization)},
                       {"fit_ratio", round4(c.fit_ratio)},
                       {"fits", c.fits},
                       {"headroom_ok", c.headroom_ok},
                       {"max_micro_batch", c.max_micro_batch},
                       {"step_time_factor", round4(c.step_time_factor)},
                       {"comm_factor", round4(c.comm_factor)},
                       {"time", candidate_time(c)},
                       {"why", c.why}});
    }
    return {{"schema", kSchema},
            {"version", VRAM_VERSION},
            {"plan",
             {{"framework", o.framework},
              {"gpus", pl.gpus},
              {"gpu", pl.gpu},
              {"capacity_bytes", pl.capacity_bytes},
              {"considered", pl.considered},
              {"global_batch", pl.global_batch},
              {"host_ram_bytes", pl.host_ram_bytes},
              {"host_ram_default", pl.host_ram_default},
              {"fitting", pl.fitting},
              {"notes", pl.notes},
              {"candidates", cands}}}};
  });
}

namespace {

// JSON text in, pretty JSON text out; parse failures become error objects.
std::string text_call(const std::string& text, json (*fn)(const json&)) {
  return guarded([&] { return reach::answer_text(fn(parse_json_text(text, ""))); });
}

}  // namespace

std::string estimate_json(const std::string& request_text) { return text_call(request_text, &estimate); }
std::string model_info_json(const std::string& model_text) { return text_call(model_text, &model_info); }
std::string plan_json(const std::string& request_text) { return text_call(request_text, &plan); }
std::string time_json(const std::string& request_text) { return text_call(request_text, &time); }
std::string fields_json() {
  return guarded([] { return fields_table().dump(2); });
}

std::string layout_options_json(const std::string& parallel_text) {
  return guarded([&] {
    const json doc = parse_json_text(parallel_text, "parallel");
    const JsonReader p(doc, "parallel");
    ParallelOptions o;
    o.gpus = p.int_or("gpus", defaults::kGpus, 1, limits::kMaxGpus);
    o.tp = p.int_or("tp", 1, 1, limits::kMaxSmallDegree);
    o.pp = p.int_or("pp", 1, 1, limits::kMaxDegree);
    o.cp = p.int_or("cp", 1, 1, limits::kMaxDegree);
    o.zero = p.int_or("zero", 0, 0, 3);
    o.fsdp = p.str_or("fsdp", "");
    return json{{"dp", data_parallel(o)},
                {"offload_optimizer", offload_optimizer_allowed(o)},
                {"offload_params", offload_params_allowed(o)},
                {"distributed_optimizer", distributed_optimizer_allowed(o)}}
        .dump(2);
  });
}

std::string framework_defaults_json(const std::string& query_text) {
  return guarded([&] {
    const json doc = parse_json_text(query_text, "");
    const JsonReader q(doc, "");
    // Spelt as the request fields are (aliases included; the framework may
    // name a release, NAME@RELEASE), absent = their default.
    const FieldSpec& m = field("train.method");
    const std::string method = enum_value(q, "method", m).value_or(m.default_value.get<std::string>());
    json request = {{"train", {{"method", method}}}};
    if (const auto name = q.str_opt("framework")) request["train"]["framework"] = *name;
    if (doc.contains("versions")) request["versions"] = doc["versions"];
    FrameworkJob job;
    std::vector<FrameworkDefault> applied;
    if (auto e = recover([&] { reach::framework_defaults(request, job, applied); })) {
      // The query's own key, not the request path the job names.
      e->path = e->path == "train.framework" ? "framework" : e->path;
      fail(std::move(*e));
    }
    json defaults = json::array();
    for (const FrameworkDefault& d : applied) {
      defaults.push_back({{"path", d.path}, {"value", d.value}, {"source", d.source}});
    }
    const Framework& fw = *job.framework;
    return json{{"framework", fw.name}, {"label", fw.label},    {"release", job.release},
                {"method", method},     {"defaults", defaults}, {"not_modelled", fw.not_modelled}}
        .dump(2);
  });
}

std::string version_json() {
  return guarded([] {
    json gpus = json::array();
    for (const auto& g : gpu_catalog()) {
      gpus.push_back({{"name", g.name},
                      {"memory_bytes", g.total_mib * 1048576},
                      {"usable_bytes", g.usable_bytes()},
                      {"vendor", g.vendor},
                      {"arch", g.arch},
                      {"compute_capability", g.sm > 0 ? json(g.sm / 10.0) : json(nullptr)},
                      {"bf16", g.bf16},
                      {"flash_attention_2", g.flash_attn2},
                      {"fp8", g.fp8},
                      {"note", g.note}});
    }
    return json({{"schema", kSchema},
                 {"version", VRAM_VERSION},
                 {"supported_model_types", supported_model_types()},
                 {"optimizers", optimizer_names()},
                 // The field's values (the framework tables are the full
                 // module's; vram-probe version adds each one's releases).
                 {"frameworks", field("train.framework").values},
                 {"gpus", gpus},
                 // The input rules every entry point applies (vram/fields.h
                 // limits): the page's facade refuses longer text before
                 // copying it into the module.
                 {"limits",
                  {{"max_input_bytes", limits::kMaxInputBytes},
                   {"max_json_depth", limits::kMaxJsonDepth},
                   {"max_bytes", limits::kMaxBytes}}}})
        .dump(2);
  });
}

std::string version_with_releases_json() {
  const std::string text = version_json();
  json out = json::parse(text);
  if (out.contains("error")) return text;
  return guarded([&] {
    out["framework_releases"] = framework_releases(true);
    return out.dump(2);
  });
}

}  // namespace vram

// The script `vram-probe run` writes: the embedded template plus the request's
// settings as resolved by the core (request.h), so the script trains exactly
// the job the estimate describes, framework defaults included.
#include "run_script.h"

#include <string>

#include "vram/api.h"
#include "vram/request.h"

namespace vram::cli {

namespace {

// probe-agent/src/run/train_script.py, embedded by probe-agent/CMakeLists.txt.
const char* const kTemplate =
#include "run_template.inc"
    ;

json fail_with(const char* code, const std::string& path, const std::string& message) {
  return error_json({code, message, path});
}

}  // namespace

json run_spec(const json& request, int steps, json* estimate_out) {
  json result = estimate(request);
  if (result.contains("error")) return result;
  if (estimate_out) *estimate_out = result;
  if (result.value("task", "") != "train") {
    return fail_with(errc::kUnsupported, "task",
                     "vram-probe run trains: task must be train (serving is measured with `vram-probe watch -- "
                     "vllm serve ...` or your own generate script)");
  }
  const json* config = nullptr;
  if (request.contains("model") && request["model"].is_object() && request["model"].contains("config")) {
    config = &request["model"]["config"];
  }
  if (!config || !config->is_object()) {
    return fail_with(errc::kUnsupported, "model.config",
                     "vram-probe run builds the model from an HF config.json: the request needs model.config "
                     "(model.custom gives sizes, not an architecture to instantiate)");
  }
  Result<Request> parsed = parse_request(request);
  if (!parsed.ok()) return error_json(parsed.error());
  const Request& req = parsed.value();
  if (req.parallel.gpus > 1) {
    return fail_with(errc::kUnsupported, "parallel.gpus",
                     "vram-probe run trains in one process on one GPU; for " + std::to_string(req.parallel.gpus) +
                         " GPUs run your launcher (torchrun, deepspeed, accelerate) under `vram-probe watch`");
  }
  const TrainOptions& t = req.train;
  const json& train = result["train"];  // the core's canonical names, defaults applied
  json lora_targets = nullptr;          // null: PEFT's default for the model type, as the estimate assumes
  if (t.lora.all_linear) {
    lora_targets = "all-linear";
  } else if (!t.lora.targets.empty()) {
    lora_targets = t.lora.targets;
  }
  std::string quantizer = "bitsandbytes";
  if (t.quant.torchao) quantizer = t.quant.torchao_unchunked ? "torchao_unchunked" : "torchao";
  return json{
      {"request", request},
      {"model_config", *config},
      {"method", train.at("method")},
      {"micro_batch", t.micro_batch},
      {"seq_len", t.seq_len},
      {"grad_accum", t.grad_accum},
      {"precision", train.at("precision")},
      {"optimizer", train.at("optimizer")},
      {"grad_checkpointing", train.at("grad_checkpointing")},
      {"attention", train.at("attention")},
      {"fused_loss", t.fused_loss},
      {"fused_norm", t.fused_norm},
      {"lora",
       {{"rank", t.lora.rank},
        {"alpha", t.lora.alpha},
        {"dropout", t.lora.dropout},
        {"targets", lora_targets},
        {"adapter_fp32", t.lora.adapter_fp32},
        {"use_dora", t.lora.use_dora}}},
      {"quant",
       {{"double_quant", t.quant.double_quant},
        {"blocksize", t.quant.blocksize},
        {"prepare_kbit", t.quant.prepare_kbit},
        {"saves_input", t.quant.saves_input},
        {"quantizer", quantizer}}},
      {"dropout", t.dropout < 0 ? json(nullptr) : json(t.dropout)},
      {"images_per_sample", t.images_per_sample},
      {"trainable_modules", t.trainable_modules},
      {"optimizer_in_backward", t.optimizer_in_backward},
      {"activation_offload", t.activation_offload},
      {"compile", t.compile},
      {"zero_grad_set_to_none", t.zero_grad_set_to_none},
      {"steps", steps},
  };
}

std::string run_script(const json& spec) {
  // The SPEC sits in a raw ''' string: a JSON text can hold ' only inside
  // strings, where \u0027 is the same character, so no ''' can end it early;
  // JSON escapes (\n, \") reach json.loads unchanged in a raw string.
  std::string text = spec.dump(2);
  std::string safe;
  safe.reserve(text.size());
  for (char c : text) {
    if (c == '\'') {
      safe += "\\u0027";
    } else {
      safe += c;
    }
  }
  std::string script = kTemplate;
  const std::string marker = "__VRAM_RUN_SPEC__";
  const auto at = script.find(marker);
  if (at != std::string::npos) script.replace(at, marker.size(), safe);
  return script;
}

}  // namespace vram::cli

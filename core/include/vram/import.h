// Bring your own config (issue 15): the files users already have (Axolotl,
// LLaMA-Factory, torchtune and LitGPT recipes, HF TrainingArguments / TRL
// SFTConfig JSON, PEFT adapter_config.json, bitsandbytes quantization_config,
// an HF config.json, DeepSpeed JSON, accelerate config YAML) mapped to the
// request schema, once, here: the CLI and (through WASM) the page call it
// with the same parsed trees and get the same bytes back.
//
// Each file arrives as the JSON tree of its content: JSON files as parsed,
// YAML files parsed by a YAML 1.2 library (yaml-cpp natively, the npm `yaml`
// package on the page) into the same tree. Core never sees YAML text.
#pragma once

#include <cstdint>
#include <string>

#include "vram/json_reader.h"

namespace vram {

// Largest file an importer reads, checked by the CLI and the page before
// reading (issue 15: "a 10 MB limit per file").
inline constexpr int64_t kMaxImportBytes = int64_t{10} * 1024 * 1024;

// {"files": [{"file": NAME, "content": TREE}, ...], "presets": [HUB_ID, ...]}
// -> {"request": {...}, "model": {"id", "file", "key", "preset"} | null,
//     "files": [{"file", "kind", "used", "not_understood", "ignored"}]}
// or {"error": {"code", "message", "path"}} naming the file and the key.
//
// `used`: [{"key", "field", "value"}] (field absent: the key was read and
// states what the estimate already assumes); `not_understood`: [{"key",
// "why"}], keys that change memory in a way no request field says; `ignored`:
// keys irrelevant to memory (paths, logging, learning rate, ...). A DeepSpeed
// "auto" takes its value from the other files or the form, as transformers'
// HfTrainerDeepSpeedConfig does. `presets` are the Hub ids the caller holds
// a config.json for; `model.preset` is the one matching the id a recipe
// names (base_model, model_name_or_path, a torchtune builder, a LitGPT
// checkpoint_dir), for the caller to add as one more file.
json import_files(const json& input);
std::string import_json(const std::string& input_text);

// A request plus {"export": {"format", "model_id"?}} -> {"format", "file",
// "text"}: the file that reproduces the request's training job in that
// framework, format one of deepspeed (ds_config.json), accelerate (config
// YAML), trainer (TrainingArguments / SFTConfig JSON), axolotl,
// llama_factory, torchtune (recipe YAML). Imported again (import_files), it
// gives the same request fields. Errors as {"error": ...}.
json export_config(const json& input);
std::string export_json(const std::string& input_text);

}  // namespace vram

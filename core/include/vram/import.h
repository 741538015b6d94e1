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

// The rules of one file's tree, the same on both front ends (the CLI's
// readers, probe-agent/src/config_files.cpp and yaml_tree.cpp; the page's,
// site/src/lib/import.js), so a file either reads the same or is refused by
// both, naming the file and the line (README "Input rules and limits"):
// - at most kMaxImportValues values (every scalar, list and mapping, aliases
//   expanded). The largest file in tests/fixtures holds about 200; a
//   classifier's config.json with 21,843 labels (id2label and label2id) would
//   hold about 44,000. So this refuses only files built to exhaust memory.
//   The YAML readers count as they read, before an alias is copied; a JSON
//   file holds no aliases (its 10 MiB bound it) and import_files counts it.
// - YAML aliases under the npm `yaml` package's own rule (yaml 2.x
//   nodes/Alias.js, Document.toJS maxAliasCount default 100): an anchor may be
//   aliased while (its aliases + 1) x (the aliases inside it, the largest
//   product) stays <= kMaxImportAliases. A "billion laughs" file stops at its
//   fourth level, before anything is expanded.
// - a key given twice in one mapping, and anything after the first document
//   (trailing text after a JSON object, a second YAML document), are errors.
// - at most limits::kMaxJsonDepth levels of nesting.
// - a number that is not finite (YAML .inf / .nan, a JSON number beyond a
//   double such as 1e400) is kept as the text ".inf", "-.inf" or ".nan", so
//   the key that holds it is reported (an error where a number is read),
//   never silently null.
inline constexpr int64_t kMaxImportValues = 100000;
inline constexpr int64_t kMaxImportAliases = 100;

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

// What one imported file gives (import.h): the request fields it sets and the
// per-key report. Private to core/src/import.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vram/json_reader.h"

namespace vram::import {

// One request field a file sets, and the key that set it.
struct Setting {
  std::string field;  // request path, or "#adapter" / "#quant4" (resolved into train.method)
  json value;
  std::string key;  // dotted key inside the file
};

class FileContext {
 public:
  FileContext(std::string file, const json& root) : file_(std::move(file)), root_(&root) {}

  const std::string& file() const { return file_; }
  const json& root() const { return *root_; }
  std::string kind;

  // The value at a dotted key ("zero_optimization.stage"), or nullptr.
  const json* at(const std::string& key) const;
  // Present and not null.
  bool has(const std::string& key) const {
    const json* v = at(key);
    return v != nullptr && !v->is_null();
  }

  // A yes/no key (as_flag); anything else fails naming the key, never read as false.
  bool flag(const std::string& key) const;

  // `key` sets request `field` to `value`, which must fit the field's
  // declaration (vram/fields.h: type, limits, values) or fail naming the key.
  void set(const std::string& key, const std::string& field, json value);
  // train.framework from the kind of the file.
  void framework(const std::string& name);
  // Mark `key` handled without a report line (a whole config.json's keys).
  void cover(const std::string& key);
  // `key` was read; what it states is what the estimate assumes anyway.
  void use(const std::string& key, const std::string& note = "");
  // "auto": the value comes from the other files or the form.
  void use_auto(const std::string& key, const std::string& field);
  // `key` changes memory in a way no request field says.
  void not_understood(const std::string& key, const std::string& why);
  // `key` (and everything under it) is irrelevant to memory.
  void ignore(const std::string& key);
  // The file names another file (a DeepSpeed JSON a recipe points to).
  void refer(const std::string& key, const std::string& kind);

  // The model the file names (a Hub id).
  void name_model(const std::string& key, const std::string& id);

  // Every leaf no rule touched: ignored when `irrelevant(top-level key)`,
  // otherwise not understood. Call once, after the kind's rules ran.
  void finish(const std::function<bool(const std::string&)>& irrelevant);

  json report() const;

  std::vector<Setting> settings;
  std::optional<std::string> model_id;
  std::string model_key;
  std::vector<std::pair<std::string, std::string>> references;  // key, kind

 private:
  bool handled(const std::string& key) const;
  void walk(const json& j, const std::string& key, const std::function<bool(const std::string&)>& irrelevant);

  std::string file_;
  const json* root_;
  std::set<std::string> seen_;
  std::set<std::string> method_keys_;
  json used_ = json::array();
  json not_understood_ = json::array();
  json ignored_ = json::array();
};

// A number read as an integer: 1e9 and 5e8 (YAML and JSON floats DeepSpeed
// configs use for sizes) become 1000000000 and 500000000.
std::optional<int64_t> as_int(const json& v);
bool is_auto(const json& v);
// ".inf", "-.inf" or ".nan": a number that was not finite in the file (vram/import.h).
bool is_nonfinite(const json& v);
// true / false, "true" / "false", "yes" / "no", "on" / "off" (any case), 1 / 0; else nullopt.
std::optional<bool> as_flag(const json& v);

// Kinds (kinds.cpp): each fills ctx from ctx.root().
void map_deepspeed(FileContext& ctx, const std::string& prefix);
void map_accelerate(FileContext& ctx);
void map_axolotl(FileContext& ctx);
void map_llama_factory(FileContext& ctx);
void map_torchtune(FileContext& ctx);
void map_litgpt(FileContext& ctx);
void map_trainer(FileContext& ctx);
void map_peft(FileContext& ctx);
void map_bnb(FileContext& ctx, const std::string& prefix);
void map_model_config(FileContext& ctx);

// A request's `deepspeed` object (a ds_config.json) as request fields: the
// same rules as an imported DeepSpeed file, so there is one DeepSpeed mapping.
// "auto" values set nothing (the request's own fields or defaults apply).
// Fails (throws Failure) at "deepspeed.<key>". `notes` receives one line per
// key that changes memory but was not understood.
json deepspeed_request_fields(const json& ds, std::vector<std::string>& notes);

// The kind of a file from its content, or "" when none matches.
std::string detect_kind(const json& root);

}  // namespace vram::import

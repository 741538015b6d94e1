// The import driver (import.h): recognise each file, run its kind's rules,
// merge what the files set into one request, report every key.
#include "vram/import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "guarded.h"
#include "import/import_context.h"
#include "vram/api.h"
#include "vram/fields.h"

namespace vram {

namespace import {

namespace {

std::string parent_of(const std::string& key) {
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const json* FileContext::at(const std::string& key) const {
  const json* cur = root_;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

namespace {

// A value an import sets, against its request field's declaration
// (vram/fields.h: type, limits, values): `num_processes: -8`, `zero_stage: 7`
// or `fsdp_sharding_strategy: NUCLEAR` fail here, naming the key, never later
// in the estimate. Fails (throws Failure) at `key`.
void check_setting(const std::string& key, const std::string& path, const json& value) {
  const FieldSpec* f = find_field(path);
  if (f == nullptr) return;  // "#adapter" / "#quant4" and model.config
  const auto bad = [&](const char* code, const std::string& why) {
    fail(code, key, key + " = " + value.dump() + ": " + path + " " + why);
  };
  const auto limits = [&]() {
    const auto show = [&](double x) {
      return f->type == FieldType::kInt ? json(static_cast<int64_t>(x)).dump() : json(x).dump();
    };
    return "must be between " + show(*f->min) + " and " + show(*f->max);
  };
  switch (f->type) {
    case FieldType::kInt:
    case FieldType::kNumber: {
      if (!value.is_number() || (f->type == FieldType::kInt && !value.is_number_integer())) {
        bad(errc::kWrongType, f->type == FieldType::kInt ? "takes an integer" : "takes a number");
      }
      const double d = value.get<double>();
      if (!std::isfinite(d) || (f->min && d < *f->min) || (f->max && d > *f->max)) bad(errc::kOutOfRange, limits());
      break;
    }
    case FieldType::kBool:
      if (!value.is_boolean()) bad(errc::kWrongType, "takes true or false");
      break;
    case FieldType::kEnum:
      if (!value.is_string() || !f->canonical(value.get<std::string>())) {
        std::string names;
        for (const auto& v : f->accepted()) names += (names.empty() ? "" : ", ") + (v.empty() ? "\"\"" : v);
        bad(errc::kUnknownValue, "takes one of " + names);
      }
      break;
    case FieldType::kList:  // a list, or a name the parser expands ("all-linear")
      if (!value.is_array() && !value.is_string()) bad(errc::kWrongType, "takes a list");
      break;
    default:
      break;
  }
}

}  // namespace

void FileContext::set(const std::string& key, const std::string& field, json value) {
  check_setting(key, field, value);
  seen_.insert(key);
  if (field[0] != '#') {
    used_.push_back({{"key", key}, {"field", field}, {"value", value}});
  } else if (method_keys_.insert(key).second && at(key) != nullptr &&
             std::none_of(not_understood_.begin(), not_understood_.end(),
                          [&](const json& n) { return n["key"] == key; })) {
    // (A key reported as not understood is not listed as used too: an unknown torchtune builder.)
    // "#adapter" / "#quant4": what the key says about adapters and 4-bit
    // weights; the merge turns them into train.method (full, lora, qlora, freeze).
    const bool quant = field == "#quant4";
    used_.push_back({{"key", key},
                     {"value", *at(key)},
                     {"note", quant ? (value == true ? "4-bit base weights: train.method qlora with an adapter"
                                                     : "no 4-bit base weights")
                                    : "train.method: trains " + value.get<std::string>()}});
  }
  settings.push_back({field, std::move(value), key});
}

void FileContext::framework(const std::string& name) {
  used_.push_back({{"key", "(kind " + kind + ")"}, {"field", "train.framework"}, {"value", name}});
  settings.push_back({"train.framework", name, "(kind " + kind + ")"});
}

void FileContext::cover(const std::string& key) { seen_.insert(key); }

void FileContext::use(const std::string& key, const std::string& note) {
  if (at(key) == nullptr || !seen_.insert(key).second) return;
  json u = {{"key", key}};
  if (const json* v = at(key)) u["value"] = *v;
  if (!note.empty()) u["note"] = note;
  used_.push_back(u);
}

void FileContext::use_auto(const std::string& key, const std::string& field) {
  seen_.insert(key);
  used_.push_back({{"key", key}, {"field", field}, {"value", "auto"}, {"note", "from the other files or the form"}});
}

void FileContext::not_understood(const std::string& key, const std::string& why) {
  if (!seen_.insert(key).second) return;
  not_understood_.push_back({{"key", key}, {"why", why}});
}

void FileContext::ignore(const std::string& key) {
  if (!seen_.insert(key).second) return;
  ignored_.push_back(key);
}

void FileContext::refer(const std::string& key, const std::string& kind) {
  seen_.insert(key);
  references.emplace_back(key, kind);
}

void FileContext::name_model(const std::string& key, const std::string& id) {
  seen_.insert(key);
  if (!model_id) {
    model_id = id;
    model_key = key;
  }
  used_.push_back({{"key", key}, {"field", "model"}, {"value", id}});
}

bool FileContext::handled(const std::string& key) const {
  for (std::string k = key; !k.empty(); k = parent_of(k)) {
    if (seen_.count(k) != 0) return true;
  }
  return false;
}

void FileContext::walk(const json& j, const std::string& key,
                       const std::function<bool(const std::string&)>& irrelevant) {
  if (!key.empty() && handled(key)) return;
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) walk(v, key.empty() ? k : key + "." + k, irrelevant);
    return;
  }
  const std::string top = key.substr(0, key.find('.'));
  if (irrelevant(top) || irrelevant(key)) {
    ignored_.push_back(key);
  } else if (j.is_null() || (j.is_object() && j.empty()) || (j.is_array() && j.empty())) {
    // An unset optional key (`lora_model_dir:`, `"rank_pattern": {}`) states nothing.
    ignored_.push_back(key);
  } else {
    not_understood_.push_back({{"key", key}, {"why", "not a key the " + kind + " importer knows"}});
  }
  seen_.insert(key);
}

void FileContext::finish(const std::function<bool(const std::string&)>& irrelevant) { walk(*root_, "", irrelevant); }

json FileContext::report() const {
  return {{"file", file_}, {"kind", kind}, {"used", used_}, {"not_understood", not_understood_}, {"ignored", ignored_}};
}

std::optional<int64_t> as_int(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

bool is_auto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

bool is_nonfinite(const json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s == ".inf" || s == "-.inf" || s == ".nan";
}

std::optional<bool> as_flag(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v == 0 || v == 1)) return v == 1;
  if (v.is_string()) {
    const std::string s = lower(v.get<std::string>());
    if (s == "true" || s == "yes" || s == "on" || s == "1") return true;
    if (s == "false" || s == "no" || s == "off" || s == "0") return false;
  }
  return std::nullopt;
}

bool FileContext::flag(const std::string& key) const {
  const json* v = at(key);
  const auto b = v != nullptr ? as_flag(*v) : std::nullopt;
  if (!b) fail(errc::kWrongType, key, key + " must be true or false, got " + (v ? v->dump() : "nothing"));
  return *b;
}

json deepspeed_request_fields(const json& ds, std::vector<std::string>& notes) {
  FileContext ctx("deepspeed", ds);
  ctx.kind = "deepspeed";
  if (auto e = recover([&] { map_deepspeed(ctx, ""); })) {
    fail(e->code.c_str(), "deepspeed." + e->path, "deepspeed." + e->message);
  }
  const json report = ctx.report();  // named: a temporary's member would dangle in the loop
  for (const auto& n : report["not_understood"]) {
    notes.push_back("deepspeed." + n["key"].get<std::string>() + " not modelled: " + n["why"].get<std::string>());
  }
  json out = json::object();
  for (const Setting& s : ctx.settings) {
    json* cur = &out;
    size_t start = 0;
    while (true) {
      const size_t dot = s.field.find('.', start);
      const std::string key = s.field.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (dot == std::string::npos) {
        (*cur)[key] = s.value;
        break;
      }
      cur = &(*cur)[key];
      start = dot + 1;
    }
  }
  return out;
}

}  // namespace import

namespace {

using import::FileContext;
using import::Setting;

void run_kind(FileContext& ctx) {
  const std::string& k = ctx.kind;
  if (k == "deepspeed") {
    import::map_deepspeed(ctx, "");
  } else if (k == "accelerate") {
    import::map_accelerate(ctx);
  } else if (k == "axolotl") {
    import::map_axolotl(ctx);
  } else if (k == "llama_factory") {
    import::map_llama_factory(ctx);
  } else if (k == "torchtune") {
    import::map_torchtune(ctx);
  } else if (k == "litgpt") {
    import::map_litgpt(ctx);
  } else if (k == "trainer") {
    import::map_trainer(ctx);
  } else if (k == "peft") {
    import::map_peft(ctx);
  } else if (k == "bitsandbytes") {
    import::map_bnb(ctx, "");
  } else if (k == "model_config") {
    import::map_model_config(ctx);
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The name part of a Hub id, lower case, without the "Meta-" prefix Meta's
// older repositories carry ("Meta-Llama-3.1-8B" and "Llama-3.1-8B" are the
// same weights renamed in July 2024).
std::string model_name_key(const std::string& id) {
  std::string name = lower(id.substr(id.find('/') == std::string::npos ? 0 : id.find('/') + 1));
  if (name.rfind("meta-", 0) == 0) name = name.substr(5);
  return name;
}

// The preset a Hub id names: the same id (any case), else the one preset
// whose name matches (mirrors such as NousResearch/Llama-3.2-1B copy
// meta-llama/Llama-3.2-1B's config.json).
std::optional<std::string> match_preset(const std::string& id, const json& presets) {
  if (!presets.is_array()) return std::nullopt;
  for (const auto& p : presets) {
    if (p.is_string() && lower(p.get<std::string>()) == lower(id)) return p.get<std::string>();
  }
  std::optional<std::string> found;
  for (const auto& p : presets) {
    if (!p.is_string() || model_name_key(p.get<std::string>()) != model_name_key(id)) continue;
    if (found) return std::nullopt;  // ambiguous
    found = p.get<std::string>();
  }
  return found;
}

void set_path(json& j, const std::string& dotted, const json& value) {
  json* cur = &j;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) {
      (*cur)[key] = value;
      return;
    }
    if (!cur->contains(key) || !(*cur)[key].is_object()) (*cur)[key] = json::object();
    cur = &(*cur)[key];
    start = dot + 1;
  }
}

// The hidden size transformers' DeepSpeed integration reads for its "auto"
// bucket sizes (integrations/deepspeed.py trainer_config_finalize: hidden_size,
// else max(hidden_sizes), else text_config.hidden_size).
std::optional<int64_t> hidden_size(const json& cfg) {
  if (cfg.contains("hidden_size")) return import::as_int(cfg["hidden_size"]);
  if (cfg.contains("hidden_sizes") && cfg["hidden_sizes"].is_array() && !cfg["hidden_sizes"].empty()) {
    int64_t m = 0;
    for (const auto& h : cfg["hidden_sizes"]) m = std::max(m, import::as_int(h).value_or(0));
    return m;
  }
  if (cfg.contains("text_config") && cfg["text_config"].is_object()) return hidden_size(cfg["text_config"]);
  return std::nullopt;
}

// At most kMaxImportValues values in one file's tree (vram/import.h), as the
// CLI's and the page's readers count them: the last guard for trees handed
// in directly (import_json, Python).
void check_values(const json& content, const std::string& file) {
  int64_t values = 0;
  std::vector<const json*> pending = {&content};
  while (!pending.empty()) {
    const json* v = pending.back();
    pending.pop_back();
    if (++values > kMaxImportValues) {
      fail(errc::kOutOfRange, file,
           file + ": more than " + std::to_string(kMaxImportValues) + " values, the limit on an imported file");
    }
    if (v->is_structured()) {
      for (const auto& child : *v) pending.push_back(&child);
    }
  }
}

// Each file of the input, recognised and mapped by its kind's rules.
std::vector<FileContext> read_files(const json& input) {
  if (!input.is_object() || !input.contains("files") || !input["files"].is_array()) {
    fail(errc::kMissingField, "files", "files must be a list of {\"file\": name, \"content\": tree}");
  }
  if (input["files"].empty()) fail(errc::kMissingField, "files", "files is empty: give at least one file");
  std::vector<FileContext> files;
  files.reserve(input["files"].size());
  for (size_t i = 0; i < input["files"].size(); ++i) {
    const json& f = input["files"][i];
    const std::string at = "files[" + std::to_string(i) + "]";
    if (!f.is_object() || !f.contains("file") || !f["file"].is_string() || !f.contains("content")) {
      fail(errc::kMissingField, at, at + " must be {\"file\": name, \"content\": tree}");
    }
    const std::string name = f["file"].get<std::string>();
    check_values(f["content"], name);
    if (!f["content"].is_object()) {
      fail(errc::kWrongType, name, name + ": the file must hold a mapping of keys (a JSON object or a YAML mapping)");
    }
    files.emplace_back(name, f["content"]);
    FileContext& ctx = files.back();
    ctx.kind = import::detect_kind(f["content"]);
    if (ctx.kind.empty()) {
      fail(errc::kUnknownValue, name,
           name +
               ": not a kind of file this importer knows (Axolotl, LLaMA-Factory, torchtune or LitGPT YAML, HF "
               "TrainingArguments / TRL SFTConfig JSON, PEFT adapter_config.json, bitsandbytes "
               "quantization_config, config.json, DeepSpeed JSON, accelerate config YAML)");
    }
    if (auto e = recover([&] { run_kind(ctx); })) {
      fail(e->code.c_str(), name + ":" + e->path, name + ": " + e->message);
    }
  }
  return files;
}

// Every field the files set, with its value and "file key", in the order
// first set. Two files that set one field to different values disagree, as
// the HF integration's "mismatch" error does for DeepSpeed and the Trainer.
struct Merged {
  std::map<std::string, std::pair<json, std::string>> fields;  // field -> value, "file key"
  std::vector<std::string> order;
};

Merged merge(const std::vector<FileContext>& files) {
  Merged m;
  for (const auto& ctx : files) {
    for (const Setting& s : ctx.settings) {
      const std::string where = ctx.file() + " " + s.key;
      auto it = m.fields.find(s.field);
      if (it == m.fields.end()) {
        m.fields[s.field] = {s.value, where};
        m.order.push_back(s.field);
      } else if (it->second.first != s.value) {
        fail(errc::kInconsistent, ctx.file() + ":" + s.key,
             where + " = " + s.value.dump() + " disagrees with " + it->second.second + " = " + it->second.first.dump() +
                 " (" + s.field + ")");
      }
    }
  }
  return m;
}

// train.method from what the files say about adapters and 4-bit weights.
void set_method(json& request, const Merged& m) {
  const auto adapter = m.fields.find("#adapter");
  const auto quant4 = m.fields.find("#quant4");
  const bool q4 = quant4 != m.fields.end() && quant4->second.first == true;
  if (adapter != m.fields.end()) {
    const std::string a = adapter->second.first.get<std::string>();
    if (q4 && a != "lora") {
      fail(errc::kInconsistent, quant4->second.second,
           quant4->second.second + " loads 4-bit weights, which train only through adapters, but " +
               adapter->second.second + " trains " + a);
    }
    set_path(request, "train.method", q4 ? "qlora" : a);
  } else if (q4) {
    set_path(request, "train.method", "qlora");
  }
}

// DeepSpeed "auto" bucket sizes from the model's hidden size, as transformers
// integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_finalize
// does: reduce_bucket_size = hidden^2, stage3_prefetch_bucket_size = 0.9
// hidden^2 (int since 4.38), stage3_param_persistence_threshold = 10 hidden.
void auto_buckets(json& request, const std::vector<FileContext>& files, const Merged& m, const json& model_cfg) {
  const auto h = hidden_size(model_cfg);
  if (!h) return;
  for (const auto& ctx : files) {
    for (const auto& [key, what] : ctx.references) {
      if (what != "auto_bucket") continue;
      const std::string name = key.substr(key.rfind('.') + 1);
      int64_t v = 0;
      if (name == "reduce_bucket_size") v = *h * *h;
      if (name == "stage3_prefetch_bucket_size") v = static_cast<int64_t>(0.9 * static_cast<double>(*h * *h));
      if (name == "stage3_param_persistence_threshold") v = 10 * *h;
      if (v > 0 && m.fields.count("parallel." + name) == 0) set_path(request, "parallel." + name, v);
    }
  }
}

// Each file's report; a recipe that points at a DeepSpeed JSON: used when that file is here.
json reports_of(const std::vector<FileContext>& files) {
  json reports = json::array();
  for (const auto& ctx : files) {
    json rep = ctx.report();
    for (const auto& ref : ctx.references) {
      const std::string& key = ref.first;
      const std::string what = ref.second;  // a copy: clang 14 cannot capture a structured binding
      if (what == "auto_bucket") continue;
      const bool present =
          std::any_of(files.begin(), files.end(), [&](const FileContext& o) { return o.kind == what; });
      if (present) {
        rep["used"].push_back({{"key", key}, {"note", "its " + what + " file is imported with it"}});
      } else {
        rep["not_understood"].push_back(
            {{"key", key}, {"why", "names a " + what + " file: import that file too (" + ctx.at(key)->dump() + ")"}});
      }
    }
    reports.push_back(rep);
  }
  return reports;
}

json import_impl(const json& input) {
  const std::vector<FileContext> files = read_files(input);
  const json* model_cfg = nullptr;
  for (const auto& ctx : files) {
    if (ctx.kind == "model_config") model_cfg = &ctx.root();
  }
  const Merged m = merge(files);
  json request = {{"task", "train"}};
  for (const auto& field : m.order) {
    if (field[0] == '#') continue;
    if (field == "model.config") continue;  // set below
    set_path(request, field, m.fields.at(field).first);
  }
  if (model_cfg != nullptr) set_path(request, "model.config", *model_cfg);
  set_method(request, m);
  if (model_cfg != nullptr) auto_buckets(request, files, m, *model_cfg);
  json model = nullptr;
  for (const auto& ctx : files) {
    if (!ctx.model_id) continue;
    model = {{"id", *ctx.model_id}, {"file", ctx.file()}, {"key", ctx.model_key}};
    const auto preset = match_preset(*ctx.model_id, input.value("presets", json::array()));
    model["preset"] = preset ? json(*preset) : json(nullptr);
    break;
  }
  return {{"request", request}, {"model", model}, {"files", reports_of(files)}};
}

}  // namespace

json import_files(const json& input) {
  return guarded([&] { return import_impl(input); });
}

std::string import_json(const std::string& input_text) {
  if (static_cast<int64_t>(input_text.size()) > 16 * kMaxImportBytes) {
    return error_json({errc::kOutOfRange, "the files are larger than the import limit", "files"}).dump(2);
  }
  return guarded([&] { return import_files(parse_json_text(input_text, "")).dump(2); });
}

}  // namespace vram

// vram-probe import FILE... : the request the user's own config files give
// (core's importer, vram/import.h), with a per-file report of every key.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.h"
#include "config_files.h"
#include "vram/api.h"
#include "vram/import.h"

namespace vram::cli {

namespace {

namespace fs = std::filesystem;

// The bundled model presets (the page's too, site/src/lib/presets.js): real
// config.json files named "<org>__<name>.json" for the Hub id "<org>/<name>".
std::vector<fs::path> preset_files() {
  std::vector<fs::path> out;
  for (const char* dir : {VRAM_PRESETS_DIR "/models", VRAM_PRESETS_DIR "/validation"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (e.path().extension() == ".json" && name.find("__") != std::string::npos) out.push_back(e.path());
    }
  }
  return out;
}

std::string preset_id(const fs::path& p) {
  std::string id = p.stem().string();
  id.replace(id.find("__"), 2, "/");
  return id;
}

const char* kImportHelp = R"(usage: vram-probe import FILE... [--json]

Reads the configuration files a run already has and prints the request they give, with every key of
every file listed as used, not understood (changes memory in a way no request field says) or ignored
(irrelevant to memory). The kind of each file is recognised from its content:
  Axolotl YAML, LLaMA-Factory YAML, torchtune recipe YAML, LitGPT config_hub YAML,
  HF TrainingArguments / TRL SFTConfig JSON, PEFT adapter_config.json, bitsandbytes quantization_config,
  an HF config.json (the model, with its quantization_config), DeepSpeed JSON ("auto" values take the
  other files' or the form's), accelerate config YAML (FSDP and DeepSpeed plugins).
A model a recipe names (base_model, model_name_or_path, a torchtune builder, a LitGPT checkpoint_dir)
is taken from the bundled presets when one matches; otherwise pass its config.json as another file.
Files over 10 MiB are refused before reading.

Use the files in an estimate with `vram-probe estimate --from FILE [--from FILE ...] [flags]`
(flags win over the files).
Output:    --json  {"request": {...}, "model": {...}, "files": [{"file", "kind", "used", "not_understood",
                   "ignored"}]}
)";

void print_import_table(const json& r) {
  for (const auto& f : r["files"]) {
    std::printf("%s  (%s)\n", f["file"].get<std::string>().c_str(), f["kind"].get<std::string>().c_str());
    for (const auto& u : f["used"]) {
      std::printf("  used     %-40s %s%s\n", u["key"].get<std::string>().c_str(),
                  u.contains("field") ? ("-> " + u["field"].get<std::string>() + " = " +
                                         (u.contains("value") ? u["value"].dump() : std::string("")))
                                            .c_str()
                                      : "",
                  u.contains("note") ? ("  (" + u["note"].get<std::string>() + ")").c_str() : "");
    }
    for (const auto& n : f["not_understood"]) {
      std::printf("  NOT UNDERSTOOD %-34s %s\n", n["key"].get<std::string>().c_str(),
                  n["why"].get<std::string>().c_str());
    }
    std::printf("  ignored  %zu keys (irrelevant to memory)\n\n", f["ignored"].size());
  }
  if (!r["model"].is_null()) {
    const json& m = r["model"];
    std::printf("model %s (%s %s)%s\n", m["id"].get<std::string>().c_str(), m["file"].get<std::string>().c_str(),
                m["key"].get<std::string>().c_str(),
                m["preset"].is_null() ? ": no bundled preset; pass its config.json as another file"
                                      : (": preset " + m["preset"].get<std::string>()).c_str());
  }
  json req = r["request"];
  if (req.contains("model")) req["model"] = "{config.json}";
  std::printf("\nrequest:\n%s\n", req.dump(2).c_str());
}

}  // namespace

json import_config_files(const std::vector<std::string>& paths) {
  json files = json::array();
  try {
    for (const auto& p : paths) files.push_back({{"file", p}, {"content", read_config_tree(p)}});
  } catch (const Failure& f) {
    return error_json(f.error());
  }
  const auto presets = preset_files();
  json ids = json::array();
  for (const auto& p : presets) ids.push_back(preset_id(p));
  json result = import_files({{"files", files}, {"presets", ids}});
  if (result.contains("error")) return result;
  // The model a recipe names, from the bundled presets: one more file, read
  // by the same importer (its config.json kind), so DeepSpeed's "auto" bucket
  // sizes see its hidden size too.
  const json& m = result["model"];
  const bool has_config = result["request"].contains("model");
  if (!has_config && !m.is_null() && !m["preset"].is_null()) {
    for (const auto& p : presets) {
      if (preset_id(p) != m["preset"].get<std::string>()) continue;
      try {
        files.push_back({{"file", "preset:" + preset_id(p)}, {"content", read_config_tree(p.string())}});
      } catch (const Failure& f) {
        return error_json(f.error());
      }
      result = import_files({{"files", files}, {"presets", ids}});
      break;
    }
  }
  return result;
}

int run_import(const std::vector<std::string>& args) {
  bool as_json = false;
  std::vector<std::string> paths;
  for (const auto& a : args) {
    if (a == "--json") {
      as_json = true;
    } else if (a == "--help" || a == "-h") {
      std::printf("%s", kImportHelp);
      return 0;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "vram-probe import: unknown option '%s' (see --help)\n", a.c_str());
      return 2;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "vram-probe import: give at least one file (see --help)\n");
    return 2;
  }
  const json r = import_config_files(paths);
  if (r.contains("error")) {
    const auto& e = r["error"];
    if (!as_json) {
      std::fprintf(stderr, "vram-probe: error [%s] %s\n", e.value("code", "").c_str(), e.value("message", "").c_str());
    }
    std::printf("%s\n", r.dump(2).c_str());
    return 1;
  }
  if (as_json) {
    std::printf("%s\n", r.dump(2).c_str());
  } else {
    print_import_table(r);
  }
  return 0;
}

}  // namespace vram::cli

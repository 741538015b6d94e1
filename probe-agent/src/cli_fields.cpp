// vram-probe fields: the request fields as the core declares them
// (vram/fields.h), for people and for the page's generated fields.json.
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "vram/api.h"
#include "vram/fields.h"
#include "vram/frameworks.h"

namespace vram::cli {

int run_fields(const std::vector<std::string>& args) {
  bool as_json = false;
  for (const auto& a : args) {
    if (a == "--json") {
      as_json = true;
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: vram-probe fields [--json]\n\nEvery request field (docs/schema.md): its type, default, "
          "allowed values or limits, label, estimate flag and the page's URL key.\n--json  the table, same bytes "
          "as the page's WASM fields()\n");
      return 0;
    } else {
      std::fprintf(stderr, "vram-probe fields: unknown argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (as_json) {
    std::printf("%s\n", fields_json().c_str());
    return 0;
  }
  std::printf("%-44s %-7s %-20s %-26s %s\n", "field", "type", "default", "flag", "label");
  for (const auto& f : request_fields()) {
    std::string def = f.default_value.is_null() ? "-" : f.default_value.dump();
    if (def.size() > 20) {
      def.resize(17);
      def += "...";
    }
    std::printf("%-44s %-7s %-20s %-26s %s\n", f.path.c_str(), to_string(f.type), def.c_str(),
                f.cli.empty() ? "-" : f.cli.c_str(), f.label.c_str());
  }
  return 0;
}

}  // namespace vram::cli

namespace vram::cli {

// vram-probe frameworks: each training framework's defaults for a method
// (vram/frameworks.h), the list `--framework NAME` applies.
int run_frameworks(const std::vector<std::string>& args) {
  bool as_json = false;
  std::string method = "lora";
  std::vector<std::string> names;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      as_json = true;
    } else if ((a == "--method" || a == "--framework") && i + 1 < args.size()) {
      (a == "--method" ? method : names.emplace_back()) = args[++i];
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: vram-probe frameworks [--framework NAME[@RELEASE]] [--method lora|qlora|full|freeze] [--json]\n\n"
          "The defaults each training framework's recipe sets for a method (default lora) at a release (default "
          "the newest), each with the framework file or the library change it comes from; `estimate --framework "
          "NAME[@RELEASE]` applies them to the fields left out. `vram-probe version` lists the releases.\n"
          "--json  one object per framework, the same bytes as the page's WASM frameworkDefaults()\n");
      return 0;
    } else {
      std::fprintf(stderr, "vram-probe frameworks: unknown argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (names.empty()) {
    for (const auto& f : frameworks()) names.push_back(f.name);
  }
  json all = json::array();
  for (const auto& name : names) {
    const json one = json::parse(framework_defaults_json(json{{"framework", name}, {"method", method}}.dump()));
    if (one.contains("error")) {
      std::printf("%s\n", one.dump(2).c_str());
      return 1;
    }
    all.push_back(one);
  }
  if (as_json) {
    std::printf("%s\n", (all.size() == 1 ? all[0] : all).dump(2).c_str());
    return 0;
  }
  for (const auto& f : all) {
    std::printf("%s (%s@%s), method %s\n", f["label"].get<std::string>().c_str(),
                f["framework"].get<std::string>().c_str(), f["release"].get<std::string>().c_str(),
                f["method"].get<std::string>().c_str());
    if (f["defaults"].empty()) std::printf("  the request fields' own defaults (docs/schema.md)\n");
    for (const auto& d : f["defaults"]) {
      std::printf("  %-28s %-22s %s\n", d["path"].get<std::string>().c_str(), d["value"].dump().c_str(),
                  d["source"].get<std::string>().c_str());
    }
    for (const auto& n : f["not_modelled"]) std::printf("  not modelled: %s\n", n.get<std::string>().c_str());
    std::printf("\n");
  }
  return 0;
}

}  // namespace vram::cli

// vram-probe fields: the request fields as the core declares them
// (vram/fields.h), for people and for the page's generated fields.json.
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "vram/api.h"
#include "vram/fields.h"

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

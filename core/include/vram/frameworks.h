// The training frameworks a request can name (train.framework) and the
// defaults each one sets that change memory, in one table (issue 12). A
// framework's default applies where the request leaves the field out; fields
// the user sets win. Each default cites the framework's own source.
#pragma once

#include <string>
#include <vector>

#include "vram/json_reader.h"

namespace vram {

struct FrameworkDefault {
  std::string path;    // a request field (docs/schema.md), e.g. "train.lora.alpha"
  json value;          // what the framework uses when the user does not say
  std::string source;  // the framework's file (recipe, config class, module) it comes from
  // The train.method values it applies to (its recipe for them); empty = all.
  std::vector<std::string> methods = {};
  // The framework releases it applies to, as a version range (vram/releases.h
  // version_in: "<0.3", ">=0.3"); empty = every release.
  std::string releases = "";
};

struct Framework {
  std::string name;   // the train.framework value
  std::string label;  // for people
  std::vector<FrameworkDefault> defaults;
  // What the framework does that changes memory and no request field can say
  // yet: shown with the result, so a reader knows what is not modelled.
  std::vector<std::string> not_modelled;
};

// hf first (the default: HF Trainer / TRL / Accelerate + PEFT + bitsandbytes,
// whose defaults are the request fields' own).
const std::vector<Framework>& frameworks();
const Framework* find_framework(const std::string& name);

// The defaults of `fw` for a train.method (each framework's recipe for that
// method), in table order: what the request parser fills in and what the
// page's framework select sets in the form.
std::vector<FrameworkDefault> defaults_for(const Framework& fw, const std::string& method);

}  // namespace vram

// A framework release and the library versions its users ran (issue 29): the
// job a user describes is "torchtune 0.2", not a list of internal switches.
//
// `train.framework` takes `NAME` or `NAME@RELEASE` (torchtune@0.2,
// litgpt@0.4, unsloth@2024.8, hf@4.44). A release implies the versions of
// the libraries its users ran (its pins, or the releases current on its
// date), which `versions.<library>` overrides one by one. What changed memory
// between releases is a rule keyed by a library's version (a framework
// default limited to some releases, or a version rule), each citing the
// change; the internal switches (train.quant.saves_input, ...) are their
// consequences. Without a release the newest one applies, and the result
// says so.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vram/frameworks.h"
#include "vram/json_reader.h"

namespace vram {

// The libraries whose versions a rule can read (request fields
// versions.<name>); a framework's own version is its release.
const std::vector<std::string>& versioned_libraries();

struct FrameworkRelease {
  std::string version;  // the framework's own version: "0.2.1", "2024.8", "4.44.2"
  std::string date;     // "2024-07-18": when it was published
  std::vector<std::pair<std::string, std::string>> libraries;  // library -> version its users ran
  std::string source;                                          // where those versions come from
};

// Releases of `framework`, oldest first.
std::vector<FrameworkRelease> releases_of(const std::string& framework);

// Every framework's releases, oldest first, by framework name: each one's
// "version" and "date", and with `details` its "libraries" (library ->
// version) and "source" too (vram-probe version). Without details it is the
// fields table's train.framework "releases" (fields_table()), which the page
// bundles for its release select.
json framework_releases(bool details);

// Dotted versions compared number by number ("0.43.2" < "0.43.10",
// "2024.8" < "2024.12", "2.0" == "2.0.0"); what follows the numbers (".post1",
// "rc1", "+cu121") is ignored. valid_version: one or more dot-separated
// numbers, optionally followed by such a suffix.
int compare_versions(std::string_view a, std::string_view b);
bool valid_version(std::string_view v);
// `range` is "" (any), "<X", "<=X", ">=X", ">X" or ">=X,<Y".
bool version_in(std::string_view version, std::string_view range);

// One library's version as the estimate assumed it.
struct LibraryVersion {
  std::string library;
  std::string version;
  std::string from;  // "release NAME@V" or "versions.LIB" (the request)
};

// The framework of a request at its release, with the library versions.
struct FrameworkJob {
  const Framework* framework = nullptr;
  std::string release;  // the release applied (its own version)
  bool release_given = false;
  std::string note;  // how the release was chosen, for the assumptions
  std::vector<LibraryVersion> versions;
  // The framework's own version is `release`; "" when the library is unknown.
  std::string version_of(const std::string& library) const;
};

// `train.framework` and `versions` of a request (either may be absent) ->
// the job. Fails (fail(), status.h) naming train.framework or versions.LIB.
FrameworkJob framework_job(const json& request);

// The framework's defaults for the request's method at the job's release,
// then the version rules, set in a copy of `request` where it leaves a field
// out (a version rule may replace a framework default, never a field the
// request sets). `applied` lists what was set, in order, with its source.
json with_framework_defaults(const json& request, const FrameworkJob& job, std::vector<FrameworkDefault>& applied);

// The value the version rules of `job` give `path` in a request filled as
// `filled` (the planner asks for each layout it considers), or nothing.
std::optional<json> rule_value(const FrameworkJob& job, const json& filled, const std::string& path);

}  // namespace vram

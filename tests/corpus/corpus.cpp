// The request corpus (corpus.h).
#include "corpus/corpus.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace vram::corpus {

namespace {

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

// The jobs every fixture model is put through: each training path the
// allocator replay takes (packed and padded steps, the card's bound and the
// retry after freeing the cache, expandable segments and max_split_size,
// side streams of FSDP2, pipeline ranks, paged and managed states), the fit
// searches (largest micro-batch, fewest GPUs) and one inference job.
const json& variants() {
  static const json v = json::parse(R"([
    ["default-h100", {"gpu": {"name": "H100 80GB"}}],
    ["lora-padded-a100", {"train": {"method": "lora", "micro_batch": 2, "seq_len": 1024, "padding": "longest"},
                          "gpu": {"name": "A100 80GB"}}],
    ["qlora-ckpt-4090", {"train": {"method": "qlora", "grad_checkpointing": "full", "seq_len": 4096},
                         "gpu": {"name": "RTX 4090 24GB"}}],
    ["torchtune-qlora-4090", {"train": {"framework": "torchtune", "method": "qlora", "seq_len": 2048},
                              "gpu": {"name": "RTX 4090 24GB"}}],
    ["zero3-8-h100", {"train": {"method": "full", "precision": "mixed_bf16", "seq_len": 2048},
                      "parallel": {"gpus": 8, "zero": 3}, "gpu": {"name": "H100 80GB"}}],
    ["fsdp2-expandable-a100-40", {"train": {"method": "full", "seq_len": 2048, "grad_checkpointing": "full"},
                                  "parallel": {"gpus": 4, "fsdp": "full_shard", "fsdp_version": 2},
                                  "allocator": {"expandable_segments": true}, "gpu": {"name": "A100 40GB"}}],
    ["tp2-pp2-zero1-h100", {"train": {"method": "full", "seq_len": 4096, "grad_accum": 4},
                            "parallel": {"gpus": 8, "tp": 2, "pp": 2, "zero": 1}, "gpu": {"name": "H100 80GB"}}],
    ["lora-selective-paged-split-l4", {"train": {"method": "lora", "grad_checkpointing": "selective",
                                                 "optimizer": "paged_adamw_8bit", "seq_len": 8192},
                                       "allocator": {"conf": "max_split_size_mb:128"}, "gpu": {"name": "L4 24GB"}}],
    ["full-offload-8bit-3090", {"train": {"method": "full", "activation_offload": true,
                                          "optimizer": "adamw_bnb_8bit", "micro_batch": 4, "seq_len": 512,
                                          "padding": "packed"}, "gpu": {"name": "RTX 3090 24GB"}}],
    ["unsloth-qlora-padded-4090", {"train": {"framework": "unsloth", "method": "qlora", "micro_batch": 2,
                                             "padding": "longest"}, "gpu": {"name": "RTX 4090 24GB"}}],
    ["litgpt-lora-nogpu", {"train": {"framework": "litgpt", "method": "lora", "seq_len": 1024}}],
    ["infer-l40s", {"task": "infer", "infer": {"batch": 4, "context_len": 4096}, "gpu": {"name": "L40S 48GB"}}]
  ])");
  return v;
}

}  // namespace

std::vector<Case> cases(const std::string& fixtures) {
  namespace fs = std::filesystem;
  std::vector<Case> out;
  // The validation requests, as vram_validate assembles them.
  const json rows = read_json(fs::path(fixtures) / "validation" / "requests.json");
  for (size_t i = 0; i < rows.size(); ++i) {
    json req = rows[i]["request"];
    req["model"] = {
        {"config", read_json(fs::path(fixtures) / "validation" / rows[i]["config_file"].get<std::string>())}};
    out.push_back({"validation/" + std::to_string(i), "estimate", req});
  }
  std::vector<fs::path> models;
  for (const auto& e : fs::directory_iterator(fs::path(fixtures) / "models")) {
    if (e.path().extension() == ".json") models.push_back(e.path());
  }
  std::sort(models.begin(), models.end());
  for (size_t m = 0; m < models.size(); ++m) {
    const std::string name = models[m].stem().string();
    const json config = read_json(models[m]);
    for (const auto& v : variants()) {
      json req = {{"model", {{"config", config}}}, {"task", "train"}};
      req.merge_patch(v[1]);
      out.push_back({"models/" + name + "/" + v[0].get<std::string>(), "estimate", req});
    }
    // The planner and the suggestions on every fourth model (each runs
    // dozens of estimates).
    if (m % 4 == 0) {
      json plan = {{"model", {{"config", config}}},
                   {"task", "train"},
                   {"train", {{"method", "full"}, {"seq_len", 2048}}},
                   {"parallel", {{"gpus", 8}}},
                   {"gpu", {{"name", "A100 80GB"}}}};
      out.push_back({"models/" + name + "/plan-8-a100", "plan", plan});
    }
    if (m % 4 == 2) {
      json sug = {{"model", {{"config", config}}},
                  {"task", "train"},
                  {"train", {{"method", "full"}, {"micro_batch", 4}, {"seq_len", 4096}}},
                  {"gpu", {{"name", "RTX 4090 24GB"}}}};
      out.push_back({"models/" + name + "/suggest-4090", "suggest", sug});
    }
  }
  return out;
}

std::string answer(const Case& c) {
  json a = c.call == "plan" ? plan(c.request) : c.call == "suggest" ? suggest(c.request) : estimate(c.request);
  // The build's version is not an estimate.
  if (a.is_object()) a.erase("version");
  return a.dump(1);
}

std::string digest(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace vram::corpus

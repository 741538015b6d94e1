// train.framework: every framework the field accepts has one table of
// defaults (core/src/frameworks.cpp); each default is a declared request
// field with a value the parser accepts and a cited source; the defaults fill
// only what the request leaves out, and the result says which were applied.
#include "vram/frameworks.h"

#include <gtest/gtest.h>

#include "fixtures.h"
#include "release_table.h"
#include "vram/api.h"
#include "vram/fields.h"
#include "vram/releases.h"

namespace vram {
namespace {

json request(json train) {
  return {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
          {"task", "train"},
          {"train", std::move(train)}};
}

TEST(Frameworks, EveryAcceptedNameHasATableAndVersionListsThem) {
  const json version = json::parse(version_json());
  const FieldSpec& f = field("train.framework");
  EXPECT_EQ(version["frameworks"].size(), f.values.size());
  for (const auto& name : f.values) {
    EXPECT_NE(find_framework(name), nullptr) << name;
    EXPECT_NE(std::find(version["frameworks"].begin(), version["frameworks"].end(), name), version["frameworks"].end())
        << name;
  }
  EXPECT_EQ(frameworks().front().name, "hf");
  EXPECT_TRUE(frameworks().front().defaults.empty());  // the fields' own defaults are HF's
  // The field's values are the table's names, in its order (version_json
  // lists the field's: the tables are the full module's).
  std::vector<std::string> names;
  for (const Framework& fw : frameworks()) names.push_back(fw.name);
  EXPECT_EQ(version["frameworks"], json(names));
}

// The first-visit WASM module answers hf at its newest release from
// release_table.h kHfNewest and kHfLabel alone (core/lite/reach.cpp): no
// framework default, no version rule, and the same job as the full table's.
// A rule that held for hf's newest release would make the two builds differ:
// this test fails first.
TEST(Frameworks, HfAtItsNewestReleaseIsWhatTheFirstVisitModuleCarries) {
  const Framework& hf = frameworks().front();
  EXPECT_EQ(hf.label, releases::kHfLabel);
  EXPECT_TRUE(hf.not_modelled.empty());
  EXPECT_EQ(releases_of("hf").back().version, releases::kHfNewest.version);
  for (const std::string& method : field("train.method").values) {
    for (const json& train : {json{{"method", method}}, json{{"method", method}, {"framework", "trl"}}}) {
      const json req = request(train);
      const FrameworkJob job = framework_job(req);
      std::vector<FrameworkDefault> applied;
      json filled = with_framework_defaults(req, job, applied);
      EXPECT_TRUE(applied.empty()) << method << ": " << (applied.empty() ? "" : applied.front().path);
      EXPECT_EQ(filled["train"].value("framework", "hf"), "hf");
      filled["train"].erase("framework");
      json plain = req;
      plain["train"].erase("framework");
      EXPECT_EQ(filled, plain) << method;
      const FrameworkJob lite = releases::newest_job(hf, releases::to_release(releases::kHfNewest));
      EXPECT_EQ(job.framework, &hf);
      EXPECT_EQ(job.release, lite.release);
      EXPECT_EQ(job.release_given, lite.release_given);
      EXPECT_EQ(job.note, lite.note);
      ASSERT_EQ(job.versions.size(), lite.versions.size());
      for (size_t i = 0; i < job.versions.size(); ++i) {
        EXPECT_EQ(job.versions[i].library, lite.versions[i].library);
        EXPECT_EQ(job.versions[i].version, lite.versions[i].version);
        EXPECT_EQ(job.versions[i].from, lite.versions[i].from);
      }
    }
  }
}

TEST(Frameworks, EveryDefaultIsADeclaredFieldWithAParsingValueAndASource) {
  for (const Framework& fw : frameworks()) {
    for (const FrameworkDefault& d : fw.defaults) {
      EXPECT_NE(find_field(d.path), nullptr) << fw.name << " " << d.path;
      EXPECT_FALSE(d.source.empty()) << fw.name << " " << d.path;
    }
    const json r = estimate(request({{"method", "lora"}, {"framework", fw.name}}));
    ASSERT_FALSE(r.contains("error")) << fw.name << ": " << r.dump();
    EXPECT_EQ(r["framework"]["name"], fw.name);
  }
}

TEST(Frameworks, DefaultsFillOnlyWhatTheRequestLeavesOutAndAreListed) {
  for (const Framework& fw : frameworks()) {
    for (const FrameworkDefault& d : fw.defaults) {
      // The recipe of the method the default belongs to, at a release it holds for.
      const std::string method = d.methods.empty() ? "lora" : d.methods.front();
      std::string release;
      for (const FrameworkRelease& r : releases_of(fw.name)) {
        if (version_in(r.version, d.releases)) release = r.version;
      }
      ASSERT_FALSE(release.empty()) << fw.name << " " << d.path << ": no release in " << d.releases;
      const json base = estimate(request({{"method", method}, {"framework", fw.name + "@" + release}}));
      ASSERT_FALSE(base.contains("error")) << fw.name << " " << method << ": " << base.dump();
      bool listed = false;
      for (const auto& a : base["framework"]["defaults_applied"]) {
        listed = listed || (a["path"] == d.path && a["value"] == d.value);
      }
      EXPECT_TRUE(listed) << fw.name << " " << method << " " << d.path;
    }
  }
  // A field the user sets wins over the framework's default.
  const Framework* tt = find_framework("torchtune");
  ASSERT_NE(tt, nullptr);
  for (const FrameworkDefault& d : tt->defaults) {
    if (d.path != "train.lora.rank") continue;
    const json r = estimate(request({{"method", "lora"}, {"framework", "torchtune"}, {"lora", {{"rank", 64}}}}));
    for (const auto& a : r["framework"]["defaults_applied"]) EXPECT_NE(a["path"], "train.lora.rank");
  }
}

TEST(Frameworks, TheDefaultFrameworkChangesNothing) {
  const json plain = estimate(request({{"method", "lora"}}));
  const json hf = estimate(request({{"method", "lora"}, {"framework", "hf"}}));
  EXPECT_EQ(plain["peak_bytes"], hf["peak_bytes"]);
  EXPECT_EQ(plain["framework"]["name"], "hf");
  EXPECT_TRUE(plain["framework"]["defaults_applied"].empty());
}

TEST(Frameworks, AnUnknownFrameworkNamesTheField) {
  const json r = estimate(request({{"framework", "nemo"}}));
  ASSERT_TRUE(r.contains("error"));
  EXPECT_EQ(r["error"]["path"], "train.framework");
}

// Issue 29 item 2: each framework's recipe for each method, at its newest
// release, as its source states it (frameworks.cpp cites each): a row per
// framework and method of the defaults that change memory most.
struct Expected {
  const char* framework;
  const char* method;
  const char* path;
  json value;
};

const std::vector<Expected>& expected_defaults() {
  static const std::vector<Expected> kRows = {
      // torchtune v0.6.1: no kbit upcast, CEWithChunkedOutputLoss, fused AdamW, bf16 everywhere.
      {"torchtune", "qlora", "train.quant.prepare_kbit", false},
      {"torchtune", "qlora", "train.loss", "chunked"},
      {"torchtune", "qlora", "train.optimizer", "adamw_torch_fused"},
      {"torchtune", "qlora", "train.quant.quantizer", "torchao"},
      {"torchtune", "lora", "train.lora.adapter_fp32", false},
      {"torchtune", "lora", "train.loss", "chunked"},
      {"torchtune", "full", "train.optimizer", "paged_adamw_8bit"},
      {"torchtune", "full", "train.optimizer_in_backward", true},
      // LitGPT: chunked bf16 loss over 128-token chunks, the logits held, Lightning's quantiser.
      {"litgpt", "lora", "train.loss", "chunked"},
      {"litgpt", "lora", "train.loss_chunk_size", 128},
      {"litgpt", "lora", "train.keeps_logits", true},
      {"litgpt", "lora", "train.outputs_fp32", true},
      {"litgpt", "qlora", "train.outputs_fp32", true},
      {"litgpt", "full", "train.outputs_fp32", true},
      {"litgpt", "qlora", "train.quant.quantizer", "lightning_bitsandbytes"},
      {"litgpt", "qlora", "train.quant.prepare_kbit", false},
      {"litgpt", "qlora", "train.optimizer", "paged_adamw_32bit"},
      {"litgpt", "full", "train.optimizer", "adamw_torch"},
      // Unsloth 2026.8.1: fused loss, offloaded checkpoints, its kernels, 8-bit AdamW.
      {"unsloth", "qlora", "train.loss", "fused"},
      {"unsloth", "qlora", "train.activation_offload", true},
      {"unsloth", "qlora", "train.kernels", "unsloth"},
      {"unsloth", "qlora", "train.quant.prepare_kbit", false},
      {"unsloth", "lora", "train.optimizer", "adamw_bnb_8bit"},
      // Axolotl and LLaMA-Factory: 16-bit embeddings and norms under QLoRA, fp32 adapters.
      {"axolotl", "qlora", "train.quant.prepare_kbit", false},
      {"axolotl", "lora", "train.lora.adapter_fp32", true},
      {"axolotl", "full", "train.optimizer", "adamw_torch_fused"},
      {"llama_factory", "qlora", "train.quant.prepare_kbit", false},
      {"llama_factory", "qlora", "train.quant.double_quant", true},
      {"llama_factory", "lora", "train.grad_checkpointing", "full"},
      {"llama_factory", "full", "train.loss", "standard"},
      // torchtitan v0.2.2: op-level selective checkpointing, fused AdamW, fp32 weights with bf16 compute.
      {"torchtitan", "full", "train.grad_checkpointing", "selective_op"},
      {"torchtitan", "full", "train.optimizer", "adamw_torch_fused"},
      {"torchtitan", "full", "train.precision", "amp_bf16"},
      {"megatron", "full", "train.precision", "mixed_bf16"},
      {"megatron", "full", "train.grad_checkpointing", "none"},
      {"deepspeed", "full", "train.precision", "mixed_bf16"},
      // Answer.AI fsdp_qlora train.py at 50efa1e: the loop holds the model output through backward; its
      // transformers 4.39 returns fp32 logits and shifts a copy in the loss; PEFT 0.9's bf16 adapters.
      {"fsdp_qlora", "qlora", "train.keeps_logits", true},
      {"fsdp_qlora", "qlora", "train.quant.prepare_kbit", false},
      {"fsdp_qlora", "qlora", "train.lora.rank", 64},
      {"fsdp_qlora", "qlora", "train.logits_upcast_in_model", true},
      {"fsdp_qlora", "qlora", "train.loss_shift_copy", true},
      {"fsdp_qlora", "lora", "train.lora.adapter_fp32", false},
      {"fsdp_qlora", "full", "train.optimizer", "adamw_torch"},
  };
  return kRows;
}

TEST(Frameworks, EachFrameworksNewestRecipeMatchesItsSource) {
  for (const Expected& x : expected_defaults()) {
    const json r = estimate(request({{"method", x.method}, {"framework", x.framework}}));
    ASSERT_FALSE(r.contains("error")) << x.framework << " " << x.method << ": " << r.dump();
    json got;
    for (const auto& d : r["framework"]["defaults_applied"]) {
      if (d["path"] == x.path) got = d["value"];
    }
    EXPECT_EQ(got, x.value) << x.framework << " " << x.method << " " << x.path;
    EXPECT_FALSE(r["framework"]["release_given"].get<bool>());
  }
  // hf runs PEFT's documented QLoRA flow: prepare_model_for_kbit_training upcasts (the field's own default).
  const json hf = estimate(request({{"method", "qlora"}}));
  for (const auto& d : hf["framework"]["defaults_applied"]) EXPECT_NE(d["path"], "train.quant.prepare_kbit");
}

// A release is part of the job: the rules of its library versions apply, the
// result names the versions, and a request's own versions.* win.
TEST(Frameworks, AReleaseBringsItsLibraryRulesAndVersionsOverrideThem) {
  const json old = estimate(request({{"method", "qlora"}, {"framework", "torchtune@0.1"}}));
  ASSERT_FALSE(old.contains("error")) << old.dump();
  EXPECT_EQ(old["framework"]["release"], "0.1.1");  // the newest 0.1.x
  EXPECT_EQ(old["framework"]["versions"]["torchao"]["version"], "0.1");
  bool unchunked = false;
  for (const auto& d : old["framework"]["defaults_applied"]) {
    unchunked = unchunked || (d["path"] == "train.quant.quantizer" && d["value"] == "torchao_unchunked");
  }
  EXPECT_TRUE(unchunked) << old["framework"].dump(2);  // torchao < 0.2

  json newer = request({{"method", "qlora"}, {"framework", "torchtune@0.1"}});
  newer["versions"] = {{"torchao", "0.3.1"}};
  const json r = estimate(newer);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["framework"]["versions"]["torchao"]["from"], "versions.torchao");
  for (const auto& d : r["framework"]["defaults_applied"]) EXPECT_NE(d["value"], "torchao_unchunked");

  // bitsandbytes 0.41.1 under HF QLoRA: every 4-bit Linear keeps its input.
  json bnb = request({{"method", "qlora"}});
  bnb["versions"] = {{"bitsandbytes", "0.41.1"}};
  bool saves = false;
  const json with_bnb = estimate(bnb);
  for (const auto& d : with_bnb["framework"]["defaults_applied"]) {
    saves = saves || (d["path"] == "train.quant.saves_input" && d["value"] == true);
  }
  EXPECT_TRUE(saves);
}

// QLoRA sharded by FSDP (hf): TRL >= 0.8.0 never calls
// prepare_model_for_kbit_training (58c08889), and the adapters stay in the
// 4-bit weight's bf16 storage dtype (PEFT 0.6-0.11 update_layer; TRL >= 0.9.3
// passes autocast_adapter_dtype=False). Without FSDP nothing changes.
TEST(Frameworks, FsdpQloraKeepsSixteenBitEmbeddingsAndAdapters) {
  const auto applied = [](const json& r, const std::string& path) {
    json v;
    for (const auto& d : r["framework"]["defaults_applied"]) {
      if (d["path"] == path) v = d["value"];
    }
    return v;
  };
  for (const char* release : {"hf@4.39.0", "hf@4.44.0"}) {
    json fsdp = request({{"method", "qlora"}, {"framework", release}});
    fsdp["parallel"] = {{"gpus", 2}, {"fsdp", "full_shard"}};
    const json r = estimate(fsdp);
    ASSERT_FALSE(r.contains("error")) << r.dump();
    EXPECT_EQ(applied(r, "train.quant.prepare_kbit"), false) << release;
    EXPECT_EQ(applied(r, "train.lora.adapter_fp32"), false) << release;
    const json single = estimate(request({{"method", "qlora"}, {"framework", release}}));
    EXPECT_TRUE(applied(single, "train.quant.prepare_kbit").is_null()) << release;
    EXPECT_TRUE(applied(single, "train.lora.adapter_fp32").is_null()) << release;
  }
  // Before TRL 0.8.0 the rule does not hold (hf@4.36.0: trl 0.7.4).
  json old = request({{"method", "qlora"}, {"framework", "hf@4.36.0"}});
  old["parallel"] = {{"gpus", 2}, {"fsdp", "full_shard"}};
  EXPECT_TRUE(applied(estimate(old), "train.quant.prepare_kbit").is_null());
}

// torchtune's full-method defaults are its single-device configs' (an
// optimizer step in backward, a bitsandbytes optimizer); a full fine-tune
// under FSDP runs full_finetune_distributed.py, whose configs step a torch
// AdamW after backward: release rules (release_table.h kTorchtuneFullFsdp).
TEST(Frameworks, TorchtuneFullFineTuneUnderFsdpTakesTheDistributedRecipesOptimizer) {
  const auto applied = [](const std::string& framework, const json& parallel, const std::string& path,
                          json train = json::object()) {
    train["framework"] = framework;
    json r = request(std::move(train));
    if (!parallel.is_null()) r["parallel"] = parallel;
    const json est = estimate(r);
    EXPECT_FALSE(est.contains("error")) << est.dump();
    json v;
    for (const auto& d : est["framework"]["defaults_applied"]) {
      if (d["path"] == path) v = d["value"];
    }
    return v;
  };
  const json fsdp = {{"gpus", 4}, {"fsdp", "full_shard"}};
  // One GPU: the single-device configs' defaults.
  EXPECT_EQ(applied("torchtune@0.1.0", json(), "train.optimizer_in_backward"), true);
  EXPECT_EQ(applied("torchtune@0.1.0", json(), "train.optimizer"), "paged_adamw_32bit");
  // FSDP, with the method left out (full, the field's default) or named.
  for (const json& train : {json::object(), json{{"method", "full"}}}) {
    EXPECT_EQ(applied("torchtune@0.1.0", fsdp, "train.optimizer_in_backward", train), false);
    EXPECT_EQ(applied("torchtune@0.1.0", fsdp, "train.optimizer", train), "adamw_torch");
  }
  EXPECT_EQ(applied("torchtune@0.2.0", fsdp, "train.optimizer"), "adamw_torch_forloop");
  EXPECT_EQ(applied("torchtune@0.4.0", fsdp, "train.optimizer"), "adamw_torch_fused");
  EXPECT_EQ(applied("torchtune@0.6.1", {{"gpus", 2}, {"sharding", "shard_grad_op"}}, "train.optimizer_in_backward"),
            false);
  // What the request sets stays; LoRA under FSDP and other frameworks are untouched.
  EXPECT_TRUE(applied("torchtune@0.4.0", fsdp, "train.optimizer", {{"optimizer", "adamw_bnb_8bit"}}).is_null());
  EXPECT_TRUE(applied("torchtune@0.4.0", fsdp, "train.optimizer_in_backward", {{"method", "lora"}}).is_null());
  EXPECT_TRUE(applied("hf", fsdp, "train.optimizer_in_backward").is_null());
}

TEST(Frameworks, ABadReleaseOrVersionNamesItsField) {
  json r = estimate(request({{"framework", "torchtune@0.0.1"}}));
  ASSERT_TRUE(r.contains("error"));
  EXPECT_EQ(r["error"]["path"], "train.framework");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("0.1.0"), std::string::npos);  // lists the releases
  r = estimate(request({{"framework", "torchtune@latest"}}));
  EXPECT_EQ(r["error"]["path"], "train.framework");
  json v = request({{"framework", "hf@4.44"}});
  v["versions"] = {{"transformers", "4.40.0"}};
  r = estimate(v);
  EXPECT_EQ(r["error"]["path"], "versions.transformers");
  v["versions"] = {{"bitsandbytes", 0.41}};
  r = estimate(v);
  EXPECT_EQ(r["error"]["path"], "versions.bitsandbytes");
  v["versions"] = {{"torchvision", "0.19"}};
  r = estimate(v);
  EXPECT_EQ(r["error"]["code"], "unknown_field");
}

TEST(Releases, VersionsCompareNumberByNumber) {
  EXPECT_LT(compare_versions("0.43.1", "0.43.2"), 0);
  EXPECT_LT(compare_versions("0.43.2", "0.43.10"), 0);
  EXPECT_EQ(compare_versions("2.0", "2.0.0"), 0);
  EXPECT_LT(compare_versions("2024.8", "2024.11.9"), 0);
  EXPECT_EQ(compare_versions("2.1.0+cu121", "2.1.0"), 0);
  EXPECT_TRUE(version_in("0.42.0", "<0.43.2"));
  EXPECT_FALSE(version_in("0.43.2", "<0.43.2"));
  EXPECT_TRUE(version_in("0.7.0", ">=0.6,<0.12"));
  EXPECT_FALSE(version_in("0.12.0", ">=0.6,<0.12"));
  EXPECT_TRUE(version_in("9.9", ""));
  EXPECT_TRUE(valid_version("2.6.0.dev20241223"));
  EXPECT_FALSE(valid_version("latest"));
  EXPECT_FALSE(valid_version(""));
}

TEST(Releases, EveryReleaseRowIsWellFormedAndOrdered) {
  for (const Framework& fw : frameworks()) {
    const std::vector<FrameworkRelease> all = releases_of(fw.name);
    ASSERT_FALSE(all.empty()) << fw.name;
    for (size_t i = 0; i < all.size(); ++i) {
      EXPECT_TRUE(valid_version(all[i].version)) << fw.name << " " << all[i].version;
      EXPECT_FALSE(all[i].source.empty()) << fw.name << " " << all[i].version;
      if (i > 0) EXPECT_LT(compare_versions(all[i - 1].version, all[i].version), 0) << fw.name;
      if (i > 0) EXPECT_LE(all[i - 1].date, all[i].date) << fw.name;
      for (const auto& [lib, v] : all[i].libraries) {
        EXPECT_TRUE(lib == "transformers" || std::find(versioned_libraries().begin(), versioned_libraries().end(),
                                                       lib) != versioned_libraries().end())
            << fw.name << " " << lib;
        EXPECT_TRUE(valid_version(v)) << fw.name << " " << lib << " " << v;
      }
    }
  }
}

}  // namespace
}  // namespace vram

// Importing the configuration files users already have (issue 15): real
// example files from each framework's own repository (tests/fixtures/import,
// SOURCES.md names repository, path and commit) give the request stated here,
// key by key from the file, and no key goes unexplained.
#include "vram/import.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "config_files.h"
#include "probe/probe_run.h"
#include "test_paths.h"
#include "vram/api.h"

namespace {

using vram::json;

std::string Fixture(const std::string& name) { return std::string(VRAM_FIXTURES_DIR) + "/import/" + name; }
std::string Model(const std::string& name) { return std::string(VRAM_FIXTURES_DIR) + "/models/" + name; }

json Import(const std::vector<std::string>& files) {
  const json r = vram::cli::import_config_files(files);
  EXPECT_FALSE(r.contains("error")) << r.dump(2);
  return r;
}

// The request without its model.config (checked separately).
json WithoutModel(json request) {
  request.erase("model");
  return request;
}

// Every key of every file is in one of the three lists, and none is
// "not a key the importer knows".
void ExpectEveryKeyExplained(const json& r) {
  for (const auto& f : r["files"]) {
    for (const auto& n : f["not_understood"]) {
      EXPECT_EQ(n["why"].get<std::string>().find("not a key the"), std::string::npos) << f["file"] << " " << n.dump();
    }
  }
}

std::vector<std::string> NotUnderstoodKeys(const json& file_report) {
  std::vector<std::string> out;
  for (const auto& n : file_report["not_understood"]) out.push_back(n["key"].get<std::string>());
  return out;
}

json ConfigOf(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

TEST(ImportAxolotl, Qlora1bExampleGivesItsRequestAndTheLlama32Preset) {
  const json r = Import({Fixture("axolotl_qlora-1b.yml")});
  ExpectEveryKeyExplained(r);
  EXPECT_EQ(r["files"][0]["kind"], "axolotl");
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  // base_model: NousResearch/Llama-3.2-1B, a mirror of meta-llama's repository.
  EXPECT_EQ(r["model"]["id"], "NousResearch/Llama-3.2-1B");
  EXPECT_EQ(r["model"]["preset"], "meta-llama/Llama-3.2-1B");
  EXPECT_EQ(r["request"]["model"]["config"], ConfigOf(Model("meta-llama__Llama-3.2-1B.json")));
  const json expected = json::parse(R"({
    "task": "train",
    "train": {
      "framework": "axolotl", "method": "qlora", "seq_len": 2048, "micro_batch": 2, "grad_accum": 4,
      "lora": {"rank": 32, "alpha": 16, "dropout": 0.05,
               "targets": ["gate_proj", "down_proj", "up_proj", "q_proj", "v_proj", "k_proj", "o_proj"]},
      "optimizer": "adamw_bnb_8bit", "grad_checkpointing": "full", "attention": "flash_attention_2",
      "padding": "packed"
    }
  })");
  EXPECT_EQ(WithoutModel(r["request"]), expected) << r["request"].dump(2);
}

// How each framework's file says its batches are shaped becomes
// train.padding: packed fills the sequence length, padding to the longest
// sample varies it from step to step (the allocator replay keeps each
// length's blocks), padding to the sequence length does not.
TEST(ImportPadding, EachKindsPackingAndPaddingKeysSetTrainPadding) {
  struct Case {
    const char* text;
    const char* padding;  // nullptr: not set
  };
  const Case cases[] = {
      {"base_model: x\nsample_packing: true\npad_to_sequence_len: true\n", "packed"},
      {"base_model: x\nsample_packing: false\npad_to_sequence_len: true\n", "max_length"},
      {"base_model: x\nsample_packing: false\n", "longest"},
      {"model_name_or_path: x\nstage: sft\nfinetuning_type: lora\npacking: true\n", "packed"},
      {"model_name_or_path: x\nstage: sft\nfinetuning_type: lora\npacking: false\n", "longest"},
      {"model_name_or_path: x\nstage: sft\nfinetuning_type: lora\nneat_packing: true\npacking: false\n", "packed"},
  };
  for (const Case& c : cases) {
    const std::string path = ::testing::TempDir() + "/padding_case.yaml";
    {
      std::ofstream out(path);
      out << c.text;
    }
    const json r = Import({path});
    ASSERT_FALSE(r.contains("error")) << c.text << r.dump(2);
    ExpectEveryKeyExplained(r);
    const json& t = r["request"]["train"];
    if (c.padding == nullptr) {
      EXPECT_FALSE(t.contains("padding")) << c.text;
    } else {
      EXPECT_EQ(t.value("padding", ""), c.padding) << c.text << r.dump(2);
    }
  }
}

// A TRL recipe (alignment-handbook, read by TRL's TrlParser): ModelConfig's
// model and LoRA keys and SFTConfig's trainer keys in one YAML.
TEST(ImportTrl, AlignmentHandbookQloraRecipeGivesItsRequestAndTheMistralPreset) {
  const json r = Import({Fixture("alignment_handbook_zephyr-7b_sft_qlora.yaml")});
  ExpectEveryKeyExplained(r);
  EXPECT_EQ(r["files"][0]["kind"], "trainer");
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  EXPECT_EQ(r["model"]["id"], "mistralai/Mistral-7B-v0.1");
  EXPECT_EQ(r["model"]["preset"], "mistralai/Mistral-7B-v0.1");
  const json expected = json::parse(R"({
    "task": "train",
    "train": {
      "framework": "hf", "method": "qlora", "seq_len": 2048, "micro_batch": 4, "grad_accum": 2,
      "lora": {"rank": 16, "alpha": 16, "dropout": 0.05,
               "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]},
      "grad_checkpointing": "full", "attention": "flash_attention_2"
    }
  })");
  EXPECT_EQ(WithoutModel(r["request"]), expected) << r["request"].dump(2);
  // A float32 load under bf16 autocast is the amp recipe; an 8-bit load is said, not hidden.
  const std::string f32 = testing::TempDir() + "/trl_f32.yaml";
  std::ofstream(f32) << "per_device_train_batch_size: 1\nbf16: true\ntorch_dtype: float32\nload_in_8bit: true\n";
  const json r32 = Import({f32});
  EXPECT_EQ(r32["request"]["train"]["precision"], "amp_bf16") << r32.dump(2);
  EXPECT_EQ(NotUnderstoodKeys(r32["files"][0]), std::vector<std::string>{"load_in_8bit"});
}

// PEFT's own adapter_config.json of its MetaMathQA benchmark (the run behind
// validation row 1): target_modules null leaves PEFT's default targets.
TEST(ImportPeft, MethodComparisonAdapterConfigGivesItsLora) {
  const json r = Import({Fixture("peft_metamathqa_llama-3.2-3B-rank32_adapter_config.json")});
  ExpectEveryKeyExplained(r);
  EXPECT_EQ(r["files"][0]["kind"], "peft");
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  const json expected = json::parse(R"({
    "task": "train",
    "train": {"method": "lora", "lora": {"rank": 32, "alpha": 64, "dropout": 0, "use_dora": false}}
  })");
  EXPECT_EQ(r["request"], expected) << r["request"].dump(2);
}

TEST(ImportLlamaFactory, QloraOtfqExampleGivesItsRequest) {
  const json r = Import({Fixture("llama_factory_llama3_lora_sft_otfq.yaml")});
  ExpectEveryKeyExplained(r);
  EXPECT_EQ(r["files"][0]["kind"], "llama_factory");
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  // Meta-Llama-3-8B-Instruct is not bundled: the page fetches it, the CLI asks for its config.json.
  EXPECT_EQ(r["model"]["id"], "meta-llama/Meta-Llama-3-8B-Instruct");
  EXPECT_TRUE(r["model"]["preset"].is_null());
  const json expected = json::parse(R"({
    "task": "train",
    "train": {
      "framework": "llama_factory", "method": "qlora", "seq_len": 2048, "micro_batch": 1, "grad_accum": 8,
      "lora": {"targets": "all-linear"}
    }
  })");
  EXPECT_EQ(r["request"], expected) << r["request"].dump(2);
}

// Issue 29: LLaMA-Factory spells the bitsandbytes method "bnb" since 2025
// (extras/constants.py QuantizationMethod.BNB); quantization_bit 4 with it is
// LLaMA-Factory's QLoRA, not plain LoRA with a note.
TEST(ImportLlamaFactory, QuantizationBit4WithBnbIsQlora) {
  const json r = Import({Fixture("llama_factory_qwen3_lora_sft_otfq.yaml")});
  ExpectEveryKeyExplained(r);
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  EXPECT_EQ(r["request"]["train"]["method"], "qlora") << r["request"].dump(2);
  EXPECT_EQ(r["request"]["train"]["framework"], "llama_factory");
  EXPECT_EQ(r["request"]["train"]["lora"]["rank"], 8);
}

TEST(ImportTorchtune, Llama31QloraSingleDeviceRecipeGivesItsRequest) {
  const json r = Import({Fixture("torchtune_llama3_1_8B_qlora_single_device.yaml")});
  ExpectEveryKeyExplained(r);
  EXPECT_EQ(r["files"][0]["kind"], "torchtune");
  // CEWithChunkedOutputLoss is the chunked loss kind (issue 29).
  EXPECT_TRUE(NotUnderstoodKeys(r["files"][0]).empty()) << r["files"][0].dump(2);
  EXPECT_EQ(r["model"]["id"], "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(r["model"]["preset"], "meta-llama/Llama-3.1-8B");
  const json expected = json::parse(R"({
    "task": "train",
    "train": {
      "framework": "torchtune", "method": "qlora", "micro_batch": 2, "grad_accum": 16,
      "lora": {"rank": 8, "alpha": 16, "dropout": 0,
               "targets": ["q_proj", "v_proj", "k_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]},
      "optimizer": "adamw_torch_fused", "precision": "bf16", "grad_checkpointing": "full",
      "activation_offload": false, "compile": false, "loss": "chunked"
    }
  })");
  EXPECT_EQ(WithoutModel(r["request"]), expected) << r["request"].dump(2);
}

TEST(ImportTorchtune, TheQloraRecipeEstimatesWithBf16EmbeddingsAndTheChunkedLoss) {
  // Issue 29: vram-probe estimate --model-config Llama-3.1-8B --framework
  // torchtune --method qlora --per-device-batch 2 --seq-len 2048 --padding
  // packed --gpu "RTX 4090" answered 17.83 GiB with fp32 embeddings and norms
  // (PEFT's prepare_model_for_kbit_training, which torchtune never calls) and
  // the full fp32 logits. The recipe file and the framework name now give the
  // same job: 16-bit embeddings, output and norms, and the chunked loss.
  json r = Import({Fixture("torchtune_llama3_1_8B_qlora_single_device.yaml")})["request"];
  std::ifstream cfg(std::string(VRAM_FIXTURES_DIR) + "/models/meta-llama__Llama-3.1-8B.json");
  r["model"] = {{"config", json::parse(cfg)}};
  r["train"]["seq_len"] = 2048;
  r["train"]["padding"] = "packed";
  const json e = vram::estimate(r);
  ASSERT_FALSE(e.contains("error")) << e.dump();
  for (const auto& c : e["components"]) {
    if (c["key"] == "weights") {
      // 4-bit linears 3,600,416,768 B; the rest (embeddings 525,336,576 x 2,
      // output 525,336,576 x 2, 65 norms of 4,096 x 2 B) in bf16.
      EXPECT_NE(c["formula"].get<std::string>().find("the rest 2,101,878,784 B"), std::string::npos) << c.dump();
    }
    if (c["key"] == "loss_buffers") {
      // 8 chunks of 4,096 x 128,256: (2 + 4 + 4 / 8) B per logit in forward.
      EXPECT_EQ(c["bytes"].get<int64_t>(), int64_t{4096} * 128256 * 13 / 2) << c.dump();
    }
  }
}

TEST(ImportLitgpt, Llama32QloraConfigHubGivesItsRequest) {
  const json r = Import({Fixture("litgpt_llama-3.2-1B_qlora.yaml")});
  ExpectEveryKeyExplained(r);
  EXPECT_EQ(r["files"][0]["kind"], "litgpt");
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  EXPECT_EQ(r["model"]["preset"], "meta-llama/Llama-3.2-1B");
  // global_batch_size 8 / (1 device x 1 node) / micro_batch_size 2 = 4 accumulation steps.
  const json expected = json::parse(R"({
    "task": "train",
    "train": {
      "framework": "litgpt", "method": "qlora", "precision": "bf16", "quant": {"double_quant": false},
      "micro_batch": 2, "grad_accum": 4, "seq_len": 512,
      "lora": {"rank": 32, "alpha": 16, "dropout": 0.05, "targets": ["q_proj", "v_proj"]}
    },
    "parallel": {"gpus": 1}
  })");
  EXPECT_EQ(WithoutModel(r["request"]), expected) << r["request"].dump(2);
}

// devices > 1: litgpt/finetune/full.py setup() (43c44323) trains under
// FSDPStrategy(auto_wrap_policy={Block}, activation_checkpointing_policy={Block}):
// FSDP1 FULL_SHARD with every Block checkpointed. global_batch_size 16 / 4
// devices / micro_batch_size 1 = 4 accumulation steps.
TEST(ImportLitgpt, MultiDeviceConfigTrainsUnderFsdpWithCheckpointing) {
  const json r = Import({Fixture("litgpt_gemma-2b_full.yaml")});
  ExpectEveryKeyExplained(r);
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  const json expected = json::parse(R"({
    "task": "train",
    "train": {"framework": "litgpt", "method": "full", "precision": "bf16", "micro_batch": 1, "grad_accum": 4,
              "seq_len": 512, "grad_checkpointing": "full"},
    "parallel": {"gpus": 4, "fsdp": "full_shard", "fsdp_version": 1}
  })");
  EXPECT_EQ(WithoutModel(r["request"]), expected) << r["request"].dump(2);
}

// A LitGPT LoRA recipe on 2 devices (config_hub llama-3-8b/lora.yaml at
// 43c44323, the validation row's, with devices: 2) at litgpt 0.3.1: FSDP1
// with Block units under Fabric's use_orig_params=True, so each Block's
// sharded gradient spans its frozen weights (memory::fsdp1_mixed_unit_grads,
// the litgpt parallel.fsdp_adapter_units rule, listed). By hand for
// Llama-3-8B (h 4096, MLP 14336, 8 KV heads of 128, 32 layers): a Block holds
// q and o 4096 x 4096 (16,777,216 each), k and v 4096 x 1024 (4,194,304
// each), gate, up and down 4096 x 14336 (58,720,256 each) and two norms of
// 4096: 218,112,000 values, bf16-true 2 B each, halved over 2 ranks:
// 218,112,000 B a layer, 6,979,584,000 B (6.5 GiB) over 32 layers more than
// the adapters' share alone (the request's own fsdp_adapter_units true).
TEST(ImportLitgpt, LoraOnTwoDevicesGetsBlockGradientsOverTheFrozenWeights) {
  std::ifstream in(std::string(VRAM_FIXTURES_DIR) + "/validation/recipes/litgpt-43c44323-llama-3-8b-lora.yaml");
  std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = yaml.find("\ndevices: 1\n");
  ASSERT_NE(at, std::string::npos);
  yaml.replace(at, 12, "\ndevices: 2\n");
  const std::string path = ::testing::TempDir() + "litgpt_lora_devices2.yaml";
  std::ofstream(path) << yaml;
  json req = Import({path})["request"];
  std::remove(path.c_str());
  EXPECT_EQ(req["parallel"], json::parse(R"({"gpus": 2, "fsdp": "full_shard", "fsdp_version": 1})"));
  req["train"]["framework"] = "litgpt@0.3.1";
  req["model"] = {{"config", ConfigOf(Model("meta-llama__Llama-3.1-8B.json"))}};
  const auto gradients = [](const json& est) {
    for (const json& c : est["components"]) {
      if (c["key"] == "gradients") return c;
    }
    return json();
  };
  const json est = vram::estimate(req);
  ASSERT_FALSE(est.contains("error")) << est.dump(2);
  bool listed = false;
  for (const json& d : est["framework"]["defaults_applied"]) {
    if (d["path"] == "parallel.fsdp_adapter_units") listed = d["value"] == false;
  }
  EXPECT_TRUE(listed) << est["framework"].dump(2);
  EXPECT_NE(gradients(est)["formula"].get<std::string>().find("use_orig_params"), std::string::npos);
  req["parallel"]["fsdp_adapter_units"] = true;
  const json adapters_only = vram::estimate(req);
  ASSERT_FALSE(adapters_only.contains("error")) << adapters_only.dump(2);
  EXPECT_EQ(gradients(est)["bytes"].get<int64_t>() - gradients(adapters_only)["bytes"].get<int64_t>(),
            int64_t{6979584000});
  EXPECT_GT(est["peak_bytes"].get<int64_t>(), adapters_only["peak_bytes"].get<int64_t>() + int64_t{6979584000} / 2);
}

TEST(ImportDeepSpeed, TransformersZero3TestConfigGivesItsRequest) {
  const json r = Import({Fixture("transformers_ds_config_zero3.json")});
  ExpectEveryKeyExplained(r);
  EXPECT_EQ(r["files"][0]["kind"], "deepspeed");
  EXPECT_EQ(NotUnderstoodKeys(r["files"][0]),
            (std::vector<std::string>{"zero_optimization.reduce_bucket_size", "zero_optimization.sub_group_size",
                                      "zero_optimization.stage3_max_reuse_distance"}));
  const json expected = json::parse(R"({
    "task": "train",
    "train": {"precision": "mixed_bf16"},
    "parallel": {"zero": 3, "offload_optimizer": true, "offload_params": true,
                 "stage3_prefetch_bucket_size": 0, "stage3_param_persistence_threshold": 0,
                 "stage3_max_live_parameters": 1000000000, "overlap_comm": true, "contiguous_gradients": true}
  })");
  EXPECT_EQ(r["request"], expected) << r["request"].dump(2);
}

TEST(ImportDeepSpeed, DocsAutoConfigTakesItsAutoValuesFromTheOtherFiles) {
  // The ZeRO-3 example of transformers' DeepSpeed guide: "auto" everywhere.
  // With an Axolotl recipe its batch and accumulation come from the recipe,
  // and the bucket sizes from the model's hidden size (2048 for Llama-3.2-1B).
  const json r = Import({Fixture("axolotl_qlora-1b.yml"), Fixture("transformers_docs_zero3_auto.json")});
  ExpectEveryKeyExplained(r);
  const json& req = r["request"];
  EXPECT_EQ(req["train"]["micro_batch"], 2);
  EXPECT_EQ(req["train"]["grad_accum"], 4);
  EXPECT_EQ(req["parallel"]["zero"], 3);
  EXPECT_EQ(req["parallel"]["offload_optimizer"], true);
  EXPECT_EQ(req["parallel"]["offload_params"], true);
  EXPECT_EQ(req["parallel"]["reduce_bucket_size"], 2048 * 2048);
  EXPECT_EQ(req["parallel"]["stage3_prefetch_bucket_size"], static_cast<int64_t>(0.9 * 2048 * 2048));
  EXPECT_EQ(req["parallel"]["stage3_param_persistence_threshold"], 10 * 2048);
  EXPECT_FALSE(req["train"].contains("precision"));  // fp16 "auto" follows the recipe's bf16
  // The whole request estimates.
  const json est = vram::estimate(req);
  EXPECT_FALSE(est.contains("error")) << est.dump(2);
}

TEST(ImportAccelerate, FsdpTemplateGivesTwoGpusFullShard) {
  const json r = Import({Fixture("accelerate_fsdp.yaml")});
  ExpectEveryKeyExplained(r);
  EXPECT_EQ(r["files"][0]["kind"], "accelerate");
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  const json expected = json::parse(R"({
    "task": "train",
    "train": {"grad_checkpointing": "none"},
    "parallel": {"gpus": 2, "fsdp": "full_shard", "fsdp_sync_module_states": true}
  })");
  EXPECT_EQ(r["request"], expected) << r["request"].dump(2);
}

TEST(ImportAccelerate, TrlDeepSpeedZero3TemplateGivesEightGpusStage3) {
  const json r = Import({Fixture("trl_accelerate_deepspeed_zero3.yaml")});
  ExpectEveryKeyExplained(r);
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  const json expected = json::parse(R"({
    "task": "train",
    "train": {"grad_accum": 1},
    "parallel": {"gpus": 8, "zero": 3, "offload_optimizer": false, "offload_params": false}
  })");
  EXPECT_EQ(r["request"], expected) << r["request"].dump(2);
}

TEST(ImportPeft, AdapterConfigGivesLoraRankAlphaDropoutTargets) {
  const json r = Import({Fixture("peft_adapter_config.json")});
  ExpectEveryKeyExplained(r);
  EXPECT_EQ(r["files"][0]["kind"], "peft");
  EXPECT_TRUE(r["files"][0]["not_understood"].empty()) << r["files"][0].dump(2);
  const json expected = json::parse(R"({
    "task": "train",
    "train": {"method": "lora", "lora": {"rank": 8, "alpha": 32, "dropout": 0.05, "targets": ["v_proj", "q_proj"],
                                         "use_dora": false}}
  })");
  EXPECT_EQ(r["request"], expected) << r["request"].dump(2);
}

TEST(ImportErrors, UnknownKindNamesTheFile) {
  const json r = vram::import_files(json::parse(R"({"files": [{"file": "notes.yaml", "content": {"hello": 1}}]})"));
  ASSERT_TRUE(r.contains("error"));
  EXPECT_EQ(r["error"]["code"], "unknown_value");
  EXPECT_EQ(r["error"]["path"], "notes.yaml");
}

TEST(ImportErrors, BadValueNamesTheFileAndTheKey) {
  const json r = vram::import_files(
      json::parse(R"({"files": [{"file": "a.yml", "content": {"base_model": "x/y", "micro_batch_size": "two"}}]})"));
  ASSERT_TRUE(r.contains("error"));
  EXPECT_EQ(r["error"]["code"], "wrong_type");
  EXPECT_EQ(r["error"]["path"], "a.yml:micro_batch_size");
}

// Found by the import fuzzer: devices 0 divided the global batch by zero. LitGPT refuses a device
// count that is not positive, -1 or "auto" (litgpt/utils.py parse_devices), a node count below 1, and a
// global batch that leaves no accumulation step (litgpt/args.py TrainArgs asserts).
TEST(ImportErrors, LitgptDevicesNodesAndBatchesThatLitgptRefusesNameTheKey) {
  const auto import_litgpt = [](const std::string& content) {
    return vram::import_files(json::parse(R"({"files": [{"file": "l.yaml", "content": )" + content + "}]}"));
  };
  const std::string batches = R"("train": {"global_batch_size": 8, "micro_batch_size": 2})";
  for (const auto& [content, path] : std::vector<std::pair<std::string, std::string>>{
           {R"({"checkpoint_dir": "checkpoints/x/y", "devices": 0, )" + batches + "}", "l.yaml:devices"},
           {R"({"checkpoint_dir": "checkpoints/x/y", "devices": -2, )" + batches + "}", "l.yaml:devices"},
           {R"({"checkpoint_dir": "checkpoints/x/y", "num_nodes": 0, )" + batches + "}", "l.yaml:num_nodes"},
           {R"({"checkpoint_dir": "checkpoints/x/y", "devices": 16, )" + batches + "}",
            "l.yaml:train.global_batch_size"},
           // More GPUs than parallel.gpus takes: refused at the key, before the division.
           {R"({"checkpoint_dir": "x", "devices": 4611686018427387904, "num_nodes": 4, )" + batches + "}",
            "l.yaml:devices"},
           {R"({"checkpoint_dir": "x", "train": {"global_batch_size": 8, "micro_batch_size": 0}})",
            "l.yaml:train.micro_batch_size"}}) {
    const json r = import_litgpt(content);
    ASSERT_TRUE(r.contains("error")) << content << "\n" << r.dump(2);
    EXPECT_EQ(r["error"]["code"], "out_of_range") << content;
    EXPECT_EQ(r["error"]["path"], path) << content;
  }
  // -1 is every visible GPU, as "auto" is: the form's GPU count, and the accumulation over one device.
  const json r = import_litgpt(R"({"checkpoint_dir": "checkpoints/x/y", "devices": -1, )" + batches + "}");
  ASSERT_FALSE(r.contains("error")) << r.dump(2);
  EXPECT_FALSE(r["request"].contains("parallel")) << r["request"].dump(2);
  EXPECT_EQ(r["request"]["train"]["grad_accum"], 4);
}

// micro x accumulation overflowed int64 (UBSan: signed overflow); DeepSpeed asserts train_batch_size,
// micro-batch and accumulation are > 0 (deepspeed/runtime/config.py _batch_assertion).
TEST(ImportErrors, DeepSpeedBatchesThatDeepSpeedRefusesNameTrainBatchSize) {
  const auto deepspeed = [](const std::string& micro, const std::string& accumulation, const std::string& total) {
    return vram::import_files(json::parse(R"({"files": [{"file": "ds.json", "content": {)"
                                          R"("train_micro_batch_size_per_gpu": )" +
                                          micro + R"(, "gradient_accumulation_steps": )" + accumulation +
                                          R"(, "train_batch_size": )" + total + "}}]}"));
  };
  for (const json& r : {deepspeed("2", "4", "0"), deepspeed("2", "4", "12")}) {
    ASSERT_TRUE(r.contains("error")) << r.dump(2);
    EXPECT_EQ(r["error"]["code"], "inconsistent") << r.dump(2);
    EXPECT_EQ(r["error"]["path"], "ds.json:train_batch_size") << r.dump(2);
  }
  // A micro-batch outside train.micro_batch's limits is refused at its own key first (issue 33).
  for (const json& r : {deepspeed("4294967296", "4294967296", "8"), deepspeed("-2", "-4", "8")}) {
    ASSERT_TRUE(r.contains("error")) << r.dump(2);
    EXPECT_EQ(r["error"]["code"], "out_of_range") << r.dump(2);
    EXPECT_EQ(r["error"]["path"], "ds.json:train_micro_batch_size_per_gpu") << r.dump(2);
  }
}

TEST(ImportErrors, FilesThatDisagreeAreAnError) {
  // HF's DeepSpeed integration refuses a config whose values mismatch the Trainer's.
  const json r = vram::import_files(json::parse(R"({"files": [
      {"file": "a.yml", "content": {"base_model": "x/y", "micro_batch_size": 2}},
      {"file": "ds.json", "content": {"train_micro_batch_size_per_gpu": 4}}]})"));
  ASSERT_TRUE(r.contains("error"));
  EXPECT_EQ(r["error"]["code"], "inconsistent");
  EXPECT_EQ(r["error"]["path"], "ds.json:train_micro_batch_size_per_gpu");
}

TEST(ImportErrors, MalformedYamlNamesTheFileAndLine) {
  try {
    vram::cli::yaml_to_json("a: 1\nb: [1, 2\n", "bad.yml");
    FAIL() << "no error";
  } catch (const vram::Failure& f) {
    EXPECT_EQ(f.error().path, "bad.yml");
    EXPECT_NE(f.error().message.find("bad.yml line"), std::string::npos) << f.error().message;
  }
}

TEST(ImportYaml, CoreSchemaScalarsResolveAsTheNpmYamlPackageDoes) {
  const json j = vram::cli::yaml_to_json(
      "a: True\nb: '1'\nc: 1.0e-4\nd: 3.0\ne: ~\nf: yes\ng: 0x10\nh: .inf\ni: \"auto\"\nj: 5e8\n", "t.yml");
  EXPECT_EQ(j["a"], true);
  EXPECT_EQ(j["b"], "1");  // quoted: a string
  EXPECT_EQ(j["c"], 0.0001);
  EXPECT_TRUE(j["d"].is_number_integer());  // JSON.stringify(3.0) === "3"
  EXPECT_TRUE(j["e"].is_null());
  EXPECT_EQ(j["f"], "yes");  // YAML 1.2: not a boolean
  EXPECT_EQ(j["g"], 16);
  EXPECT_EQ(j["h"], ".inf");  // not finite: kept as text, so the key is reported (vram/import.h)
  EXPECT_EQ(j["i"], "auto");
  EXPECT_EQ(j["j"], 500000000);
}

// Octal and hex past 2^64 (a fuzz input: std::stoull threw out_of_range,
// which escaped as an "internal" error): rounded to the nearest double, the
// values node's npm yaml gives (parseInt) for the same text.
TEST(ImportYaml, OctalAndHexPastUint64RoundLikeParseInt) {
  const json j = vram::cli::yaml_to_json(
      "g: 0x10000000000000000\nh: 0o17\nk: 0x1fffffffffffff1\no: 0o7777777777777777777777777\n", "t.yml");
  EXPECT_EQ(j["g"].get<double>(), 18446744073709551616.0);
  EXPECT_EQ(j["h"], 15);
  EXPECT_EQ(j["k"].get<double>(), 144115188075855856.0);
  EXPECT_EQ(j["o"].get<double>(), 3.777893186295716e+22);
}

// Bounded reads (issue 17: "a size limit on every input, checked before
// reading it whole"). Reading a config went through file_size, then read the
// whole file: a pipe (process substitution, /dev/stdin) had no size and was
// refused as unreadable, and nothing bounded what it read.
TEST(ImportRead, AnEndlessStreamIsRefusedAtTheLimitNotReadWhole) {
  try {
    vram::cli::read_config_tree("/dev/zero");  // a character device: no size, endless
    FAIL() << "no error";
  } catch (const vram::Failure& f) {
    EXPECT_EQ(f.error().code, "out_of_range") << f.error().message;
    EXPECT_EQ(f.error().path, "/dev/zero");
    EXPECT_NE(f.error().message.find("import limit of 10485760"), std::string::npos) << f.error().message;
  }
}

TEST(ImportRead, AFileOverTheLimitIsRefusedByItsSize) {
  const std::string path = ::testing::TempDir() + "/vram_import_big.yaml";
  {
    std::ofstream out(path, std::ios::binary);
    out << "micro_batch_size: 2\n" << std::string(static_cast<size_t>(vram::kMaxImportBytes), '#') << "\n";
  }
  try {
    vram::cli::read_config_tree(path);
    FAIL() << "no error";
  } catch (const vram::Failure& f) {
    EXPECT_EQ(f.error().code, "out_of_range") << f.error().message;
    EXPECT_NE(f.error().message.find(std::to_string(vram::kMaxImportBytes + 21) + " bytes seen"), std::string::npos)
        << f.error().message;
  }
  std::remove(path.c_str());
}

TEST(ImportRead, APipeIsReadLikeAFile) {
  // /dev/stdin of a child fed by a pipe: what `vram-probe import <(...)` gives.
  const std::string fifo = ::testing::TempDir() + "/vram_import_fifo.yml";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&fifo] {
    std::ofstream out(fifo, std::ios::binary);
    out << "base_model: x/y\nmicro_batch_size: 3\n";
  });
  const json tree = vram::cli::read_config_tree(fifo);
  writer.join();
  std::remove(fifo.c_str());
  EXPECT_EQ(tree["micro_batch_size"], 3);
}

// Nesting: the importer's tree walks are recursive, so a file's tree nests at
// most limits::kMaxJsonDepth levels, JSON or YAML. 10 MiB of "[" used to reach
// the importer as a 10-million-level tree.
TEST(ImportRead, DeepNestingIsAnErrorNamingTheFileForJsonAndYaml) {
  const std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
  const std::string deep_yaml = "a:\n" + [] {
    std::string s;
    for (int i = 1; i < 80; ++i) s += std::string(static_cast<size_t>(2 * i), ' ') + "k:\n";
    return s;
  }();
  for (const std::string& text : {deep_json, deep_yaml, std::string(1500, '[')}) {
    try {
      vram::cli::config_tree(text, "deep.yml");
      FAIL() << "no error for " << text.substr(0, 40);
    } catch (const vram::Failure& f) {
      EXPECT_EQ(f.error().path, "deep.yml");
      EXPECT_TRUE(f.error().code == "out_of_range" || f.error().code == "bad_json") << f.error().message;
    }
  }
  // 64 levels are fine.
  const json ok = vram::cli::config_tree(std::string(63, '[') + std::string(63, ']'), "ok.json");
  EXPECT_TRUE(ok.is_array());
}

// Found by fuzz_import_file: yaml-cpp turned a NUL in an accelerate config's
// key into bytes that are not UTF-8, and dumping the tree threw (an abort in
// `vram-probe import`). Every YAML scalar and key is now made valid UTF-8.
TEST(ImportFileJson, YamlCppBytesThatAreNotUtf8AreReplaced) {
  std::ifstream in(std::string(VRAM_FIXTURES_DIR) + "/../fuzz/regressions/import_file/nul-in-a-yaml-key",
                   std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(text.size(), 100u);
  const json r = json::parse(vram::cli::import_file_json(text));
  EXPECT_FALSE(r.contains("error")) << r.dump().substr(0, 300);
  EXPECT_NO_THROW(r.dump());
}

TEST(ImportFileJson, AnswersOneJsonObjectForAnyText) {
  // The import_file fuzz target's entry point: a recipe, a non-mapping, YAML
  // garbage and an empty file each give a result or an error, never a throw.
  const json recipe = json::parse(vram::cli::import_file_json("base_model: x/y\nmicro_batch_size: 2\n"));
  EXPECT_EQ(recipe["request"]["train"]["micro_batch"], 2) << recipe.dump();
  // Ill-formed UTF-8 becomes U+FFFD, as the page's File.text() makes it: a
  // tree nlohmann::json can dump, and the same tree on both sides.
  const json latin1 =
      json::parse(vram::cli::import_file_json("base_model: x/y\nmicro_batch_size: 2\nwandb_name: caf\xe9\n"));
  EXPECT_EQ(latin1["request"]["train"]["micro_batch"], 2) << latin1.dump();
  EXPECT_EQ(vram::cli::config_tree("k: caf\xe9", "t.yml")["k"], "caf\xEF\xBF\xBD");
  for (const char* text : {"[1, 2]", "a: [", "", "\"just a string\"", "{\"hello\": 1}", "\xff\xfe: [\xc3"}) {
    const json r = json::parse(vram::cli::import_file_json(text));
    ASSERT_TRUE(r.contains("error")) << text;
    EXPECT_NE(r["error"]["code"], "internal") << text << " " << r.dump();
  }
}

#if defined(VRAM_PROBE_BIN)
TEST(ImportCli, EstimateFromFilesEqualsEstimateOfTheImportedRequestAndFlagsWin) {
  using vram::testing::run_binary;
  const auto imp = run_binary(VRAM_PROBE_BIN, {"import", Fixture("axolotl_qlora-1b.yml"), "--json"}, false);
  ASSERT_EQ(imp.exit_code, 0) << imp.out;
  const json request = json::parse(imp.out)["request"];
  const auto est = run_binary(VRAM_PROBE_BIN, {"estimate", "--from", Fixture("axolotl_qlora-1b.yml"), "--json"}, false);
  ASSERT_EQ(est.exit_code, 0) << est.out;
  EXPECT_EQ(est.out, vram::estimate_json(request.dump()) + "\n");
  const auto flag =
      run_binary(VRAM_PROBE_BIN,
                 {"estimate", "--from", Fixture("axolotl_qlora-1b.yml"), "--per-device-batch", "1", "--json"}, false);
  ASSERT_EQ(flag.exit_code, 0) << flag.out;
  json with_flag = request;
  with_flag["train"]["micro_batch"] = 1;
  EXPECT_EQ(flag.out, vram::estimate_json(with_flag.dump()) + "\n");
}
#endif

}  // namespace

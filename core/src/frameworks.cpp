// The training frameworks and their memory-relevant defaults (frameworks.h).
// Every default names the framework file it comes from; what a framework does
// that no request field can express is listed under not_modelled.
#include "vram/frameworks.h"

#include <algorithm>

#include "release_table.h"
#include "table_def.h"
#include "vram/fields.h"

namespace vram {

namespace {

using detail::Def;

// One framework default as data (issue 18): built as code the table was
// 19 KB of WebAssembly code (a --profiling-funcs link); as constexpr rows
// vram_core.wasm went from 776,939 to 761,916 bytes, 291,135 to 286,503 gzip
// -9 (2026-11-28, -Oz + LTO). Its source is `prefix` + `source`, `methods`
// the train.method values it applies to ('|'-separated, "" = all).
struct DefaultRow {
  const char* path;
  Def value;
  const char* prefix;
  const char* source;
  const char* methods;
  const char* releases = "";  // the framework releases it holds for (vram/releases.h version_in); "" = all
};

constexpr const char* kAdapters = "lora|qlora";

// torchtune by release (tags v0.1.0 .. v0.6.1 of pytorch/torchtune):
// recipes/configs/llama3_1/8B_{lora,qlora,full}_single_device.yaml (v0.3.0 on;
// before: llama3/8B_* from v0.1.1, llama2/7B_* in v0.1.0),
// recipes/lora_finetune_single_device.py, recipes/full_finetune_single_device.py.
// The builders' lora_dropout is 0.05 (torchtune/models/llama3/_model_builders.py
// lora_llama3_8b) until the configs set 0.0 in v0.3.0.
constexpr const char* kTorchtuneCfg = "torchtune recipes/configs/llama3_1/8B_";
constexpr const char* kTorchtuneOld = "torchtune v0.2.0 recipes/configs/llama3/8B_";
constexpr DefaultRow kTorchtuneDefaults[] = {
    {"train.precision", "bf16", kTorchtuneCfg, "*_single_device.yaml dtype: bf16 (weights, grads and states in bf16)",
     ""},
    {"train.grad_checkpointing", "full", kTorchtuneCfg, "*_single_device.yaml enable_activation_checkpointing: True",
     ""},
    {"train.activation_offload", false, kTorchtuneCfg, "*_single_device.yaml enable_activation_offloading: False", ""},
    {"train.attention", "sdpa", "", "torchtune/modules/attention_utils.py _sdpa_or_flex_attention (SDPA unless packed)",
     ""},
    {"train.micro_batch", 2, kTorchtuneCfg, "*_single_device.yaml batch_size: 2", ""},
    {"train.grad_accum", 64, kTorchtuneOld, "lora_single_device.yaml gradient_accumulation_steps: 64", "lora", "<0.4"},
    {"train.grad_accum", 16, kTorchtuneOld, "qlora_single_device.yaml gradient_accumulation_steps: 16", "qlora",
     "<0.4"},
    {"train.grad_accum", 8, kTorchtuneCfg, "*lora_single_device.yaml gradient_accumulation_steps: 8 (v0.4.0 on)",
     kAdapters, ">=0.4"},
    {"train.optimizer", "adamw_torch", kTorchtuneOld,
     "*lora_single_device.yaml optimizer: torch.optim.AdamW (no fused: the foreach kernel)", kAdapters, "<0.3.1"},
    {"train.optimizer", "adamw_torch_fused", kTorchtuneCfg,
     "lora_single_device.yaml optimizer: torch.optim.AdamW fused: True (v0.3.1 on)", kAdapters, ">=0.3.1"},
    {"train.lora.rank", 8, kTorchtuneCfg, "lora_single_device.yaml model.lora_rank: 8", kAdapters},
    {"train.lora.alpha", 16, kTorchtuneCfg, "lora_single_device.yaml model.lora_alpha: 16", kAdapters},
    {"train.lora.dropout", 0.05, "",
     "torchtune v0.2.0 torchtune/models/llama3/_model_builders.py lora_llama3_8b(lora_dropout=0.05), which "
     "the configs leave as it is",
     kAdapters, "<0.3"},
    {"train.lora.dropout", 0.0, kTorchtuneCfg, "lora_single_device.yaml model.lora_dropout: 0.0 (v0.3.0 on)", kAdapters,
     ">=0.3"},
    {"train.lora.targets", Def::list("q_proj|v_proj"), kTorchtuneOld,
     "lora_single_device.yaml lora_attn_modules [q_proj, v_proj], apply_lora_to_mlp: False", "lora", "<0.4"},
    {"train.lora.targets", Def::list("q_proj|v_proj|k_proj|o_proj|gate_proj|up_proj|down_proj"), kTorchtuneOld,
     "qlora_single_device.yaml lora_attn_modules [q_proj, v_proj, k_proj, output_proj], apply_lora_to_mlp: True",
     "qlora", "<0.4"},
    {"train.lora.targets", Def::list("q_proj|v_proj|o_proj|gate_proj|up_proj|down_proj"), kTorchtuneCfg,
     "*lora_single_device.yaml lora_attn_modules [q_proj, v_proj, output_proj], apply_lora_to_mlp: True (v0.4.0 on)",
     kAdapters, ">=0.4"},
    {"train.lora.adapter_fp32", false, "",
     "torchtune recipes/lora_finetune_single_device.py: the model, adapters included, is built under "
     "set_default_dtype(bf16)",
     kAdapters},
    {"train.quant.double_quant", true, "",
     "torchao nf4_tensor.py to_nf4(block_size=64, scaler_block_size=256): the scales are always quantised", "qlora"},
    {"train.quant.quantizer", "torchao", "",
     "torchtune torchtune/modules/peft/lora.py LoRALinear(quantize_base=True): to_nf4(linear.weight) "
     "(torchao dtypes/nf4tensor.py), and again when the checkpoint is copied in (NF4Tensor copy_)",
     "qlora"},
    // Issue 29: torchtune never calls PEFT's prepare_model_for_kbit_training;
    // the embeddings, norms and output stay in the bf16 the model is built in.
    {"train.quant.prepare_kbit", false, "",
     "torchtune recipes/lora_finetune_single_device.py _setup_model: the whole model is built under "
     "training.set_default_dtype(self._dtype) (bf16); only the LoRA linears' base weights become NF4, nothing is "
     "upcast",
     "qlora"},
    {"train.optimizer", "paged_adamw_32bit", "",
     "torchtune v0.1.0 recipes/configs/llama2/7B_full_low_memory.yaml optimizer: bitsandbytes.optim.PagedAdamW", "full",
     "<0.1.1"},
    {"train.optimizer", "adamw_bnb_8bit", "",
     "torchtune v0.1.1 recipes/configs/llama3/8B_full_single_device.yaml optimizer: bitsandbytes.optim.AdamW8bit",
     "full", ">=0.1.1,<0.2"},
    {"train.optimizer", "paged_adamw_8bit", kTorchtuneCfg,
     "full_single_device.yaml optimizer: bitsandbytes.optim.PagedAdamW8bit (v0.2.0 on)", "full", ">=0.2"},
    {"train.optimizer_in_backward", true, kTorchtuneCfg, "full_single_device.yaml optimizer_in_bwd: True", "full"},
    {"train.loss", "standard", kTorchtuneOld, "*_single_device.yaml loss: torch.nn.CrossEntropyLoss", "", "<0.3"},
    {"train.loss", "chunked", kTorchtuneCfg,
     "*_single_device.yaml loss: torchtune.modules.loss.CEWithChunkedOutputLoss (v0.3.0 on; 8 chunks, each "
     "upcast to fp32)",
     "", ">=0.3"},
    {"train.compile", false, kTorchtuneCfg,
     "*_single_device.yaml compile: False (with True the estimate stays eager mode's, not modelled)", ""},
    {"train.padding", "longest", kTorchtuneCfg,
     "*_single_device.yaml dataset.packed: False -> recipes/lora_finetune_single_device.py "
     "_setup_data collates with torchtune/data/_collate.py padded_collate_sft (pads to the longest "
     "sequence in the batch)",
     ""},
};
constexpr const char* kTorchtuneNotModelled[] = {
    "after v0.6.1, main (unreleased) uses LinearCrossEntropyLoss (the output projection inside the loss, by "
    "chunk of the tokens that are not ignored), which this table does not follow",
    "QLoRA quantises every attention and MLP linear to NF4 (torchtune PR #1485), as modelled; the embeddings "
    "and output stay bf16",
};

// torchtitan at b5bcd76c (torchtitan/models/llama3/config_registry.py,
// torchtitan/config/configs.py).
constexpr const char* kTorchtitanSrc = "torchtitan torchtitan/models/llama3/config_registry.py llama3_8b()";
constexpr DefaultRow kTorchtitanDefaults[] = {
    {"train.precision", "amp_bf16", "",
     "torchtitan torchtitan/config/configs.py dtype='float32', mixed_precision_param='bfloat16' (fp32 "
     "weights and states, bf16 compute)",
     ""},
    {"train.grad_checkpointing", "selective_op", kTorchtitanSrc,
     " activation_checkpoint=SelectiveAC (op level: layer input, every second matmul and the "
     "attention outputs saved)",
     ""},
    {"train.optimizer", "adamw_torch", "",
     "torchtitan 9dec370 torchtitan/config_manager.py --optimizer.fused store_true (default False: foreach)", "",
     "<0.1"},
    {"train.optimizer", "adamw_torch_fused", "",
     "torchtitan v0.1.0 torchtitan/config/job_config.py Optimizer.implementation = \"fused\"", "", ">=0.1"},
};
constexpr const char* kTorchtitanNotModelled[] = {
    "attention: FlexAttention by default (not modelled; estimated as SDPA)",
    "main after v0.2.2 (b5bcd76c) computes the output layer and the loss in 8 chunks (ChunkedLossWrapper); "
    "every release up to v0.2.2 takes F.cross_entropy on the full fp32 logits, as modelled",
};

// Answer.AI fsdp_qlora at 50efa1e (train.py main() and fsdp_main(); the
// commit benchmarks_03_2024.md's figures are read with). One script, no
// releases: "0.0" stands for that commit (release_table.h).
constexpr const char* kFsdpQloraMain = "fsdp_qlora train.py main(";
constexpr DefaultRow kFsdpQloraDefaults[] = {
    {"train.micro_batch", 1, kFsdpQloraMain, "batch_size: int = 1)", ""},
    {"train.seq_len", 512, kFsdpQloraMain, "context_length: int = 512)", ""},
    {"train.precision", "bf16", kFsdpQloraMain,
     "precision='bf16'): torch_dtype and compute_dtype bf16, mp_policy None, no autocast", ""},
    {"train.grad_checkpointing", "full", kFsdpQloraMain,
     "use_gradient_checkpointing=True): apply_activation_checkpointing on every decoder layer", ""},
    {"train.optimizer", "adamw_torch", "",
     "fsdp_qlora train.py get_optimizer: torch.optim.AdamW(model.parameters(), lr, betas=(0.9, 0.95), eps=1e-5, "
     "weight_decay) (no fused: the foreach kernel)",
     ""},
    {"train.attention", "sdpa", "", "fsdp_qlora train.py fsdp_main: attn_impl = 'sdpa'", ""},
    {"train.lora.rank", 64, kFsdpQloraMain, "lora_rank: int = 64)", kAdapters},
    {"train.lora.alpha", 16, kFsdpQloraMain, "lora_alpha: int = 16)", kAdapters},
    {"train.lora.dropout", 0.1, kFsdpQloraMain, "lora_dropout: float = 0.1)", kAdapters},
    {"train.lora.targets", Def::list("k_proj|q_proj|v_proj|up_proj|down_proj|gate_proj"), kFsdpQloraMain,
     "lora_target_modules='all'): k, q, v, up, down, gate_proj (no o_proj)", kAdapters},
    {"train.quant.double_quant", true, "",
     "fsdp_qlora train.py fsdp_main: replace_linear(..., Linear4bit, quant_type='nf4', quant_storage=torch_dtype) "
     "leaves bitsandbytes' compress_statistics=True",
     "qlora"},
    {"train.quant.prepare_kbit", false, "",
     "fsdp_qlora train.py: never calls prepare_model_for_kbit_training; embeddings, norms and lm_head are "
     "loaded in bf16 (load_and_quantize dtype=torch_dtype)",
     "qlora"},
    {"train.keeps_logits", true, "",
     "fsdp_qlora train.py fsdp_main: `output = model(...)`, `loss = output.loss`, `loss.backward()`, "
     "optimizer.step(), and only then `output = None` (\"Delete the output so more memory frees up before the "
     "next forward pass\"): the model's logits stay allocated through backward",
     ""},
};
constexpr const char* kFsdpQloraNotModelled[] = {
    "use_cpu_offload defaults to True (FSDP CPUOffload(offload_params=True)): set parallel.offload_params and "
    "parallel.offload_optimizer as the command line does; the layout (parallel.fsdp full_shard, FSDP1) is the "
    "request's",
    "the output also stays through optimizer.step() (the LoRA states' update is not the peak)",
    "train_type hqq_lora, custom_qlora and custom_lora (HQQLinear and the script's own LORA module) are not "
    "modelled: qlora and lora are bitsandbytes Linear4bit and PEFT",
};

// Megatron-LM at d98e8a64 (megatron/training/arguments.py, megatron/core configs).
constexpr DefaultRow kMegatronDefaults[] = {
    {"train.precision", "mixed_bf16", "",
     "Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh --bf16; megatron/training/arguments.py: "
     "--bf16 keeps fp32 main params and grads (accumulate_allreduce_grads_in_fp32)",
     ""},
    {"train.optimizer", "adamw_torch_fused", "",
     "Megatron-LM megatron/training/arguments.py --optimizer default 'adam' (Transformer Engine FusedAdam)", ""},
    {"train.grad_checkpointing", "none", "",
     "Megatron-LM megatron/core/transformer/transformer_config.py recompute_granularity=None", ""},
};
constexpr const char* kMegatronNotModelled[] = {
    "--use-distributed-optimizer is off by default: choose parallel.distributed_optimizer to shard the fp32 "
    "state",
    "attention backend chosen by Transformer Engine at run time",
};

// LitGPT at 26857050 (litgpt/finetune/lora.py setup()).
constexpr const char* kLitgptLora = "litgpt litgpt/finetune/lora.py setup(";
constexpr DefaultRow kLitgptDefaults[] = {
    {"train.lora.rank", 8, kLitgptLora, "lora_r=8)", kAdapters},
    {"train.lora.alpha", 16, kLitgptLora, "lora_alpha=16)", kAdapters},
    {"train.lora.dropout", 0.05, kLitgptLora, "lora_dropout=0.05)", kAdapters},
    {"train.lora.targets", Def::list("q_proj|v_proj"), kLitgptLora,
     "lora_query=True, lora_value=True; key, projection, mlp and head False)", kAdapters},
    {"train.lora.adapter_fp32", false, kLitgptLora, "): adapters take the model's precision", kAdapters},
    {"train.lora.fused_qkv", true, "",
     "litgpt litgpt/lora.py LoRAQKVLinear.forward: one lora_dropout and one lora_A over the fused q/k/v "
     "input (CausalSelfAttention.attn is one Linear)",
     kAdapters},
    {"train.precision", "amp_bf16", kLitgptLora,
     "precision=None) -> get_default_supported_precision: bf16-mixed (fp32 weights, bf16 autocast)",
     "full|lora|freeze"},
    {"train.precision", "bf16", kLitgptLora, "): --quantize needs bf16-true", "qlora"},
    {"train.optimizer", "adamw_torch", kLitgptLora, "optimizer='AdamW') -> torch.optim.AdamW", "full|lora|freeze"},
    {"train.optimizer", "paged_adamw_32bit", "",
     "litgpt litgpt/finetune/lora.py main(): bitsandbytes PagedAdamW with a bnb quantisation", "qlora"},
    {"train.quant.quantizer", "lightning_bitsandbytes", "",
     "litgpt litgpt/finetune/lora.py setup(): --quantize bnb.* -> lightning BitsandbytesPrecision "
     "(lightning_fabric/plugins/precision/bitsandbytes.py: every torch.nn.Linear, lm_head included, "
     "quantised from an fp16 copy)",
     "qlora"},
    {"train.grad_checkpointing", "none", kLitgptLora, "): activation checkpointing only with FSDP on several GPUs", ""},
    {"train.attention", "sdpa", "", "litgpt litgpt/model.py CausalSelfAttention.scaled_dot_product_attention", ""},
    {"train.keeps_previous_logits", true, "",
     "litgpt litgpt/finetune/lora.py fit(): `logits = model(input_ids, lm_head_chunk_size=128)` holds the "
     "previous step's logits and graph until the next model() returns (from 73baa2d5, 2024-03-15; lit-gpt ran "
     "the longest sample first, `get_batch(..., longest_seq_ix if iter_num == 0 else None)`, so its peak step had "
     "no previous graph)",
     "", ">=0.1"},
    {"train.keeps_logits", true, "",
     "litgpt litgpt/finetune/lora.py fit(): `logits = model(...)` is still referenced while fabric.backward(loss) "
     "runs (lit-gpt finetune/lora.py at 8641822 the same)",
     ""},
    {"train.outputs_fp32", true, "",
     "lightning src/lightning/fabric/wrappers.py _FabricModule.forward: output = "
     "self._precision.convert_output(output); plugins/precision/half.py HalfPrecision.convert_output (and "
     "bitsandbytes.py BitsandbytesPrecision's) converts every floating output to torch.get_default_dtype(), "
     "fp32: the logits chunks become fp32 copies (lightning 71aed751, pinned by lit-gpt 8641822; since 614dcdf5)",
     ""},
    {"train.keeps_fused_qkv", true, "",
     "litgpt litgpt/model.py CausalSelfAttention.forward: q, k, v split from the fused qkv output as views; "
     "with multi-head attention SDPA saves v as that view, so the whole qkv output stays for backward",
     ""},
    {"train.loss", "chunked", "",
     "litgpt litgpt/finetune/lora.py fit(): model(input_ids, lm_head_chunk_size=128) returns the logits in "
     "128-token chunks and litgpt/utils.py chunked_cross_entropy runs F.cross_entropy per chunk (lit-gpt "
     "538bd992 / 4af1a50f, 2023-06, through v0.5.13)",
     ""},
    {"train.loss_chunk_size", 128, "", "litgpt litgpt/finetune/lora.py fit(): lm_head_chunk_size=128", ""},
    {"train.loss_upcast", false, "",
     "litgpt litgpt/utils.py chunked_cross_entropy: F.cross_entropy on the chunks as they are (no .float(); "
     "under bf16-mixed autocast computes it in fp32)",
     ""},
    {"train.quant.prepare_kbit", false, "",
     "lightning lightning_fabric/plugins/precision/bitsandbytes.py BitsandbytesPrecision.convert_module: only "
     "the Linear layers are replaced; nothing is upcast",
     "qlora"},
};
constexpr const char* kLitgptNotModelled[] = {
    "with --quantize, loading replays bitsandbytes' quantiser, not Lightning's fp16-first one (load is not "
    "the peak)",
    "batches are padded to the longest sample (litgpt/data/base.py get_sft_collate_fn); train.padding stays "
    "max_length because the shorter-step replay is validated only with activation checkpointing (LitGPT "
    "checkpoints nothing on one GPU); choose train.padding longest for a reserved figure that keeps the "
    "cache of shorter batches",
};

// Unsloth at 015bdef0 (unsloth/models/llama.py FastLlamaModel), unsloth-zoo at ce232d6c.
constexpr const char* kUnslothPeft = "unsloth unsloth/models/llama.py FastLlamaModel.get_peft_model(";
constexpr DefaultRow kUnslothDefaults[] = {
    {"train.lora.rank", 16, kUnslothPeft, "r=16)", kAdapters},
    {"train.lora.alpha", 16, kUnslothPeft, "lora_alpha=16)", kAdapters},
    {"train.lora.dropout", 0.0, kUnslothPeft, "lora_dropout=0)", kAdapters},
    {"train.lora.targets", Def::list("q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj"), kUnslothPeft,
     "target_modules=[q,k,v,o,gate,up,down]_proj)", kAdapters},
    {"train.lora.adapter_fp32", true, "",
     "unsloth-zoo unsloth_zoo/training_utils.py prepare_model_for_training: lora_A/B cast to fp32", kAdapters},
    {"train.grad_checkpointing", "full", kUnslothPeft, "use_gradient_checkpointing='unsloth')", ""},
    {"train.activation_offload", false, "",
     "unsloth before 2024.4: use_gradient_checkpointing=True is the plain HF checkpointing (no "
     "Unsloth_Offloaded_Gradient_Checkpointer yet)",
     "", "<2024.4"},
    {"train.activation_offload", true, "",
     "unsloth unsloth/models/_utils.py: 'unsloth' checkpointing keeps each layer's input in pinned host "
     "memory (Unsloth_Offloaded_Gradient_Checkpointer, 4474e4bc, 2024.4)",
     "", ">=2024.4"},
    {"train.loss", "standard", "",
     "unsloth before 2024.11.9: CausalLM_fast_forward returns the 16-bit logits and fast_cross_entropy_loss "
     "(kernels/cross_entropy_loss.py, modelled with train.kernels unsloth) takes them",
     "", "<2024.11.9"},
    {"train.loss", "fused", "",
     "unsloth unsloth/models/llama.py CausalLM_fast_forward: fused linear cross-entropy, no logits (cut cross "
     "entropy through unsloth-zoo from 549c5be6, 2024.11.9; unsloth_zoo fused_losses from 2025.8)",
     "", ">=2024.11.9"},
    {"train.optimizer", "adamw_bnb_8bit", "",
     "unsloth studio/backend/assets/configs/model_defaults/default.yaml optim: adamw_8bit (its recipes)", ""},
    {"train.quant.double_quant", true, "",
     "unsloth unsloth/models/llama.py FastLlamaModel.from_pretrained BitsAndBytesConfig(bnb_4bit_use_"
     "double_quant=True)",
     "qlora"},
    // Only the adapters are cast (to fp32); embeddings, norms and lm_head
    // keep the loaded 16-bit dtype, unlike PEFT's
    // prepare_model_for_kbit_training (same in unsloth 2024.1,
    // unsloth/models/_utils.py prepare_model_for_kbit_training at
    // 2f55935f: requires_grad only, no casts).
    {"train.quant.prepare_kbit", false, "",
     "unsloth-zoo unsloth_zoo/training_utils.py prepare_model_for_training: only lora_A/B upcast", "qlora"},
    {"train.kernels", "unsloth", "",
     "unsloth unsloth/models/llama.py FastLlamaModel.patch_peft_model: LoRA_MLP / LoRA_QKV / LoRA_W "
     "(kernels/fast_lora.py) when lora_dropout == 0 and bias == 'none'; fast_rms_layernorm, in-place RoPE, "
     "fast_cross_entropy_loss",
     ""},
};
constexpr const char* kUnslothNotModelled[] = {
    "below a max sequence length of 512, 'unsloth' checkpointing does not offload",
    "attention: FlashAttention 2 when installed, else xformers, else SDPA (utils/attention_dispatch.py "
    "select_attention_backend; estimated as the request's attention)",
    "the fused LoRA functions are modelled as for Llama layers on every gated-MLP family; Unsloth's exceptions "
    "(biased q/k/v as in Qwen2 left unpatched, Falcon-H1's MLP) are not",
};

// Axolotl at 067b021c (src/axolotl/utils/schemas/*.py, src/axolotl/loaders/*.py).
constexpr const char* kAxolotlSchemas = "axolotl src/axolotl/utils/schemas/";
constexpr DefaultRow kAxolotlDefaults[] = {
    {"train.optimizer", "adamw_torch_fused", kAxolotlSchemas, "training.py HyperparametersConfig optimizer", ""},
    {"train.precision", "bf16", kAxolotlSchemas, "config.py bf16 'auto': the model loads in bf16", ""},
    {"train.grad_checkpointing", "none", kAxolotlSchemas, "config.py AxolotlInputConfig gradient_checkpointing", ""},
    {"train.activation_offload", false, kAxolotlSchemas, "config.py activation_offloading", ""},
    {"train.lora.dropout", 0.0, kAxolotlSchemas, "peft.py LoraConfig.lora_dropout", kAdapters},
    {"train.lora.targets", "all-linear", "",
     "axolotl src/axolotl/loaders/adapter.py _build_peft_lora_config (lora_target_linear: true in its "
     "examples)",
     kAdapters},
    {"train.lora.adapter_fp32", true, "", "axolotl src/axolotl/loaders/adapter.py peft_autocast_adapter_dtype",
     kAdapters},
    {"train.quant.double_quant", true, "", "axolotl src/axolotl/loaders/model.py BitsAndBytesConfig for qlora",
     "qlora"},
    // prepare_model_for_kbit_training upcasts every non-4-bit parameter, then
    // _configure_embedding_dtypes casts the norms ("norm" in the name) and the
    // embedding modules (embed_tokens, lm_head) back to torch_dtype for an
    // adapter (needs_fa2_dtype), so nothing stays fp32.
    {"train.quant.prepare_kbit", false, "",
     "axolotl src/axolotl/loaders/model.py _configure_embedding_dtypes: after prepare_model_for_kbit_training, "
     "_convert_embedding_modules_dtype(dist_dtype=cfg.torch_dtype) puts norms, embed_tokens and lm_head back in "
     "bf16",
     "qlora"},
};
constexpr const char* kAxolotlNotModelled[] = {
    "lora_r and lora_alpha have no default (the config must set them); the request's own apply",
    "sample packing and its Triton LoRA kernels are not modelled",
};

// LLaMA-Factory at ff6d4d12 (src/llamafactory/hparams/*.py).
constexpr const char* kLlamaFactoryHp = "LLaMA-Factory src/llamafactory/hparams/";
constexpr DefaultRow kLlamaFactoryDefaults[] = {
    {"train.lora.rank", 8, kLlamaFactoryHp, "finetuning_args.py LoraArguments.lora_rank", kAdapters},
    {"train.lora.alpha", 16, kLlamaFactoryHp, "finetuning_args.py LoraArguments.lora_alpha (None -> 2 x rank)",
     kAdapters},
    {"train.lora.dropout", 0.0, kLlamaFactoryHp, "finetuning_args.py LoraArguments.lora_dropout", kAdapters},
    {"train.lora.targets", "all-linear", kLlamaFactoryHp, "finetuning_args.py LoraArguments.lora_target 'all'",
     kAdapters},
    {"train.lora.adapter_fp32", true, "",
     "LLaMA-Factory src/llamafactory/model/adapter.py init_adapter: trainable params cast to fp32", kAdapters},
    {"train.optimizer", "adamw_torch_fused", kLlamaFactoryHp, "training_args.py (transformers' default optim)", ""},
    {"train.grad_checkpointing", "full", kLlamaFactoryHp, "model_args.py disable_gradient_checkpointing=False", ""},
    {"train.activation_offload", false, kLlamaFactoryHp, "model_args.py use_unsloth_gc=False", ""},
    {"train.loss", "standard", kLlamaFactoryHp, "model_args.py enable_liger_kernel=False", ""},
    {"train.quant.double_quant", true, kLlamaFactoryHp, "model_args.py double_quantization=True", "qlora"},
    // Issue 29: LLaMA-Factory never calls PEFT's prepare_model_for_kbit_training
    // (git grep at ff6d4d12 finds no call); its own
    // model/model_utils/checkpointing.py prepare_model_for_training upcasts
    // the norms only with upcast_layernorm (default False).
    {"train.quant.prepare_kbit", false, kLlamaFactoryHp,
     "model_args.py upcast_layernorm=False; model/model_utils/checkpointing.py prepare_model_for_training (no "
     "prepare_model_for_kbit_training)",
     "qlora"},
};
constexpr const char* kLlamaFactoryNotModelled[] = {
    "upcast_layernorm and upcast_lmhead_output are off by default (as modelled)",
};

constexpr DefaultRow kDeepspeedDefaults[] = {
    {"train.precision", "mixed_bf16", "",
     "DeepSpeed deepspeed/runtime/bf16_optimizer.py: bf16.enabled keeps fp32 master weights and states", ""},
};
constexpr const char* kDeepspeedNotModelled[] = {
    "the ZeRO stage, offload and buckets come from parallel.* or a pasted DeepSpeed config",
};

template <size_t N, size_t M>
Framework make(const char* name, const char* label, const DefaultRow (&rows)[N], const char* const (&not_modelled)[M]) {
  Framework fw{name, label, {}, {not_modelled, not_modelled + M}};
  fw.defaults.reserve(N);
  for (const DefaultRow& r : rows) {
    fw.defaults.push_back(
        {r.path, r.value.to_json(), std::string(r.prefix) + r.source, detail::split_bars(r.methods), r.releases});
  }
  return fw;
}

std::vector<Framework> build() {
  return {
      // The request fields' own defaults are HF Trainer's, PEFT's and
      // bitsandbytes' (fields.h cites each).
      // hf's label is shared with the first-visit module (release_table.h).
      {defaults::kFramework, releases::kHfLabel, {}, {}},
      make("torchtune", "torchtune", kTorchtuneDefaults, kTorchtuneNotModelled),
      make("litgpt", "LitGPT", kLitgptDefaults, kLitgptNotModelled),
      make("unsloth", "Unsloth", kUnslothDefaults, kUnslothNotModelled),
      make("axolotl", "Axolotl", kAxolotlDefaults, kAxolotlNotModelled),
      make("llama_factory", "LLaMA-Factory", kLlamaFactoryDefaults, kLlamaFactoryNotModelled),
      make("torchtitan", "torchtitan", kTorchtitanDefaults, kTorchtitanNotModelled),
      make("megatron", "Megatron-LM", kMegatronDefaults, kMegatronNotModelled),
      make("deepspeed", "DeepSpeed (its own training loop)", kDeepspeedDefaults, kDeepspeedNotModelled),
      make("fsdp_qlora", "Answer.AI fsdp_qlora (train.py)", kFsdpQloraDefaults, kFsdpQloraNotModelled),
  };
}

}  // namespace

const std::vector<Framework>& frameworks() {
  static const std::vector<Framework> kFrameworks = build();
  return kFrameworks;
}

const Framework* find_framework(const std::string& name) {
  for (const auto& f : frameworks()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::vector<FrameworkDefault> defaults_for(const Framework& fw, const std::string& method) {
  std::vector<FrameworkDefault> out;
  for (const FrameworkDefault& d : fw.defaults) {
    if (d.methods.empty() || std::find(d.methods.begin(), d.methods.end(), method) != d.methods.end()) {
      out.push_back(d);
    }
  }
  return out;
}

}  // namespace vram

// Private: the pieces a training estimate is assembled from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vram/model.h"
#include "vram/optimizers.h"
#include "vram/request.h"

namespace vram::memory {

// Element sizes of one precision recipe (research/memory-internals.md §3.4).
struct Dtypes {
  int64_t weight = 2;          // base weights as stored on the GPU
  int64_t grad = 2;            // .grad of a trainable base weight
  int64_t state = 2;           // torch optimizer state element (zeros_like(param) or master)
  int64_t master = 0;          // fp32 master copy per trainable param (mixed_bf16)
  int64_t compute = 2;         // matmul outputs / saved activations
  int64_t residual = 2;        // residual stream between layers
  bool autocast = false;       // torch.autocast active: per-op casts of fp32 inputs
  int64_t autocast_cache = 0;  // cached low-precision weight copies per Linear param
  int64_t adapter = 4;         // LoRA adapter weights (and their grads)
  int64_t frozen = 2;          // frozen high-precision weights (QLoRA's non-4-bit ones)
  // FSDP gathers the parameters in a 16-bit param_dtype: under autocast the
  // forward still sees only 16-bit weights, so nothing it computes is fp32
  // but what autocast itself upcasts (trainable.cpp dtypes_for).
  bool low_precision_params = false;
};

Dtypes dtypes_for(const Request& req);

// Which parameters train. One entry per ParamGroup of the model, same order.
struct GroupPlan {
  bool trainable = false;           // base weight trains (full / freeze)
  int64_t trainable_instances = 0;  // instances of the group that train
  bool quantized = false;           // QLoRA 4-bit Linear
  bool lora = false;                // LoRA adapter attached
  int64_t lora_params = 0;          // adapter parameters, all instances
};

// LoRA on the output layer (PEFT target_modules "lm_head"; LitGPT lora_head,
// torchtune apply_lora_to_output): lora_A [r, in] and lora_B [out, r] around
// the nn.Linear that get_output_embeddings() returns. With tied embeddings
// PEFT still wraps that Linear (the shared weight stays frozen), so the
// adapter exists whether or not the head has a ParamGroup of its own.
struct HeadLora {
  bool targeted = false;  // the request names the head among its targets
  bool on = false;        // and this rank holds it (the last pipeline stage)
  bool tied = false;      // the head's weight is the input embedding's
  std::string module;     // "lm_head" (GPT-NeoX: "embed_out")
  int64_t in = 0;         // in_features (hidden; OPT: word_embed_proj_dim)
  int64_t out = 0;        // out_features: the vocabulary (vocab / tp on a tensor-parallel rank)
  int64_t params = 0;     // r (in + out), + out with DoRA's magnitude vector
};

struct TrainablePlan {
  std::vector<GroupPlan> groups;
  int64_t base_trainable = 0;  // trainable base parameters
  int64_t lora_params = 0;     // adapter parameters
  // Lowest text layer that holds a trainable parameter (activations below it
  // are not saved for backward); 0 when embeddings train or inputs need grad.
  int64_t first_grad_layer = 0;
  bool any_text_trainable = false;
  bool vision_needs_grad = false;
  std::vector<std::string> lora_targets;  // resolved target names
  HeadLora head_lora;                     // counted in lora_params when on
};

// Resolves method, LoRA targets and frozen modules. Throws Failure naming the
// request field on a target that matches nothing. `holds_head`: this rank
// holds the output layer (the last pipeline stage).
TrainablePlan plan_trainable(const Request& req, bool holds_head = true);

// One saved tensor class of a layer: bytes per token, and whether it belongs to
// the attention score path (dropped by selective recomputation).
struct SavedItem {
  std::string name;
  double bytes_per_token = 0;
  bool score_path = false;
};

// One step of a layer's forward in source order, for the allocator replay:
// a tensor the layer keeps for backward, a temporary placed in `slot`, or the
// release of the temporary in `slot` (which may have been placed by the layer
// below), or a tensor model() returns (held until the loss has been
// computed). Sizes are bytes per token plus fixed bytes (a dequantised weight).
struct ForwardOp {
  enum class Kind { kKeep, kTemp, kRelease, kReturn };
  Kind kind = Kind::kKeep;
  double bytes_per_token = 0;
  int64_t bytes_fixed = 0;
  int slot = -1;
};

struct LayerActivations {
  std::vector<SavedItem> items;
  // The layer's forward as the allocator sees it, when it is known tensor by
  // tensor (Unsloth's patched Llama layers); its kKeep sizes add up to
  // per_token(). Empty otherwise: the items are replayed as one allocation each.
  std::vector<ForwardOp> ops;
  double per_token() const;
  double per_token_without_scores() const;
};

// Saved tensors of one transformer layer of `stack` for training, bytes per
// token (sequence length `seq` for the s-dependent eager terms).
LayerActivations layer_activations(const Request& req, const LayerStack& stack, const TrainablePlan& plan,
                                   const Dtypes& dt, int64_t seq, bool moe_layer, bool layer_trains);

// Bytes per token of one layer's 4-bit Linear inputs that bitsandbytes <
// 0.43.2 keeps in MatMul4Bit's ctx.tensors (train.quant.saves_input): a ctx
// attribute, not a saved variable, so backward does not release it and it
// lives as long as the graph does. 0 when nothing is 4-bit or the input is
// not kept.
double quant_kept_inputs(const Request& req, const LayerStack& stack, const TrainablePlan& plan, const Dtypes& dt);

// Op-level selective activation checkpointing (torchtitan
// activation_checkpoint mode "selective", selective_ac_option "op"): what one
// checkpointed layer keeps, bytes per token, as the allocations it makes.
// Returns an empty list for layers the rule is not written for (MLA, MoE,
// state-space), which callers report as an error naming the field.
std::vector<SavedItem> op_sac_layer(const LayerStack& stack, const Dtypes& dt, AttentionImpl attention, bool moe_layer);

struct Piece;  // memory/timeline.h

// Backward-time temporaries of one layer, bytes per token: the hidden-state
// gradients and the attention kernel's workspaces. `tensors` (if given)
// gets them as the allocations they are for `tokens` tokens, in the order
// backward makes them.
double layer_backward_transient(const Request& req, const LayerStack& stack, const Dtypes& dt, int64_t seq_len,
                                int64_t tokens = 0, std::vector<Piece>* tensors = nullptr);

}  // namespace vram::memory

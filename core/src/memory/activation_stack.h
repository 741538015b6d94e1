// Private memory term: the saved activations of the layer stack over one
// micro-batch — per layer by kernel (saved_activations.cpp), under gradient
// checkpointing, activation offload and the pipeline's in-flight
// micro-batches — plus the final norm / lm_head inputs, the vision tower and
// one layer's backward temporaries (research/memory-internals.md §4).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memory/model_state.h"
#include "memory/recipe.h"
#include "memory/timeline.h"
#include "vram/request.h"

namespace vram::memory {

// Rounds a per-token byte figure times tokens up to whole bytes, checked
// (bytes.h): above limits::kMaxBytes it fails naming `what`.
int64_t to_bytes(double x, std::string_view what = "a memory figure");

// Where the stack sits in a pipeline: the last stage holds the head, and
// `in_flight_num / in_flight_den` micro-batches of activations.
struct StagePosition {
  bool last = true;
  int64_t in_flight_num = 1;
  int64_t in_flight_den = 1;
};

struct ActivationStack {
  int64_t first_grad_layer = 0;  // layers below it save nothing
  int64_t saved_dense = 0;       // dense layers that save activations
  int64_t saved_moe = 0;         // MoE layers that save activations (the top ones)
  int64_t layers = 0;            // all saved layers, after in-flight micro-batches
  int64_t layer_dense = 0;       // one dense layer (checkpointed: its input)
  int64_t layer_moe = 0;         // one MoE layer
  int64_t one_layer = 0;         // one layer re-run under full checkpointing
  int64_t layer_max = 0;         // the largest layer (offload keeps two resident)
  int64_t head = 0;              // final norm and lm_head inputs
  int64_t vision = 0;            // vision tower
  int64_t image_kv = 0;          // image cross-attention inputs, keys and values (Mllama)
  int64_t per_layer_inputs = 0;  // Gemma 3n: per-layer embeddings and AltUp's stacking around the layers
  bool offload = false;          // saved tensors in pinned host memory
  int64_t backward_temp = 0;     // one layer's backward temporaries (+ one dequantised 4-bit weight)
  int64_t dx = 0;                // the hidden-state gradient flowing down
  // One layer's backward as the allocator sees it, in the order it is
  // made: the re-run layer (one_layer), backward_temp's tensors (the
  // dequantised weight first), dx.
  std::vector<Piece> backward_pieces;
  // train.keeps_previous_logits: the previous step's logits, and the 4-bit
  // Linear inputs its graph still holds (bitsandbytes < 0.43.2 ctx.tensors),
  // alive through the next forward; `logits` is also the new step's logits.
  int64_t prev_kept_inputs = 0;
  int64_t logits = 0;
  std::vector<Piece> dense_pieces;  // one dense layer's saved tensors
  std::vector<Piece> moe_pieces;    // one MoE layer's saved tensors
  // One dense layer's forward in source order (LayerActivations::ops in
  // bytes for this micro-batch), when it is known tensor by tensor: the
  // timeline then allocates each kept tensor and temporary as the layer
  // does, so the allocator replay sees the temporaries' freed blocks split
  // by the next tensors. Its kKeep bytes add up to layer_dense. Empty: each
  // layer is one allocation of dense_pieces.
  struct Op {
    ForwardOp::Kind kind = ForwardOp::Kind::kKeep;
    int64_t bytes = 0;
    int slot = -1;
  };
  std::vector<Op> layer_ops;
  // train.returns_kv_cache (Unsloth before 2024.2): the keys and values
  // model() returns, alive until the loss has been computed: those not among
  // the saved tensors (kv-head width, when attention is trained on K and V
  // expanded to every head; in layer_ops as kReturn, else one tensor here),
  // and Accelerate's fp32 copy of every one of them under fp16 / bf16.
  int64_t returned_kv = 0;
  int64_t returned_kv_fp32 = 0;  // kv_fp32_pieces' sum
  std::vector<Piece> kv_fp32_pieces;
  std::string formula;

  // GPU-resident bytes of `stack_bytes` of saved layers (offload keeps the
  // layer being computed and the one being prefetched).
  int64_t resident(int64_t stack_bytes) const;
  // Everything saved at the end of forward.
  int64_t total() const { return resident(layers) + head + vision + image_kv + per_layer_inputs; }
};

// `micro_batch` sequences of `seq_len` tokens (searches and padded steps vary
// them without copying the request).
ActivationStack activation_stack(const Request& req, const TrainablePlan& plan, const Dtypes& dt, const StateSizes& sz,
                                 const StagePosition& pos, int64_t micro_batch, int64_t seq_len);

}  // namespace vram::memory

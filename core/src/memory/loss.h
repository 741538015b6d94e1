// Private memory term: logits and cross-entropy buffers of the last stage
// (transformers loss_utils.py; Liger fused linear cross-entropy;
// research/memory-internals.md §3.1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/recipe.h"
#include "memory/timeline.h"
#include "vram/request.h"

namespace vram::memory {

struct LossBuffers {
  int64_t forward = 0;           // live while the loss is computed
  int64_t backward = 0;          // live during the loss backward
  int64_t early_head_grads = 0;  // lm_head grad a fused loss allocates in forward
  int64_t logits_elem = 2;       // bytes per logit
  std::string formula;
  // The separate tensors behind `forward` and `backward`, for the allocator.
  std::vector<Piece> forward_pieces;
  std::vector<Piece> backward_pieces;
  // LoRA on the head: the logits-sized tensors of its forward (before the
  // loss) and of its backward (after the loss backward), 0 without it.
  int64_t head_lora_forward = 0;
  int64_t head_lora_backward = 0;
  std::vector<Piece> head_lora_forward_pieces;
  std::vector<Piece> head_lora_backward_pieces;
};

// `grads_head` is the lm_head + final norm gradient on this rank; `last`
// whether this rank computes the loss; `micro_batch` sequences of
// `seq_len` tokens; `head` the LoRA adapter on the output layer, if any.
LossBuffers loss_buffers(const Request& req, const Dtypes& dt, int64_t grads_head, bool last, int64_t micro_batch,
                         int64_t seq_len, const HeadLora& head = {});

}  // namespace vram::memory

// Private memory term: the model state of one rank — weights by precision and
// quantisation, LoRA adapters, the autocast weight cache, fp32 master
// weights, gradients, optimizer states and step temporaries — and how
// data-parallel sharding and offload divide it (research/memory-internals.md
// §3.4, §5; ZeRO paper §5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/recipe.h"
#include "memory/sharding.h"
#include "memory/timeline.h"
#include "vram/optimizers.h"
#include "vram/request.h"
#include "vram/result.h"

namespace vram::memory {

// Bytes of one 4-bit tensor of `numel` values (bitsandbytes quantize_4bit).
int64_t nf4_bytes(int64_t numel, const QuantOptions& q);

// Optimizer state bytes for one tensor of `numel` values (rows x cols when 2-D).
int64_t state_bytes(const OptimizerInfo& o, int64_t state_elem, int64_t numel, int64_t rows, int64_t cols);

struct StateSizes {
  int64_t weights = 0;            // high-precision weights (and 4-bit layers' biases)
  int64_t weights_quantized = 0;  // 4-bit Linear weights with their absmax
  int64_t quantized_packed = 0;   // of which the packed 4-bit codes (the Params4bit data; absmax apart)
  int64_t lora_weights = 0;
  int64_t autocast_cache = 0;
  int64_t master = 0;
  int64_t grads = 0;
  int64_t states = 0;
  int64_t opt_temp = 0;
  int64_t largest_trainable_tensor = 0;
  // Gradients by position in backward
  int64_t grads_head = 0;          // lm_head + final norm (first to appear)
  int64_t grads_layer = 0;         // one text layer (average over layers)
  int64_t grads_embed = 0;         // input embeddings (last)
  int64_t grads_other = 0;         // vision tower, projector
  int64_t qlora_dequant = 0;       // one dequantised 4-bit weight during backward
  int64_t head_dequant = 0;        // a 4-bit lm_head dequantised, next to the logits (Lightning quantiser)
  int64_t weights_persistent = 0;  // weights of tensors under ZeRO-3's persistence threshold
  int64_t lora_persistent = 0;     // adapter tensors under the same threshold
  int64_t trainable = 0;           // trainable parameters (base + adapters)
};

// Which groups a model_state() call covers: routed experts are sharded over
// the expert-data-parallel group, everything else over data parallel.
enum class Part { kAll, kDense, kExperts };

// The whole (unsharded) state of the groups in `part` on one rank.
StateSizes model_state(const Request& req, const TrainablePlan& plan, const Dtypes& dt, const OptimizerInfo& opt,
                       Part part = Part::kAll);

// The state one rank holds after data-parallel sharding and offload.
struct RankState {
  StateSizes sz;
  int64_t grad_partitions = 0;  // DeepSpeed / Megatron fp32 gradient shards
  int64_t trainable_local = 0;  // trainable parameters whose state this rank shards
  bool has_experts = false;
  bool offloaded = false;  // optimizer step on the CPU (offload_optimizer)
  int64_t grad_elem = 2;   // bytes per gradient element (Megatron fp32 main grads: 4)
  std::string shard_note;  // " / 8 (ZeRO-2)": how a sharded term was divided
  // Of sz.grads: the frozen share of FSDP1 units that mix frozen and
  // trainable parameters (parallel_buffers.h fsdp1_mixed_unit_grads).
  int64_t mixed_unit_grads = 0;
};

// `req` is the rank's view of the model, `par` the layout as the user gave it.
RankState rank_state(const Request& req, const ParallelOptions& par, const TrainablePlan& plan, const Dtypes& dt,
                     const OptimizerInfo& opt, const Sharding& sh);

// The model state as the caching allocator sees it: one allocation per
// parameter tensor where this rank holds whole tensors, one flat buffer per
// rank where the state is sharded (FSDP FlatParameter, DeepSpeed's flat
// partitions: no pieces, the tensor's bytes are one allocation).
struct StatePieces {
  std::vector<Piece> weights;
  std::vector<Piece> master;
  std::vector<Piece> states;
  std::vector<Piece> opt_temp;
  std::vector<Piece> grads_head;   // lm_head and final norm
  std::vector<Piece> grads_layer;  // one decoder layer
  std::vector<Piece> grads_rest;   // embeddings, vision tower, projector
  // 4-bit weights in load order (one entry per group and round of
  // instances): `count` weights of `numel` values, each quantised on the GPU
  // into `packed` bytes (codes + scales).
  struct QuantLoad {
    int64_t numel = 0;
    int64_t packed = 0;
    int64_t count = 1;
  };
  std::vector<QuantLoad> quant_load;
  // The 4-bit weights of one decoder layer: quant_load's first entries.
  size_t quant_groups = 0;
};
StatePieces state_pieces(const Request& req, const TrainablePlan& plan, const Dtypes& dt, const OptimizerInfo& opt,
                         const Sharding& sh, const RankState& rs);

// The state's tensors, as loaded before the first step: weights, master
// weights and optimizer states (managed when the optimizer is paged), fp32
// gradient partitions. States are placed at load, as DeepSpeed and Megatron
// allocate them; torch optimizers create theirs at the first step()
// (AdamW _init_group), but replaying that order over-estimated the PEFT
// full fine-tuning row of fixtures/measured.json by 8.3 % (39.21 vs 36.20
// GiB, against -3.1 % placed at load) and made reserved memory fall with a
// larger micro-batch.
struct StateTensors {
  Timeline::Id weights = -1;
  Timeline::Id states = -1;
};
// `quant` says who quantises the 4-bit base (bitsandbytes' kernel or
// torchao's NF4Tensor, chunked or not) and so which load temporaries occur;
// `placed` weights are on the GPU already (FSDP1's shards).
StateTensors load_state(Timeline& tl, const OptimizerInfo& opt, const RankState& rs, const StatePieces& pieces,
                        const QuantOptions& quant, int64_t placed = 0);

// The weights, master, gradients, states and temporaries components.
void state_components(std::vector<Component>& out, const Request& req, const ParallelOptions& par,
                      const TrainablePlan& plan, const Dtypes& dt, const OptimizerInfo& opt, const Sharding& sh,
                      const RankState& rs);

}  // namespace vram::memory

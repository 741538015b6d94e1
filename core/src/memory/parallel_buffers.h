// Private memory term: the buffers a multi-GPU layout adds on one rank —
// parameters gathered for compute (ZeRO-3, FSDP), gradient communication
// buckets (DDP, DeepSpeed, FSDP), context-parallel K/V exchange and the
// expert-parallel token dispatch (research/memory-internals.md §2.4, §5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/model_state.h"
#include "memory/recipe.h"
#include "memory/sharding.h"
#include "memory/timeline.h"
#include "vram/request.h"

namespace vram::memory {

// FSDP2's unshard buffers by stream (torch/distributed/_composable/fsdp,
// torch 2.5-2.6: _fsdp_collectives.py foreach_all_gather /
// _get_param_all_gather_inputs, _fsdp_param_group.py FSDPCommContext).
// On the all-gather copy-in stream: the param_dtype copy of a unit's local
// shards (one flat buffer, freed once copied in) and the unit's flat
// all-gather output, which in forward is held (AllGatherState) until the next
// unit's copy-out. On the default stream: each parameter's unsharded tensor
// (FSDPParam.alloc_all_gather_outputs at copy-out), freed when the unit
// reshards; the root unit stays unsharded from forward to the end of
// backward, a block one layer at a time (+ one prefetched flat output).
struct Fsdp2Unshard {
  bool on = false;
  std::vector<Piece> root;   // the root unit's unsharded parameters, one piece per tensor
  std::vector<Piece> layer;  // one decoder layer's unsharded parameters
  int64_t root_bytes = 0, layer_bytes = 0;
  int64_t root_flat = 0, layer_flat = 0;  // flat all-gather outputs (copy-in stream)
  int64_t root_cast = 0, layer_cast = 0;  // param_dtype copies of the local shards (copy-in stream; 0 without a cast)
};

// FSDP1 (torch.distributed.fsdp.FullyShardedDataParallel, torch 2.2-2.5) on
// one rank, unit by unit: the decoder layers and the root (embeddings, final
// norm, lm_head). Construction, with the model on the CPU or the meta device
// (accelerate's FSDP, Answer.AI fsdp_qlora train.py low_memory): each unit
// is moved to the GPU (_init_utils.py _move_module_to_device), flattened
// into a new FlatParameter (_flat_param.py flatten_tensors_into_flat_param:
// the original parameters become views and are freed) and sharded
// (FlatParamHandle.shard: flat_param.set_(a clone of this rank's chunk)),
// so the caching allocator keeps the unsharded blocks on the default stream;
// NO_SHARD keeps the flat parameter whole; CPUOffload(offload_params=True)
// then moves the shard to the CPU (_init_param_handle_from_params
// flat_param_to(cpu)). In training the unsharded flat parameters are
// allocated on the unshard stream (_runtime_utils.py _unshard: `with
// state._device_handle.stream(unshard_stream): handle.unshard()`), whose
// pool the default stream cannot reuse; under CPU offload pre_unshard copies
// the CPU shard to the GPU on the pre-unshard stream first
// (FlatParamHandle.pre_unshard: flat_param_to(self.device)), a copy freed
// once the all-gather has read it.
struct Fsdp1Units {
  bool on = false;
  int64_t layers = 0;           // decoder-layer units
  int64_t layer_bytes = 0;      // one layer unit's parameters as built (model dtype; packed 4-bit codes)
  int64_t root_bytes = 0;       // the root unit's
  int64_t shards = 1;           // ranks a unit is sharded over (1: NO_SHARD)
  bool offload = false;         // CPUOffload(offload_params=True)
  std::vector<Piece> gathered;  // unshard stream: the root unit, the current and the prefetched layer
  int64_t built = 0;            // bytes per parameter as built (model dtype; 4-bit codes: packed bytes)
  bool sync = false;            // FullyShardedDataParallel(sync_module_states=True)
};

// Each unit's parameters in module order (m.groups), bytes as built: moved to
// the GPU one by one (_init_utils.py _move_states_to_device: `param.data =
// param.to(device)`) and, with sync_module_states, broadcast from rank 0 in
// buckets (fsdp1_construct). A decoder layer's: the routed-expert or the
// dense MLP set, whichever is larger, as unit_params counts it.
struct Fsdp1Tensors {
  std::vector<int64_t> layer, root;
};
Fsdp1Tensors fsdp1_tensors(const ModelSpec& m, const TrainablePlan& plan, int64_t built);

// The flat copies sync_module_states makes of one unit's parameters
// (`tensors`, in module order), as torch 2.2 makes them:
// torch/distributed/fsdp/_init_utils.py _sync_module_params_and_buffers calls
// _sync_params_and_buffers(..., PARAM_BROADCAST_BUCKET_SIZE = 250 MiB, src=0),
// which is c10d broadcast_coalesced (torch/csrc/distributed/c10d/comm.cpp):
// compute_bucket_assignment_by_size (reducer.cpp) closes a bucket once it
// holds >= 250 MiB, each bucket is one BroadcastWork whose
// flatten_dense_tensors copies its tensors into one flat tensor (a bucket of
// one tensor is a view, no copy), and at most two are in flight (the older is
// finished and freed before a third starts; its block stays out of the pool
// until the broadcast completes, which the unit does not wait for:
// fsdp1_construct). Each entry is one flat copy's bytes; 0 stands for a
// bucket of one tensor.
std::vector<int64_t> broadcast_buckets(const std::vector<int64_t>& tensors);

// Emits FSDP1's construction (Fsdp1Units) into the load part of `tl`; returns
// the bytes of shards it leaves on the GPU, at most `budget` (the rank's
// weights, which the load then allocates less of).
int64_t fsdp1_construct(Timeline& tl, const Fsdp1Units& u, const Fsdp1Tensors& tensors, int64_t budget);

// FSDP1's LoRA units as the optimizer sees them. With
// use_orig_params=False a FlatParameter's tensors must agree on
// requires_grad (torch 2.2 _flat_param.py _validate_tensors_to_flatten), so
// a LoRA job wraps every adapter matrix as its own unit: fsdp_qlora train.py
// at 50efa1e get_wrapping_policy (lambda_policy_fn: a leaf module whose
// weight requires grad), torchtune utils/_distributed.py
// lora_fsdp_wrap_policy, PEFT utils/other.py fsdp_auto_wrap_policy. Each
// unit's shard is one tensor of ceil(numel / ranks) values
// (FlatParamHandle._get_shard), and so are its gradient
// (_runtime_utils.py _get_reduce_scatter_tensors: `new_sharded_grad =
// torch.empty_like(chunks[0])`), its optimizer states (one entry per
// FlatParameter in optimizer.state) and its foreach temporaries: tensors of
// a few hundred KiB, which the caching allocator serves from its small pool
// (<= 1 MiB, 2 MiB segments; CUDACachingAllocator.cpp kSmallSize), never
// from the large blocks the construction cached. Fills `p`'s states,
// opt_temp and grads_layer with those tensors, and what the rest of the
// trainable state holds (a head adapter, trainable base weights) as one
// piece; nothing without sharding. Under CPU offload the states live on the
// CPU, and the sharded gradients stay on the GPU only from their
// reduce-scatter to the end of backward (_offload_grad copies them out;
// prepare_gradient_for_optim then points .grad at the CPU copy). LitGPT
// wraps whole Blocks instead (FSDPStrategy(auto_wrap_policy={Block}) under
// Fabric's use_orig_params=True: one flat gradient per Block, frozen
// parameters included: fsdp1_mixed_unit_grads), so with
// fsdp_adapter_units false it adds nothing.
void fsdp1_adapter_pieces(StatePieces& p, const Request& req, const TrainablePlan& plan, const Dtypes& dt,
                          const OptimizerInfo& opt, const StateSizes& sz, const Fsdp1Units& u);

// FSDP1's units that mix frozen and trainable parameters
// (parallel.fsdp_adapter_units false: LitGPT's FSDPStrategy(auto_wrap_policy=
// {Block}) on a LoRA model). Such a unit exists only under
// use_orig_params=True (torch _flat_param.py _validate_tensors_to_flatten
// refuses non-uniform requires_grad otherwise, and makes the FlatParameter's
// requires_grad the OR of its tensors'; Fabric's FSDPStrategy sets
// use_orig_params=True, lightning 51697a8b, through 7f0c3436), and its
// gradient is the whole FlatParameter's: the reduce-scatter output
// `new_sharded_grad = torch.empty_like(chunks[0])` (_runtime_utils.py
// _post_backward_hook) becomes flat_param.grad at the end of backward
// (prepare_gradient_for_optim), zeros over the frozen parameters
// (FlatParameter docstring, _is_grad_none_mask: "the flat gradient must be
// non-None and must use zeros to approximate those original None
// gradients"), in the FlatParameter's one dtype (uniform dtype, the same
// check). It is freed only once every original gradient is None, after
// optimizer.zero_grad() (_reset_flat_param_grad_info_if_needed), as the
// adapters' own are. The optimizer holds states for the trainable
// parameters only (their .grad views; frozen ones get None,
// _use_sharded_grad_views). Adds each such unit's frozen share,
// ceil(frozen bytes / ranks the gradients are sharded over), to the rank's
// gradients: every layer that
// trains (the unit is frozen-only, without a gradient, below
// plan.first_grad_layer) and the root unit (embeddings, final norm,
// lm_head) when something in it trains. Alignment and world-size padding
// (use_orig_params pads each parameter to 16 B) is left out, and so is
// NO_SHARD (modelled as DDP, without FSDP1 units). Records the
// bytes added in rs.mixed_unit_grads.
void fsdp1_mixed_unit_grads(RankState& rs, const Request& req, const TrainablePlan& plan, const Sharding& sh,
                            const Fsdp1Units& u);

// The buffers that do not depend on the tokens of a micro-batch: gathered
// parameters and gradient buckets.
struct ParallelBuffers {
  int64_t layer_params = 0;  // one decoder layer's parameters on this rank (FSDP unit, ZeRO-3 gather)
  int64_t root_params = 0;   // parameters outside the layers (FSDP root unit)
  int64_t gathered = 0;      // parameters gathered for compute
  std::string gathered_formula;
  int64_t comm = 0;  // gradient communication buckets
  std::string comm_formula;
  Fsdp2Unshard fsdp2;  // FSDP2: how `gathered` is allocated, by stream
  Fsdp1Units fsdp1;    // FSDP1: its construction and the unshard stream
};

// The buffers that scale with the tokens of a micro-batch.
struct TokenBuffers {
  int64_t cp_kv = 0;     // one context-parallel K + V receive buffer
  int64_t dispatch = 0;  // expert-parallel all-to-all send + receive
};

// `req` is the rank's view of the model, `par` the layout as the user gave it.
ParallelBuffers parallel_buffers(const Request& req, const ParallelOptions& par, const TrainablePlan& plan,
                                 const Dtypes& dt, const Sharding& sh, const StateSizes& sz);

// For `micro_batch` sequences of `seq_len` tokens.
TokenBuffers token_buffers(const Request& req, const ParallelOptions& par, const Dtypes& dt, int64_t micro_batch,
                           int64_t seq_len);

}  // namespace vram::memory

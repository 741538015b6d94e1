// Data-parallel sharding of the model state (sharding.h).
#include "memory/sharding.h"

#include <algorithm>

namespace vram::memory {

Sharding sharding_for(const ParallelOptions& p) {
  Sharding s;
  // Megatron, DeepSpeed (Ulysses / seq_data_parallel_group) and torchtitan
  // shard over data x context parallel: context-parallel ranks hold the same
  // weights.
  const int64_t replicas = p.dp * p.cp;
  if (!p.fsdp.empty() && p.fsdp != "no_shard") {
    s.fsdp = true;
    // HYBRID_SHARD: FULL_SHARD within a node, replicated across nodes; the
    // node's GPUs are shared with tensor parallel.
    s.group = p.fsdp == "hybrid_shard" ? std::min(replicas, std::max<int64_t>(1, p.gpus_per_node / p.tp)) : replicas;
    s.states = s.grads = true;
    s.weights = p.fsdp != "shard_grad_op";
    s.label = "FSDP" + std::string(p.fsdp_version == 2 ? "2 " : " ") + p.fsdp;
  } else if (p.zero > 0) {
    s.deepspeed = true;
    s.group = replicas;
    s.states = true;
    s.grads = p.zero >= 2;
    s.weights = p.zero >= 3;
    s.label = "ZeRO-" + std::to_string(p.zero);
  } else if (p.distributed_optimizer) {
    // Megatron-LM distributed optimizer (docs: api-guide/dist_optimizer.md):
    // fp32 main params and optimizer states sharded, grads and bf16 params not.
    s.megatron = true;
    s.group = replicas;
    s.states = true;
    s.label = "Megatron distributed optimizer";
  } else if (replicas > 1) {
    // torch DistributedDataParallel: gradient_as_bucket_view=False keeps the
    // buckets as a second copy of the gradients (distributed.py docstring).
    s.ddp_buckets = !p.gradient_as_bucket_view;
    s.label = p.fsdp == "no_shard" ? "FSDP no_shard (DDP)" : "DDP";
  }
  // Routed experts are replicated over the expert-data-parallel group only
  // (Megatron-core expert_data_parallel_size = dp x cp / ep).
  s.expert_group = std::max<int64_t>(1, s.group / p.ep);
  if (s.group <= 1) s.states = s.grads = s.weights = false;
  return s;
}

}  // namespace vram::memory

#include "train/layout.h"

#include <algorithm>

namespace vram::train {

namespace {

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Request rank_request(const Request& req, const Stage& stage) {
  const ParallelOptions& p = req.parallel;
  const int64_t tp = p.tp;
  if (tp == 1 && p.pp == 1 && p.cp == 1) return req;
  Request r = req;
  ModelSpec& m = r.model;
  const int64_t L = std::max<int64_t>(req.model.text.layers, 1);
  std::vector<ParamGroup> kept;
  for (ParamGroup g : m.groups) {
    const bool per_layer = g.stack == "text" && g.instances >= L && g.instances % L == 0;
    if (per_layer) {
      g.instances = g.instances / L * stage.layers;
    } else if (g.stack != "text" || g.kind == ModuleKind::kEmbedding) {
      // Input embeddings and vision tower live on the first stage; a tied
      // lm_head is kept as a copy on the last stage (Megatron
      // word_embeddings on both ends of the pipeline).
      const bool tied_head =
          g.kind == ModuleKind::kEmbedding && g.module == "embed_tokens" && req.model.tie_word_embeddings && stage.last;
      if (!stage.first && !tied_head) continue;
    } else if (!stage.last) {
      continue;  // final norm, lm_head
    }
    if (tp > 1 && (g.kind == ModuleKind::kLinear || g.kind == ModuleKind::kEmbedding)) {
      // Column parallel splits the output, row parallel the input; the
      // parameter count per rank is the same 1/tp either way.
      if (g.out_features % tp == 0) {
        g.out_features /= tp;
      } else {
        g.in_features = div_up(g.in_features, tp);
      }
      g.numel = g.kind == ModuleKind::kLinear ? g.in_features * g.out_features + (g.bias ? g.out_features : 0)
                                              : g.in_features * g.out_features;
    }
    if (g.instances > 0) kept.push_back(g);
  }
  m.groups = std::move(kept);
  LayerStack& t = m.text;
  const int64_t moe_share = t.moe_layers * stage.layers / L;
  t.layers = stage.layers;
  t.moe_layers = moe_share;
  t.heads /= tp;
  t.kv_heads = std::max<int64_t>(1, t.kv_heads / tp);
  t.intermediate = div_up(t.intermediate, tp);
  t.expert_intermediate = div_up(t.expert_intermediate, tp);
  t.shared_expert_intermediate = div_up(t.shared_expert_intermediate, tp);
  m.vocab = div_up(m.vocab, tp);  // vocab-parallel logits and cross-entropy
  if (p.sequence_parallel && tp > 1) t.hidden_split = tp;
  r.train.seq_len = div_up(req.train.seq_len, p.cp);
  return r;
}

Sharding sharding_for(const ParallelOptions& p) {
  Sharding s;
  if (!p.fsdp.empty() && p.fsdp != "no_shard") {
    s.fsdp = true;
    s.group = p.fsdp == "hybrid_shard" ? std::min(p.dp, p.gpus_per_node) : p.dp;
    s.states = s.grads = true;
    s.weights = p.fsdp != "shard_grad_op";
    s.label = "FSDP " + p.fsdp;
  } else if (p.zero > 0) {
    s.deepspeed = true;
    s.group = p.dp;
    s.states = true;
    s.grads = p.zero >= 2;
    s.weights = p.zero >= 3;
    s.label = "ZeRO-" + std::to_string(p.zero);
  } else if (p.dp > 1) {
    // torch DistributedDataParallel: gradient_as_bucket_view=False keeps the
    // buckets as a second copy of the gradients (distributed.py docstring).
    s.ddp_buckets = !p.gradient_as_bucket_view;
    s.label = p.fsdp == "no_shard" ? "FSDP no_shard (DDP)" : "DDP";
  }
  if (s.group <= 1) s.states = s.grads = s.weights = false;
  return s;
}

int64_t communicators(const ParallelOptions& p) {
  int64_t n = 0;
  for (int64_t d : {p.dp, p.tp, p.pp, p.cp}) n += d > 1 ? 1 : 0;
  return n;
}

}  // namespace vram::train

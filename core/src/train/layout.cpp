#include "train/layout.h"

#include <algorithm>

#include "format.h"
#include "vram/gpus.h"

namespace vram::train {

namespace {

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Sparse layers among [begin, begin + n): MoE layers are the top moe_layers
// of the stack (DeepSeek first_k_dense_replace; Qwen-MoE mlp_only_layers is
// approximated the same way).
int64_t moe_in(const LayerStack& t, int64_t begin, int64_t n) {
  const int64_t first_moe = t.layers - t.moe_layers;
  return std::max<int64_t>(0, begin + n - std::max(begin, first_moe));
}

}  // namespace

Stage whole_model(const Request& req) {
  Stage s;
  s.layers = req.model.text.layers;
  s.moe_layers = req.model.text.moe_layers;
  s.ssm_layers = req.model.text.count(LayerSet::kSsm, 0, s.layers);
  s.attention_layers = req.model.text.count(LayerSet::kAttention, 0, s.layers);
  return s;
}

std::vector<Stage> pipeline_stages(const Request& req) {
  const ParallelOptions& p = req.parallel;
  const LayerStack& t = req.model.text;
  const int64_t L = t.layers;
  const int64_t pp = p.pp;
  const int64_t vp = p.vp;
  const int64_t m = req.train.grad_accum;  // micro-batches per optimizer step
  std::vector<Stage> out;
  int64_t begin = 0;
  for (int64_t r = 0; r < pp; ++r) {
    Stage s;
    s.index = r;
    s.first = r == 0;
    s.last = r == pp - 1;
    if (vp == 1) {
      s.layers = L / pp + (r < L % pp ? 1 : 0);
      s.moe_layers = moe_in(t, begin, s.layers);
      s.ssm_layers = t.count(LayerSet::kSsm, begin, s.layers);
      s.attention_layers = t.count(LayerSet::kAttention, begin, s.layers);
      s.first_layer = begin;
      begin += s.layers;
      s.in_flight_num = std::min(pp - r, m);
    } else {
      // Rank r holds model chunks r, r + pp, ..., each of L / (pp vp) layers
      // (the request parser checked the division).
      const int64_t chunk = L / (pp * vp);
      for (int64_t c = 0; c < vp; ++c) {
        s.layers += chunk;
        s.moe_layers += moe_in(t, (c * pp + r) * chunk, chunk);
        s.ssm_layers += t.count(LayerSet::kSsm, (c * pp + r) * chunk, chunk);
        s.attention_layers += t.count(LayerSet::kAttention, (c * pp + r) * chunk, chunk);
      }
      s.in_flight_num = std::min(2 * (pp - r - 1) + (vp - 1) * pp + 1, m * vp);
      s.in_flight_den = vp;
    }
    out.push_back(s);
  }
  return out;
}

Request rank_request(const Request& req, const Stage& stage) {
  const ParallelOptions& p = req.parallel;
  const int64_t tp = p.tp;
  if (tp == 1 && p.pp == 1 && p.cp == 1 && p.ep == 1) return req;
  Request r = req;
  ModelSpec& m = r.model;
  std::vector<ParamGroup> kept;
  for (ParamGroup g : m.groups) {
    if (const int64_t span = req.model.layer_span(g); span > 0) {
      const int64_t here = g.layers == LayerSet::kMoe         ? stage.moe_layers
                           : g.layers == LayerSet::kDense     ? stage.layers - stage.moe_layers
                           : g.layers == LayerSet::kSsm       ? stage.ssm_layers
                           : g.layers == LayerSet::kAttention ? stage.attention_layers
                                                              : stage.layers;
      int64_t per_layer = g.instances / span;
      // Expert parallel: each rank keeps experts / ep routed experts of every
      // MoE layer (Megatron-core MoELayer num_local_experts; DeepSpeed MoE).
      if (g.component == std::string(comp::kExperts)) per_layer /= p.ep;
      g.instances = per_layer * here;
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
      // parameter count per rank is the same 1/tp either way. Experts are
      // split by tp too (Megatron-core expert_tensor_parallel_size defaults
      // to the tensor-parallel size).
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
  t.layers = stage.layers;
  t.moe_layers = stage.moe_layers;
  if (t.ssm_layers > 0) {
    // This rank's share of a state-space stack: its SSM layers, and for an
    // interleaved hybrid its slice of the per-layer map (vp == 1; model
    // chunks keep the counts, which is what the estimate reads).
    if (!t.ssm_at.empty()) {
      std::vector<bool> slice;
      if (p.vp == 1) {
        for (int64_t l = stage.first_layer; l < stage.first_layer + stage.layers; ++l) slice.push_back(t.ssm_layer(l));
      }
      t.ssm_at = slice;
    }
    // A cache on every layer (LFM2) follows the rank's layers.
    if (t.ssm_state_layers > 0) t.ssm_state_layers = stage.layers;
    t.ssm_layers = stage.ssm_layers;
  }
  t.heads /= tp;
  t.kv_heads = std::max<int64_t>(1, t.kv_heads / tp);
  t.intermediate = div_up(t.intermediate, tp);
  t.ssm_conv_dim = div_up(t.conv_dim(), tp);  // before ssm_inner: conv_dim() defaults to it
  t.ssm_inner = div_up(t.ssm_inner, tp);
  t.ssm_heads = div_up(t.ssm_heads, tp);
  t.ssm_groups = div_up(t.ssm_groups, tp);
  t.expert_intermediate = div_up(t.expert_intermediate, tp);
  t.shared_expert_intermediate = div_up(t.shared_expert_intermediate, tp);
  m.vocab = div_up(m.vocab, tp);  // vocab-parallel logits and cross-entropy
  if (p.sequence_parallel && tp > 1) t.hidden_split = tp;
  r.train.seq_len = div_up(req.train.seq_len, p.cp);
  return r;
}

namespace {

// NCCL FIFO bytes of one connection: SIMPLE 4 MiB (NCCL_BUFFSIZE) + LL
// 512 KiB + LL128 4.6875 MiB (nccl src/init.cc, device.h; research §2.4).
constexpr int64_t kConnectionBytes = (int64_t{4} << 20) + (int64_t{512} << 10) + (int64_t{4800} << 10);
// Send/recv and all-to-all: 10,485,760 + 2,097,152 B per channel and peer
// (NVIDIA/nccl#1685, 8 x H100).
constexpr int64_t kP2pChannelBytes = 10485760 + 2097152;

// NVLink SHARP: 2 x 1 MiB per NVLS channel and local rank; 16 channels on
// sm90, 32 on sm100 (nccl src/transport/nvls.cc).
int64_t nvls_bytes(int sm, int64_t local_ranks) {
  const int64_t channels = sm >= 100 ? 32 : 16;
  return channels * 2 * (int64_t{1} << 20) * local_ranks;
}

// GPUs sold on NVSwitch (HGX / DGX) boards, where NCCL enables NVLS by default.
bool nvswitch_board(const Request& req) {
  const GpuInfo* g = req.gpu.name.empty() ? nullptr : find_gpu(req.gpu.name);
  return g != nullptr && g->nvswitch;
}

}  // namespace

NcclMemory nccl_memory(const Request& req, const Stage& stage) {
  const ParallelOptions& p = req.parallel;
  NcclMemory out;
  const int64_t ring = p.nccl_channels * 2 * kConnectionBytes;  // ring/tree: 2 connections per channel
  const GpuInfo* gpu = req.gpu.name.empty() ? nullptr : find_gpu(req.gpu.name);
  const bool nvls = p.nvls.value_or(nvswitch_board(req));
  out.nvls = nvls;
  // Rank order tp (fastest), cp, dp (Megatron-core parallel_state): a group's
  // ranks inside one node.
  const int64_t gpn = p.gpus_per_node;
  std::string parts;
  auto collective = [&](const char* name, int64_t size, int64_t stride) {
    if (size <= 1) return;
    ++out.communicators;
    int64_t bytes = ring;
    const int64_t local = std::min(size, std::max<int64_t>(1, gpn / stride));
    if (nvls && local > 1) bytes += nvls_bytes(gpu != nullptr ? gpu->sm : 90, local);
    out.bytes += bytes;
    parts += std::string(parts.empty() ? "" : " + ") + name + " " + fmt_int(bytes >> 20) + " MiB";
  };
  auto p2p = [&](const char* name, int64_t peers) {
    if (peers <= 0) return;
    ++out.communicators;
    const int64_t bytes = peers * p.nccl_channels * kP2pChannelBytes;
    out.bytes += bytes;
    parts += std::string(parts.empty() ? "" : " + ") + name + " " + fmt_int(bytes >> 20) + " MiB";
  };
  collective("tp", p.tp, 1);
  collective("cp", p.cp, p.tp);
  const Sharding sh = sharding_for(p);
  const int64_t replicas = p.dp * p.cp;
  if (sh.fsdp && p.fsdp == "hybrid_shard" && sh.group < replicas) {
    // HYBRID_SHARD: a shard group inside the node and a replicate group
    // across nodes (torch.distributed.fsdp _init_process_group_state).
    collective("dp shard", sh.group, p.tp * p.cp);
    collective("dp replicate", replicas / sh.group, gpn);
  } else {
    collective("dp", p.dp, p.tp * p.cp);
  }
  // Routed experts reduce their gradients over the expert-data-parallel
  // group (Megatron-core parallel_state expert_data_parallel_group).
  if (p.ep > 1) collective("expert dp", replicas / p.ep, p.tp * p.ep);
  if (p.pp > 1) p2p("pp send/recv", (stage.first || stage.last) ? 1 : 2);
  if (p.ep > 1) p2p("ep all-to-all", p.ep - 1);
  if (req.overheads.nccl_bytes && out.communicators > 0) {
    // A measured value (free memory before and after the first collectives
    // on the real topology) replaces the model.
    out.bytes = *req.overheads.nccl_bytes;
    out.formula = "overheads.nccl_bytes (given; the model says " + parts + ")";
    return out;
  }
  out.formula = parts + " (" + std::to_string(p.nccl_channels) + " channels; ring/tree " + fmt_int(ring >> 20) +
                " MiB per communicator = channels x 2 connections x 9.19 MiB" +
                (nvls ? "; NVLS 2 MiB x channels x local ranks" : "") + "; p2p 12 MiB per channel and peer)";
  return out;
}

}  // namespace vram::train

// The step as a timeline of tensors (core/src/memory/timeline.h) and the
// training step built from the memory terms (core/src/train/step.h).
#include "memory/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fixtures.h"
#include "memory/allocator_replay.h"
#include "memory/parallel_buffers.h"
#include "train/layout.h"
#include "train/step.h"
#include "vram/api.h"
#include "vram/gpus.h"
#include "vram/request.h"

namespace vram {
namespace {

using memory::Event;
using memory::Residence;
using memory::Timeline;

TEST(Timeline, ReplayCountsLiveBytesPerComponentAtEachMark) {
  Timeline tl;
  tl.alloc("weights", "w", 100);
  const auto a = tl.alloc("activations", "layer 0", 30);
  tl.alloc("activations", "layer 1", 20);
  tl.mark("forward", "end of forward");
  tl.free(a);
  tl.alloc("gradients", "g", 7);
  tl.mark("backward", "backward");
  const auto m = memory::replay(tl);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].phase, "forward");
  EXPECT_EQ(m[0].allocated, 150);
  EXPECT_EQ(m[0].parts.at("activations"), 50);
  EXPECT_EQ(m[0].parts.count("gradients"), 0u);
  EXPECT_EQ(m[1].allocated, 127);
  EXPECT_EQ(m[1].parts.at("activations"), 20);
  EXPECT_EQ(m[1].parts.at("gradients"), 7);
}

TEST(Timeline, AComponentWithALiveZeroByteTensorIsListedAndAFreedOneIsNot) {
  Timeline tl;
  tl.alloc("gradients", "accumulated", 0);
  const auto loss = tl.alloc("loss_buffers", "logits", 0);
  tl.mark("loss", "loss");
  tl.free(loss);
  tl.mark("step", "step");
  const auto m = memory::replay(tl);
  EXPECT_EQ(m[0].parts.at("gradients"), 0);
  EXPECT_EQ(m[0].parts.count("loss_buffers"), 1u);
  EXPECT_EQ(m[1].parts.count("loss_buffers"), 0u);
}

TEST(Timeline, APhaseMarkedSeveralTimesKeepsItsLargestMomentAndTheFirstOfEquals) {
  Timeline tl;
  const auto x = tl.alloc("activations", "x", 10);
  tl.mark("backward", "first");
  const auto y = tl.alloc("layer_backward", "y", 5);
  tl.mark("backward", "second");  // 15: the largest
  tl.free(y);
  tl.free(x);
  tl.alloc("gradients", "g", 15);
  tl.mark("backward", "third");  // 15 again: not larger, the second stays
  const auto m = memory::replay(tl);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].label, "second");
  EXPECT_EQ(m[0].parts.at("layer_backward"), 5);
}

TEST(Timeline, ManagedTensorsCountOnTheDeviceButNotAsAllocated) {
  Timeline tl;
  tl.alloc("optimizer_states", "paged states", 64, {}, Residence::kManaged);
  tl.alloc("optimizer_states", "master", 16);
  tl.mark("step", "step");
  const auto m = memory::replay(tl);
  EXPECT_EQ(m[0].allocated, 16);
  EXPECT_EQ(m[0].managed, 64);
  EXPECT_EQ(m[0].parts.at("optimizer_states"), 80);
}

TEST(Timeline, ResizeFreesAndAllocatesUnderTheSameComponent) {
  Timeline tl;
  auto loss = tl.alloc("loss_buffers", "logits and loss", 10);
  loss = tl.resize(loss, 24);
  tl.mark("backward_start", "b");
  const auto m = memory::replay(tl);
  EXPECT_EQ(m[0].parts.at("loss_buffers"), 24);
  EXPECT_EQ(tl.tensors()[static_cast<size_t>(loss)].name, std::string("logits and loss"));
}

class TrainingStepTest : public ::testing::Test {
 protected:
  static Request parse(json train) {
    json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
              {"task", "train"},
              {"train", std::move(train)}};
    auto p = parse_request(r);
    EXPECT_TRUE(p.ok());
    return p.value();
  }
};

// Llama-3.2-1B has 16 decoder layers: one saved-activation tensor per layer in
// forward, freed top layer first in backward while each layer's gradients
// appear, one backward mark per layer plus the embedding gradient at the end.
TEST_F(TrainingStepTest, EveryLayerSavesInForwardAndIsFreedTopFirstInBackward) {
  const Request req = parse({{"method", "full"}, {"micro_batch", 2}, {"seq_len", 512}});
  const auto basis = train::rank_basis(req, req, train::whole_model(req));
  const auto terms = train::step_terms(basis, 2);
  const Timeline tl = train::training_step(basis, terms);
  std::vector<int32_t> saved, freed;
  int backward_marks = 0;
  for (const Event& e : tl.events()) {
    if (e.op == Event::Op::kMark) {
      if (std::string(tl.marks()[static_cast<size_t>(e.index)].phase) == "backward") ++backward_marks;
      continue;
    }
    const auto& t = tl.tensors()[static_cast<size_t>(e.index)];
    if (std::string(t.component) != "activations" || t.layer < 0) continue;
    (e.op == Event::Op::kAlloc ? saved : freed).push_back(t.layer);
  }
  ASSERT_EQ(saved.size(), 16u);
  ASSERT_EQ(freed.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(saved[static_cast<size_t>(i)], i);
    EXPECT_EQ(freed[static_cast<size_t>(i)], 15 - i);
  }
  EXPECT_EQ(backward_marks, 17);
  // The saved layers sum to the stack's exact size.
  int64_t sum = 0;
  for (const auto& t : tl.tensors()) {
    if (std::string(t.component) == "activations" && t.layer >= 0) sum += t.bytes;
  }
  EXPECT_EQ(sum, terms.act.layers);
}

// The load's order decides which cached segments the 16-bit weights split.
// bitsandbytes (HF: from_pretrained loads the embeddings first) allocates
// them before quantising; torchtune builds the decoder layers before
// nn.Embedding and output_proj (lora_llama3); April 2024 torchtune built one
// layer, then the embedding and output, then 15 deep copies of the layer
// through the NF4 clone override (quantised again), freeing the template.
TEST_F(TrainingStepTest, TheLoadAllocatesThe16BitWeightsWhereTheFrameworkBuildsThem) {
  struct Order {
    int quantised_before = 0;  // 4-bit weights allocated before the 16-bit ones
    int quantised_after = 0;
    int freed_in_load = 0;  // 4-bit weights freed before the step
  };
  auto order = [](const char* quantizer) {
    const Request req = parse({{"method", "qlora"}, {"quant", {{"quantizer", quantizer}}}});
    const auto basis = train::rank_basis(req, req, train::whole_model(req));
    const Timeline tl = train::training_step(basis, train::step_terms(basis, 1));
    Order o;
    bool seen_weights = false;
    for (size_t e = 0; e < tl.step_begin(); ++e) {
      const Event& ev = tl.events()[e];
      if (ev.op == Event::Op::kMark) continue;
      const std::string name = tl.tensors()[static_cast<size_t>(ev.index)].name;
      if (name == "weights" && ev.op == Event::Op::kAlloc) seen_weights = true;
      if (name != "4-bit weights") continue;
      if (ev.op == Event::Op::kFree) {
        ++o.freed_in_load;
      } else {
        ++(seen_weights ? o.quantised_after : o.quantised_before);
      }
    }
    return o;
  };
  // Llama-3.2-1B: 16 layers x 7 quantised linears (lm_head is tied, not quantised).
  const Order bnb = order("bitsandbytes");
  EXPECT_EQ(bnb.quantised_before, 0);
  EXPECT_EQ(bnb.quantised_after, 112);
  EXPECT_EQ(bnb.freed_in_load, 0);
  const Order chunked = order("torchao");
  EXPECT_EQ(chunked.quantised_before, 112);
  // The checkpoint copy-in quantises one weight of each shape into a
  // temporary NF4Tensor: allocated after, freed at once.
  EXPECT_EQ(chunked.freed_in_load, chunked.quantised_after);
  const Order april = order("torchao_unchunked");
  EXPECT_EQ(april.quantised_before, 7);  // the template layer
  EXPECT_EQ(april.freed_in_load, 7 + april.quantised_after - 112);
}

// The estimate's phases are the replay of the step: the same bytes.
TEST_F(TrainingStepTest, TheEstimatesPhasesAreTheReplayOfTheStep) {
  const json train = {{"method", "lora"}, {"micro_batch", 4}, {"seq_len", 1024}, {"grad_accum", 2}};
  const Request req = parse(train);
  const auto basis = train::rank_basis(req, req, train::whole_model(req));
  const auto moments = memory::replay(train::training_step(basis, train::step_terms(basis, 4)));
  const json r = estimate(
      {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}}, {"task", "train"}, {"train", train}});
  ASSERT_EQ(r["phases"].size(), moments.size());
  for (size_t i = 0; i < moments.size(); ++i) {
    EXPECT_EQ(r["phases"][i]["key"], moments[i].phase);
    EXPECT_EQ(r["phases"][i]["allocated_bytes"].get<int64_t>(), moments[i].allocated);
  }
}

// A step built alone (with_load false: what the reserved range's smaller
// jobs and the padded records replay) is the step part of the one built on
// the load, tensor for tensor, and replays to the same reserved figures on
// the rank's loaded allocator: the smaller jobs skip copying the load.
TEST_F(TrainingStepTest, AStepBuiltAloneIsTheStepPartOfTheOneOnItsLoadAndReplaysTheSame) {
  const json trains[] = {
      {{"method", "full"}, {"micro_batch", 2}, {"seq_len", 512}},  // a layer program (ActivationStack::layer_ops)
      {{"method", "lora"}, {"seq_len", 1024}, {"grad_checkpointing", true}, {"padding", "longest"}},
      {{"method", "qlora"}, {"micro_batch", 3}, {"seq_len", 300}, {"grad_accum", 2}},
  };
  for (const json& train : trains) {
    const Request req = parse(train);
    const auto basis = train::rank_basis(req, req, train::whole_model(req));
    const auto terms = train::step_terms(basis, req.train.micro_batch);
    const Timeline on_load = train::training_step(basis, terms);
    const Timeline alone = train::training_step(basis, terms, /*with_load=*/false);
    EXPECT_EQ(alone.step_begin(), 0u);
    const size_t load_events = basis.load.events().size();
    const size_t load_tensors = basis.load.tensors().size();
    ASSERT_EQ(on_load.step_begin(), load_events) << train;
    ASSERT_EQ(alone.events().size() + load_events, on_load.events().size()) << train;
    ASSERT_EQ(alone.tensors().size() + load_tensors, on_load.tensors().size()) << train;
    for (size_t e = 0; e < alone.events().size(); ++e) {
      const Event& a = alone.events()[e];
      const Event& b = on_load.events()[e + load_events];
      ASSERT_EQ(a.op, b.op) << train << " event " << e;
      if (a.op == Event::Op::kMark) continue;
      const auto& ta = alone.tensors()[static_cast<size_t>(a.index)];
      const auto& tb = on_load.tensors()[static_cast<size_t>(b.index)];
      ASSERT_EQ(static_cast<size_t>(b.index), static_cast<size_t>(a.index) + load_tensors) << train;
      EXPECT_EQ(ta.bytes, tb.bytes);
      EXPECT_EQ(ta.stream, tb.stream);
      EXPECT_EQ(ta.mallocs, tb.mallocs);
      ASSERT_EQ(alone.pieces(ta).size(), on_load.pieces(tb).size());
      for (size_t k = 0; k < alone.pieces(ta).size(); ++k) {
        EXPECT_EQ(alone.pieces(ta)[k].bytes, on_load.pieces(tb)[k].bytes);
        EXPECT_EQ(alone.pieces(ta)[k].count, on_load.pieces(tb)[k].count);
      }
    }
    const auto& loaded = basis.loaded(0);
    const auto full = memory::replay_reserved(loaded, on_load, memory::replay(on_load, false));
    const auto part = memory::replay_reserved(loaded, alone, {});
    EXPECT_GT(full.peak_reserved, 0) << train;
    EXPECT_EQ(part.peak_reserved, full.peak_reserved) << train;
    EXPECT_EQ(part.peak_allocated, full.peak_allocated) << train;
    EXPECT_EQ(part.segments, full.segments) << train;
    EXPECT_EQ(part.device_allocs, full.device_allocs) << train;
  }
}

// Gradient accumulation keeps every gradient from the first micro-batch on:
// none appear during the backward sweep.
TEST_F(TrainingStepTest, AccumulatedGradientsExistBeforeForward) {
  const Request req = parse({{"method", "full"}, {"grad_accum", 4}});
  const auto basis = train::rank_basis(req, req, train::whole_model(req));
  const Timeline tl = train::training_step(basis, train::step_terms(basis, 1));
  const auto m = memory::replay(tl);
  EXPECT_EQ(m[0].phase, "forward");
  EXPECT_EQ(m[0].parts.at("gradients"), basis.state.sz.grads);
}

}  // namespace
}  // namespace vram

namespace vram {
namespace {

// FSDP2 over 8 GPUs, fp32 shards, MixedPrecisionPolicy(param_dtype bf16):
// which tensor of the step is on which stream, and its bytes. Llama-3.2-1B:
// a decoder layer is 60,821,504 parameters (q, o 2048²; k, v 2048 x 512;
// gate, up, down 2048 x 8192; two norms), the root unit 262,670,336 (the
// embedding, tied with lm_head, and the final norm).
TEST(Fsdp2Streams, GradientsOnTheReduceScatterStreamAllGatherBuffersOnTheCopyInStream) {
  json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
            {"task", "train"},
            {"train",
             {{"method", "full"},
              {"micro_batch", 1},
              {"seq_len", 512},
              {"precision", "amp_bf16"},
              {"optimizer", "adamw_torch"}}},
            {"parallel",
             {{"gpus", 8},
              {"fsdp", "full_shard"},
              {"fsdp_version", 2},
              {"fsdp_param_dtype", "bf16"},
              {"fsdp_reduce_dtype", "fp32"}}}};
  auto p = parse_request(r);
  ASSERT_TRUE(p.ok());
  const Request req = p.value();
  const auto basis = train::rank_basis(req, req, train::whole_model(req));
  const Timeline tl = train::training_step(basis, train::step_terms(basis, 1));
  constexpr int64_t kLayer = 60821504, kRoot = 262670336;
  std::map<std::string, std::vector<std::pair<int64_t, int32_t>>> allocs;  // name -> (bytes, stream)
  for (size_t e = tl.step_begin(); e < tl.events().size(); ++e) {
    const Event& ev = tl.events()[e];
    if (ev.op != Event::Op::kAlloc) continue;
    const auto& t = tl.tensors()[static_cast<size_t>(ev.index)];
    allocs[t.name].push_back({t.bytes, t.stream});
  }
  // Sharded fp32 gradients: each layer's reduce-scatter output, then the
  // root unit's at the end of backward, all on the reduce-scatter stream.
  const auto& layer_grads = allocs["layer gradients"];
  ASSERT_EQ(layer_grads.size(), 16u);
  for (const auto& [bytes, stream] : layer_grads) {
    EXPECT_EQ(bytes, kLayer * 4 / 8);
    EXPECT_EQ(stream, memory::kReduceScatterStream);
  }
  ASSERT_EQ(allocs["root unit gradients (embeddings, norm, lm_head)"].size(), 1u);
  EXPECT_EQ(allocs["root unit gradients (embeddings, norm, lm_head)"][0],
            std::make_pair(kRoot * 4 / 8, static_cast<int32_t>(memory::kReduceScatterStream)));
  EXPECT_EQ(allocs.count("lm_head and final norm gradients"), 0u);
  // All-gathers: the root's, layers 0 and 1 in forward, one prefetch in
  // backward; each a bf16 copy of the local shards, then the flat output.
  const auto copy_in = static_cast<int32_t>(memory::kAllGatherCopyInStream);
  const std::vector<std::pair<int64_t, int32_t>> casts = {
      {kRoot / 8 * 2, copy_in}, {kLayer / 8 * 2, copy_in}, {kLayer / 8 * 2, copy_in}, {kLayer / 8 * 2, copy_in}};
  EXPECT_EQ(allocs["all-gather input (param_dtype copy of the local shards)"], casts);
  const std::vector<std::pair<int64_t, int32_t>> flats = {
      {kRoot * 2, copy_in}, {kLayer * 2, copy_in}, {kLayer * 2, copy_in}, {kLayer * 2, copy_in}};
  EXPECT_EQ(allocs["flat all-gather output"], flats);
  // Unsharded parameters on the default stream, one tensor per parameter.
  const auto& root = allocs["unsharded root unit (embeddings, norm, lm_head)"];
  ASSERT_EQ(root.size(), 1u);
  EXPECT_EQ(root[0], std::make_pair(kRoot * 2, static_cast<int32_t>(memory::kDefaultStream)));
  const auto& layer = allocs["unsharded layer parameters (one layer)"];
  ASSERT_EQ(layer.size(), 1u);
  EXPECT_EQ(layer[0], std::make_pair(kLayer * 2, static_cast<int32_t>(memory::kDefaultStream)));
  // At the end of forward the root's post-forward has freed the last flat
  // output: the root and the last layer (not resharded) are left; in
  // backward the prefetched layer's flat output is back.
  const auto moments = memory::replay(tl);
  for (const auto& m : moments) {
    if (m.phase == "forward") EXPECT_EQ(m.parts.at("gathered_params"), (kRoot + kLayer) * 2);
    if (m.phase == "backward") EXPECT_EQ(m.parts.at("gathered_params"), (kRoot + 2 * kLayer) * 2);
  }
  // The gradient blocks stay in the reduce-scatter stream's pool: the
  // second step's forward reserves them on top of what it allocates.
  const auto reserved = memory::replay_reserved(tl, moments, {}, {});
  for (size_t i = 0; i < moments.size(); ++i) {
    if (moments[i].phase != "forward") continue;
    EXPECT_GE(reserved.reserved[i], moments[i].allocated + 16 * (kLayer * 4 / 8) + kRoot * 4 / 8);
  }
}

class ReservedTest : public ::testing::Test {
 protected:
  static json request(json train, json allocator = json::object()) {
    json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
              {"task", "train"},
              {"train", std::move(train)}};
    if (!allocator.empty()) r["allocator"] = std::move(allocator);
    return r;
  }
};

// Every phase's reserved view holds at least its live tensors, and the
// allocated view is the sum of live tensors whatever the allocator does.
TEST_F(ReservedTest, ReservedNeverFallsBelowAllocatedAndAllocatedIgnoresTheAllocator) {
  const json train = {{"method", "full"}, {"micro_batch", 4}, {"seq_len", 1024}};
  const json plain = estimate(request(train));
  const json xs = estimate(request(train, {{"expandable_segments", true}}));
  ASSERT_FALSE(plain.contains("error")) << plain.dump();
  for (const auto& p : plain["phases"]) {
    EXPECT_GE(p["reserved_bytes"].get<int64_t>(), p["allocated_bytes"].get<int64_t>()) << p["key"];
  }
  EXPECT_EQ(plain["peak_allocated_bytes"], xs["peak_allocated_bytes"]);
  EXPECT_GE(plain["peak_reserved_bytes"].get<int64_t>(), plain["peak_allocated_bytes"].get<int64_t>());
}

// expandable_segments maps pages into one growing segment instead of
// cudaMalloc'ing a segment per size class (CUDACachingAllocator.cpp
// ExpandableSegment), so the cached gaps between segments disappear: reserved
// memory can only shrink.
TEST_F(ReservedTest, ExpandableSegmentsReserveLessThanTheDefault) {
  for (const json& train : {json{{"method", "full"}, {"micro_batch", 4}, {"seq_len", 1024}},
                            json{{"method", "lora"}, {"micro_batch", 8}, {"seq_len", 2048}}}) {
    const json plain = estimate(request(train));
    const json xs = estimate(request(train, {{"expandable_segments", true}}));
    EXPECT_LT(xs["peak_reserved_bytes"].get<int64_t>(), plain["peak_reserved_bytes"].get<int64_t>()) << train;
    // The same setting written as PYTORCH_CUDA_ALLOC_CONF gives the same bytes.
    const json conf = estimate(request(train, {{"conf", "expandable_segments:True"}}));
    EXPECT_EQ(conf["peak_reserved_bytes"], xs["peak_reserved_bytes"]);
  }
}

// max_split_size_mb: blocks of that size or larger are never split
// (should_split), so a large cached block cannot serve a smaller request and
// a new segment is made: reserved memory does not shrink.
TEST_F(ReservedTest, MaxSplitSizeKeepsLargeBlocksWholeAndNeverReservesLess) {
  const json train = {{"method", "lora"}, {"micro_batch", 8}, {"seq_len", 2048}};
  const json plain = estimate(request(train));
  const json split = estimate(request(train, {{"max_split_size_mb", 64}}));
  EXPECT_GE(split["peak_reserved_bytes"].get<int64_t>(), plain["peak_reserved_bytes"].get<int64_t>());
  EXPECT_NE(split["peak_reserved_bytes"], plain["peak_reserved_bytes"]);
}

TEST_F(ReservedTest, ABadAllocatorSettingNamesTheField) {
  const json bad_key = estimate(request({}, {{"conf", "expandable_segment:True"}}));
  ASSERT_TRUE(bad_key.contains("error"));
  EXPECT_EQ(bad_key["error"]["path"], "allocator.conf");
  EXPECT_NE(bad_key["error"]["message"].get<std::string>().find("expandable_segment"), std::string::npos);
  const json small = estimate(request({}, {{"max_split_size_mb", 20}}));
  ASSERT_TRUE(small.contains("error"));
  EXPECT_EQ(small["error"]["path"], "allocator.max_split_size_mb");
}

// Steps of other lengths before the measured ones (train.padding longest),
// worked from CUDACachingAllocator.cpp: requests above kMinLargeAlloc
// (10 MiB) get a segment of their size rounded up to kRoundLarge (2 MiB)
// (get_allocation_size); a free 40 MiB block cannot serve 80 MiB, so the
// 80 MiB step makes a segment of its own and the 40 MiB one stays cached.
Timeline weights_and_step(int64_t step_bytes) {
  Timeline tl;
  tl.alloc("weights", "w", 100 * memory::kMiB);
  tl.begin_step();
  const auto a = tl.alloc("activations", "a", step_bytes);
  tl.mark("forward", "forward");
  tl.free(a);
  return tl;
}

TEST(AllocatorReplay, AShorterStepFirstLeavesItsSegmentCached) {
  const Timeline full = weights_and_step(80 * memory::kMiB);
  const Timeline shorter = weights_and_step(40 * memory::kMiB);
  const auto moments = memory::replay(full);
  const auto alone = memory::replay_reserved(full, moments, {}, {});
  EXPECT_EQ(alone.peak_reserved, 180 * memory::kMiB);
  const auto after = memory::replay_reserved(full, moments, {}, {}, -1, {&shorter});
  EXPECT_EQ(after.peak_reserved, 220 * memory::kMiB);
  EXPECT_EQ(after.reserved[0], 220 * memory::kMiB);
  // The shorter step's load part is the main timeline's: not allocated twice.
  EXPECT_EQ(after.peak_allocated, 180 * memory::kMiB);
}

// A block freed on one stream serves only mallocs on that stream
// (CUDACachingAllocator.cpp: BlockComparatorSize orders by stream first,
// get_free_block looks up the malloc's stream). FSDP2's sharded gradients
// live on the reduce-scatter stream: zero_grad() frees them there, and the
// next step's activations, on the default stream, need segments of their
// own. Load 100 MiB; step: 80 MiB of activations, freed, then 60 MiB of
// gradients, freed at the end of the step.
TEST(AllocatorReplay, ABlockFreedOnASideStreamIsNotReusedByTheDefaultStream) {
  auto step = [](int32_t grad_stream) {
    Timeline tl;
    tl.alloc("weights", "w", 100 * memory::kMiB);
    tl.begin_step();
    const auto a = tl.alloc("activations", "a", 80 * memory::kMiB);
    tl.mark("forward", "forward");
    tl.free(a);
    const auto g = tl.alloc_on(grad_stream, "gradients", "g", 60 * memory::kMiB);
    tl.mark("backward", "backward");
    tl.free(g);
    return tl;
  };
  const Timeline same = step(memory::kDefaultStream);
  const Timeline side = step(memory::kReduceScatterStream);
  // The same stream: the 80 MiB segment serves the 60 MiB gradient (split).
  EXPECT_EQ(memory::replay_reserved(same, memory::replay(same), {}, {}).peak_reserved, 180 * memory::kMiB);
  // The reduce-scatter stream: a 60 MiB segment of its own, kept cached.
  const auto r = memory::replay_reserved(side, memory::replay(side), {}, {});
  EXPECT_EQ(r.peak_reserved, 240 * memory::kMiB);
  EXPECT_EQ(r.reserved[0], 240 * memory::kMiB);  // the second step's forward: both pools cached
  EXPECT_EQ(r.peak_allocated, 180 * memory::kMiB);
  // A resized tensor stays on its stream.
  Timeline tl;
  const auto g = tl.alloc_on(memory::kReduceScatterStream, "gradients", "g", 10);
  EXPECT_EQ(tl.tensors()[static_cast<size_t>(tl.resize(g, 20))].stream, memory::kReduceScatterStream);
}

// With the card's bound, the 80 MiB segment does not fit next to the cached
// 40 MiB one: malloc frees the cached blocks (release_cached_blocks) and
// retries, as PyTorch does before raising OutOfMemoryError.
TEST(AllocatorReplay, ACardBoundFreesTheCacheAndRetriesInsteadOfGrowing) {
  const Timeline full = weights_and_step(80 * memory::kMiB);
  const Timeline shorter = weights_and_step(40 * memory::kMiB);
  const auto moments = memory::replay(full);
  memory::DeviceLimits limits;
  limits.capacity = 200 * memory::kMiB;
  const auto bound = memory::replay_reserved(full, moments, {}, limits, -1, {&shorter});
  EXPECT_EQ(bound.ooms, 0);
  EXPECT_EQ(bound.retries, 1);
  EXPECT_EQ(bound.peak_reserved, 180 * memory::kMiB);
  // Too small even after the retry: an OOM, counted.
  limits.capacity = 150 * memory::kMiB;
  EXPECT_GT(memory::replay_reserved(full, moments, {}, limits, -1, {&shorter}).ooms, 0);
}

// train.padding longest: the reserved view grows (more segment sizes are
// cached), the allocated view does not move, the result says what it assumed.
TEST_F(ReservedTest, PaddingToTheLongestReservesMoreAndAllocatesTheSame) {
  json train = {{"method", "lora"}, {"micro_batch", 2}, {"seq_len", 2048}, {"grad_checkpointing", "full"}};
  const json fixed = estimate(request(train));
  train["padding"] = "longest";
  const json varied = estimate(request(train));
  ASSERT_FALSE(varied.contains("error")) << varied.dump();
  EXPECT_EQ(varied["peak_allocated_bytes"], fixed["peak_allocated_bytes"]);
  EXPECT_GT(varied["peak_reserved_bytes"].get<int64_t>(), fixed["peak_reserved_bytes"].get<int64_t>());
  const std::string assumptions = varied["assumptions"].dump();
  EXPECT_NE(assumptions.find("padding longest"), std::string::npos);
  EXPECT_NE(fixed["assumptions"].dump().find("padding max_length"), std::string::npos);
  // packed is one shape per step, as max_length.
  train["padding"] = "packed";
  EXPECT_EQ(estimate(request(train))["peak_reserved_bytes"], fixed["peak_reserved_bytes"]);
  train["padding"] = "longst";
  const json bad = estimate(request(train));
  ASSERT_TRUE(bad.contains("error"));
  EXPECT_EQ(bad["error"]["path"], "train.padding");
}

// On a card, the replay is bounded by what the allocator may take there: the
// cache of shorter steps is freed when the longest needs the room, so the
// reserved view never passes the card while the step itself fits.
TEST_F(ReservedTest, OnACardTheReservedViewStaysWithinIt) {
  json train = {{"method", "full"}, {"micro_batch", 4}, {"seq_len", 2048}, {"padding", "longest"}};
  json r = request(train);
  const json free_run = estimate(r);
  const int64_t alloc = free_run["peak_allocated_bytes"].get<int64_t>();
  const int64_t reserved = free_run["peak_reserved_bytes"].get<int64_t>();
  ASSERT_GT(reserved, alloc);
  // A custom card halfway between the live tensors and the unbounded reserved
  // view (+ the 512 MiB context): the step fits only if the cache gives way.
  const double usable = static_cast<double>((alloc + reserved) / 2 + (512LL << 20));
  const double gib = usable / (1.0 - kDriverReserveFraction) / static_cast<double>(1LL << 30);
  r["gpu"] = {{"memory_gib", gib}};
  const json on_card = estimate(r);
  ASSERT_FALSE(on_card.contains("error")) << on_card.dump();
  EXPECT_LT(on_card["peak_reserved_bytes"].get<int64_t>(), reserved);
  EXPECT_EQ(on_card["peak_allocated_bytes"].get<int64_t>(), alloc);
  EXPECT_TRUE(on_card["fit"]["fits"].get<bool>()) << on_card["fit"].dump();
}

// A given fragmentation factor replaces the replay (the old calibration path).
TEST_F(ReservedTest, AGivenFragmentationFactorReplacesTheReplay) {
  json r = request({{"method", "full"}});
  r["overheads"] = {{"fragmentation", 0.1}};
  const json e = estimate(r);
  const int64_t a = e["peak_allocated_bytes"].get<int64_t>();
  EXPECT_EQ(e["peak_reserved_bytes"].get<int64_t>(), a + static_cast<int64_t>(std::ceil(0.1 * static_cast<double>(a))));
}

}  // namespace
}  // namespace vram

namespace vram {
namespace {

// FSDP1's construction (memory::fsdp1_construct), worked through the caching
// allocator by hand. Three layer units of 100 MiB and a root unit of 300 MiB,
// sharded over 2 ranks (every size a multiple of the 2 MiB segment rounding).
// torch 2.2 _init_param_handle_from_module holds the moved parameters
// (managed_params) until the handle is sharded, so each unit allocates its
// shard beside the moved and the flat copies and frees the flat one, then the
// moved one:
//   layer 1: moved -> new segment A (100), flat -> new B (100), shard (50) ->
//            new C, flat and moved freed (A, B free).
//   layers 2, 3: moved and flat take A and B, each shard a new 50 (D, E).
//   root:    moved -> new F (300), flat -> new G (300), shard (150) -> new H
//            (no free block holds it), flat and moved freed.
// Reserved 2 x 100 + 3 x 50 + 2 x 300 + 150 = 1100 MiB; 3 x 50 + 150 = 300
// MiB stay allocated; the peak is at the root's shard: 150 + 300 + 300 + 150
// = 900 MiB.
// FSDP1's construction alone, replayed: (bytes of shards kept, peak
// reserved, peak allocated).
std::tuple<int64_t, int64_t, int64_t> construction_replay(const memory::Fsdp1Units& units,
                                                          const memory::Fsdp1Tensors& tensors, int64_t budget) {
  Timeline tl;
  const int64_t kept = memory::fsdp1_construct(tl, units, tensors, budget);
  tl.begin_step();
  const memory::ReservedReplay r = memory::replay_reserved(tl, {}, {}, {});
  return std::make_tuple(kept, r.peak_reserved, r.peak_allocated);
}

TEST(Fsdp1Construction, UnitsMovedFlattenedAndShardedLeaveTheirBlocksCached) {
  constexpr int64_t MiB = 1 << 20;
  memory::Fsdp1Units u;
  u.on = true;
  u.layers = 3;
  u.layer_bytes = 100 * MiB;
  u.root_bytes = 300 * MiB;
  u.shards = 2;
  const auto replay = [](const memory::Fsdp1Units& units, int64_t budget) {
    return construction_replay(units, {}, budget);
  };
  EXPECT_EQ(replay(u, 1000 * MiB), std::make_tuple(300 * MiB, 1100 * MiB, 900 * MiB));
  // The shards are the rank's weights: never more than the budget.
  EXPECT_EQ(std::get<0>(replay(u, 200 * MiB)), 200 * MiB);
  // CPUOffload(offload_params=True): each shard goes to the CPU once made
  // (flat_param_to(cpu)), so the layers reuse A, B and C; the root needs
  // three new segments: 100 + 100 + 50 + 300 + 300 + 150, the peak at its
  // shard (300 + 300 + 150).
  u.offload = true;
  EXPECT_EQ(replay(u, 1000 * MiB), std::make_tuple(int64_t{0}, 1000 * MiB, 750 * MiB));
  // NO_SHARD: the flat parameter is kept whole, the moved copy freed; each
  // layer's flat takes a new segment while A serves every move, and the root
  // needs two more: 100 + 3 x 100 + 2 x 300.
  u.offload = false;
  u.shards = 1;
  EXPECT_EQ(replay(u, 1000 * MiB), std::make_tuple(600 * MiB, 1000 * MiB, 900 * MiB));
}

// sync_module_states' buckets (torch 2.2 c10d broadcast_coalesced with
// FSDP's 250 MiB): a Llama-2-7B decoder layer in bf16 (q, k, v, o 32 MiB, gate,
// up, down 86 MiB, two norms) closes its first bucket at up_proj (300 MiB, a
// flat copy) and sends down_proj and the norms in a second; the root's
// embedding is exactly 250 MiB, a bucket of its own (no copy), and the final
// norm rides with lm_head.
TEST(Fsdp1Construction, SyncModuleStatesBucketsAreHandWorked) {
  constexpr int64_t q = 4096LL * 4096 * 2, mlp = 11008LL * 4096 * 2, norm = 4096 * 2, embed = 32000LL * 4096 * 2;
  EXPECT_EQ(memory::broadcast_buckets({q, q, q, q, mlp, mlp, mlp, norm, norm}),
            (std::vector<int64_t>{4 * q + 2 * mlp, mlp + 2 * norm}));
  EXPECT_EQ(memory::broadcast_buckets({embed, norm, embed}), (std::vector<int64_t>{0, norm + embed}));
  EXPECT_TRUE(memory::broadcast_buckets({}).empty());
}

// One unit of 100 + 200 + 100 MiB over 2 ranks: moved parameter by parameter
// (three segments), then with sync_module_states the first two broadcast as
// one 300 MiB flat copy (the last alone, a view). ProcessGroupNCCL records the
// copy on its NCCL stream, so its block returns to the pool only once the
// broadcast completes, which the unit does not wait for: neither the 400 MiB
// FlatParameter nor the 200 MiB shard can take it. 400 + 300 + 400 + 200 =
// 1300 MiB reserved, the allocated peak 1300 too (moved + copy +
// FlatParameter + shard). Without sync_module_states the shard needs its own
// segment: 400 + 400 + 200 = 1000, the peak 1000. Two such units: the second
// finds every block of the first free (its move waited for the broadcast),
// and only adds its shard: 1300 + 200.
TEST(Fsdp1Construction, SyncModuleStatesBucketsWaitForTheirBroadcast) {
  constexpr int64_t MiB = 1 << 20;
  memory::Fsdp1Units u;
  u.on = true;
  u.layers = 1;
  u.layer_bytes = 400 * MiB;
  u.shards = 2;
  const auto replay = [](const memory::Fsdp1Units& units) {
    return construction_replay(units, {{100 * MiB, 200 * MiB, 100 * MiB}, {}}, 1000 * MiB);
  };
  EXPECT_EQ(replay(u), std::make_tuple(200 * MiB, 1000 * MiB, 1000 * MiB));
  u.sync = true;
  EXPECT_EQ(replay(u), std::make_tuple(200 * MiB, 1300 * MiB, 1300 * MiB));
  u.layers = 2;
  EXPECT_EQ(replay(u), std::make_tuple(400 * MiB, 1500 * MiB, 1500 * MiB));
}

// FSDP1's LoRA units (memory::fsdp1_adapter_pieces), worked by hand on
// Llama-3.2-1B (h 2048, 8 KV heads of 64) with rank-16 adapters on q_proj and
// v_proj over 2 ranks: q's lora_A [16, 2048] and lora_B [2048, 16] and v's
// lora_A [16, 2048] are 32,768 values each, v's lora_B [512, 16] 8,192, so
// the shards hold 16,384, 16,384, 16,384 and 4,096 values: one gradient
// tensor each per layer (on FSDP1's post-backward stream), two AdamW states
// and one foreach temporary each per layer's adapter, never one block for
// all of them. Under NO_SHARD the pieces stay state_pieces' own.
TEST(Fsdp1Construction, LoraUnitsShardGradientsStatesAndTemporariesOneTensorEach) {
  const auto basis_for = [](const std::string& fsdp) {
    json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
              {"task", "train"},
              {"train",
               {{"framework", "torchtune@0.2.0"},
                {"method", "lora"},
                {"seq_len", 512},
                {"grad_accum", 1},
                {"optimizer", "adamw_torch"},
                {"lora", {{"rank", 16}, {"targets", {"q_proj", "v_proj"}}}}}},
              {"parallel", {{"gpus", 2}, {"fsdp", fsdp}, {"fsdp_version", 1}}}};
    auto p = parse_request(r);
    EXPECT_TRUE(p.ok());
    return p.value();
  };
  const Request req = basis_for("full_shard");
  const auto basis = train::rank_basis(req, req, train::whole_model(req));
  const int64_t e = basis.dt.adapter;
  const auto sorted = [](std::vector<memory::Piece> v) {
    std::sort(v.begin(), v.end(), [](const memory::Piece& a, const memory::Piece& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.count > b.count;
    });
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const auto& p : v) out.emplace_back(p.bytes, p.count);
    return out;
  };
  using Pairs = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(sorted(basis.pieces.grads_layer), (Pairs{{16384 * e, 1}, {16384 * e, 1}, {16384 * e, 1}, {4096 * e, 1}}));
  EXPECT_EQ(sorted(basis.pieces.states), (Pairs{{16384 * e, 32}, {16384 * e, 32}, {16384 * e, 32}, {4096 * e, 32}}));
  EXPECT_EQ(sorted(basis.pieces.opt_temp), (Pairs{{16384 * e, 16}, {16384 * e, 16}, {16384 * e, 16}, {4096 * e, 16}}));
  EXPECT_EQ(basis.state.sz.grads_layer, (3 * 16384 + 4096) * e);
  EXPECT_EQ(basis.state.sz.states, 2 * 16 * (3 * 16384 + 4096) * e);
  // The step allocates each layer's gradients as those tensors, on the
  // post-backward stream (gradients not accumulated: grad_accum 1).
  const Timeline tl = train::training_step(basis, train::step_terms(basis, 1));
  int layers = 0;
  for (const auto& t : tl.tensors()) {
    if (std::string(t.name) != "layer gradients") continue;
    ++layers;
    EXPECT_EQ(t.stream, memory::kFsdp1PostBackwardStream);
    EXPECT_EQ(t.mallocs, 4);
  }
  EXPECT_EQ(layers, 16);
  const Request no_shard = basis_for("no_shard");
  const auto whole = train::rank_basis(no_shard, no_shard, train::whole_model(no_shard));
  EXPECT_EQ(sorted(whole.pieces.states).size(), 4u);  // state_pieces': whole tensors
  EXPECT_EQ(sorted(whole.pieces.states)[0], std::make_pair(32768 * e, int64_t{32}));
}

// FSDP1's LoRA wrap policy is the framework's (release_table.h, the
// parallel.fsdp_adapter_units rules): fsdp_qlora (train.py 50efa1e
// get_wrapping_policy), torchtune before 0.3 (lora_fsdp_wrap_policy) and hf
// (the Trainer's _fsdp_qlora_plugin_updates -> PEFT fsdp_auto_wrap_policy)
// wrap each adapter matrix: one gradient tensor per matrix shard (4 per layer
// with q_proj and v_proj). LitGPT wraps whole Blocks (FSDPStrategy
// auto_wrap_policy={Block}, use_orig_params=True): one flat gradient per
// layer, as before fsdp1_adapter_pieces. Each rule is listed as applied.
TEST(Fsdp1Construction, AdapterUnitsAreTheFrameworksWrapPolicy) {
  struct Seen {
    json applied;  // the rule's value as listed, null if none
    int64_t grad_mallocs = 0;
  };
  const auto seen = [](const std::string& framework) {
    json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
              {"task", "train"},
              {"train",
               {{"framework", framework},
                {"method", "lora"},
                {"seq_len", 512},
                {"grad_accum", 1},
                {"lora", {{"rank", 16}, {"targets", {"q_proj", "v_proj"}}}}}},
              {"parallel", {{"gpus", 2}, {"fsdp", "full_shard"}, {"fsdp_version", 1}}}};
    Seen out;
    const json est = vram::estimate(r);
    EXPECT_FALSE(est.contains("error")) << est.dump();
    for (const json& d : est["framework"]["defaults_applied"]) {
      if (d["path"] == "parallel.fsdp_adapter_units") out.applied = d["value"];
    }
    auto p = parse_request(r);
    EXPECT_TRUE(p.ok()) << framework;
    const Request& req = p.value();
    const auto basis = train::rank_basis(req, req, train::whole_model(req));
    const Timeline tl = train::training_step(basis, train::step_terms(basis, 1));
    for (const auto& t : tl.tensors()) {
      if (std::string(t.name) == "layer gradients") out.grad_mallocs = std::max<int64_t>(out.grad_mallocs, t.mallocs);
    }
    return out;
  };
  for (const std::string fw : {"fsdp_qlora", "torchtune@0.2.0", "hf@4.44.0"}) {
    const Seen s = seen(fw);
    EXPECT_EQ(s.applied, true) << fw;
    EXPECT_EQ(s.grad_mallocs, 4) << fw;
  }
  const Seen lit = seen("litgpt@0.4.0");
  EXPECT_EQ(lit.applied, false);
  EXPECT_EQ(lit.grad_mallocs, 1);
  // The request's own value wins over the rule, and is not listed as applied.
  json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
            {"task", "train"},
            {"train", {{"framework", "litgpt@0.4.0"}, {"method", "lora"}, {"seq_len", 512}}},
            {"parallel", {{"gpus", 2}, {"fsdp", "full_shard"}, {"fsdp_version", 1}, {"fsdp_adapter_units", true}}}};
  auto p = parse_request(r);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p.value().parallel.fsdp_adapter_units);
  const json est = vram::estimate(r);
  ASSERT_TRUE(est["framework"]["defaults_applied"].is_array()) << est.dump();
  for (const json& d : est["framework"]["defaults_applied"]) {
    EXPECT_NE(d["path"], "parallel.fsdp_adapter_units");
  }
}

// LitGPT before 0.5.8 wraps whole Blocks under Fabric's use_orig_params=True
// (memory::fsdp1_mixed_unit_grads): each Block's sharded gradient spans its
// frozen weights. Worked by hand on Llama-3.2-1B (h 2048, 8 KV heads of 64,
// MLP 8192, 16 layers, no biases): a Block holds q and o 2048 x 2048
// (4,194,304 each), k and v 2048 x 512 (1,048,576 each), gate, up and down
// 2048 x 8192 (16,777,216 each) and two RMSNorm weights of 2048: 60,821,504
// frozen values. bf16-mixed (LitGPT's default) keeps them in fp32: 243,286,016
// B, 121,643,008 B on each of 2 ranks, 16 layers of it; bf16-true halves it,
// 4 ranks halve it again. The root unit (embeddings, final norm; the head
// tied) trains nothing here and gets no gradient. What the adapters' share
// is, is the same with and without the rule (the request's own
// fsdp_adapter_units true turns it off).
TEST(Fsdp1Construction, LitgptBlockUnitsGradientSpansTheirFrozenWeights) {
  const auto basis_for = [](const std::string& fsdp, int gpus, const std::string& precision, bool units_given) {
    json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
              {"task", "train"},
              {"train",
               {{"framework", "litgpt@0.4.0"},
                {"method", "lora"},
                {"seq_len", 512},
                {"grad_accum", 1},
                {"precision", precision},
                {"lora", {{"rank", 16}, {"targets", {"q_proj", "v_proj"}}}}}},
              {"parallel", {{"gpus", gpus}, {"fsdp", fsdp}, {"fsdp_version", 1}}}};
    if (units_given) r["parallel"]["fsdp_adapter_units"] = true;
    auto p = parse_request(r);
    EXPECT_TRUE(p.ok());
    const Request req = p.value();
    return train::rank_basis(req, req, train::whole_model(req));
  };
  constexpr int64_t kFrozen = 60821504;  // one Block's frozen values
  struct Case {
    std::string fsdp;
    int gpus;
    std::string precision;
    int64_t per_layer;  // the frozen share of one Block's gradient on a rank
  };
  for (const Case& c : {Case{"full_shard", 2, "amp_bf16", kFrozen * 4 / 2}, Case{"full_shard", 2, "bf16", kFrozen},
                        Case{"shard_grad_op", 4, "amp_bf16", kFrozen}}) {
    const auto with = basis_for(c.fsdp, c.gpus, c.precision, false);
    const auto without = basis_for(c.fsdp, c.gpus, c.precision, true);
    EXPECT_GT(without.state.sz.grads_layer, 0) << c.fsdp << " " << c.precision;
    EXPECT_EQ(without.state.mixed_unit_grads, 0);
    EXPECT_EQ(with.state.sz.grads_layer - without.state.sz.grads_layer, c.per_layer) << c.fsdp << " " << c.precision;
    EXPECT_EQ(with.state.mixed_unit_grads, 16 * c.per_layer);
    EXPECT_EQ(with.state.sz.grads - without.state.sz.grads, 16 * c.per_layer);
    EXPECT_EQ(with.state.sz.states, without.state.sz.states);  // the optimizer holds the adapters' states only
  }
  // Through the estimate: the rule is listed with its source and the
  // gradients component says what it adds; from 0.5.8 (torch.nn.Linear
  // units) it does not apply.
  const auto estimate = [](const std::string& framework) {
    json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
              {"task", "train"},
              {"train", {{"framework", framework}, {"method", "lora"}, {"seq_len", 512}}},
              {"parallel", {{"gpus", 2}, {"fsdp", "full_shard"}, {"fsdp_version", 1}}}};
    return vram::estimate(r);
  };
  const json old = estimate("litgpt@0.4.0");
  ASSERT_FALSE(old.contains("error")) << old.dump();
  bool listed = false;
  for (const json& d : old["framework"]["defaults_applied"]) {
    if (d["path"] == "parallel.fsdp_adapter_units") {
      listed = d["value"] == false && d["source"].get<std::string>().find("use_orig_params=True") != std::string::npos;
    }
  }
  EXPECT_TRUE(listed) << old["framework"].dump();
  bool said = false;
  for (const json& c : old["components"]) {
    if (c["key"] == "gradients") said = c["formula"].get<std::string>().find("use_orig_params") != std::string::npos;
  }
  EXPECT_TRUE(said);
  const json newer = estimate("litgpt@0.5.8");
  ASSERT_FALSE(newer.contains("error")) << newer.dump();
  for (const json& d : newer["framework"]["defaults_applied"]) EXPECT_NE(d["path"], "parallel.fsdp_adapter_units");
}

// hf (accelerate / the Trainer) and torchtune before 0.3 build FSDP1 with
// sync_module_states=True: a release rule, listed with its source; LitGPT
// (Fabric's FSDPStrategy) leaves torch's default, False.
TEST(Fsdp1Construction, SyncModuleStatesIsAReleaseRule) {
  const auto applied = [](const std::string& framework, const json& parallel) {
    json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
              {"task", "train"},
              {"train", {{"framework", framework}, {"method", "lora"}, {"seq_len", 512}}},
              {"parallel", parallel}};
    const json est = vram::estimate(r);
    EXPECT_FALSE(est.contains("error")) << est.dump();
    for (const json& d : est["framework"]["defaults_applied"]) {
      if (d["path"] == "parallel.fsdp_sync_module_states" && d["value"] == true) return true;
    }
    return false;
  };
  const json fsdp1 = {{"gpus", 2}, {"fsdp", "full_shard"}, {"fsdp_version", 1}};
  EXPECT_TRUE(applied("hf@4.39.0", fsdp1));
  EXPECT_TRUE(applied("hf@4.39.0", {{"gpus", 2}, {"sharding", "full_shard"}, {"fsdp_version", 1}}));
  EXPECT_TRUE(applied("torchtune@0.2.0", fsdp1));
  EXPECT_FALSE(applied("torchtune@0.3.0", fsdp1));
  EXPECT_FALSE(applied("litgpt@0.4.0", fsdp1));
  EXPECT_FALSE(applied("hf@4.39.0", {{"gpus", 2}}));
}

// hf from transformers 5.10.3 (PR #45640, training_args.py
// _process_fsdp_args: fsdp_config.get('version', 2)): the Trainer's own FSDP
// is FSDP2 for full_shard and shard_grad_op, listed as applied, and FSDP1's
// sync_module_states then no longer holds. Older releases (and a release
// whose transformers the request sets older), hybrid_shard and no_shard
// (FSDP1 only in the Trainer), a version the request names and the other
// frameworks keep FSDP1.
TEST(Fsdp1Construction, TheTrainersFsdpIsFsdp2FromTransformers5_10_3) {
  struct Applied {
    std::string layout;
    json version, sync;  // the values the release rules applied, null if none
  };
  const auto applied = [](const std::string& framework, json parallel, const json& versions = json()) {
    json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
              {"task", "train"},
              {"train", {{"framework", framework}, {"method", "lora"}, {"seq_len", 512}}},
              {"parallel", std::move(parallel)}};
    if (!versions.is_null()) r["versions"] = versions;
    const json est = vram::estimate(r);
    EXPECT_FALSE(est.contains("error")) << est.dump();
    Applied out{est["parallel"].value("layout", ""), json(), json()};
    for (const json& d : est["framework"]["defaults_applied"]) {
      if (d["path"] == "parallel.fsdp_version") out.version = d["value"];
      if (d["path"] == "parallel.fsdp_sync_module_states") out.sync = d["value"];
    }
    return out;
  };
  const json full = {{"gpus", 2}, {"fsdp", "full_shard"}};
  for (const std::string hf : {"hf@5.13.1", "hf"}) {
    const Applied a = applied(hf, full);
    EXPECT_EQ(a.layout, "FSDP2 full_shard") << hf;
    EXPECT_EQ(a.version, 2) << hf;
    EXPECT_TRUE(a.sync.is_null()) << hf;
  }
  EXPECT_EQ(applied("hf", {{"gpus", 2}, {"fsdp", "shard_grad_op"}}).layout, "FSDP2 shard_grad_op");
  EXPECT_EQ(applied("hf", {{"gpus", 2}, {"sharding", "full_shard"}}).version, 2);
  // FSDP1: before the change, by the request's own choice, or a strategy
  // FSDP2 does not take under the Trainer.
  for (const Applied& a : {applied("hf@5.0.0", full), applied("hf", full, {{"transformers", "5.0.0"}}),
                           applied("hf", {{"gpus", 2}, {"fsdp", "full_shard"}, {"fsdp_version", 1}}),
                           applied("hf", {{"gpus", 2}, {"fsdp", "no_shard"}})}) {
    EXPECT_EQ(a.layout.rfind("FSDP ", 0), 0u) << a.layout;
    EXPECT_TRUE(a.version.is_null());
    EXPECT_EQ(a.sync, true);
  }
  EXPECT_TRUE(applied("litgpt", full).version.is_null());
  EXPECT_TRUE(applied("axolotl", full).version.is_null());
}

// In training FSDP1 allocates the unsharded flat parameters on its unshard
// stream: the root unit and two layers (current + prefetched), in the
// parameters' dtype. Llama-3.2-1B LoRA in bf16 over 2 GPUs: a decoder layer
// is 60,821,504 parameters, the root unit 262,670,336 (tied embedding, final
// norm). The construction replays 16 layer units and the root, each shard
// half its unit.
TEST(Fsdp1Construction, GathersOnTheUnshardStreamAndShardsAtLoad) {
  json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
            {"task", "train"},
            {"train", {{"method", "lora"}, {"micro_batch", 1}, {"seq_len", 512}, {"precision", "bf16"}}},
            {"parallel", {{"gpus", 2}, {"fsdp", "full_shard"}, {"fsdp_version", 1}}}};
  auto p = parse_request(r);
  ASSERT_TRUE(p.ok());
  const Request req = p.value();
  const auto basis = train::rank_basis(req, req, train::whole_model(req));
  const Timeline tl = train::training_step(basis, train::step_terms(basis, 1));
  constexpr int64_t kLayer = 60821504 * 2, kRoot = 262670336 * 2;
  std::vector<int64_t> shards;
  int32_t moved = 0;
  for (size_t e = 0; e < tl.step_begin(); ++e) {
    const Event& ev = tl.events()[e];
    if (ev.op != Event::Op::kAlloc) continue;
    const auto& t = tl.tensors()[static_cast<size_t>(ev.index)];
    if (std::string(t.name) == "FSDP1 shard") shards.push_back(t.bytes);
    if (std::string(t.name) == "FSDP1 construction: the unit moved to the GPU") ++moved;
  }
  EXPECT_EQ(moved, 17);
  ASSERT_EQ(shards.size(), 17u);
  EXPECT_EQ(shards.front(), kLayer / 2);
  EXPECT_EQ(shards.back(), kRoot / 2);
  bool gathered = false;
  for (size_t e = tl.step_begin(); e < tl.events().size(); ++e) {
    const Event& ev = tl.events()[e];
    if (ev.op != Event::Op::kAlloc) continue;
    const auto& t = tl.tensors()[static_cast<size_t>(ev.index)];
    if (std::string(t.component) != "gathered_params") continue;
    gathered = true;
    EXPECT_EQ(t.stream, memory::kFsdp1UnshardStream);
    EXPECT_EQ(t.bytes, kRoot + 2 * kLayer);
    const std::vector<memory::Piece> pieces = {{kRoot, 1}, {kLayer, 2}};
    const auto got = tl.pieces(t);
    ASSERT_EQ(got.size(), pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      EXPECT_EQ(got[i].bytes, pieces[i].bytes);
      EXPECT_EQ(got[i].count, pieces[i].count);
    }
  }
  EXPECT_TRUE(gathered);
}

// One layer's backward under full checkpointing, tensor by tensor (issue 32
// rows 83-84): the re-run layer, the dequantised 4-bit weight
// (MatMul4Bit.backward), the two hidden-state gradients, the MLP's d(act)
// and d(up), SDPA's fp32 dq_accum and dq / dk / dv at every head, then the
// gradient flowing down: separate allocations the caching allocator can
// place in a fragmented pool, not one block of their sum.
TEST(LayerBackward, TemporariesAreTheTensorsTheBackwardMakes) {
  json r = {{"model", {{"config", testing::model_config("meta-llama/Llama-3.2-1B")}}},
            {"task", "train"},
            {"train",
             {{"method", "qlora"},
              {"micro_batch", 2},
              {"seq_len", 512},
              {"precision", "bf16"},
              {"grad_checkpointing", "full"},
              {"attention", "sdpa"}}}};
  auto p = parse_request(r);
  ASSERT_TRUE(p.ok());
  const Request req = p.value();
  const auto basis = train::rank_basis(req, req, train::whole_model(req));
  const Timeline tl = train::training_step(basis, train::step_terms(basis, 2));
  // bf16 autocast: the residual stream fp32, the kernels' outputs bf16.
  constexpr int64_t N = 2 * 512, h = 2048, inter = 8192, heads = 32, d = 64;
  const std::vector<memory::Piece> backward = {{inter * h * 2, 1},      // down_proj dequantised, bf16
                                               {4 * h * N, 2},          // hidden-state gradients
                                               {2 * inter * N, 2},      // d(act), d(up)
                                               {4 * heads * d * N, 1},  // dq_accum, fp32
                                               {2 * heads * d * N, 3},  // dq, dk, dv
                                               {4 * h * N, 1}};         // the gradient flowing down
  int layers = 0;
  for (const auto& t : tl.tensors()) {
    if (std::string(t.name) != "one layer's backward temporaries") continue;
    ++layers;
    const auto got = tl.pieces(t);
    ASSERT_EQ(got.size(), backward.size() + 1);
    int64_t sum = got[0].bytes;  // the re-run layer, one block
    EXPECT_EQ(got[0].count, 1);
    for (size_t i = 0; i < backward.size(); ++i) {
      EXPECT_EQ(got[i + 1].bytes, backward[i].bytes) << i;
      EXPECT_EQ(got[i + 1].count, backward[i].count) << i;
      sum += got[i + 1].bytes * got[i + 1].count;
    }
    EXPECT_EQ(sum, t.bytes);
  }
  EXPECT_EQ(layers, 16);
}

}  // namespace
}  // namespace vram

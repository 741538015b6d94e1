// ggml's scheduler and graph allocator, replayed (memory/ggml_graph.h).
#include "memory/ggml_graph.h"

#include <gtest/gtest.h>

namespace vram::memory::ggml {
namespace {

Backends one_gpu() {
  Backends b;
  b.count = 2;
  b.alignment = {128, 32};
  return b;
}

int32_t weight(Graph& g, int64_t bytes, int32_t home) {
  Tensor t;
  t.name = "w";
  t.bytes = bytes;
  t.external = t.weight = true;
  t.home = home;
  return g.add(t);
}

TEST(GgmlGraph, InPlaceOpsReuseTheirParentAndFreedTensorsAreReused) {
  Graph g;
  const int32_t w = weight(g, 1 << 20, 0);
  Tensor in;
  in.name = "x";
  in.bytes = 1000;
  in.input = true;
  const int32_t x = g.add(in);
  // a = w x (1024 B), b = a in place, c = w b (1024 B), d = w c. The
  // input's copy (1000 B, 1024 aligned) dies with a's computation and c
  // takes its block; b dies with c and d takes b's.
  const int32_t a = g.op("a", Op::kNew, 1024, {w, x});
  const int32_t b = g.op("b", Op::kInPlace, 1024, {a});
  const int32_t c = g.op("c", Op::kNew, 1024, {w, b});
  g.op("d", Op::kNew, 1024, {w, c});
  const auto sizes = reserve(g, one_gpu());
  EXPECT_EQ(sizes[0], 2 * 1024);
  EXPECT_EQ(sizes[1], 1024);  // the input on the host, 1000 aligned to 32
}

TEST(GgmlGraph, AHostWeightsOpRunsOnTheGpuWithTheWeightCopied) {
  // op offload: a matmul over a host weight with >= 32 rows runs on the GPU,
  // its weight copied into the GPU's compute buffer for that split only.
  Graph g;
  const int32_t wg = weight(g, 4096, 0);
  const int32_t wc = weight(g, 1 << 20, 1);
  Tensor in;
  in.name = "x";
  in.bytes = 256;
  in.input = true;
  const int32_t x = g.add(in);
  const int32_t a = g.op("a", Op::kNew, 256, {wg, x});
  const int32_t b = g.op("b", Op::kNew, 256, {wc, a});
  g.tensors()[static_cast<size_t>(b)].offloadable = true;
  const auto offloaded = reserve(g, one_gpu());
  EXPECT_GE(offloaded[0], (1 << 20) + 256);
  Backends no = one_gpu();
  no.op_offload = false;
  const auto on_cpu = reserve(g, no);
  EXPECT_LT(on_cpu[0], 1 << 20);
  EXPECT_GE(on_cpu[1], 256);
}

TEST(GgmlGraph, PipelineCopiesAreKeptForTheWholeGraph) {
  Graph g;
  const int32_t w0 = weight(g, 64, 0);
  Tensor in;
  in.name = "mask";
  in.bytes = 1 << 16;
  in.input = true;
  const int32_t m = g.add(in);
  g.op("a", Op::kNew, 128, {w0, m});
  Backends b = one_gpu();
  const int64_t single = reserve(g, b)[0];
  b.copies = 4;
  const int64_t copies = reserve(g, b)[0];
  EXPECT_GE(copies, single + 3 * (1 << 16));  // four copies of the input, never freed
}

}  // namespace
}  // namespace vram::memory::ggml

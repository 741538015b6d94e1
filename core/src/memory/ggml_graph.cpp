// ggml's scheduler and graph allocator, replayed (memory/ggml_graph.h).
#include "memory/ggml_graph.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>

namespace vram::memory::ggml {

int32_t Graph::add(Tensor t) {
  t_.push_back(std::move(t));
  return static_cast<int32_t>(t_.size()) - 1;
}

int32_t Graph::op(const char* name, Op op, int64_t bytes, std::vector<int32_t> src) {
  Tensor t;
  t.name = name;
  t.op = op;
  t.bytes = bytes;  // a view's logical size: what a copy of it to another backend takes
  t.src = std::move(src);
  return add(std::move(t));
}

namespace {

bool leaf(const Tensor& t) { return t.external || t.input; }

// ggml_backend_sched_split_graph passes 1 and 2: backends from weights and
// pre-allocated buffers, inputs on the CPU, then GPU assignments expanded to
// their neighbours (down, up), then any backend (down, up).
std::vector<int32_t> assign(const Graph& g, const Backends& b) {
  const auto& t = g.tensors();
  const int32_t cpu = b.count - 1;
  std::vector<int32_t> be(t.size(), -1);
  auto root = [&](int32_t i) {
    while (t[i].op == Op::kView && !t[i].src.empty()) i = t[i].src[0];
    return i;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].external) be[i] = t[i].home;
    if (t[i].input) be[i] = cpu;
  }
  for (size_t i = 0; i < t.size(); ++i) {
    if (leaf(t[i])) continue;
    const int32_t r = root(static_cast<int32_t>(i));
    if (t[i].op == Op::kView && t[r].external) {
      be[i] = t[r].home;  // a view of a pre-allocated tensor (a write into the KV cache)
      continue;
    }
    for (int32_t s : t[i].src) {
      if (!t[s].weight) continue;
      const int32_t w = t[s].home;
      be[i] = b.op_offload && w == cpu && cpu > 0 && t[i].offloadable ? 0 : w;
      break;
    }
  }
  auto expand = [&](bool gpu_only, bool down) {
    int32_t cur = -1;
    const int64_t n = static_cast<int64_t>(t.size());
    for (int64_t k = 0; k < n; ++k) {
      const size_t i = static_cast<size_t>(down ? k : n - 1 - k);
      if (leaf(t[i]) || t[i].op == Op::kView) continue;
      if (be[i] != -1) {
        cur = gpu_only && be[i] == cpu ? -1 : be[i];
      } else if (cur != -1) {
        be[i] = cur;
      }
    }
  };
  expand(true, true);
  expand(true, false);
  expand(false, true);
  expand(false, false);
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].op == Op::kView && be[i] == -1) be[i] = be[static_cast<size_t>(root(static_cast<int32_t>(i)))];
    if (be[i] == -1) be[i] = cpu;
  }
  return be;
}

// What ggml-alloc sees: the graph copy the scheduler builds (each split's
// input copies at its start, then its nodes) with every tensor's backend.
struct Plan {
  std::vector<Tensor> t;
  std::vector<int32_t> be;
  std::vector<int32_t> order;  // nodes in execution order
  std::vector<int32_t> leafs;  // allocated first
};

Plan split(const Graph& g, const Backends& b, const std::vector<int32_t>& be0) {
  Plan p;
  p.t = g.tensors();
  p.be = be0;
  const int32_t cpu = b.count - 1;
  std::map<std::pair<int32_t, int32_t>, int32_t> copy_of;  // (tensor, backend) -> its copy there
  auto new_copy = [&](int32_t src, int32_t backend, bool leaf_copy) {
    Tensor c;
    c.name = p.t[static_cast<size_t>(src)].name + "#copy";
    c.bytes = p.t[static_cast<size_t>(src)].bytes;
    c.src = {src};
    c.output = leaf_copy;  // ggml_set_output: "prevent ggml-alloc from overwriting the tensor"
    c.input = leaf_copy;
    p.t.push_back(c);
    p.be.push_back(backend);
    return static_cast<int32_t>(p.t.size()) - 1;
  };
  const size_t n = g.tensors().size();
  int32_t split_backend = -1;
  bool split_has_inputs = false;
  for (size_t i = 0; i < n; ++i) {
    if (leaf(p.t[i]) || p.t[i].op == Op::kView) {
      if (!leaf(p.t[i])) p.order.push_back(static_cast<int32_t>(i));
      continue;
    }
    const int32_t nb = p.be[i];
    bool fresh = nb != split_backend;
    for (int32_t s : p.t[i].src) {  // a weight from another backend starts a new split
      if (p.t[static_cast<size_t>(s)].weight && p.be[static_cast<size_t>(s)] != nb && split_has_inputs) fresh = true;
    }
    if (fresh) {
      split_backend = nb;
      split_has_inputs = false;
    }
    std::vector<int32_t> srcs = p.t[i].src;  // new_copy grows p.t
    for (int32_t& s : srcs) {
      const int32_t sb = p.be[static_cast<size_t>(s)];
      if (sb == nb) continue;
      auto key = std::make_pair(s, nb);
      auto it = copy_of.find(key);
      if (it == copy_of.end()) {
        // b.copies > 1 (pipeline parallelism): every copy of a split input
        // is a leaf, n_copies of them, allocated first and never freed;
        // graph inputs get their own copies on their backend too.
        const bool leaf_copies = b.copies > 1;
        const int32_t c = new_copy(s, nb, leaf_copies);
        if (leaf_copies) {
          p.leafs.push_back(c);
          for (int32_t k = 1; k < b.copies; ++k) p.leafs.push_back(new_copy(s, nb, true));
          if (p.t[static_cast<size_t>(s)].input && sb == cpu) {
            for (int32_t k = 1; k < b.copies; ++k) p.leafs.push_back(new_copy(s, sb, true));
          }
        } else {
          p.order.push_back(c);
        }
        it = copy_of.emplace(key, c).first;
        split_has_inputs = true;
      }
      s = it->second;
    }
    p.t[i].src = std::move(srcs);
    p.order.push_back(static_cast<int32_t>(i));
  }
  for (size_t i = 0; i < n; ++i) {
    if (p.t[i].input) p.leafs.insert(p.leafs.begin(), static_cast<int32_t>(i));
  }
  return p;
}

// ggml_dyn_tallocr: free blocks in offset order; best fit among all but the
// last, else the last (which grows the buffer); merged on free.
class DynAlloc {
 public:
  explicit DynAlloc(int64_t alignment) : align_(alignment) { free_.push_back({0, kHuge}); }

  int64_t alloc(int64_t size) {
    size = pad(size);
    int best = -1;
    int64_t best_size = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i + 1 < free_.size(); ++i) {
      if (free_[i].size >= size && free_[i].size <= best_size) {
        best = static_cast<int>(i);
        best_size = free_[i].size;
      }
    }
    if (best == -1) best = static_cast<int>(free_.size()) - 1;
    Block& blk = free_[static_cast<size_t>(best)];
    const int64_t at = blk.offset;
    blk.offset += size;
    blk.size -= size;
    if (blk.size == 0) free_.erase(free_.begin() + best);
    max_ = std::max(max_, at + size);
    return at;
  }

  void release(int64_t at, int64_t size) {
    size = pad(size);
    for (size_t i = 0; i < free_.size(); ++i) {
      Block& blk = free_[i];
      if (blk.offset + blk.size == at) {
        blk.size += size;
        if (i + 1 < free_.size() && blk.offset + blk.size == free_[i + 1].offset) {
          blk.size += free_[i + 1].size;
          free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        }
        return;
      }
      if (at + size == blk.offset) {
        blk.offset = at;
        blk.size += size;
        if (i > 0 && free_[i - 1].offset + free_[i - 1].size == blk.offset) {
          free_[i - 1].size += blk.size;
          free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        }
        return;
      }
    }
    auto pos = std::find_if(free_.begin(), free_.end(), [&](const Block& x) { return x.offset > at; });
    free_.insert(pos, {at, size});
  }

  int64_t max_size() const { return max_; }

 private:
  struct Block {
    int64_t offset;
    int64_t size;
  };
  static constexpr int64_t kHuge = std::numeric_limits<int64_t>::max() / 4;
  int64_t pad(int64_t x) const { return (x + align_ - 1) / align_ * align_; }

  int64_t align_;
  std::vector<Block> free_;
  int64_t max_ = 0;
};

// ggml_gallocr_alloc_graph_impl over the plan.
std::vector<int64_t> allocate(const Plan& p, const Backends& b) {
  std::vector<DynAlloc> alloc;
  for (int32_t k = 0; k < b.count; ++k) alloc.emplace_back(b.alignment[static_cast<size_t>(k)]);
  const size_t n = p.t.size();
  std::vector<int32_t> children(n, 0), views(n, 0);
  std::vector<bool> allocated(n, false), own(n, false);
  std::vector<int64_t> addr(n, -1);
  for (int32_t i : p.order) {
    const Tensor& t = p.t[static_cast<size_t>(i)];
    if (t.op == Op::kView && !t.src.empty()) views[static_cast<size_t>(t.src[0])] += 1;
    for (int32_t s : t.src) children[static_cast<size_t>(s)] += 1;
  }
  auto place = [&](int32_t i) {
    const size_t k = static_cast<size_t>(i);
    const Tensor& t = p.t[k];
    if (own[k] || t.external || t.op == Op::kView) return;
    own[k] = allocated[k] = true;
    if (t.op == Op::kInPlace) {
      for (int32_t s : t.src) {
        const size_t sk = static_cast<size_t>(s);
        if (!own[sk] || p.t[sk].output || p.t[sk].op == Op::kView || p.t[sk].bytes != t.bytes) continue;
        if (children[sk] == 1 && views[sk] == 0 && p.be[sk] == p.be[k]) {
          addr[k] = addr[sk];
          allocated[sk] = false;  // the node takes over the parent's memory
          return;
        }
      }
    }
    addr[k] = alloc[static_cast<size_t>(p.be[k])].alloc(t.bytes);
  };
  auto release = [&](size_t k) {
    if (p.t[k].output || !allocated[k]) return;
    alloc[static_cast<size_t>(p.be[k])].release(addr[k], p.t[k].bytes);
    allocated[k] = false;
  };
  for (int32_t i : p.leafs) place(i);
  for (int32_t i : p.order) {
    for (int32_t s : p.t[static_cast<size_t>(i)].src) place(s);
    place(i);
    for (int32_t s : p.t[static_cast<size_t>(i)].src) {
      const size_t sk = static_cast<size_t>(s);
      if (--children[sk] != 0 || views[sk] != 0) continue;
      if (p.t[sk].op == Op::kView && !p.t[sk].src.empty()) {
        const size_t vs = static_cast<size_t>(p.t[sk].src[0]);
        if (--views[vs] == 0 && children[vs] == 0) release(vs);
      } else {
        release(sk);
      }
    }
  }
  std::vector<int64_t> out;
  for (const auto& a : alloc) out.push_back(a.max_size());
  return out;
}

}  // namespace

std::vector<int64_t> reserve(Graph g, const Backends& b) {
  const std::vector<int32_t> be = assign(g, b);
  return allocate(split(g, b, be), b);
}

}  // namespace vram::memory::ggml

// Private: the caching allocator model's ordered sets of cached blocks
// (caching_allocator.cpp), the source's std::set<Block*, BlockComparatorSize>
// and std::set<Block*, BlockComparatorAddress> as a flat array.
//
// An entry keeps the block's key (stream, size, address) and its index in the
// allocator's block array; entries sit in key order in chunks of kChunk, and a
// chunk list in key order points to them, so an insert or erase moves at most
// one chunk's entries (the allocator holds a few hundred cached blocks at
// once, up to thousands) and the whole set is a few vectors of plain values:
// copying an allocator's state is copying arrays. Address-ordered sets store
// size 0. As with the source's set, a block's key must not change while it is
// in the set (erase, change, insert).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace vram::memory {

class BlockSet {
 public:
  struct Entry {
    int64_t size = 0;
    uint64_t ptr = 0;
    int32_t stream = 0;
    int32_t id = -1;  // the block's index in the allocator's array
  };
  // A place in the set: the chunk's rank in key order and the entry in it.
  struct Pos {
    int32_t chunk = 0;
    int32_t index = 0;
  };

  // BlockComparatorSize(): (stream, size, address); with size 0 throughout,
  // BlockComparatorAddress().
  static bool less(const Entry& a, const Entry& b) {
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.size != b.size) return a.size < b.size;
    return a.ptr < b.ptr;
  }

  bool empty() const { return order_.empty(); }
  Pos begin() const { return {0, 0}; }
  bool at_end(Pos p) const { return p.chunk >= static_cast<int32_t>(order_.size()); }
  bool is_begin(Pos p) const { return p.chunk == 0 && p.index == 0; }
  const Entry& at(Pos p) const { return chunk(p.chunk).e[static_cast<size_t>(p.index)]; }
  Pos next(Pos p) const {
    if (++p.index < chunk(p.chunk).n) return p;
    return {p.chunk + 1, 0};
  }
  // The place before p (p is not begin()).
  Pos prev(Pos p) const {
    if (p.index > 0) return {p.chunk, p.index - 1};
    return {p.chunk - 1, chunk(p.chunk - 1).n - 1};
  }

  // The first entry not less than `key` (at_end() if none): std::set::lower_bound.
  Pos lower_bound(const Entry& key) const {
    const auto c = std::partition_point(order_.begin(), order_.end(), [&](int32_t id) {
      const Chunk& ch = chunks_[static_cast<size_t>(id)];
      return less(ch.e[static_cast<size_t>(ch.n - 1)], key);
    });
    const auto rank = static_cast<int32_t>(c - order_.begin());
    if (c == order_.end()) return {rank, 0};
    const Chunk& ch = chunks_[static_cast<size_t>(*c)];
    const auto it = std::lower_bound(ch.e.begin(), ch.e.begin() + ch.n, key, less);
    return {rank, static_cast<int32_t>(it - ch.e.begin())};
  }

  void insert(const Entry& e) {
    if (order_.empty()) {
      const int32_t id = new_chunk();
      chunks_[static_cast<size_t>(id)].e[0] = e;
      chunks_[static_cast<size_t>(id)].n = 1;
      order_.push_back(id);
      return;
    }
    Pos p = lower_bound(e);
    // Past the last entry: append to the last chunk.
    if (at_end(p)) p = {static_cast<int32_t>(order_.size()) - 1, chunk(static_cast<int32_t>(order_.size()) - 1).n};
    if (chunk(p.chunk).n == kChunk) {
      split(p.chunk);
      const int32_t half = chunk(p.chunk).n;
      if (p.index > half) p = {p.chunk + 1, p.index - half};
    }
    Chunk& ch = chunk(p.chunk);
    std::copy_backward(ch.e.begin() + p.index, ch.e.begin() + ch.n, ch.e.begin() + ch.n + 1);
    ch.e[static_cast<size_t>(p.index)] = e;
    ++ch.n;
  }

  // Removes the entry with e's key (it must be in the set).
  void erase(const Entry& e) { erase_at(lower_bound(e)); }

  void erase_at(Pos p) {
    Chunk& ch = chunk(p.chunk);
    std::copy(ch.e.begin() + p.index + 1, ch.e.begin() + ch.n, ch.e.begin() + p.index);
    if (--ch.n == 0) {
      spare_.push_back(order_[static_cast<size_t>(p.chunk)]);
      order_.erase(order_.begin() + p.chunk);
    }
  }

  // Every entry's block index, in key order.
  template <class F>
  void for_each(F&& f) const {
    for (int32_t id : order_) {
      const Chunk& ch = chunks_[static_cast<size_t>(id)];
      for (int32_t i = 0; i < ch.n; ++i) f(ch.e[static_cast<size_t>(i)]);
    }
  }

 private:
  static constexpr int32_t kChunk = 32;
  struct Chunk {
    int32_t n = 0;
    std::array<Entry, kChunk> e{};
  };

  Chunk& chunk(int32_t rank) { return chunks_[static_cast<size_t>(order_[static_cast<size_t>(rank)])]; }
  const Chunk& chunk(int32_t rank) const { return chunks_[static_cast<size_t>(order_[static_cast<size_t>(rank)])]; }

  int32_t new_chunk() {
    if (!spare_.empty()) {
      const int32_t id = spare_.back();
      spare_.pop_back();
      chunks_[static_cast<size_t>(id)].n = 0;
      return id;
    }
    chunks_.emplace_back();
    return static_cast<int32_t>(chunks_.size()) - 1;
  }

  // Moves the upper half of a full chunk into a new chunk right after it.
  void split(int32_t rank) {
    const int32_t id = new_chunk();  // may move chunks_: take references after
    Chunk& from = chunk(rank);
    Chunk& to = chunks_[static_cast<size_t>(id)];
    const int32_t half = kChunk / 2;
    std::copy(from.e.begin() + half, from.e.begin() + from.n, to.e.begin());
    to.n = from.n - half;
    from.n = half;
    order_.insert(order_.begin() + rank + 1, id);
  }

  std::vector<Chunk> chunks_;
  std::vector<int32_t> order_;  // chunk ids in key order, none empty
  std::vector<int32_t> spare_;  // emptied chunks, reused
};

}  // namespace vram::memory

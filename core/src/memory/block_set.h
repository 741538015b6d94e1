// Private: the caching allocator model's ordered sets of cached blocks
// (caching_allocator.cpp), the source's std::set<Block*, BlockComparatorSize>
// and std::set<Block*, BlockComparatorAddress> as flat arrays.
//
// The set is ordered by (stream, size, address): a sorted array of size
// classes, (stream, size), each a list of its blocks by address, linked
// through an array indexed by the block's id (its index in the allocator's
// block array). Few classes exist at once (4 to 16 on average on the 70B
// estimates of tests/bench), most hold one block (a split's remainder has a
// size of its own: three inserts in four make a new class) and a few hold
// hundreds (one tensor per layer). So a lookup is a binary search over the
// classes; the best fit (the lowest address of the smallest fitting class) is
// the class's head; a block below or above every address of its class (a
// backward pass frees the top layer's tensors first, an optimizer step frees
// in allocation order) is linked at an end, other addresses after a walk of
// the class; and an erase unlinks the block by its id. The whole set is a few
// vectors of plain values: copying an allocator's state is copying arrays.
// Address-ordered sets store size 0 (one class per stream). As with the
// source's set, a block's key must not change while it is in the set (erase,
// change, insert), and a block is in it at most once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace vram::memory {

class BlockSet {
 public:
  struct Entry {
    int64_t size = 0;
    uint64_t ptr = 0;
    int32_t stream = 0;
    int32_t id = -1;  // the block's index in the allocator's array (>= 0)
  };
  // A place in the set: the class's rank in key order and the block's id
  // (-1 past the last class).
  struct Pos {
    int32_t group = 0;
    int32_t id = -1;
  };

  // BlockComparatorSize(): (stream, size, address); with size 0 throughout,
  // BlockComparatorAddress().
  static bool less(const Entry& a, const Entry& b) {
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.size != b.size) return a.size < b.size;
    return a.ptr < b.ptr;
  }

  bool empty() const { return classes_.empty(); }
  Pos begin() const { return first_of(0); }
  bool at_end(Pos p) const { return p.group >= static_cast<int32_t>(classes_.size()); }
  bool is_begin(Pos p) const { return p.group == 0 && (classes_.empty() || p.id == cls(0).first); }
  Entry at(Pos p) const {
    const Slot& c = cls(p.group);
    return {size_of(c), link(p.id).key, c.stream, p.id};
  }
  Pos next(Pos p) const {
    const int32_t n = link(p.id).last;
    return n >= 0 ? Pos{p.group, n} : first_of(p.group + 1);
  }
  // The place before p (p is not begin(); it may be at_end()).
  Pos prev(Pos p) const {
    if (p.id >= 0 && link(p.id).first >= 0) return {p.group, link(p.id).first};
    return {p.group - 1, cls(p.group - 1).last};
  }

  // The first entry not less than `key` (at_end() if none): std::set::lower_bound.
  Pos lower_bound(const Entry& key) const {
    const int32_t c = class_bound(key);
    if (c == static_cast<int32_t>(classes_.size()) || !same_class(cls(c), key)) return first_of(c);
    int32_t id = cls(c).first;
    while (id >= 0 && link(id).key < key.ptr) id = link(id).last;
    return id >= 0 ? Pos{c, id} : first_of(c + 1);
  }

  void insert(const Entry& e) {
    if (links_.size() <= static_cast<size_t>(e.id)) links_.resize(static_cast<size_t>(e.id) + 1);
    Slot& l = links_[static_cast<size_t>(e.id)];
    l = {e.ptr, 0, -1, -1};
    const int32_t c = class_bound(e);
    if (c == static_cast<int32_t>(classes_.size()) || !same_class(cls(c), e)) {
      classes_.insert(classes_.begin() + c, Slot{static_cast<uint64_t>(e.size), e.stream, e.id, e.id});
      return;
    }
    Slot& k = classes_[static_cast<size_t>(c)];
    if (e.ptr > link(k.last).key) {  // above every address of the class
      l.first = k.last;
      links_[static_cast<size_t>(k.last)].last = e.id;
      k.last = e.id;
      return;
    }
    // Before the first address above it (the class's first, when it is the lowest).
    int32_t after = k.first;
    while (link(after).key < e.ptr) after = link(after).last;
    Slot& a = links_[static_cast<size_t>(after)];
    l.first = a.first;
    l.last = after;
    if (a.first >= 0) {
      links_[static_cast<size_t>(a.first)].last = e.id;
    } else {
      k.first = e.id;
    }
    a.first = e.id;
  }

  // Removes the entry with e's key and id (it must be in the set).
  void erase(const Entry& e) {
    const Slot& l = link(e.id);
    // Between two blocks of its class: no class changes.
    if (l.first >= 0 && l.last >= 0) {
      links_[static_cast<size_t>(l.first)].last = l.last;
      links_[static_cast<size_t>(l.last)].first = l.first;
      return;
    }
    erase_at({class_bound(e), e.id});
  }

  void erase_at(Pos p) {
    const Slot& l = link(p.id);
    Slot& k = classes_[static_cast<size_t>(p.group)];
    if (l.first >= 0) {
      links_[static_cast<size_t>(l.first)].last = l.last;
    } else {
      k.first = l.last;
    }
    if (l.last >= 0) {
      links_[static_cast<size_t>(l.last)].first = l.first;
    } else {
      k.last = l.first;
    }
    if (k.first < 0) classes_.erase(classes_.begin() + p.group);
  }

  // Every entry, in key order.
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& c : classes_) {
      for (int32_t id = c.first; id >= 0; id = link(id).last) f(Entry{size_of(c), link(id).key, c.stream, id});
    }
  }

 private:
  // An element of either array below (one element type: one vector's code
  // in the first-visit WebAssembly module, whose size is budgeted).
  // A size class: key = its size, first and last = the ids of its lowest
  // and highest addresses. A link, by block id: key = the block's address,
  // first and last = the ids of the addresses before and after it in its
  // class (-1: none).
  struct Slot {
    uint64_t key = 0;
    int32_t stream = 0;  // a class's
    int32_t first = -1;
    int32_t last = -1;
  };

  const Slot& cls(int32_t rank) const { return classes_[static_cast<size_t>(rank)]; }
  const Slot& link(int32_t id) const { return links_[static_cast<size_t>(id)]; }
  static int64_t size_of(const Slot& c) { return static_cast<int64_t>(c.key); }
  Pos first_of(int32_t rank) const {
    return rank < static_cast<int32_t>(classes_.size()) ? Pos{rank, cls(rank).first} : Pos{rank, -1};
  }
  static bool same_class(const Slot& c, const Entry& e) { return c.stream == e.stream && size_of(c) == e.size; }

  // The first class not below (e.stream, e.size).
  int32_t class_bound(const Entry& e) const {
    const auto it = std::partition_point(classes_.begin(), classes_.end(), [&](const Slot& c) {
      return c.stream != e.stream ? c.stream < e.stream : size_of(c) < e.size;
    });
    return static_cast<int32_t>(it - classes_.begin());
  }

  std::vector<Slot> classes_;  // by (stream, size)
  std::vector<Slot> links_;    // by block id; meaningful for the blocks in the set
};

}  // namespace vram::memory

// Private: the caching allocator model's ordered sets of cached blocks
// (caching_allocator.cpp), the source's std::set<Block*, BlockComparatorSize>
// and std::set<Block*, BlockComparatorAddress> as flat arrays.
//
// The set is ordered by (stream, size, address): a list of size classes,
// (stream, size), in key order, each a list of its blocks by address; both
// are linked through arrays (classes by a class id recycled through a free
// list, blocks by the block's id: its index in the allocator's block array),
// and each block knows its class. Few classes exist at once (0 to 9 on
// BM_EstimateCore70b, 0 to 26 on BM_EstimateTorchtuneQlora70b: counted on
// 4ae17e9), most hold one block (a split's remainder has a size of its own:
// on those benches 73% and 85% of inserts make a new class, and as many
// erases empty one) and a few hold hundreds (one tensor per layer). So a
// lookup walks the classes down from the largest (a few steps, where a
// binary search over a sorted array of classes and the array's shift to add
// or drop one cost ~100 instructions: callgrind on 4ae17e9), making or
// dropping a class is relinking it, and an erase finds the block's class through the
// block, without a lookup. The best fit (the lowest address of the smallest
// fitting class) is the class's head; a block below or above every address
// of its class (a backward pass frees the top layer's tensors first, an
// optimizer step frees in allocation order) is linked at an end, other
// addresses after a walk of the class. The whole set is two vectors of
// plain values: copying an allocator's state is copying arrays.
// Address-ordered sets store size 0 (one class per stream). As with the
// source's set, a block's key must not change while it is in the set (erase,
// change, insert), and a block is in it at most once.
#pragma once

#include <cstddef>
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
  // A place in the set: the block's class (its id) and the block's id; -1
  // and -1 past the last class.
  struct Pos {
    int32_t group = -1;
    int32_t id = -1;
  };

  // BlockComparatorSize(): (stream, size, address); with size 0 throughout,
  // BlockComparatorAddress().
  static bool less(const Entry& a, const Entry& b) {
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.size != b.size) return a.size < b.size;
    return a.ptr < b.ptr;
  }

  bool empty() const { return head_ < 0; }
  Pos begin() const { return first_of(head_); }
  bool at_end(Pos p) const { return p.group < 0; }
  bool is_begin(Pos p) const { return head_ < 0 || (p.group == head_ && p.id == cls(head_).first); }
  Entry at(Pos p) const {
    const Slot& c = cls(p.group);
    return {size_of(c), link(p.id).key, c.stream, p.id};
  }
  Pos next(Pos p) const {
    const int32_t n = link(p.id).last;
    return n >= 0 ? Pos{p.group, n} : first_of(cls(p.group).next);
  }
  // The place before p (p is not begin(); it may be at_end()).
  Pos prev(Pos p) const {
    if (p.id >= 0 && link(p.id).first >= 0) return {p.group, link(p.id).first};
    const int32_t c = p.group >= 0 ? cls(p.group).prev : tail_;
    return {c, cls(c).last};
  }

  // The first entry not less than `key` (at_end() if none): std::set::lower_bound.
  Pos lower_bound(const Entry& key) const {
    const int32_t c = class_bound(key);
    if (c < 0 || !same_class(cls(c), key)) return first_of(c);
    int32_t id = cls(c).first;
    while (id >= 0 && link(id).key < key.ptr) id = link(id).last;
    return id >= 0 ? Pos{c, id} : first_of(cls(c).next);
  }

  void insert(const Entry& e) {
    if (links_.size() <= static_cast<size_t>(e.id)) links_.resize(static_cast<size_t>(e.id) + 1);
    const int32_t c = class_bound(e);
    if (c < 0 || !same_class(cls(c), e)) {
      add_class(e, c);
      return;
    }
    Slot& l = links_[static_cast<size_t>(e.id)];
    l = {e.ptr, 0, -1, -1, -1, -1, c};
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

  // Removes the entry with e's id (it must be in the set).
  void erase(const Entry& e) { erase_at({link(e.id).owner, e.id}); }

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
    if (k.first < 0) drop_class(p.group);
  }

  // Every entry, in key order.
  template <class F>
  void for_each(F&& f) const {
    for (int32_t c = head_; c >= 0; c = cls(c).next) {
      for (int32_t id = cls(c).first; id >= 0; id = link(id).last)
        f(Entry{size_of(cls(c)), link(id).key, cls(c).stream, id});
    }
  }

 private:
  // An element of either array below (one element type: one vector's code
  // in the first-visit WebAssembly module, whose size is budgeted).
  // A size class: key = its size, first and last = the ids of its lowest
  // and highest addresses, prev and next = the classes before and after it
  // in key order (-1: none; next also chains free class ids). A link, by
  // block id: key = the block's address, first and last = the ids of the
  // addresses before and after it in its class (-1: none), owner = its
  // class.
  struct Slot {
    uint64_t key = 0;
    int32_t stream = 0;  // a class's
    int32_t first = -1;
    int32_t last = -1;
    int32_t prev = -1;   // a class's
    int32_t next = -1;   // a class's
    int32_t owner = -1;  // a link's
  };

  const Slot& cls(int32_t c) const { return classes_[static_cast<size_t>(c)]; }
  const Slot& link(int32_t id) const { return links_[static_cast<size_t>(id)]; }
  static int64_t size_of(const Slot& c) { return static_cast<int64_t>(c.key); }
  Pos first_of(int32_t c) const { return c >= 0 ? Pos{c, cls(c).first} : Pos{-1, -1}; }
  static bool same_class(const Slot& c, const Entry& e) { return c.stream == e.stream && size_of(c) == e.size; }

  // The first class not below (e.stream, e.size), -1 if none: a walk down
  // from the largest. Callgrind, one call of the bench body: walking up from
  // the smallest took BM_EstimateTorchtuneQlora70b to 48.3 M instructions
  // (lookups land high among its ~17 classes), down 42.3 M; a finger (walk
  // from the last lookup's class) 41.9 M but BM_EstimateCore70b 7.10 M
  // against 6.90 M down.
  int32_t class_bound(const Entry& e) const {
    int32_t above = -1;
    for (int32_t c = tail_; c >= 0;) {
      const Slot& k = cls(c);
      if (k.stream != e.stream ? k.stream < e.stream : size_of(k) < e.size) break;
      above = c;
      c = k.prev;
    }
    return above;
  }

  // A new class holding e alone, before class `before` (-1: last).
  void add_class(const Entry& e, int32_t before) {
    int32_t c = free_;
    if (c >= 0) {
      free_ = cls(c).next;
    } else {
      c = static_cast<int32_t>(classes_.size());
      classes_.emplace_back();
    }
    const int32_t lower = before >= 0 ? cls(before).prev : tail_;
    classes_[static_cast<size_t>(c)] = {static_cast<uint64_t>(e.size), e.stream, e.id, e.id, lower, before, -1};
    (lower >= 0 ? classes_[static_cast<size_t>(lower)].next : head_) = c;
    (before >= 0 ? classes_[static_cast<size_t>(before)].prev : tail_) = c;
    links_[static_cast<size_t>(e.id)] = {e.ptr, 0, -1, -1, -1, -1, c};
  }

  // Unlinks an emptied class and frees its id.
  void drop_class(int32_t c) {
    Slot& k = classes_[static_cast<size_t>(c)];
    (k.prev >= 0 ? classes_[static_cast<size_t>(k.prev)].next : head_) = k.next;
    (k.next >= 0 ? classes_[static_cast<size_t>(k.next)].prev : tail_) = k.prev;
    k.next = free_;
    free_ = c;
  }

  std::vector<Slot> classes_;  // by class id
  std::vector<Slot> links_;    // by block id; meaningful for the blocks in the set
  int32_t head_ = -1;          // the smallest class
  int32_t tail_ = -1;          // the largest
  int32_t free_ = -1;          // a free class id, chained through next
};

}  // namespace vram::memory

// step_memory.h — the blocks a pool's graph slots own, so a steady step gets
// the addresses its recorded graph was made with (core/graph/step_graph.h).
//
// A training loop's step allocates the same buffers in the same order every
// batch. Between Pool::begin_step_memory() and end_step_memory() the n-th
// allocation of the step takes the n-th buffer of the step's slot (the slots
// take turns, as consecutive batches' tensors overlap) when it is of the size
// asked and no frontend handle holds it; otherwise a block from the pool
// becomes the slot's n-th. So a step two batches later gets the same
// addresses, and a recorded graph of the step is replayed, not recorded again.
//
// Safety. A slot's buffer is handed out again either after its Storage died
// (every handle dropped, every op that used it launched: the pool's own rule,
// docs/design.md §3), or while ops queued earlier still use it but no frontend handle
// does: then the same Storage is handed out, with its engine state, so the
// new writer is ordered after those uses as any write is (enqueue.h: in order
// on its queue, after another queue's last use). What escapes a step — a loss
// the loop still holds, a gradient, a parameter made inside it — has a
// frontend handle, so it is never handed out: the next step of that slot gets
// another block (and an updated graph), never the escaping value's memory.
//
// A plain data structure: the pool calls it under its lock.
//
//   StepSlots s;  s.begin();  Block* b = s.next();  ... s.take(sz) / s.adopt(p, sz); s.end();
//   s.release(p) (the Storage died): true while p is a slot's, which keeps it
#pragma once
#include <cstddef>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace amlp {

class Storage;

class StepSlots {
 public:
  struct Block {
    void* p = nullptr;
    size_t size = 0;
    bool free = false;                // its Storage died; the block waits here
    std::weak_ptr<Storage> owner;     // busy: the Storage that has it
  };

  static constexpr int kSlots = 2;
  using Blocks = std::vector<std::pair<void*, size_t>>;  // (block, size)

  bool open() const { return open_; }
  // The next step begins: its allocations go to the next slot, from position 0.
  void begin();
  // The step ended: the slot's blocks past the step's last allocation are let
  // go (the free ones returned, for the pool's cache).
  Blocks end();
  // Inside a step: the slot's entry at the step's next position (nullptr:
  // none yet); skip() moves past it (its Storage was handed out again).
  Block* next();
  void skip() { ++pos_; }
  // The Storage just made for block p of the current slot (take or adopt).
  void set_owner(void* p, const std::shared_ptr<Storage>& s);
  // Inside a step: the slot's block for the step's next allocation, when it
  // is free and of size `sz` (now busy); nullptr: the caller takes one from
  // the pool and hands it to adopt(), whose return is a free block it
  // displaced (for the pool's cache), or nullptr.
  void* take(size_t sz);
  std::pair<void*, size_t> adopt(void* p, size_t sz);
  // A block's Storage died: true when it is a slot's block (kept, now free);
  // false: it belongs to the pool's cache.
  bool release(void* p);
  // Every free block (the slots keep the busy ones' positions): for the
  // pool's cache or the device, when memory runs short or the cache is emptied.
  Blocks take_free();
  // Ends the slots: every free block returned, busy ones go to the cache when they die.
  Blocks clear();
  size_t owned_bytes() const { return owned_bytes_; }  // busy and free, every slot
  size_t free_bytes() const { return free_bytes_; }

 private:
  void disown(Block& b, Blocks& freed);  // b leaves its slot (a free one into `freed`)

  std::vector<Block> slots_[kSlots];
  std::unordered_map<void*, std::pair<int, size_t>> where_;  // block -> (slot, position)
  int slot_ = kSlots - 1;
  size_t pos_ = 0;
  bool open_ = false;
  size_t owned_bytes_ = 0, free_bytes_ = 0;
};

}  // namespace amlp

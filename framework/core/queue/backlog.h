// backlog.h — the bytes a queue's pending ops hold (docs/design.md §3, §6).
//
// A buffer counts in the backlog of the queue whose op first pins it, once:
// its pin count (BufferState::pin) rises with every queued op that
// refers to it and falls as each is launched; at zero its bytes leave that
// queue's backlog, whichever queue's op let go last. A buffer with no block
// yet (allocation policy `run`) counts as `unallocated` until the worker
// allocates it, then as existing. Back-pressure by bytes bounds the sum, so
// a bound holds what the queue will come to hold, whichever policy.
//
//   push (frontend):  BacklogBytes added = pin(refs, this);   backlog_.add(added) under the lock
//   worker, launched: BacklogBytes freed = unpin_and_release(refs, this); backlog_.sub(freed) under the lock
#pragma once
#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace amlp {

class OpRefs;
class Queue;
class Storage;

struct BacklogBytes {
  size_t existing = 0;     // buffers with a block
  size_t unallocated = 0;  // buffers whose block their writer will take as it starts
};

// Frontend, at a push to `q`: pins each buffer for one more op and returns the
// bytes of those pinned for the first time, which `q` counts from now on.
BacklogBytes pin(const OpRefs& refs, Queue* q);
// `self`'s worker, after its op ran: unpins each buffer. Returns the bytes
// `self` counted whose last pin this was (the caller debits them under its
// lock); those another queue counted are debited there.
// Each reference is dropped right after its buffer is unpinned, so the
// frontend's check that only queued ops hold a buffer (memory.cpp) finds it
// unpinned but still referenced for as short a time as can be.
BacklogBytes unpin_and_release(OpRefs& refs, Queue* self);
// Frontend: `old`'s block went to a new buffer (stream-ordered reuse,
// memory.h), which counts it when its own op pins it: old's bytes leave the
// backlog now, so the block is counted once.
void forget_backlog(Storage& old);
// Worker: `s`, pinned by the op being run, just got its block.
void count_allocated(const Storage& s);

// One queue's counters, kept under its lock.
class Backlog {
 public:
  bool fits(BacklogBytes more, size_t max_bytes) const {
    return existing_ + unallocated_ + more.existing + more.unallocated <= max_bytes;
  }
  void add(BacklogBytes b) {
    existing_ += b.existing;
    unallocated_ += b.unallocated;
    peak_ = std::max(peak_, existing_);
  }
  void sub(BacklogBytes b) {
    existing_ -= b.existing;
    unallocated_ -= b.unallocated;
  }
  void allocated(size_t bytes) {  // unallocated -> existing
    unallocated_ -= bytes;
    add({bytes, 0});
  }
  size_t bytes() const { return existing_; }
  size_t peak() const { return peak_; }
  size_t unallocated() const { return unallocated_; }
  void reset_peak() { peak_ = existing_; }

 private:
  size_t existing_ = 0, peak_ = 0;  // blocks that exist
  size_t unallocated_ = 0;          // blocks counted buffers will take when their writer starts
};

}  // namespace amlp

// backlog.cpp — pinning buffers to a queue's backlog (backlog.h).
#include "framework/core/queue/backlog.h"

#include <mutex>

#include "framework/core/memory/memory.h"
#include "framework/core/queue/queue.h"

namespace amlp {

namespace {
BacklogBytes bytes_of(const Storage& s) {
  BacklogBytes b;
  (s.allocated() ? b.existing : b.unallocated) = s.bytes();
  return b;
}
}  // namespace

// No worker can allocate a buffer before its first pin: only an op holding it does.
BacklogBytes pin(const OpRefs& refs, Queue* q) {
  BacklogBytes added;
  for (const auto& r : refs)
    if (r && r->pin(q)) {
      const BacklogBytes b = bytes_of(*r);
      added.existing += b.existing;
      added.unallocated += b.unallocated;
    }
  return added;
}

BacklogBytes unpin_and_release(OpRefs& refs, Queue* self) {
  BacklogBytes freed;
  for (auto& r : refs) {
    if (!r) continue;
    // Read which queue counts these bytes, and how, while our pin still holds
    // the buffer: once the count reaches 0, the frontend may push it again
    // and re-pin it to another queue (a data race, and the wrong queue debited).
    // No other op allocates it meanwhile: its writers run before or after us.
    Queue* counted_by = r->counted_by();
    const BacklogBytes b = bytes_of(*r);
    if (r->unpin()) {  // the last pin; a forgotten buffer's unpin is never last (forget_backlog)
      if (counted_by == self) freed.existing += b.existing, freed.unallocated += b.unallocated;
      else if (counted_by) counted_by->debit_backlog(b);
    }
    r.reset();
  }
  return freed;
}

void forget_backlog(Storage& old) {
  Queue* q = old.counted_by();  // set by the frontend's own first pin
  if (q && old.forget_count()) q->debit_backlog(bytes_of(old));
}

// Pinned by the op being run, so counted_by() is the queue that counts it.
void count_allocated(const Storage& s) {
  if (Queue* q = s.counted_by()) q->note_allocated(s.bytes());
}

// The counting queue's side, under its lock.

void Queue::debit_backlog(BacklogBytes bytes) {
  bool wake;
  {
    std::lock_guard<std::mutex> lk(mu_);
    backlog_.sub(bytes);
    wake = space_waiters_ > 0;
  }
  if (wake) space_cv_.notify_all();  // a push bounded by bytes may fit now
}

void Queue::note_allocated(size_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  backlog_.allocated(bytes);
}

}  // namespace amlp

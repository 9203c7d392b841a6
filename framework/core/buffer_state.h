// buffer_state.h — what the engine knows of one buffer between its ops, as
// MXNet's ThreadedVar does for a variable: the op that last wrote it, the
// last op of each queue that used it, how many queued ops pin it (and which
// queue's backlog counts its bytes), and the error it carries.
//
//   enqueue (frontend):  a read waits for the last writer; a write waits for
//                        every other queue's last use; then note_use / writer.
//   Queue (worker):      an input carrying an error fails the op unrun; the
//                        op's outputs carry its error, or none.
//
// Who touches what: the writer and the uses belong to the device's frontend
// thread (the one thread that queues ops on it, framework/asyncmlp.h); the
// pin count is atomic, and the backlog's queue is set by the push that pins
// the buffer first and read by workers while their op still pins it
// (backlog.cpp); the error slot is written by workers and read by any
// thread, under its own lock.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

namespace amlp {

class Queue;

// One op: the queue it was pushed to and its sequence number there.
struct OpRef {
  Queue* queue = nullptr;
  uint64_t seq = 0;
};

// A buffer's error: set or cleared by the worker that runs each op writing
// the buffer, read by workers (an op's inputs) and by frontend blockers. A
// reader may run while a later writer of the buffer sets it, so the pointer
// is kept under a lock; reading an empty slot takes no lock.
class ErrorSlot {
 public:
  ErrorSlot& operator=(std::exception_ptr e) {
    if (!e && !set_.load(std::memory_order_acquire)) return *this;  // most writes: nothing to clear
    std::lock_guard<std::mutex> lk(mu_);
    e_ = std::move(e);
    set_.store(e_ != nullptr, std::memory_order_release);
    return *this;
  }
  std::exception_ptr get() const {
    if (!set_.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard<std::mutex> lk(mu_);
    return e_;
  }
  operator std::exception_ptr() const { return get(); }
  explicit operator bool() const { return set_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mu_;
  std::exception_ptr e_;
  std::atomic<bool> set_{false};
};

struct BufferState {
  // The op that last wrote the buffer. The device's frontend thread only.
  Queue* writer_queue = nullptr;
  uint64_t writer_seq = 0;

  // The last op of each queue that used (read or wrote) the buffer, so a
  // write on one queue can wait for pending reads on another. Almost always
  // one queue: kept inline, with an overflow for buffers several queues
  // touch. The device's frontend thread only.
  void note_use(Queue* q, uint64_t seq) {
    if (!first_use.queue || first_use.queue == q) {
      first_use = {q, seq};
      return;
    }
    for (OpRef& u : more_uses)
      if (u.queue == q) {
        u.seq = seq;
        return;
      }
    more_uses.push_back({q, seq});
  }
  template <class F>
  void for_each_use(F&& f) const {
    if (first_use.queue) f(first_use);
    for (const OpRef& u : more_uses) f(u);
  }

  // Backlog accounting (backlog.h): how many queued-but-unfinished ops refer
  // to the buffer, and the queue whose backlog counts its bytes meanwhile.
  std::atomic<int> pending_uses{0};
  Queue* backlog_queue = nullptr;

  // Set by a worker when the op that should have written the buffer failed
  // (or did not run because its own input had failed): the original error,
  // which every op and blocker downstream reports (docs/design.md §5). Cleared by a
  // later successful write. Safe to read at any time; what it says of a
  // given op holds once that op completed and until the next op writing the
  // buffer starts (a HostCopy keeps its own copy's outcome, tensor.cpp).
  ErrorSlot error;

 private:
  OpRef first_use;
  std::vector<OpRef> more_uses;
};

}  // namespace amlp

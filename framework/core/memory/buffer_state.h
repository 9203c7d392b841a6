// buffer_state.h — what the engine knows of one buffer between its ops, as
// MXNet's ThreadedVar does for a variable: the op that last wrote it, the
// last op of each queue that used it, how many queued ops pin it (and which
// queue's backlog counts its bytes), and the error it carries.
//
//   enqueue (frontend):  a read waits for the last writer; a write waits for
//                        every other queue's last use; then read_queued /
//                        write_queued.
//   Queue (worker):      an input carrying an error fails the op unrun; the
//                        op's outputs carry its error (write_failed), or
//                        none (write_succeeded).
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

// What the engine knows of one buffer, changed only through the engine's
// events, each method saying which thread calls it (docs/design.md §1-§5).
class BufferState {
 public:
  // --- queueing: the device's frontend thread (enqueue.cpp) -------------------------
  // The op that last wrote the buffer ({nullptr, 0}: none yet).
  OpRef last_writer() const { return writer_; }
  // The last op of each queue that used (read or wrote) the buffer, so a
  // write on one queue can wait for pending reads on another.
  template <class F>
  void for_each_use(F&& f) const {
    if (first_use_.queue) f(first_use_);
    for (const OpRef& u : more_uses_) f(u);
  }
  void read_queued(Queue* q, uint64_t seq) { note_use(q, seq); }
  void write_queued(Queue* q, uint64_t seq) {
    note_use(q, seq);
    writer_ = {q, seq};
  }
  // A buffer taking over `old`'s block (stream-ordered reuse, memory.h):
  // old's writer and uses become its own, so its first write waits, on
  // every other queue, for what old's queued ops still do with the block.
  void inherit_uses(const BufferState& old) {
    writer_ = old.writer_;
    first_use_ = old.first_use_;
    more_uses_ = old.more_uses_;
  }

  // --- pins (backlog.cpp): how many queued-but-unlaunched ops refer to the
  // buffer, and the queue whose backlog counts its bytes meanwhile ----------------
  // Frontend, at a push to `q`: one more op pins it. True when it was the
  // first pin: `q` counts its bytes from now on.
  bool pin(Queue* q) {
    if (pins_.fetch_add(1, std::memory_order_acq_rel) != 0) return false;
    counted_by_ = q;  // no one else reads it while unpinned
    return true;
  }
  // The worker whose op pins it (so no push re-assigns it meanwhile): the
  // queue counting its bytes.
  Queue* counted_by() const { return counted_by_; }
  // The worker, after its op was launched: true when that was the last pin
  // and its bytes are still counted_by()'s to debit (not forgotten).
  bool unpin() { return pins_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  // Any thread: ops pinning it now.
  int pins() const { return pins_.load(std::memory_order_acquire) & kPinMask; }
  // Frontend, handing the block of a buffer no handle holds to a new one
  // (stream-ordered reuse): true when its bytes are still in counted_by()'s
  // backlog, which the caller then debits; its last unpin will not. Such a
  // buffer is never pinned again, so the mark stays.
  bool forget_count() {
    return (pins_.fetch_or(kForgotten, std::memory_order_acq_rel) & kPinMask) != 0;
  }

  // --- the outcome of its last write: set by the worker that ran (or
  // skipped) the op writing it; read by workers (an op's inputs) and blockers --
  // The op that should have written it failed, or did not run because its
  // own input had failed: the original error, which every op and blocker
  // downstream reports (§5). Holds for a given op once that op completed and
  // until the next op writing the buffer starts.
  void write_failed(std::exception_ptr e) { error_ = std::move(e); }
  void write_succeeded() { error_ = nullptr; }  // a later successful write clears an old failure
  std::exception_ptr error() const { return error_.get(); }
  bool failed() const { return static_cast<bool>(error_); }

 private:
  void note_use(Queue* q, uint64_t seq) {
    if (!first_use_.queue || first_use_.queue == q) {
      first_use_ = {q, seq};
      return;
    }
    for (OpRef& u : more_uses_)
      if (u.queue == q) {
        u.seq = seq;
        return;
      }
    more_uses_.push_back({q, seq});
  }

  OpRef writer_;              // frontend
  OpRef first_use_;           // frontend; almost always the only queue
  std::vector<OpRef> more_uses_;  // frontend; buffers several queues touch
  std::atomic<int> pins_{0};
  static constexpr int kForgotten = 1 << 30;  // pins_' mark: forget_count() took its bytes out
  static constexpr int kPinMask = kForgotten - 1;
  Queue* counted_by_ = nullptr;  // set by the first pin, read while pinned
  ErrorSlot error_;              // workers write, any thread reads (its own lock)
};

}  // namespace amlp

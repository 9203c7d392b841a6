// buffer_state.h — what the engine knows of one buffer between its ops, as
// MXNet's ThreadedVar does for a variable: the op that last wrote it, the
// last op of each queue that used it, how many queued ops pin it (and which
// queue's backlog counts its bytes), and the error it carries.
//
//   enqueue (frontend):  a read waits for the last writer; a write waits for
//                        every other queue's last use; then note_use / writer.
//   Queue (worker):      an input carrying an error fails the op unrun; the
//                        op's outputs carry its error, or none.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <vector>

namespace amlp {

class Queue;

// One op: the queue it was pushed to and its sequence number there.
struct OpRef {
  Queue* queue = nullptr;
  uint64_t seq = 0;
};

struct BufferState {
  // The op that last wrote the buffer. Frontend thread only.
  Queue* writer_queue = nullptr;
  uint64_t writer_seq = 0;

  // The last op of each queue that used (read or wrote) the buffer, so a
  // write on one queue can wait for pending reads on another. Almost always
  // one queue: kept inline, with an overflow for buffers several queues
  // touch. Frontend thread only.
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
  // which every op and blocker downstream reports (DESIGN §5). Cleared by a
  // later successful write. Read only after waiting for that writer.
  std::exception_ptr error;

 private:
  OpRef first_use;
  std::vector<OpRef> more_uses;
};

}  // namespace amlp

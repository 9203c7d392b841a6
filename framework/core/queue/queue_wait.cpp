// queue_wait.cpp — waiting on a queue's ops: launched, completed, and the
// blockers' waits with what they do with errors (queue.h).
#include <algorithm>
#include <atomic>
#include <chrono>

#include "framework/core/queue/queue.h"
#include "framework/error.h"
#include "framework/runtime.h"

namespace amlp {

// A waiter spins (Queue::spin_until) before it sleeps on a condition
// variable. The worker does not spin by default: when it has caught up it
// sleeps, so streaming pushes never contend with a spinning worker
// (ASYNCMLP_CANDIDATES=worker_spin makes it watch for a push first:
// Queue::spin_for_push).

namespace {
std::atomic<BlockerPoll> blocker_poll{nullptr};
constexpr auto kBlockerPollInterval = std::chrono::milliseconds(10);
}  // namespace

void set_blocker_poll(BlockerPoll poll) { blocker_poll.store(poll); }

void Queue::wait_launched(uint64_t seq) {
  if (launched_seen_.load(std::memory_order_acquire) >= seq) return;
  if (steps_.on()) {  // held ops launch only at their step's end
    // Another queue's worker waits: an op of an ended step launches with
    // it, one of the step being pushed when the frontend ends that step (a
    // frontend that blocks first releases every step, below). The frontend
    // waits: whatever it waits for may wait on any queue's held ops.
    if (!on_worker_thread()) release_steps_everywhere("a blocker waited inside the step");
  }
  if (spin_until([&] { return launched_seen_.load(std::memory_order_acquire) >= seq; })) return;
  std::unique_lock<std::mutex> lk(mu_);
  polled_wait(lk, done_cv_, done_waiters_, [&] { return launched_ >= seq; }, PolledWait::Blocker);
}

void Queue::polled_wait(std::unique_lock<std::mutex>& lk, std::condition_variable& cv, int& waiters,
                        const std::function<bool()>& ready, PolledWait what) {
  // Counted while it waits (the notifier wakes `cv` only for a count above 0);
  // it leaves, returning or throwing, with `lk` held: the count drops under it.
  struct Counted {
    int& n;
    explicit Counted(int& c) : n(c) { ++n; }
    ~Counted() { --n; }
  } counted(waiters);
  const BlockerPoll poll = on_worker_thread() ? nullptr : blocker_poll.load();
  if (!poll) {
    cv.wait(lk, ready);
    return;
  }
  // The frontend's hook first, then between waits of kBlockerPollInterval;
  // what it throws leaves the wait (and the queue as it is).
  while (!ready()) {
    const bool paused = paused_ > 0;
    lk.unlock();
    try {
      poll(name_, paused, what);
    } catch (...) {
      lk.lock();
      throw;
    }
    lk.lock();
    cv.wait_for(lk, kBlockerPollInterval, ready);
  }
}

void Queue::unpin_unpushed(OpRefs& refs, BacklogBytes added) {
  // The buffers this push pinned first were never counted (backlog_.add): their
  // last pin is this push's, so unpinning frees them along with whatever an op
  // launched meanwhile left this push to free last; only the latter is debited.
  BacklogBytes freed = unpin_and_release(refs, this);
  freed.existing -= added.existing;
  freed.unallocated -= added.unallocated;
  debit_backlog(freed);
}

void Queue::wait_complete(uint64_t seq) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    seq = std::min(seq, pushed_);
  }
  if (seq == 0) return;
  wait_launched(seq);
  if (sync_ && sync_->asynchronous()) sync_->wait_complete(seq);
}

void Queue::wait_for(uint64_t seq) {
  try {
    wait_complete(seq);
  } catch (const WaitInterrupted&) {
    throw;
  } catch (const std::exception& e) {  // the device failed after the launch (CUDA: a faulting kernel)
    keep_error(exposed_fault(name_of(seq), seq, e), /*device_fault=*/true);
  }
  rethrow_if_error();
}

void Queue::wait_all() {
  drain();
  rethrow_if_error();
}

void Queue::drain(uint64_t seq) {
  uint64_t last;
  {
    std::lock_guard<std::mutex> lk(mu_);
    last = std::min(seq, pushed_);
  }
  try {
    wait_complete(last);
  } catch (const WaitInterrupted&) {
    throw;
  } catch (const std::exception& e) {  // the device failed after the launch (CUDA: a faulting kernel)
    keep_error(exposed_fault(name_of(last), last, e), /*device_fault=*/true);
  }
}

bool Queue::launched(uint64_t seq) const { return launched_seen_.load(std::memory_order_acquire) >= seq; }

bool Queue::complete(uint64_t seq) const {
  if (!launched(seq)) return false;
  return !sync_ || !sync_->asynchronous() || sync_->is_complete(seq);
}

}  // namespace amlp

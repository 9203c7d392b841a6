// queue.cpp — the in-order queue: pushing, the worker loop, and announcing each
// op launched (queue.h); how the worker runs one op is run_op.cpp.
#include "framework/core/queue/queue.h"

#include <algorithm>
#include <chrono>

#include "framework/util/candidates.h"
#include "framework/util/elapsed.h"
#include "framework/core/memory/memory.h"
#include "framework/core/queue/queue_registry.h"
#include "framework/error.h"
#include "framework/runtime.h"
#include "framework/trace.h"

namespace amlp {

namespace {

// Queue::DeferSyncWait guards alive on this thread.
thread_local int deferred_sync_waits = 0;
// Whether this thread is a queue's worker.
thread_local bool worker_thread = false;
// Queue::set_kernel_clock: the workers time their kernels.
std::atomic<bool> kernel_clock_on{false};

}  // namespace

Queue::DeferSyncWait::DeferSyncWait() { ++deferred_sync_waits; }
Queue::DeferSyncWait::~DeferSyncWait() { --deferred_sync_waits; }

void Queue::set_kernel_clock(bool on) { kernel_clock_on.store(on, std::memory_order_relaxed); }
bool Queue::kernel_clock() { return kernel_clock_on.load(std::memory_order_relaxed); }

// --- lifetime -----------------------------------------------------------------------

Queue::Queue(std::string name, StreamSync* sync)
    : name_(std::move(name)),
      sync_(sync),
      hooks_(sync && sync->per_op_hooks()),
      blame_(sync && (sync->asynchronous() || sync->per_op_hooks())),
      track_(trace::register_track("queue " + name_)),
      spin_(candidate_on(kCandidateWorkerSpin)),
      steps_(name_, sync_, track_) {
  queue_registry::add(this);
  try {
    worker_ = std::thread([this] { worker_loop(); });
  } catch (...) {
    queue_registry::remove(this);
    throw;
  }
}

Queue::~Queue() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    paused_ = 0;  // drain everything
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (sync_ && sync_->asynchronous() && launched_) {
    try {
      sync_->wait_complete(launched_);
    } catch (...) {  // a destructor reports nothing; the device is going away
    }
  }
  queue_registry::remove(this);
}

// --- pushing -----------------------------------------------------------------------

uint64_t Queue::push(const char* name, Thunk k, std::vector<std::shared_ptr<Storage>> refs,
                     std::vector<QueueDep> deps, OpTraits traits) {
  Kernel kernel = [k = std::move(k)](const OpArgs&) { k(); };
  OpBuffers bufs;
  bufs.refs = std::move(refs);
  bufs.traits = traits;
  return push(name, std::move(kernel), std::move(bufs), std::move(deps));
}

uint64_t Queue::push(const char* name, Kernel k, OpBuffers bufs, std::vector<QueueDep> deps) {
  const uint64_t t0 = trace::enabled() ? trace::now_us() : 0;
  const BacklogBytes added = pin(bufs.refs, this);
  uint64_t seq, depth;
  size_t backlog;
  bool wake;
  {
    std::unique_lock<std::mutex> lk(mu_);
    if (max_ops_ || max_bytes_) {
      const auto fits = [&] {
        uint64_t d = pushed_ - launched_;
        if (d == 0) return true;  // never deadlock on one oversized op
        return (!max_ops_ || d < max_ops_) && (!max_bytes_ || backlog_.fits(added, max_bytes_));
      };
      if (!fits()) {  // held back: the time counts in QueueStats::held_s
        const auto w0 = std::chrono::steady_clock::now();
        if (!on_worker_thread()) {  // the frontend blocks: no queue's held step may wait for it
          lk.unlock();
          release_steps_everywhere("a push waited for back-pressure inside the step");
          lk.lock();
        }
        try {
          polled_wait(lk, space_cv_, space_waiters_, fits, PolledWait::Push);
        } catch (...) {  // a blocker poll's WaitInterrupted (runtime.h): nothing was pushed
          held_ns_ += ns_since(w0);
          lk.unlock();
          unpin_unpushed(bufs.refs, added);
          throw;
        }
        held_ns_ += ns_since(w0);
      }
    }
    seq = ++pushed_;
    pushed_seen_.store(seq, std::memory_order_relaxed);
    backlog_.add(added);
    depth = pushed_ - launched_;
    peak_unlaunched_ = std::max(peak_unlaunched_, depth);
    backlog = backlog_.bytes();
    bool held = false;
    if (steps_.in_step()) {
      if (blocking_ || max_ops_ || max_bytes_)  // a held op could keep a bound from ever freeing
        release_step_locked("back-pressure or synchronous mode inside the step");
      else
        held = steps_.hold(name, bufs);
    }
    pending_.push_back(Op{name, seq, std::move(k), std::move(bufs), std::move(deps), held ? OpRole::Held : OpRole::Op});
    // Wake the worker only if it sleeps and may run: a busy worker finds the
    // op when it looks next, and a futex wake on every push of a paused (or
    // busy) queue would cost a context switch each.
    wake = worker_sleeping_ && !paused_;
    wakes_ += wake;
  }
  if (wake) {
    const auto w0 = std::chrono::steady_clock::now();
    work_cv_.notify_one();
    wake_ns_.fetch_add(ns_since(w0), std::memory_order_relaxed);
  }
  if (t0) {
    uint64_t t1 = trace::now_us();
    trace::span(trace::frontend_track(), name, t0, t1, seq);
    trace::counter(("queue depth " + name_).c_str(), t1, static_cast<double>(depth));
    trace::counter(("backlog MiB " + name_).c_str(), t1, backlog / 1048576.0);
  }
  if (blocking_.load(std::memory_order_acquire) && !deferred_sync_waits) wait_for(seq);  // errors surface at the call site
  return seq;
}

// --- the worker: take an op, run it (run_op.cpp), announce it --------------------------

bool Queue::on_worker_thread() { return worker_thread; }

// Unlocked, yielding (on few cores the frontend runs), watching the lock-free
// mirror of pushed_; a push meanwhile finds worker_sleeping_ false and wakes
// nobody. The caller checks its condition again under the lock before it
// sleeps, so a push between the last look and the lock is not missed.
void Queue::spin_for_push(std::unique_lock<std::mutex>& lk) {
  const uint64_t seen = pushed_seen_.load(std::memory_order_relaxed);
  lk.unlock();
  spin_until([&] { return pushed_seen_.load(std::memory_order_acquire) != seen; });
  lk.lock();
}

void Queue::worker_loop() {
  worker_thread = true;
  if (sync_) {
    try {
      sync_->worker_start();
    } catch (const std::exception& e) {
      try {
        keep_error(std::make_exception_ptr(KernelError("(worker start)", 0, name_, e.what())));
      } catch (...) {
        keep_error(std::current_exception());
      }
    }
  }
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    bool spun = false;  // once each time it catches up; the condition is checked again after it
    while (!((!paused_ && !pending_.empty()) || (stop_ && pending_.empty()))) {
      clock_.sleep();
      if (spin_ && !spun && !paused_ && !stop_) {
        spun = true;
        spin_for_push(lk);
        continue;
      }
      worker_sleeping_ = true;
      work_cv_.wait(lk);
      worker_sleeping_ = false;
    }
    clock_.wake();
    if (pending_.empty()) {  // stop_ and drained
      lk.unlock();
      if (steps_.parked()) steps_.run_parked(*this);  // never left behind
      lk.lock();
      clock_.sleep();
      return;
    }
    // The op runs where it is queued (pushes at the back leave it in place)
    // and leaves the queue once it was announced.
    Op& op = pending_.front();
    front_running_ = true;
    lk.unlock();
    if (op.role == OpRole::Held) {
      steps_.park(std::move(op));
      lk.lock();
    } else if (op.role == OpRole::StepEnd) {
      steps_.run(op, *this);  // the held ops: one by one or one graph launch
      lk.lock();
    } else {
      if (steps_.parked()) steps_.run_parked(*this);  // the step stopped matching: in order
      const BacklogBytes freed = execute(op);
      lk.lock();
      announce_locked(op.seq, freed);  // one lock per op: announced, and the next one taken
    }
    pending_.pop_front();  // what it owned was released by finish(), outside the lock
    front_running_ = false;
  }
}

void Queue::execute_and_announce(Op& op) {
  const BacklogBytes freed = execute(op);
  std::lock_guard<std::mutex> lk(mu_);
  announce_locked(op.seq, freed);
}

void Queue::finish_and_announce(Op& op) {
  const BacklogBytes freed = finish(op);
  std::lock_guard<std::mutex> lk(mu_);
  announce_locked(op.seq, freed);
}

std::exception_ptr Queue::kept_error() {
  std::lock_guard<std::mutex> lk(mu_);
  return error_;
}

void Queue::restore_error(std::exception_ptr e) {
  std::lock_guard<std::mutex> lk(mu_);
  error_ = std::move(e);
}

void Queue::announce_locked(uint64_t seq, BacklogBytes freed) {
  backlog_.sub(freed);
  launched_ = seq;
  launched_seen_.store(seq, std::memory_order_release);
  if (done_waiters_) done_cv_.notify_all();  // counted under mu_: no waiter is missed
  if (space_waiters_) space_cv_.notify_all();
}

// --- statistics ---------------------------------------------------------------------------

QueueStats Queue::stats() const {
  QueueStats s;
  {
    std::lock_guard<std::mutex> lk(mu_);
    s.pushed = pushed_;
    s.launched = launched_;
    s.peak_unlaunched = peak_unlaunched_;
    s.wakes = wakes_;
    s.wake_s = double(wake_ns_.load(std::memory_order_relaxed)) * 1e-9;
    s.backlog_bytes = backlog_.bytes();
    s.peak_backlog_bytes = backlog_.peak();
    s.unallocated_bytes = backlog_.unallocated();
    s.held_s = double(held_ns_) * 1e-9;
    s.busy_s = double(clock_.busy_ns()) * 1e-9;
  }
  s.kernel_s = double(kernel_ns_.load(std::memory_order_relaxed)) * 1e-9;
  s.completed = s.launched;
  if (sync_ && sync_->asynchronous()) {  // the last launched op the device has finished
    uint64_t lo = 0, hi = s.launched;    // completion is monotone in seq: bisect
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo + 1) / 2;
      if (sync_->is_complete(mid)) lo = mid;
      else hi = mid - 1;
    }
    s.completed = lo;
  }
  s.depth = s.pushed - s.completed;
  s.unlaunched = s.pushed - s.launched;
  return s;
}

void Queue::reset_peak() {
  std::lock_guard<std::mutex> lk(mu_);
  peak_unlaunched_ = pushed_ - launched_;
  backlog_.reset_peak();
}

// --- dropping and settings ----------------------------------------------------------------

uint64_t Queue::drop_pending() {
  uint64_t n;
  {
    std::lock_guard<std::mutex> lk(mu_);
    n = pending_.size() - (front_running_ ? 1 : 0);
    drop_upto_.store(pushed_, std::memory_order_release);
  }
  work_cv_.notify_all();
  return n;
}

void Queue::set_blocking(bool on) {
  blocking_.store(on, std::memory_order_release);
  if (sync_) sync_->set_blocking(on);
}

void Queue::set_max_pending(uint64_t ops, size_t bytes) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    max_ops_ = ops;
    max_bytes_ = bytes;
    if (ops || bytes) release_step_locked("back-pressure set inside the step");  // a bound never waits on held ops
  }
  space_cv_.notify_all();
}

void Queue::pause() {
  std::lock_guard<std::mutex> lk(mu_);
  ++paused_;
}

bool Queue::paused() const {
  std::lock_guard<std::mutex> lk(mu_);
  return paused_ > 0;
}

void Queue::resume() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (paused_ > 0) --paused_;
  }
  work_cv_.notify_all();
}

void Queue::resume_all() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    paused_ = 0;
  }
  work_cv_.notify_all();
}

}  // namespace amlp

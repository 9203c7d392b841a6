// queue.cpp — the in-order queue: pushing, the worker, and running one op (queue.h).
#include "framework/core/queue.h"

#include <algorithm>
#include <chrono>

#include "framework/core/elapsed.h"
#include "framework/core/memory.h"
#include "framework/error.h"
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
    : name_(std::move(name)), sync_(sync), track_(trace::register_track("queue " + name_)), steps_(name_, sync_, track_) {
  enlist(this);
  try {
    worker_ = std::thread([this] { worker_loop(); });
  } catch (...) {
    delist(this);
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
  delist(this);
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
        space_cv_.wait(lk, fits);
        held_ns_ += ns_since(w0);
      }
    }
    seq = ++pushed_;
    pushed_seen_.store(seq, std::memory_order_relaxed);
    backlog_.add(added);
    depth = pushed_ - launched_;
    peak_depth_ = std::max(peak_depth_, depth);
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
  }
  if (wake) work_cv_.notify_one();
  if (t0) {
    uint64_t t1 = trace::now_us();
    trace::span(trace::frontend_track(), name, t0, t1, seq);
    trace::counter(("queue depth " + name_).c_str(), t1, static_cast<double>(depth));
    trace::counter(("backlog MiB " + name_).c_str(), t1, backlog / 1048576.0);
  }
  if (blocking_.load(std::memory_order_acquire) && !deferred_sync_waits) wait_for(seq);  // errors surface at the call site
  return seq;
}

// --- the worker ------------------------------------------------------------------------

void Queue::allocate_outputs(Op& op) {
  for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i) {
    Storage* r = op.bufs.refs[i].get();
    if (!r || r->allocated()) continue;
    r->allocate_now();
    count_allocated(*r);
  }
}

BacklogBytes Queue::finish(Op& op) {
  note_name(op.seq, op.name);  // for a fault a blocker meets after the op is gone
  op.kernel = nullptr;  // drop captures before the buffers they may point into
  const BacklogBytes freed = unpin(op.bufs.refs, this);
  op.bufs.refs.clear();  // buffers go back to their pools here, before the launch is announced
  op.deps.clear();
  return freed;  // the caller debits this queue's backlog under its lock
}

// Runs one op: its dependencies, then its kernel, unless an input carries an
// upstream failure. Never throws: every failure becomes the op's error.
// True when its kernel ran and succeeded.
bool Queue::run(Op& op) {
  std::exception_ptr failed;
  if (op.seq <= drop_upto_.load(std::memory_order_acquire)) {  // drop_pending(): never runs, reports nothing
    try {
      failed = std::make_exception_ptr(Dropped(detail::concat("op '", op.name, "' (op #", op.seq, " on ", name_,
                                                              ") was dropped before it ran: the run stopped")));
    } catch (...) {
      failed = std::current_exception();
    }
    for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i)
      if (const auto& r = op.bufs.refs[i]) r->error = failed;
    return false;
  }
  bool upstream = false;  // failed because an input carries an earlier op's failure
  bool device_fault = false;  // failed because the device reported an asynchronous fault
  try {
    for (const QueueDep& d : op.deps) {  // another queue's op this one reads or must not overtake
      d.queue->wait_launched(d.seq);
      const bool on_device = sync_ && d.queue->sync_ && d.queue->sync_->asynchronous() &&
                             sync_->wait_on_device(*d.queue->sync_, d.seq);
      if (!on_device) {
        try {
          d.queue->wait_complete(d.seq);
        } catch (const DeviceFault& e) {  // the producer's device faulted: blamed on its op as exposer
          failed = d.queue->exposed_fault(d.queue->name_of(d.seq), d.seq, e), device_fault = true;
          break;
        }
      }
    }
    for (size_t i = 0; i < op.bufs.reads && !failed; ++i)
      if (const auto& r = op.bufs.refs[i]; r && r->error) failed = r->error, upstream = true;  // do not run
    for (size_t i = 0; i < op.bufs.reads && !failed; ++i)  // an op's writer always allocates it first
      if (const auto& r = op.bufs.refs[i]; r && !r->allocated())
        failed = std::make_exception_ptr(
            KernelError(op.name, op.seq, name_, detail::concat("read #", i, " has no memory: no op has written it")));
    if (!failed) {
      const auto k0 = std::chrono::steady_clock::now();  // the op's busy time, allocation to after_op
      try {
        allocate_outputs(op);  // allocation policy run: the outputs get their blocks as the op starts
      } catch (const OutOfMemory& e) {
        failed = std::make_exception_ptr(e.starting_op(op.name, op.seq, name_));
      }
      if (!failed) {
        try {  // fresh CPU blocks the populator has not reached yet are made resident here
          for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i)
            if (Storage* r = op.bufs.refs[i].get()) r->prepare_write();
        } catch (const OutOfMemory& e) {
          failed = std::make_exception_ptr(e.starting_op(op.name, op.seq, name_, /*resident=*/true));
        }
      }
      if (!failed) {
        if (sync_) sync_->before_op(op.seq, op.name);
        const OpArgs args(op.bufs.refs.data(), op.bufs.reads, op.bufs.refs.size() - op.bufs.reads, op.name,
                          &op.bufs.scalars, &op.bufs.payload);
        const bool clocked = kernel_clock_on.load(std::memory_order_relaxed);
        const auto c0 = clocked ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        try {
          op.kernel(args);
        } catch (const DeviceFault& e) {  // the device reported an earlier failure during this op's launch
          failed = exposed_fault(op.name, op.seq, e), device_fault = true;
        } catch (const std::exception& e) {
          failed = std::make_exception_ptr(KernelError(op.name, op.seq, name_, e.what()));
        } catch (...) {
          failed = std::make_exception_ptr(KernelError(op.name, op.seq, name_, "unknown exception"));
        }
        if (clocked) kernel_ns_.fetch_add(ns_since(c0), std::memory_order_relaxed);
        if (sync_) {
          try {
            sync_->after_op(op.seq, pushed_seen_.load(std::memory_order_relaxed) <= op.seq);
          } catch (const DeviceFault& e) {  // seen as this op completed: perhaps an earlier op's
            if (!failed) failed = exposed_fault(op.name, op.seq, e), device_fault = true;
          } catch (const std::exception& e) {
            if (!failed) failed = std::make_exception_ptr(KernelError(op.name, op.seq, name_, e.what()));
          }
        }
      }
      busy_ns_.fetch_add(ns_since(k0), std::memory_order_relaxed);
    }
  } catch (...) {  // building an error (or waiting) failed itself, e.g. bad_alloc
    if (!failed) failed = std::current_exception();
  }
  for (size_t i = op.bufs.reads; i < op.bufs.refs.size(); ++i)
    if (const auto& r = op.bufs.refs[i]) r->error = failed;  // a successful write clears an old failure
  // Only the queue whose op failed keeps the error for its next blocker. An
  // op that did not run because of it carries it in its outputs only: were
  // it kept here too, a blocker that already reported it (which makes every
  // queue forget it) could be followed by this keep, and report it twice.
  if (failed && !upstream) keep_error(failed, device_fault);
  return !failed;
}

bool Queue::on_worker_thread() { return worker_thread; }

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
    while (!((!paused_ && !pending_.empty()) || (stop_ && pending_.empty()))) {
      worker_sleeping_ = true;
      work_cv_.wait(lk);
      worker_sleeping_ = false;
    }
    if (pending_.empty()) {  // stop_ and drained
      lk.unlock();
      if (steps_.parked()) steps_.run_parked(*this);  // never left behind
      return;
    }
    Op op = std::move(pending_.front());
    pending_.pop_front();
    lk.unlock();
    if (op.role == OpRole::Held) {
      steps_.park(std::move(op));
    } else if (op.role == OpRole::StepEnd) {
      steps_.run(op, *this);  // the held ops: one by one or one graph launch
    } else {
      if (steps_.parked()) steps_.run_parked(*this);  // the step stopped matching: in order
      const BacklogBytes freed = execute(op);
      lk.lock();
      announce_locked(op.seq, freed);  // one lock per op: announced, and the next one taken
      continue;
    }
    lk.lock();
  }
}

BacklogBytes Queue::execute(Op& op) {
  const uint64_t t0 = trace::enabled() ? trace::now_us() : 0;
  run(op);
  if (t0) {
    try {
      trace::span(track_, op.name, t0, trace::now_us(), op.seq);
    } catch (...) {  // a full trace buffer loses a span, never the op
    }
  }
  return finish(op);
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
  done_cv_.notify_all();
  space_cv_.notify_all();
}

// --- dropping and settings ----------------------------------------------------------------

uint64_t Queue::drop_pending() {
  uint64_t n;
  {
    std::lock_guard<std::mutex> lk(mu_);
    n = pending_.size();
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

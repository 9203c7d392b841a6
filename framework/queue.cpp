#include "framework/queue.h"

#include <chrono>

#include "framework/error.h"
#include "framework/memory.h"
#include "framework/trace.h"

namespace amlp {

Queue::Queue(std::string name, StreamSync* sync)
    : name_(std::move(name)), sync_(sync), track_(trace::register_track("queue " + name_)) {
  worker_ = std::thread([this] { worker_loop(); });  // if this throws, nothing else was started
}

Queue::~Queue() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    paused_ = false;  // drain everything
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

uint64_t Queue::push(const char* name, Kernel k, std::vector<std::shared_ptr<Storage>> refs,
                     std::vector<QueueDep> deps) {
  const uint64_t t0 = trace::enabled() ? trace::now_us() : 0;
  size_t new_bytes = 0;
  for (auto& r : refs)
    if (r->pending_uses.fetch_add(1, std::memory_order_acq_rel) == 0) {
      r->backlog_queue = this;
      new_bytes += r->bytes();
    }
  uint64_t seq, depth;
  size_t backlog;
  {
    std::unique_lock<std::mutex> lk(mu_);
    if (max_ops_ || max_bytes_) {
      space_cv_.wait(lk, [&] {
        uint64_t d = pushed_ - completed_;
        if (d == 0) return true;  // never deadlock on one oversized op
        return (!max_ops_ || d < max_ops_) && (!max_bytes_ || backlog_bytes_ + new_bytes <= max_bytes_);
      });
    }
    seq = ++pushed_;
    backlog_bytes_ += new_bytes;
    if (backlog_bytes_ > peak_backlog_bytes_) peak_backlog_bytes_ = backlog_bytes_;
    depth = pushed_ - completed_;
    if (depth > peak_depth_) peak_depth_ = depth;
    backlog = backlog_bytes_;
    pending_.push_back(Op{name, seq, std::move(k), std::move(refs), std::move(deps)});
  }
  work_cv_.notify_one();
  if (t0) {
    uint64_t t1 = trace::now_us();
    trace::span(trace::frontend_track(), name, t0, t1, seq);
    trace::counter(("queue depth " + name_).c_str(), t1, static_cast<double>(depth));
    trace::counter(("backlog MiB " + name_).c_str(), t1, backlog / 1048576.0);
  }
  if (blocking_) wait_for(seq);  // errors surface at the call site
  return seq;
}

void Queue::finish(Op& op) {
  op.kernel = nullptr;  // drop captures before the buffers they may point into
  size_t freed = 0;
  for (auto& r : op.refs) {
    // Read which queue counts these bytes while our use still pins it: once
    // the count reaches 0, the frontend may push the buffer again and
    // re-assign backlog_queue (a data race, and the wrong queue debited).
    void* counted_by = r->backlog_queue;
    if (r->pending_uses.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (counted_by == this) freed += r->bytes();
      else if (counted_by) {  // counted by another queue (a cross-device copy)
        Queue* q = static_cast<Queue*>(counted_by);
        std::lock_guard<std::mutex> lk(q->mu_);
        q->backlog_bytes_ -= r->bytes();
      }
    }
  }
  op.refs.clear();  // buffers go back to their pools here, before completion is announced
  op.deps.clear();
  std::lock_guard<std::mutex> lk(mu_);
  backlog_bytes_ -= freed;
}

void Queue::worker_loop() {
  if (sync_) {
    try {
      sync_->worker_start();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lk(mu_);
      error_ = std::make_exception_ptr(KernelError("(worker start)", 0, name_, e.what()));
    }
  }
  for (;;) {
    Op op;
    {
      std::unique_lock<std::mutex> lk(mu_);
      work_cv_.wait(lk, [&] { return (!paused_ && !pending_.empty()) || (stop_ && pending_.empty()); });
      if (pending_.empty()) return;  // stop_ and drained
      op = std::move(pending_.front());
      pending_.pop_front();
    }
    const uint64_t t0 = trace::enabled() ? trace::now_us() : 0;
    try {
      for (const QueueDep& d : op.deps) {  // another queue's op this one reads or must not overtake
        d.queue->wait_completed(d.seq);
        if (d.queue->sync_) d.queue->sync_->wait_done(d.seq);
      }
      if (sync_) sync_->before_op(op.seq, op.name);
      op.kernel();
    } catch (const std::exception& e) {
      keep_error(op, e.what());
    } catch (...) {
      keep_error(op, "unknown exception");
    }
    if (sync_) {
      try {
        sync_->after_op(op.seq);
      } catch (const std::exception& e) {
        keep_error(op, e.what());
      }
    }
    if (t0) trace::span(track_, op.name, t0, trace::now_us(), op.seq);
    finish(op);
    {
      std::lock_guard<std::mutex> lk(mu_);
      completed_ = op.seq;
      completed_seen_.store(op.seq, std::memory_order_release);
    }
    done_cv_.notify_all();
    space_cv_.notify_all();
  }
}

void Queue::keep_error(const Op& op, const char* what) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!error_) error_ = std::make_exception_ptr(KernelError(op.name, op.seq, name_, what));
}

template <class Ready>
bool Queue::spin_until(Ready ready) {
  constexpr auto kSpin = std::chrono::microseconds(50);
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 15) == 15 && std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();  // on 2 cores, let the thread we wait for run
  }
}

void Queue::wait_completed(uint64_t seq) {
  if (spin_until([&] { return completed_seen_.load(std::memory_order_acquire) >= seq; })) return;
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return completed_ >= seq; });
}

void Queue::wait_for(uint64_t seq) {
  if (completed_seen_.load(std::memory_order_acquire) < seq) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (seq > pushed_) seq = pushed_;
    }
    wait_completed(seq);
  }
  if (sync_ && seq) {
    try {
      sync_->wait_done(seq);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_) error_ = std::make_exception_ptr(KernelError("(asynchronous)", seq, name_, e.what()));
    }
  }
  rethrow_if_error();
}

void Queue::wait_all() {
  uint64_t last;
  {
    std::lock_guard<std::mutex> lk(mu_);
    last = pushed_;
  }
  wait_for(last);
}

bool Queue::done(uint64_t seq) const {
  std::lock_guard<std::mutex> lk(mu_);
  return completed_ >= seq;
}

void Queue::rethrow_if_error() {
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lk(mu_);
    std::swap(e, error_);
  }
  if (e) std::rethrow_exception(e);
}

void Queue::set_max_pending(uint64_t ops, size_t bytes) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    max_ops_ = ops;
    max_bytes_ = bytes;
  }
  space_cv_.notify_all();
}

void Queue::pause() {
  std::lock_guard<std::mutex> lk(mu_);
  paused_ = true;
}

void Queue::resume() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    paused_ = false;
  }
  work_cv_.notify_all();
}

QueueStats Queue::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  QueueStats s;
  s.pushed = pushed_;
  s.completed = completed_;
  s.depth = pushed_ - completed_;
  s.peak_depth = peak_depth_;
  s.backlog_bytes = backlog_bytes_;
  s.peak_backlog_bytes = peak_backlog_bytes_;
  return s;
}

void Queue::reset_peak() {
  std::lock_guard<std::mutex> lk(mu_);
  peak_depth_ = pushed_ - completed_;
  peak_backlog_bytes_ = backlog_bytes_;
}

}  // namespace amlp

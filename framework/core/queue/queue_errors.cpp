// queue_errors.cpp — how a kernel's error reaches exactly one blocker
// (queue.h, docs/design.md §5): the queue whose op failed keeps it, and counts the
// failures after it; a blocker that reports it makes every live queue forget
// it, and says how many came after. An asynchronous device fault is blamed
// on the op whose completion exposed it, as exposing it.
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "framework/core/queue/queue.h"
#include "framework/core/queue/queue_registry.h"
#include "framework/error.h"

namespace amlp {

namespace {

// A copy of `err`, of its own type, whose message adds the failures counted after it.
template <class E>
std::exception_ptr with_more(const E& err, uint64_t more, const std::string& queue) {
  E copy(err);
  static_cast<std::runtime_error&>(copy) = std::runtime_error(detail::concat(
      err.what(), " (and ", more, " more failure", more == 1 ? "" : "s", " on ", queue, " after it)"));
  return std::make_exception_ptr(copy);
}

std::exception_ptr with_more(const std::exception_ptr& e, uint64_t more, const std::string& queue) {
  try {
    std::rethrow_exception(e);
  } catch (const KernelError& k) {
    return with_more(k, more, queue);
  } catch (const OutOfMemory& o) {
    return with_more(o, more, queue);
  } catch (const Dropped& d) {
    return with_more(d, more, queue);
  } catch (const Error& x) {
    return with_more(x, more, queue);
  } catch (...) {  // not ours: thrown as it is
    return e;
  }
}

}  // namespace

// Reports `e` once: the queues that kept it forget it, then it is thrown,
// with the failures its queue counted after it.
void Queue::report(const std::exception_ptr& e) {
  uint64_t more = 0;
  std::string counted_on;
  queue_registry::for_each([&](Queue& q) {
    if (const uint64_t n = q.clear_error(e)) more += n, counted_on = q.name();
  });
  std::rethrow_exception(more ? with_more(e, more, counted_on) : e);
}

void Queue::keep_error(const std::exception_ptr& e, bool device_fault) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!error_) error_ = e;
  else if (error_ != e && !(device_fault && fault_seen_)) ++errors_after_;  // a sticky fault counts once
  fault_seen_ = fault_seen_ || device_fault;
}

uint64_t Queue::clear_error(const std::exception_ptr& e) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!error_ || error_ != e) return 0;
  error_ = nullptr;
  fault_seen_ = false;
  return std::exchange(errors_after_, 0);
}

std::exception_ptr Queue::exposed_fault(const char* op, uint64_t seq, const std::exception& e) const {
  // Synchronous mode waited for every earlier op as it was queued: the fault is this op's.
  const auto blame = blocking() ? KernelError::Blame::Culprit : KernelError::Blame::ExposedBy;
  try {
    std::string what = e.what();
    // A step launched as one graph before it: its ops ran without a check in
    // between, so the fault may be any of them; the note names the step (the batch).
    what += steps_.fault_note(seq);
    return std::make_exception_ptr(KernelError(op ? op : "(an op no longer recorded)", seq, name_, what, blame));
  } catch (...) {  // building the message failed (bad_alloc)
    return std::current_exception();
  }
}

void Queue::note_name(uint64_t seq, const char* name) {
  NameSlot& s = names_[seq % kNames];
  s.seq.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.name.store(name, std::memory_order_relaxed);
  s.seq.store(seq, std::memory_order_release);
}

const char* Queue::name_of(uint64_t seq) const {
  const NameSlot& s = names_[seq % kNames];
  if (seq == 0 || s.seq.load(std::memory_order_acquire) != seq) return nullptr;
  const char* name = s.name.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return s.seq.load(std::memory_order_relaxed) == seq ? name : nullptr;
}

void Queue::rethrow_if_error() {
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lk(mu_);
    e = error_;
  }
  if (e) report(e);
}

}  // namespace amlp

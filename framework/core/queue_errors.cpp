// queue_errors.cpp — how a kernel's error reaches exactly one blocker
// (queue.h, DESIGN §5): the queue whose op failed keeps it; a blocker that
// reports it makes every live queue forget it. The same list of live queues
// lets a frontend blocker release every queue's held step.
#include <algorithm>
#include <mutex>
#include <vector>

#include "framework/core/queue.h"

namespace amlp {

namespace {

// Every live queue, so a blocker that reports an error can forget it on the
// other queues that kept the same error (an op downstream of a failure).
struct Queues {
  std::mutex mu;
  std::vector<Queue*> all;
};
Queues& queues() {
  static Queues* q = new Queues;  // leaked: queues may outlive static destruction order
  return *q;
}

}  // namespace

void Queue::enlist(Queue* q) {
  Queues& qs = queues();
  std::lock_guard<std::mutex> lk(qs.mu);
  qs.all.push_back(q);
}

void Queue::delist(Queue* q) {
  Queues& qs = queues();
  std::lock_guard<std::mutex> lk(qs.mu);
  qs.all.erase(std::remove(qs.all.begin(), qs.all.end(), q), qs.all.end());
}

void Queue::release_steps_everywhere(const char* why) {
  Queues& qs = queues();
  std::lock_guard<std::mutex> lk(qs.mu);
  for (Queue* q : qs.all) {
    if (!q->steps_on_.load(std::memory_order_acquire)) continue;
    std::lock_guard<std::mutex> qlk(q->mu_);
    q->release_step_locked(why);
  }
}

// Reports `e` once: the queues that kept it forget it, then it is thrown.
void Queue::report(const std::exception_ptr& e) {
  {
    Queues& qs = queues();
    std::lock_guard<std::mutex> lk(qs.mu);
    for (Queue* q : qs.all) q->clear_error(e);
  }
  std::rethrow_exception(e);
}

void Queue::keep_error(const std::exception_ptr& e) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!error_) error_ = e;
}

void Queue::clear_error(const std::exception_ptr& e) {
  std::lock_guard<std::mutex> lk(mu_);
  if (error_ == e) error_ = nullptr;
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

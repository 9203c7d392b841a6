// queue_steps.cpp — the queue's side of step graphs (queue.h): turning them
// on, marking a step, queueing its verdict, and releasing held ops when a
// blocker or a bound could otherwise wait on them. The holding, recording and
// replaying is the step capture's (step_capture.h).
#include <mutex>

#include "framework/core/queue/queue.h"
#include "framework/core/queue/queue_registry.h"

namespace amlp {

void Queue::set_step_graph(int warmup) {
  std::lock_guard<std::mutex> lk(mu_);
  release_step_locked("step graphs turned off");  // nothing stays held
  steps_.set(warmup);
}

void Queue::begin_step() {
  std::lock_guard<std::mutex> lk(mu_);
  steps_.begin();
}

StepVerdict Queue::end_step() {
  bool wake = false;
  StepVerdict v;
  {
    std::lock_guard<std::mutex> lk(mu_);
    Op marker{};
    bool queue_marker = false;
    v = steps_.end(marker, queue_marker);
    if (queue_marker) {
      pending_.push_back(std::move(marker));
      wake = worker_sleeping_ && !paused_;
      wakes_ += wake;
    }
  }
  if (wake) work_cv_.notify_one();
  return v;
}

void Queue::release_step_locked(const char* why) {
  Op marker{};
  if (!steps_.release(why, marker)) return;
  pending_.push_back(std::move(marker));
  work_cv_.notify_one();
}

StepGraphStats Queue::step_graph_stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return steps_.stats();
}

void Queue::release_steps_everywhere(const char* why) {
  queue_registry::for_each([why](Queue& q) {
    if (!q.steps_.on()) return;
    std::lock_guard<std::mutex> lk(q.mu_);
    q.release_step_locked(why);
  });
}

}  // namespace amlp

// worker_clock.h — a queue worker's clocks (QueueStats::busy_s, kernel_s).
//
// Busy time is counted by periods, not per op: a period starts when the
// worker wakes with work and ends when it goes to sleep (or stops), so a run
// of ops costs two clock reads, not two an op. The time the worker blocks
// inside a period waiting for another queue's op is taken off. The kernel
// clock (Queue::set_kernel_clock) times each kernel function: two reads an
// op, only while on.
//
//   worker, under the queue's lock:  wake() as it takes work, sleep() before it waits
//   worker, unlocked:                blocked(ns) after waiting for another queue
//   any thread, under the lock:      busy_ns()
#pragma once
#include <atomic>
#include <cstdint>

#include "framework/util/elapsed.h"

namespace amlp {

class WorkerClock {
 public:
  void wake() {
    if (!since_) since_ = steady_ns();
  }
  void sleep() {
    if (since_) busy_ += steady_ns() - since_;
    since_ = 0;
  }
  void blocked(uint64_t ns) { blocked_.fetch_add(ns, std::memory_order_relaxed); }
  // The worker's busy time so far, the current period included.
  uint64_t busy_ns() const {
    const uint64_t b = busy_ + (since_ ? steady_ns() - since_ : 0), w = blocked_.load(std::memory_order_relaxed);
    return b > w ? b - w : 0;
  }

 private:
  uint64_t since_ = 0;  // the current period's start; 0: asleep
  uint64_t busy_ = 0;   // the periods that ended
  std::atomic<uint64_t> blocked_{0};
};

}  // namespace amlp

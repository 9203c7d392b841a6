// scoped_settings.h — the runtime's settings (framework/runtime.h) for the
// lifetime of a guard, restored when it ends, also when an exception leaves
// the scope. For a training run that must not leave its settings behind, and
// for tests.
//
//   {
//     ScopedAllocPolicy run(AllocPolicy::Run);               // the previous policy after
//     ScopedMaxPending bound(/*ops=*/0, /*bytes=*/256 << 20); // every queue; unbounded after
//     ScopedBlocking sync(true);                              // the previous mode after
//     ...
//   }
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "framework/runtime.h"

namespace amlp {

class ScopedAllocPolicy {
 public:
  explicit ScopedAllocPolicy(AllocPolicy p) : previous_(alloc_policy()) { set_alloc_policy(p); }
  ~ScopedAllocPolicy() { set_alloc_policy(previous_); }
  ScopedAllocPolicy(const ScopedAllocPolicy&) = delete;
  ScopedAllocPolicy& operator=(const ScopedAllocPolicy&) = delete;

 private:
  AllocPolicy previous_;
};

// Back-pressure (runtime.h: set_max_pending), unbounded again after.
class ScopedMaxPending {
 public:
  // On every queue, present and future.
  ScopedMaxPending(uint64_t ops, size_t bytes) : unbound_([] { set_max_pending(0, 0); }) {
    set_max_pending(ops, bytes);
  }
  // On one queue: anything with set_max_pending(ops, bytes), such as a Queue of its own.
  template <class Queue>
  ScopedMaxPending(Queue& q, uint64_t ops, size_t bytes) : unbound_([&q] { q.set_max_pending(0, 0); }) {
    q.set_max_pending(ops, bytes);
  }
  ~ScopedMaxPending() { unbound_(); }
  ScopedMaxPending(const ScopedMaxPending&) = delete;
  ScopedMaxPending& operator=(const ScopedMaxPending&) = delete;

 private:
  std::function<void()> unbound_;
};

class ScopedBlocking {
 public:
  explicit ScopedBlocking(bool on) : previous_(blocking()) { set_blocking(on); }
  ~ScopedBlocking() { set_blocking(previous_); }
  ScopedBlocking(const ScopedBlocking&) = delete;
  ScopedBlocking& operator=(const ScopedBlocking&) = delete;

 private:
  bool previous_;
};

// Step graphs (runtime.h: set_step_graph) on each device's queue, warm-up
// `warmup`, off again after; the first device's verdicts are copied to
// `stats` as the guard ends.
class ScopedStepGraph {
 public:
  ScopedStepGraph(std::vector<Device> devices, StepGraphStats& stats, int warmup = 1)
      : devices_(std::move(devices)), stats_(stats) {
    for (const Device& d : devices_) set_step_graph(d, warmup);
  }
  ~ScopedStepGraph() {
    if (devices_.empty()) return;
    try {
      stats_ = step_graph_stats(devices_.front());
      for (const Device& d : devices_) set_step_graph(d, 0);
    } catch (...) {  // a destructor reports nothing
    }
  }
  ScopedStepGraph(const ScopedStepGraph&) = delete;
  ScopedStepGraph& operator=(const ScopedStepGraph&) = delete;

 private:
  std::vector<Device> devices_;
  StepGraphStats& stats_;
};

// One batch's step memory (runtime.h: begin_step_memory) on each device,
// closed as the guard ends (an exception inside the batch included).
class ScopedStepMemory {
 public:
  explicit ScopedStepMemory(const std::vector<Device>& devices) : devices_(devices) {
    for (const Device& d : devices_) begin_step_memory(d);
  }
  ~ScopedStepMemory() { close(); }
  void close() noexcept {
    for (const Device& d : devices_) {
      try {
        end_step_memory(d);
      } catch (...) {  // a destructor reports nothing
      }
    }
    devices_.clear();
  }
  ScopedStepMemory(const ScopedStepMemory&) = delete;
  ScopedStepMemory& operator=(const ScopedStepMemory&) = delete;

 private:
  std::vector<Device> devices_;
};

}  // namespace amlp

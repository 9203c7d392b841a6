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

}  // namespace amlp

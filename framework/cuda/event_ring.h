// event_ring.h — how far the GPU has got through a queue: CUDA events
// recorded after some ops (the backend's choice: every few ops, the last one
// queued, one a waiter asks for), keyed by sequence number, recycled once the
// GPU has passed them. An op's completion is that of the first event at or
// after it.
//
//   ring.record(seq, stream);   // worker thread, after op `seq` was launched
//   ring.wait(seq, stream);     // any thread: returns when the GPU finished op `seq`
//
// The worker records while frontends (and other queues' workers) wait, so
// everything is under one mutex, held only for bookkeeping, never while
// blocking on the GPU. An entry with waiters is never recycled.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "framework/cuda/cuda_handles.h"

namespace amlp::cuda {

class EventRing {
 public:
  EventRing() = default;
  EventRing(const EventRing&) = delete;
  EventRing& operator=(const EventRing&) = delete;

  // Worker thread, with the stream's device current; `seq` increases call by
  // call. When no free event is left, first recycles those the GPU passed.
  void record(uint64_t seq, cudaStream_t stream);
  // Any thread, with the stream's device current, for a launched op `seq`:
  // records an event for it on `stream` unless one at or after it exists
  // (the worker records only every few ops). The event covers every op
  // launched so far, `seq` among them.
  void ensure(uint64_t seq, cudaStream_t stream);
  // Any thread: waits on the event of the smallest recorded seq >= `seq`
  // (falls back to synchronizing `stream` if there is none). Throws on a CUDA
  // error, e.g. an earlier kernel that faulted.
  void wait(uint64_t seq, cudaStream_t stream);
  // Any thread: has the GPU finished op `seq`? (Queries, never blocks.) An op
  // with no event at or after it is complete once `stream` is idle: every op
  // completes, whether it recorded an event or not.
  bool is_complete(uint64_t seq, cudaStream_t stream);
  // Worker thread of another device: makes `consumer` wait on the GPU for op
  // `seq` (cudaStreamWaitEvent), without blocking the host. False when op
  // `seq` has no event (its record failed): the caller waits on the host.
  bool stream_wait(uint64_t seq, cudaStream_t consumer);
  // Destroys every event (the backend's destructor, after its stream drained).
  void clear() noexcept;
  // Forgets every event without destroying it (the CUDA runtime is gone at exit).
  void abandon() noexcept;

 private:
  struct Entry {
    uint64_t seq;
    cudaEvent_t event;
    int waiters;  // threads blocked on it outside the lock
  };
  void recycle_passed_locked();
  void record_locked(uint64_t seq, cudaStream_t stream);

  mutable std::mutex mu_;
  std::deque<Entry> live_;           // increasing seq; references stay valid on push_back/pop_front
  std::vector<cudaEvent_t> free_;    // recorded before, passed, ready to be recorded again
  std::vector<EventPtr> owned_;      // every event made, for destruction
  uint64_t passed_ = 0;              // the GPU finished every op <= passed_
};

}  // namespace amlp::cuda

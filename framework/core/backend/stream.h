// stream.h — the stream concept (ggml's "backend"): what a device's in-order
// work stream does beside running kernels. StreamSync (stream_sync.h) is what
// the queue asks of it (finishing ops, cross-queue waits, graph capture);
// Stream adds what ops and timers ask: copies and timing points.
//
//   be.copy_to_host(host, dev, bytes);       // in a kernel, on the worker thread
#pragma once
#include <cstddef>

#include "framework/core/backend/stream_sync.h"

namespace amlp {

// One recorded point of a device's timeline: the CPU's clock reading, or a
// CUDA event (opaque here: no CUDA header in this file).
struct TimerPoint {
  double host_s = 0;       // CPU: steady_clock seconds when the op ran
  void* event = nullptr;   // CUDA: its cudaEvent_t
  bool recorded = false;   // set by timer_record (the op ran)
};

struct Stream : StreamSync {
  // Worker thread. Same-device copy, and copies between this device and host
  // memory (host memory is pageable).
  //   CPU: each has finished when it returns (memmove / memcpy).
  //   CUDA: copy is only launched (cudaMemcpyAsync on the stream; complete
  //   with the op); copy_to_host and copy_from_host have finished when they
  //   return (staged through pinned memory, the stream synchronised).
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes) = 0;
  // Into host memory from alloc_host() (host_allocator.h): only launched on
  // CUDA, complete with the op; finished on return on the CPU.
  virtual void copy_to_host_async(void* host_dst, const void* src, size_t bytes) = 0;

  // Timers (DeviceTimer): a point on the device's own timeline, recorded by
  // an op's kernel in order with the others (CPU: the worker's clock; CUDA: a
  // timing event on the stream). timer_seconds reads two points of this
  // device once both ops completed; timer_release gives a point's resources
  // back (any thread).
  virtual void timer_record(TimerPoint& p) = 0;
  virtual double timer_seconds(const TimerPoint& from, const TimerPoint& to) = 0;
  virtual void timer_release(TimerPoint& p) noexcept = 0;
};

}  // namespace amlp

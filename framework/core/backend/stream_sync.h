// stream_sync.h — how a backend finishes an op after the queue's worker ran
// it: the part of the stream concept (stream.h, backend.h) the queue asks. The
// CPU backend's kernels are done when they return; the CUDA backend's are
// only launched, so it records an event after each and answers completion
// from it.
//
//   worker thread:  worker_start() once; per op before_op(), the kernel, after_op()
//   any thread:     is_complete(seq) / wait_complete(seq) for a launched op
#pragma once
#include <cstdint>

namespace amlp {

struct StreamSync {
  virtual ~StreamSync() = default;
  virtual void worker_start() {}                 // worker thread, once, before any op (bind the device)
  virtual void before_op(uint64_t /*seq*/, const char* /*name*/) {}  // worker thread (NVTX push)
  // Worker thread, after the kernel ran or threw (NVTX pop, completion
  // event). `tail`: no op was queued behind it when it ran (a waiter is likely).
  // after_op and wait_complete throw DeviceFault (error.h) for a failure of
  // work launched earlier that the device reports only now.
  virtual void after_op(uint64_t /*seq*/, bool /*tail*/) {}
  // Whether before_op/after_op do anything: the queue calls them (and keeps
  // recent ops' names, to blame a fault they report) only then.
  virtual bool per_op_hooks() const { return true; }
  // Any thread: the synchronous mode of the queue it serves
  // (Queue::set_blocking): every op is waited for as it is queued.
  virtual void set_blocking(bool /*on*/) {}
  // Launched ops may still be running on the device (a stream).
  virtual bool asynchronous() const { return false; }
  // Any thread, for a launched op: has the device finished it? / wait until it has.
  virtual bool is_complete(uint64_t /*seq*/) { return true; }
  virtual void wait_complete(uint64_t /*seq*/) {}
  // Worker thread: make this device's later work wait for `producer`'s op
  // `seq` (already launched) without blocking the host, e.g. a CUDA stream
  // waiting on another stream's event. False: not possible, wait on the host.
  virtual bool wait_on_device(StreamSync& /*producer*/, uint64_t /*seq*/) { return false; }
  // Step graphs (queue.h set_step_graph), worker thread, in graph slot
  // `slot` (step_graph.h). capture_begin(): the launches that follow are
  // recorded into a graph, not run (false: not supported, the held ops run
  // one by one). capture_end(): instantiate (or update) the slot's graph and
  // launch it; op `last_seq` completes with it. replay(): launch the slot's
  // recorded graph again (false: there is none). drop_graph(): every slot's.
  virtual bool capture_begin(int /*slot*/) { return false; }
  virtual void capture_end(int /*slot*/, uint64_t /*last_seq*/) {}
  virtual bool replay(int /*slot*/, uint64_t /*last_seq*/) { return false; }
  virtual void drop_graph() noexcept {}
};

}  // namespace amlp

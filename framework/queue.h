// queue.h — an in-order asynchronous queue with one backend worker thread.
//
// The frontend pushes ops and goes on; the worker runs them one by one, in
// order (DESIGN §2). A kernel's exception is kept with the op's name and
// sequence number and rethrown by the next blocker (§5); the queue keeps
// running. Back-pressure bounds pending ops and/or the bytes the backlog
// holds (§6); synchronous mode makes every push wait for its op.
//
//   Queue q("cpu:0", nullptr);
//   uint64_t s = q.push("work", [] { /* runs on the worker */ });
//   q.wait_for(s);   // blocks until it ran; rethrows a kept error
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace amlp {

class Storage;

// How a backend finishes an op after the worker ran it. The CPU backend's
// kernels are done when they return; the CUDA backend's are only launched,
// so it records an event after each and waits on it here.
struct StreamSync {
  virtual ~StreamSync() = default;
  virtual void worker_start() {}                 // worker thread, once, before any op (bind the device)
  virtual void before_op(uint64_t /*seq*/, const char* /*name*/) {}  // worker thread (NVTX push)
  virtual void after_op(uint64_t /*seq*/) {}     // worker thread, after the kernel ran or threw (NVTX pop, event)
  virtual void wait_done(uint64_t /*seq*/) {}    // any thread, after the op was run by the worker
};

struct QueueStats {
  uint64_t pushed = 0;      // ops pushed so far (the last sequence number)
  uint64_t completed = 0;   // ops the worker has finished
  uint64_t depth = 0;       // pushed - completed
  uint64_t peak_depth = 0;  // max depth since reset_peak()
  size_t backlog_bytes = 0; // bytes referenced by pending ops
  size_t peak_backlog_bytes = 0;
};

// A dependency on another queue's op (cross-device copies).
struct QueueDep {
  class Queue* queue;
  uint64_t seq;
};

class Queue {
 public:
  using Kernel = std::function<void()>;

  Queue(std::string name, StreamSync* sync);  // starts the worker
  ~Queue();                                   // drains, then joins; never throws
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Pushes a kernel; returns its sequence number at once (unless back-pressure
  // or synchronous mode makes it wait). `refs` are the buffers the op reads or
  // writes: they stay alive until it has run. `deps` are ops on other queues
  // the kernel must wait for before it runs.
  uint64_t push(const char* name, Kernel k, std::vector<std::shared_ptr<Storage>> refs = {},
                std::vector<QueueDep> deps = {});

  void wait_for(uint64_t seq);  // blocks until op `seq` finished; rethrows a kept error
  void wait_all();              // wait_for(last pushed)
  bool done(uint64_t seq) const;
  void rethrow_if_error();      // rethrows (and clears) a kept kernel error

  // Back-pressure (0 = unbounded, the default).
  void set_max_pending(uint64_t ops, size_t bytes);
  // Synchronous mode: push waits for its op and rethrows at the call site.
  void set_blocking(bool on) { blocking_ = on; }
  bool blocking() const { return blocking_; }

  // Test and demo hooks: a paused worker starts no new op until resume().
  void pause();
  void resume();

  QueueStats stats() const;
  void reset_peak();
  const std::string& name() const { return name_; }
  int trace_track() const { return track_; }

 private:
  struct Op {
    const char* name;
    uint64_t seq;
    Kernel kernel;
    std::vector<std::shared_ptr<Storage>> refs;
    std::vector<QueueDep> deps;
  };
  void worker_loop();
  void finish(Op& op);  // backlog accounting; releases refs
  void keep_error(const Op& op, const char* what);  // the first error is kept until a blocker takes it
  // A waiter spins (yielding) for a short while before sleeping on a condition
  // variable: waking a sleeping thread costs tens of µs on a VM, more than most
  // kernels. The worker does not spin: when it has caught up it sleeps, so
  // streaming pushes never contend with a spinning worker.
  template <class Ready>
  static bool spin_until(Ready ready);
  void wait_completed(uint64_t seq);  // blocks until completed_ >= seq (no sync, no rethrow)

  std::string name_;
  StreamSync* sync_;
  int track_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_, space_cv_;
  std::deque<Op> pending_;
  uint64_t pushed_ = 0, completed_ = 0, peak_depth_ = 0;
  size_t backlog_bytes_ = 0, peak_backlog_bytes_ = 0;
  uint64_t max_ops_ = 0;
  size_t max_bytes_ = 0;
  bool paused_ = false, stop_ = false, blocking_ = false;
  std::atomic<uint64_t> completed_seen_{0};  // lock-free mirror of completed_ for waiters
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace amlp

// queue.h — an in-order asynchronous queue with one backend worker thread.
//
// The frontend pushes ops and goes on; the worker runs them one by one, in
// order (docs/design.md §2). An op queued by enqueue (enqueue.h) declares the
// buffers it reads and writes, and its kernel, a plain function, receives
// their addresses when it runs (OpArgs): it cannot reach a buffer it did not
// declare. The queue itself runs any closure (push(name, Thunk): engine
// tests and demos), which may capture anything; such an op declares no
// scalars, so a step graph records it again every step. A kernel's exception is kept with the op's
// name and sequence number and rethrown by the next blocker (§5); the
// buffers it should have written carry the error, so every op downstream of
// it, on any queue, fails with the same error instead of running. A queue
// keeps its first error and counts the independent failures after it: the
// blocker that reports the first says "and N more". An asynchronous device
// fault (DeviceFault, error.h) is blamed on the op whose completion exposed
// it, saying it may not be the culprit (KernelError::Blame::ExposedBy).
// Back-pressure bounds pending ops and/or the bytes the backlog holds (§6);
// synchronous mode makes every push wait for its op.
//
// A declared write with no block yet (allocation policy `run`) is allocated
// by the worker just before the kernel runs; failing that is the op's error.
// Where each part lives: pushing, the worker loop, announcing, statistics
// and settings in queue.cpp; running one op in run_op.cpp; the waits in
// queue_wait.cpp; errors, reported once across queues, in queue_errors.cpp;
// the step-graph side in queue_steps.cpp (the step capture itself is
// step_capture.h); the live queues in queue_registry.h; what the pending ops
// hold in backlog.h; the worker's clocks in worker_clock.h.
//
// Threads: push, the waits, the settings and the statistics may be called
// from any thread. The frontend's one-thread rule (framework/asyncmlp.h)
// covers the buffers' state that enqueue keeps (buffer_state.h), not this.
//
// Two points in an op's life: *launched* (the worker ran its kernel function;
// on CUDA that put work on the stream) and *completed* (the device finished
// it). On the CPU they coincide. A buffer may be reused once its last op was
// launched (stream order keeps that safe on one device); another queue that
// depends on an op waits for it to complete.
//
//   Queue q("cpu:0", nullptr);
//   uint64_t s = q.push("work", [] { /* runs on the worker */ });
//   q.wait_for(s);   // blocks until it completed; rethrows a kept error
#pragma once
#include <atomic>
#include <chrono>
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

#include "framework/core/queue/backlog.h"
#include "framework/core/memory/block_cache.h"
#include "framework/core/op/op.h"
#include "framework/core/graph/step_capture.h"
#include "framework/core/backend/stream_sync.h"
#include "framework/core/queue/worker_clock.h"
#include "framework/stats.h"

namespace amlp {

class Storage;
class Queue;
enum class PolledWait;  // framework/runtime.h: what a blocker poll is told it waits for

class Queue final : private StepHost {
 public:
  using Kernel = BoundKernel;
  using Thunk = std::function<void()>;

  Queue(std::string name, StreamSync* sync);  // starts the worker
  ~Queue();                                   // resumes, drains, then joins; never throws
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Pushes a kernel; returns its sequence number at once (unless back-pressure
  // or synchronous mode makes it wait). `deps` are ops on other queues that
  // must complete before it runs.
  uint64_t push(const char* name, Kernel k, OpBuffers bufs, std::vector<QueueDep> deps = {});
  // Any closure (engine tests, demos): it may capture what it likes, so the
  // engine knows only `refs`, which are kept alive and counted in the
  // backlog, and never replays it from a record (OpBuffers::scalars_declared).
  uint64_t push(const char* name, Thunk k, std::vector<std::shared_ptr<Storage>> refs = {},
                std::vector<QueueDep> deps = {}, OpTraits traits = {});

  // The waits, by what they do with errors (docs/design.md §4):
  //   wait_for(seq)       until op `seq` completed; keeps a device fault it meets; rethrows a kept error
  //   wait_all()          drain(), then rethrows a kept error
  //   drain(seq)          until op `seq` (default: every op pushed so far) completed; keeps a device
  //                       fault it meets; throws nothing (the frontend's blockers, then their own report)
  //   wait_complete(seq)  until op `seq` completed; throws a device fault it meets (the backend's
  //                       DeviceFault), keeps nothing (a worker waiting for another queue's op)
  //   wait_launched(seq)  (private) until op `seq` was launched; no device call, no error
  // A device fault kept is blamed on the op waited for (KernelError::Blame::ExposedBy).
  static constexpr uint64_t kEveryOp = ~uint64_t(0);
  void wait_for(uint64_t seq);
  void wait_all();
  void drain(uint64_t seq = kEveryOp);
  void wait_complete(uint64_t seq);
  bool launched(uint64_t seq) const;
  bool complete(uint64_t seq) const;
  void rethrow_if_error();       // rethrows (and clears) a kept kernel error
  // Forgets `e` if it is the kept error (a blocker reported it already);
  // returns how many failures the queue counted after it (0 if not kept).
  uint64_t clear_error(const std::exception_ptr& e);
  // Throws `e` after every queue that kept it forgot it: each failure is
  // reported once, by whichever blocker meets it first. When the queue that
  // kept it counted failures after it, the message ends "(and N more ...)".
  [[noreturn]] static void report(const std::exception_ptr& e);

  // Ops pushed so far that have not started never run: their outputs carry
  // a Dropped error; the queue keeps no error for them. Returns how many.
  uint64_t drop_pending();

  // Back-pressure (0 = unbounded, the default).
  void set_max_pending(uint64_t ops, size_t bytes);
  // Synchronous mode: push waits for its op and rethrows at the call site.
  // The backend is told (StreamSync::set_blocking). Any thread.
  void set_blocking(bool on);
  bool blocking() const { return blocking_.load(std::memory_order_acquire); }
  // While one is alive, this thread's pushes do not wait for their op in
  // synchronous mode; the caller waits after (wait_for). For ops on several
  // queues that complete only together (an NCCL all-reduce's ranks): waiting
  // for the first before the others are queued would never end.
  class DeferSyncWait {
   public:
    DeferSyncWait();
    ~DeferSyncWait();
    DeferSyncWait(const DeferSyncWait&) = delete;
    DeferSyncWait& operator=(const DeferSyncWait&) = delete;
  };

  // A paused worker starts no new op while any Pause is alive (demos and
  // tests). resume_all() ends every pause (shutdown: nothing may hang).
  class Pause {
   public:
    explicit Pause(Queue& q) : q_(&q) { q_->pause(); }
    ~Pause() { if (q_) q_->resume(); }
    void release() { if (q_) q_->resume(), q_ = nullptr; }  // resume early
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    Queue* q_;
  };
  void pause();   // prefer Pause: a bare pause() left behind by an exception hangs waiters
  bool paused() const;
  static bool on_worker_thread();  // this thread is some queue's worker
  void resume();
  void resume_all();

  // Step graphs (step_capture.h, a part of their own): with a warm-up of
  // `warmup` matching steps (0: off), the ops of a steady step (pushed
  // between begin_step() and end_step()) are held until end_step() gives its
  // verdict; the step capture then hands the worker the held ops one by one or one
  // graph launch. Off under back-pressure and in synchronous mode; a blocker
  // inside a step releases its held ops first.
  void set_step_graph(int warmup);
  void begin_step();       // frontend: the ops pushed from here to end_step() are the step
  StepVerdict end_step();  // frontend: the step's ops were all pushed
  StepGraphStats step_graph_stats() const;

  QueueStats stats() const;
  void reset_peak();
  // Every queue's worker counts its kernels' own time (QueueStats::kernel_s)
  // while on: two clock reads an op.
  static void set_kernel_clock(bool on);
  static bool kernel_clock();
  const std::string& name() const { return name_; }
  StreamSync* sync() const { return sync_; }

  // Backlog accounting (backlog.cpp) for a buffer this queue counts: another
  // queue's op released it / its block was just allocated.
  void debit_backlog(BacklogBytes bytes);
  void note_allocated(size_t bytes);

 private:
  using Op = QueuedOp;
  void worker_loop();
  BacklogBytes execute(Op& op);  // worker: run, trace, finish (the bytes to debit)
  void announce_locked(uint64_t seq, BacklogBytes freed);  // worker, under mu_: op `seq` was launched
  BacklogBytes finish(Op& op);  // releases refs; returns this queue's backlog bytes they freed
  // Running one op (run_op.cpp), part by part: each returns the op's failure, if any.
  struct Failure {
    enum Cause { Own, Upstream, DeviceFault };  // its own; an input's (not kept again); the device's, found now
    std::exception_ptr error;
    Cause cause = Own;
  };
  void drop(Op& op);                              // dropped before it ran: its outputs say so
  Failure wait_for_producers(const Op& op);       // other queues' ops it depends on
  Failure check_inputs(const Op& op) const;       // an input failed upstream, or was never written
  Failure prepare_outputs(Op& op);                // blocks allocated and resident
  Failure launch(Op& op);                         // the kernel, with the device's per-op hooks
  // What the step capture asks of the worker (StepHost, step_capture.h).
  bool run(Op& op) override;  // true: its kernel ran and succeeded
  void allocate_outputs(Op& op) override;  // blocks for the op's writes that have none (throws OutOfMemory)
  void execute_and_announce(Op& op) override;
  void finish_and_announce(Op& op) override;
  std::exception_ptr kept_error() override;
  void restore_error(std::exception_ptr e) override;
  bool dropped(uint64_t seq) const override { return seq <= drop_upto_.load(std::memory_order_acquire); }
  // The frontend, under mu_: a blocker inside the step; its held ops run eagerly.
  void release_step_locked(const char* why);
  // The first error is kept until a blocker takes it; the failures after it
  // are counted. `device_fault`: an asynchronous device fault, which the
  // device reports again at every later call; counted once.
  void keep_error(const std::exception_ptr& e, bool device_fault = false);
  // An asynchronous device fault `e` that came to light as op `seq`
  // completed (or was waited for): a KernelError that says so.
  std::exception_ptr exposed_fault(const char* op, uint64_t seq, const std::exception& e) const;
  void note_name(uint64_t seq, const char* name);  // worker: op `seq` is starting
  const char* name_of(uint64_t seq) const;         // a recent op's name, or nullptr
  void wait_launched(uint64_t seq);  // blocks until launched_ >= seq (no sync, no rethrow)
  // Waits on `cv` under `lk` until ready(), counted in `waiters` meanwhile
  // (done_waiters_, space_waiters_): a blocker for its op to start, a push
  // held by back-pressure for room. On a frontend thread it polls the
  // blocker poll (runtime.h) as it waits; what the poll throws leaves with
  // `lk` held. unpin_unpushed undoes the pins of a push that then did not
  // happen (`added`: the bytes pin() returned for it).
  void polled_wait(std::unique_lock<std::mutex>& lk, std::condition_variable& cv, int& waiters,
                   const std::function<bool()>& ready, PolledWait what);
  void unpin_unpushed(OpRefs& refs, BacklogBytes added);
  // Spins, yielding (on few cores, the thread waited for runs), until ready()
  // or 50 µs have passed; ready()'s last answer. A waiter's try before it
  // sleeps on a condition variable (waking a sleeping thread costs more than
  // most kernels), and the worker's watch for a push (spin_for_push).
  template <class Ready>
  static bool spin_until(Ready ready) {
    constexpr auto kSpin = std::chrono::microseconds(50);
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 0;; ++i) {
      if (ready()) return true;
      if ((i & 15) == 15 && std::chrono::steady_clock::now() > until) return false;
      std::this_thread::yield();
    }
  }
  // Worker, caught up (with worker_spin): watches for a push a short while.
  // Called and returns with `lk` held.
  void spin_for_push(std::unique_lock<std::mutex>& lk);
  // Every live queue's held step runs eagerly (a frontend blocker: what it
  // waits for may wait on any of them).
  static void release_steps_everywhere(const char* why);

  std::string name_;
  StreamSync* sync_;
  const bool hooks_;  // the device has per-op hooks (StreamSync::per_op_hooks)
  const bool blame_;  // faults surface after the launch: keep recent ops' names to blame
  int track_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_, space_cv_;
  int done_waiters_ = 0, space_waiters_ = 0;  // threads waiting on done_cv_ / space_cv_ (under mu_)
  BlockCache pending_blocks_;  // pending_'s memory, reused (under mu_); declared before it
  std::deque<Op, BlockCache::Allocator<Op>> pending_{BlockCache::Allocator<Op>(&pending_blocks_)};
  uint64_t pushed_ = 0, launched_ = 0, peak_unlaunched_ = 0;
  uint64_t wakes_ = 0;                // pushes that woke the sleeping worker (under mu_)
  std::atomic<uint64_t> wake_ns_{0};  // the time those pushes spent in the wake
  Backlog backlog_;  // the bytes pending ops hold (backlog.h), under mu_
  uint64_t max_ops_ = 0;
  size_t max_bytes_ = 0;
  int paused_ = 0;
  bool stop_ = false;
  std::atomic<bool> blocking_{false};  // set by any thread (set_blocking), read by push
  bool worker_sleeping_ = false;  // waiting on work_cv_ (push wakes it only then)
  const bool spin_;               // ASYNCMLP_CANDIDATES=worker_spin (util/candidates.h)
  bool front_running_ = false;    // pending_.front() is the op the worker is running
  std::atomic<uint64_t> launched_seen_{0};  // lock-free mirror of launched_ for waiters
  std::atomic<uint64_t> pushed_seen_{0};    // lock-free mirror of pushed_ for the worker: after_op's tail, spin_for_push's watch
  std::atomic<uint64_t> drop_upto_{0};      // ops up to this seq are dropped, not run
  WorkerClock clock_;                       // the worker's busy periods (QueueStats::busy_s), under mu_
  std::atomic<uint64_t> kernel_ns_{0};      // inside the kernel functions while clocked (QueueStats::kernel_s)
  uint64_t held_ns_ = 0;                    // time pushes waited for back-pressure (under mu_)
  std::exception_ptr error_;     // under mu_: the first failure no blocker has reported yet
  uint64_t errors_after_ = 0;    // under mu_: failures keep_error met while error_ was set
  bool fault_seen_ = false;      // under mu_: a device fault was kept or counted since error_ was set
  // The names of the last kNames ops to start, for a fault found when a
  // blocker waits (the op is gone by then). Written by the worker, read by
  // waiters: each slot's sequence number is written last and read first and
  // last, so a reader takes a name only if the slot held `seq` throughout.
  static constexpr size_t kNames = 64;
  struct NameSlot {
    std::atomic<uint64_t> seq{0};
    std::atomic<const char*> name{nullptr};
  };
  NameSlot names_[kNames];
  StepCapture steps_;  // step graphs: frontend side under mu_, worker side on the worker (step_capture.h)
  std::thread worker_;
};

}  // namespace amlp

// queue.h — an in-order asynchronous queue with one backend worker thread.
//
// The frontend pushes ops and goes on; the worker runs them one by one, in
// order (docs/design.md §2). An op declares the buffers it reads and writes; its
// kernel receives their addresses when it runs (OpArgs), so it cannot reach
// a buffer it did not declare. A kernel's exception is kept with the op's
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
// What the pending ops hold is counted in backlog.h; errors are reported
// once across queues (queue_errors.cpp); the waits and statistics are in
// queue_wait.cpp.
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
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <typeinfo>
#include <utility>
#include <vector>

#include "framework/core/backlog.h"
#include "framework/core/buffer_state.h"
#include "framework/core/op_traits.h"
#include "framework/core/step_graph.h"
#include "framework/core/stream_sync.h"
#include "framework/stats.h"

namespace amlp {

class Storage;
class Queue;

// A dependency on another queue's op.
using QueueDep = OpRef;

// What an op carries beyond its scalars (a host array to copy in, a
// message), owned by the op and read by its kernel as OpArgs::payload<T>().
// The step-graph recogniser cannot compare it, so an op with a payload is
// never recorded (step_graph.h): what a replay needs belongs in the scalars.
struct OpPayload {
  std::shared_ptr<const void> data;
  const std::type_info* type = nullptr;
  template <class T>
  static OpPayload of(T value) {
    return {std::make_shared<const T>(std::move(value)), &typeid(T)};
  }
};

// What a kernel is given when its op runs: the buffers the op declared,
// reads first, and its scalars and payload (docs/design.md §1). A kernel is
// a function of these alone (enqueue.h), so a replayed step cannot run it
// with arguments its op did not declare.
class OpArgs {
 public:
  OpArgs(const std::shared_ptr<Storage>* bufs, size_t reads, size_t writes, const char* op,
         const std::vector<uint64_t>* scalars = nullptr, const OpPayload* payload = nullptr)
      : bufs_(bufs), reads_(reads), writes_(writes), op_(op), scalars_(scalars), payload_(payload) {}
  // i-th read / write as declared; nullptr for an optional tensor left undefined.
  const float* in(size_t i) const;
  float* out(size_t i) const;
  size_t reads() const { return reads_; }
  size_t writes() const { return writes_; }
  // i-th scalar as declared (enqueue.h), checked: an op's sizes, flags,
  // seeds, factors (scalar_bits) and addresses (pointer_bits).
  size_t scalars() const { return scalars_ ? scalars_->size() : 0; }
  uint64_t scalar(size_t i) const {
    if (i >= scalars()) bad_scalar(i);
    return (*scalars_)[i];
  }
  int scalar_int(size_t i) const { return static_cast<int>(static_cast<int64_t>(scalar(i))); }
  bool scalar_bool(size_t i) const { return scalar(i) != 0; }
  float scalar_float(size_t i) const {  // the inverse of scalar_bits
    const uint32_t u = static_cast<uint32_t>(scalar(i));
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  template <class T>
  T* scalar_ptr(size_t i) const {  // the inverse of pointer_bits
    return reinterpret_cast<T*>(static_cast<uintptr_t>(scalar(i)));
  }
  // The op's payload, of the type it declared (checked).
  template <class T>
  const T& payload() const {
    if (!payload_ || !payload_->data || !payload_->type || *payload_->type != typeid(T)) bad_payload();
    return *static_cast<const T*>(payload_->data.get());
  }

 private:
  [[noreturn]] void bad_scalar(size_t i) const;
  [[noreturn]] void bad_payload() const;
  const std::shared_ptr<Storage>* bufs_;
  size_t reads_, writes_;
  const char* op_;
  const std::vector<uint64_t>* scalars_;
  const OpPayload* payload_;
};

// An op's buffers: `reads` then `writes` (null entries allowed), kept alive
// until the op was launched.
struct OpBuffers {
  std::vector<std::shared_ptr<Storage>> refs;
  size_t reads = 0;
  // The kernel's scalar arguments, for step graphs (step_graph.h): a step
  // is replayed as recorded only when each of its ops declared them; an op
  // that did not (a bare Queue::push, whose closure may have changed) is
  // recorded again every step. Every enqueued op declares them (enqueue.h).
  bool scalars_declared = false;
  std::vector<uint64_t> scalars;
  OpPayload payload;  // an op with one is never recorded (step_graph.h)
  OpTraits traits;
};

class Queue {
 public:
  using Kernel = std::function<void(const OpArgs&)>;
  using Thunk = std::function<void()>;

  Queue(std::string name, StreamSync* sync);  // starts the worker
  ~Queue();                                   // resumes, drains, then joins; never throws
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Pushes a kernel; returns its sequence number at once (unless back-pressure
  // or synchronous mode makes it wait). `deps` are ops on other queues that
  // must complete before it runs.
  uint64_t push(const char* name, Kernel k, OpBuffers bufs, std::vector<QueueDep> deps = {});
  // A kernel that takes no buffer arguments (engine tests, demos); `refs` are
  // only kept alive and counted in the backlog.
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
  void resume();
  void resume_all();

  // Step graphs (step_graph.h; queue_step.cpp): with a warm-up of `warmup`
  // matching steps (0: off), the ops of a steady step (pushed between
  // begin_step() and end_step()) are held on the worker until end_step() gives
  // its verdict; a backend that records graphs
  // (StreamSync::capture_begin) then launches the step as one graph, the
  // others run the held ops one by one. Off under back-pressure and in
  // synchronous mode; a blocker inside a step releases its held ops first.
  void set_step_graph(int warmup);
  void begin_step();       // frontend: the ops pushed from here to end_step() are the step
  StepVerdict end_step();  // frontend: the step's ops were all pushed
  StepGraphStats step_graph_stats() const;

  QueueStats stats() const;
  void reset_peak();
  const std::string& name() const { return name_; }
  StreamSync* sync() const { return sync_; }

  // Backlog accounting (backlog.cpp) for a buffer this queue counts: another
  // queue's op released it / its block was just allocated.
  void debit_backlog(BacklogBytes bytes);
  void note_allocated(size_t bytes);

 private:
  enum class Role : uint8_t { Op, Held, StepEnd };  // StepEnd: a marker with no seq
  struct Op {
    const char* name;
    uint64_t seq;
    Kernel kernel;
    OpBuffers bufs;
    std::vector<QueueDep> deps;
    Role role = Role::Op;
    StepVerdict verdict = StepVerdict::Eager;  // StepEnd: what to do with the held ops
    int slot = 0;                              // StepEnd: in which graph slot
  };
  void worker_loop();
  BacklogBytes execute(Op& op);  // worker: run, trace, finish (the bytes to debit)
  void announce_locked(uint64_t seq, BacklogBytes freed);  // worker, under mu_: op `seq` was launched
  bool run(Op& op);  // true: its kernel ran and succeeded
  // queue_step.cpp: the frontend's side (under mu_) and the worker's.
  bool hold_locked(const char* name, const OpBuffers& bufs);
  void release_step_locked(const char* why);  // a blocker inside the step: the held ops run eagerly
  void run_step(StepVerdict v, int slot, uint64_t step = 0);  // worker: the held ops, per the verdict
  bool launch_held_as_graph(std::vector<Op>& ops, StepVerdict v, int slot, uint64_t step);
  void note_graph_failure(std::string reason) noexcept;  // worker: the held ops run one by one
  void take_graph_failure_locked();  // frontend, under mu_: the recogniser learns of it
  BacklogBytes finish(Op& op);  // releases refs; returns this queue's backlog bytes they freed
  void allocate_outputs(Op& op);  // worker: blocks for the op's writes that have none (throws OutOfMemory)
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
  static bool on_worker_thread();  // this thread is some queue's worker
  // Every live queue's held step runs eagerly (a frontend blocker: what it
  // waits for may wait on any of them).
  static void release_steps_everywhere(const char* why);
  static void enlist(Queue* q);  // queue_errors.cpp: the live queues a reported error is cleared on
  static void delist(Queue* q);

  std::string name_;
  StreamSync* sync_;
  int track_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_, space_cv_;
  std::deque<Op> pending_;
  uint64_t pushed_ = 0, launched_ = 0, peak_depth_ = 0;
  Backlog backlog_;  // the bytes pending ops hold (backlog.h), under mu_
  uint64_t max_ops_ = 0;
  size_t max_bytes_ = 0;
  int paused_ = 0;
  bool stop_ = false;
  std::atomic<bool> blocking_{false};  // set by any thread (set_blocking), read by push
  bool worker_sleeping_ = false;  // waiting on work_cv_ (push wakes it only then)
  std::atomic<uint64_t> launched_seen_{0};  // lock-free mirror of launched_ for waiters
  std::atomic<uint64_t> pushed_seen_{0};    // lock-free mirror of pushed_ for the worker (after_op's tail)
  std::atomic<uint64_t> drop_upto_{0};      // ops up to this seq are dropped, not run
  std::atomic<uint64_t> busy_ns_{0};        // time the worker spent running kernels (QueueStats::busy_s)
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
  std::unique_ptr<StepRecogniser> steps_;  // under mu_; null: step graphs off
  std::atomic<bool> steps_on_{false};      // steps_ is set (read without the lock by waiters)
  uint64_t held_in_step_ = 0;              // under mu_: ops of the current step queued as held
  bool in_step_ = false;                   // under mu_: between begin_step() and end_step()
  std::vector<Op> held_;                   // worker only: this step's held ops
  std::vector<Kernel> recorded_[StepRecogniser::kSlots];  // worker only, no device graphs: each slot's kernels
  std::atomic<bool> graph_failed_{false};  // worker -> frontend: a capture or replay failed
  std::string graph_failure_;              // under mu_: why (the backend's message)
  uint64_t graph_failures_ = 0;            // under mu_: recordings and replays that failed
  // The last step launched as one graph (worker; read by exposed_fault on any
  // thread): its ops' seqs and its number among the steps, for a fault's message.
  std::atomic<uint64_t> graph_first_{0}, graph_last_{0}, graph_step_{0};
  uint64_t rerecorded_ = 0;                // under mu_: replay verdicts recorded again (an op's scalars undeclared)
  std::thread worker_;
};

}  // namespace amlp

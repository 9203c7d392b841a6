// step_capture.h — step graphs: the part of a queue that holds a training
// loop's steady step and launches it as one recorded graph.
//
// The queue (queue.h) pushes, runs and completes ops in order; this part
// decides how a training loop's steady step reaches the device. The
// frontend marks a step (Queue::begin_step / end_step); each op pushed inside
// it is shown to the recogniser (step_graph.h), which says whether to hold
// it. A held op is queued as Held and parked here by the worker; the step's
// end queues a StepEnd marker with the recogniser's verdict, and the part
// hands its host (the queue's worker, through StepHost) either the held ops
// one by one or one graph launch:
//
//   Capture / Update  the held ops' launches recorded as the slot's graph
//                     (StreamSync::capture_begin / capture_end), then launched
//   Replay            the slot's graph launched again (StreamSync::replay)
//   Eager             the held ops run one by one, in order
//
// A backend without graphs (the CPU) runs the held ops one by one: a replay
// re-runs the kernels the slot kept, which are functions of their ops'
// declared arguments alone (op.h), so results never depend on the verdict.
// Failure is never silent: a recording or replay that fails runs the held
// ops one by one (each failure then named by its own op), keeps the reason
// (StepGraphStats::last_reason) and counts it; the recogniser learns of it
// at the next push and starts over.
//
// Threads: the frontend side (set, begin, hold, end, release, stats) runs
// under the owning queue's lock; the worker side (park, run, run_parked)
// on the queue's worker only; on() and fault_note() on any thread.
//
//   if (steps.in_step() && steps.hold(name, bufs)) role = OpRole::Held;
//   ...                        // worker: a Held op -> steps.park(op)
//   steps.run(marker, host);   // worker: the StepEnd marker
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "framework/core/op/op.h"
#include "framework/core/graph/step_graph.h"
#include "framework/core/backend/stream_sync.h"
#include "framework/stats.h"

namespace amlp {

// How an op travels through the queue: run when its turn comes, held for
// its step's verdict, or the marker that ends a step (no op of its own).
enum class OpRole : uint8_t { Op, Held, StepEnd };

// An op in a queue: as the frontend pushed it, with its sequence number.
struct QueuedOp {
  const char* name;
  uint64_t seq;  // a StepEnd marker's: the step's number (1, 2, ...: the loop's batch)
  BoundKernel kernel;
  OpBuffers bufs;
  std::vector<QueueDep> deps;
  OpRole role = OpRole::Op;
  StepVerdict verdict = StepVerdict::Eager;  // StepEnd: what to do with the held ops
  int slot = 0;                              // StepEnd: in which graph slot
};

// What the step capture needs of the queue's worker to run held ops.
class StepHost {
 public:
  // Runs one op as the queue does (its kernel, trace span, completion) and announces it launched.
  virtual void execute_and_announce(QueuedOp& op) = 0;
  // The blocks of the op's writes that have none yet (throws OutOfMemory).
  virtual void allocate_outputs(QueuedOp& op) = 0;
  // The op's kernel with the queue's per-op hooks; while a graph is being
  // recorded its launches are recorded, not run. True: it succeeded.
  virtual bool run(QueuedOp& op) = 0;
  // The op ran (inside a launched graph): its buffers released, announced launched.
  virtual void finish_and_announce(QueuedOp& op) = 0;
  // The error the queue keeps for its next blocker, and putting one back.
  virtual std::exception_ptr kept_error() = 0;
  virtual void restore_error(std::exception_ptr e) = 0;
  virtual bool dropped(uint64_t seq) const = 0;  // the op was dropped (Queue::drop_pending)

 protected:
  ~StepHost() = default;
};

class StepCapture {
 public:
  StepCapture(std::string queue_name, StreamSync* sync, int track)
      : name_(std::move(queue_name)), sync_(sync), track_(track) {}

  // --- frontend, under the owning queue's lock ---------------------------------------
  // Step graphs after `warmup` matching steps (0: off). Release first: nothing stays held.
  void set(int warmup);
  bool on() const { return on_.load(std::memory_order_acquire); }  // any thread
  void begin() { in_step_ = recogniser_ != nullptr; }
  bool in_step() const { return in_step_; }
  // An op pushed inside the step; true: queue it as Held.
  bool hold(const char* name, const OpBuffers& bufs);
  // The step's ops were all pushed: the verdict; `marker` set (true) when
  // ops were held and the queue must queue it after them.
  StepVerdict end(QueuedOp& marker, bool& queue_marker);
  // Stop holding in this step (a blocker inside it, back-pressure,
  // synchronous mode): true when ops were held, and the queue must queue
  // `marker` (an Eager verdict) so that they run.
  bool release(const char* why, QueuedOp& marker);
  StepGraphStats stats() const;

  // --- worker -----------------------------------------------------------------------
  void park(QueuedOp&& op) { held_.push_back(std::move(op)); }
  bool parked() const { return !held_.empty(); }
  // The StepEnd marker: the parked ops, per its verdict.
  void run(const QueuedOp& marker, StepHost& host) { run_step(marker.verdict, marker.slot, marker.seq, host); }
  // The parked ops, one by one (an op that was not held arrived: stream order is kept).
  void run_parked(StepHost& host) { run_step(StepVerdict::Eager, 0, 0, host); }

  // --- any thread -------------------------------------------------------------------
  // For a device fault found after op `seq`: if a step graph ran it, the
  // note that names the step (its ops ran without a check in between); "" if not.
  std::string fault_note(uint64_t seq) const;

 private:
  void run_step(StepVerdict v, int slot, uint64_t step, StepHost& host);
  bool launch_as_graph(std::vector<QueuedOp>& ops, StepVerdict v, int slot, uint64_t step, StepHost& host);
  bool record(std::vector<QueuedOp>& ops, int slot, StepHost& host);
  void note_failure(std::string reason) noexcept;  // worker: the held ops run one by one
  void take_failure();                              // frontend: the recogniser learns of it

  const std::string name_;  // the queue's, for messages
  StreamSync* const sync_;  // null: no device graphs
  const int track_;         // the queue's trace track

  // Frontend (the owning queue's lock).
  std::unique_ptr<StepRecogniser> recogniser_;  // null: step graphs off
  std::atomic<bool> on_{false};                 // recogniser_ is set (read without the lock by waiters)
  bool in_step_ = false;                        // between begin() and end()
  uint64_t held_in_step_ = 0;                   // ops of the current step queued as Held

  // Worker only.
  std::vector<QueuedOp> held_;                             // this step's parked ops
  std::vector<BoundKernel> recorded_[StepRecogniser::kSlots];  // no device graphs: each slot's kernels

  // Worker -> frontend (fail_mu_).
  mutable std::mutex fail_mu_;
  std::atomic<bool> failed_{false};  // a recording or replay failed since the frontend last looked
  std::string failure_;              // why (the backend's message)
  uint64_t failures_ = 0;            // recordings and replays that failed
  uint64_t rerecorded_ = 0;          // replay verdicts recorded again (an op's scalars undeclared)

  // The last step launched as one graph (worker; read by fault_note on any
  // thread): its ops' seqs and its number among the steps.
  std::atomic<uint64_t> graph_first_{0}, graph_last_{0}, graph_step_{0};
};

}  // namespace amlp

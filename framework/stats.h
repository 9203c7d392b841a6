// stats.h — the plain records the engine fills and a program reads: a
// device pool's memory (MemoryStats, its fresh memory's backing:
// FreshBacking), a pool's cap (MemoryBudget) and a queue's progress
// (QueueStats). No functions but FreshBacking's sums: runtime.h says how to
// read them (memory_stats(), memory_limit(), queue_stats()).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace amlp {

// Fresh memory made resident (a CPU pool's HostArena; 0 elsewhere,
// docs/memory-model.md): the device's worker before a kernel writes a block
// (populating it, or the rest of one the populator is on: part of
// QueueStats::busy_s), of which populating, and the bytes it populated; the
// populator thread's own time and bytes, off the worker's clock. Counters:
// what accrued between two reads is their difference, several pools' their sum.
struct FreshBacking {
  double worker_s = 0, worker_populate_s = 0;
  uint64_t worker_bytes = 0;
  double populator_s = 0;
  uint64_t populator_bytes = 0;

  uint64_t bytes() const { return worker_bytes + populator_bytes; }  // backed by either
  FreshBacking& operator+=(const FreshBacking& o) {
    worker_s += o.worker_s;
    worker_populate_s += o.worker_populate_s;
    worker_bytes += o.worker_bytes;
    populator_s += o.populator_s;
    populator_bytes += o.populator_bytes;
    return *this;
  }
  FreshBacking operator-(const FreshBacking& since) const {  // what accrued after `since` was read
    return {worker_s - since.worker_s, worker_populate_s - since.worker_populate_s, worker_bytes - since.worker_bytes,
            populator_s - since.populator_s, populator_bytes - since.populator_bytes};
  }
};

// One device's memory pool (tracked bytes; docs/design.md §7).
struct MemoryStats {
  size_t bytes_in_use = 0;    // handed out now
  size_t peak_bytes = 0;      // max of bytes_in_use since the last reset_peaks()
  size_t reserved_bytes = 0;  // in use + cached (what the device holds for us)
  uint64_t alloc_count = 0;   // allocations served
  uint64_t free_count = 0;    // blocks returned
  uint64_t raw_alloc_count = 0;  // blocks the pool took from its raw allocator (not from its cache)
  uint64_t device_allocs = 0;    // calls to the device's own allocator (cudaMalloc; fewer with segments)
  uint64_t bytes_allocated_total = 0;  // sum of every allocation (rounded), ever
  // Allocations served, under `stream`, by the block of a buffer whose queued
  // ops had not all run (stream-ordered reuse): counted in alloc_count too.
  uint64_t stream_reuses = 0;
  size_t limit_bytes = 0;     // 0 = none
  FreshBacking fresh;         // fresh memory made resident so far
};

// A cap on a pool's reserved bytes and where it came from.
struct MemoryBudget {
  size_t bytes = 0;    // 0 = none
  std::string source;  // "MemAvailable at start, less 10%", "--memory-limit", ...
};

// One device's queue. An op is *launched* once its worker has run the kernel
// function (on the CPU it has then finished too; on CUDA it sits on the
// stream) and *completed* once the device has finished it.
struct QueueStats {
  uint64_t pushed = 0;      // ops pushed so far (the last sequence number)
  uint64_t launched = 0;    // ops the worker has run (CPU) or put on the stream (CUDA)
  uint64_t completed = 0;   // ops the device has finished
  uint64_t depth = 0;       // pushed − completed
  uint64_t unlaunched = 0;  // pushed − launched: what the worker has not reached yet
  uint64_t peak_unlaunched = 0;  // max of pushed − launched since reset_peaks()
  // Pushes that found the worker asleep and woke it: each paid a futex wake
  // (the worker does not spin), which a frontend slower than the kernels pays
  // on most pushes, and one that outruns them on almost none.
  uint64_t wakes = 0;
  double wake_s = 0;  // the pushing threads' seconds inside those wakes
  // Bytes referenced by ops not yet launched, counting only blocks that exist:
  // under the `run` allocation policy an output counts once the worker has
  // allocated it (as its op starts), not while it waits in the queue.
  size_t backlog_bytes = 0;
  size_t peak_backlog_bytes = 0;
  // Under `run`: the blocks the outputs of queued ops will take when they
  // start (always 0 under `enqueue`). Back-pressure by bytes bounds
  // backlog_bytes + unallocated_bytes, so it bounds what a queue will hold.
  size_t unallocated_bytes = 0;
  // Seconds since the queue was made.
  // busy_s: the worker awake with work (core/queue/worker_clock.h): from waking
  // with an op to run until it next sleeps or stops, less the time it waited
  // for another queue's op. That is running its ops, with what each needs
  // around its kernel: allocating its outputs (under the `run` policy),
  // making fresh CPU blocks resident (MemoryStats::fresh), the
  // device's per-op hooks (on CUDA: the completion event; in synchronous
  // mode the wait for the stream), recording and launching step graphs, and
  // the worker's own bookkeeping between ops. Not counted: idle time, and
  // waiting for another queue. The kernel function on the CPU is the
  // device's work itself; on CUDA it only launches the work, so the GPU's
  // own time is not here.
  double busy_s = 0;
  // held_s: pushes held back by back-pressure (the frontend waiting for room).
  double held_s = 0;
  // kernel_s: the part of busy_s inside the ops' kernel functions alone, for
  // ops run while the kernel clock is on (runtime.h set_kernel_clock; 0 while
  // it is off).
  double kernel_s = 0;
};

// A queue's step graphs (runtime.h set_step_graph; core/graph/step_graph.h): the
// recogniser's verdicts, one per step.
struct StepGraphStats {
  uint64_t steps = 0, eager = 0, captured = 0, replayed = 0, updated = 0;
  uint64_t invalidations = 0;  // a graph dropped: the ops changed, an interrupt, a failure
  std::string last_reason;     // why the last armed step (or graph) was given up
  uint64_t capture_failures = 0;  // recordings or replays that failed: their ops ran one by one
  size_t slot_bytes = 0;       // the device's graph slots' blocks (core/memory/step_memory.h), busy and free
};

}  // namespace amlp

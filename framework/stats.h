// stats.h — the plain records the engine fills and a program reads: a
// device pool's memory (MemoryStats, its fresh memory's backing:
// FreshBacking), a pool's cap (MemoryBudget) and a queue's progress
// (QueueStats). No functions but FreshBacking's sums and for_each_field (each
// field's name, value and meaning): runtime.h says how to read them
// (memory_stats(), memory_limit(), queue_stats()).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace amlp {

// Each record's fields are declared once, in a list X(type, name, meaning):
// the struct's members are made from it, and so is every copy of them
// (for_each_field below: the Python module's memory_stats() and
// queue_stats() dicts, docs/python.md's table of their keys), so a field
// added to a list is in all of them. One field a line, its meaning one
// string literal: tests/python/test_stats_fields.py reads the lists here.

// Fresh memory made resident (a CPU pool's HostArena; 0 elsewhere,
// docs/memory-model.md): the device's worker before a kernel writes a block
// (populating it, or the rest of one the populator is on: part of
// QueueStats::busy_s), of which populating, and the bytes it populated; the
// populator thread's own time and bytes, off the worker's clock. Counters:
// what accrued between two reads is their difference, several pools' their sum.
#define AMLP_FRESH_BACKING_FIELDS(X)                                                           \
  X(double, worker_s, "the worker's seconds making fresh blocks resident")                     \
  X(double, worker_populate_s, "... of which populating")                                      \
  X(uint64_t, worker_bytes, "the bytes the worker populated")                                  \
  X(double, populator_s, "the populator thread's seconds, off the worker's clock")             \
  X(uint64_t, populator_bytes, "the bytes the populator thread populated")

#define AMLP_STATS_MEMBER(type, name, meaning) type name{};

struct FreshBacking {
  AMLP_FRESH_BACKING_FIELDS(AMLP_STATS_MEMBER)

  uint64_t bytes() const { return worker_bytes + populator_bytes; }  // backed by either
  FreshBacking& operator+=(const FreshBacking& o) {
#define AMLP_STATS_ADD(type, name, meaning) name += o.name;
    AMLP_FRESH_BACKING_FIELDS(AMLP_STATS_ADD)
#undef AMLP_STATS_ADD
    return *this;
  }
  FreshBacking operator-(const FreshBacking& since) const {  // what accrued after `since` was read
    FreshBacking d;
#define AMLP_STATS_SUB(type, name, meaning) d.name = name - since.name;
    AMLP_FRESH_BACKING_FIELDS(AMLP_STATS_SUB)
#undef AMLP_STATS_SUB
    return d;
  }
};

// One device's memory pool (tracked bytes; docs/design.md §7), and `fresh`:
// the fresh memory made resident so far (FreshBacking).
// stream_reuses: allocations served, under `stream`, by the block of a buffer
// whose queued ops had not all run (stream-ordered reuse): counted in
// alloc_count too.
#define AMLP_MEMORY_STATS_FIELDS(X)                                                                         \
  X(size_t, bytes_in_use, "bytes handed out now")                                                           \
  X(size_t, peak_bytes, "the most bytes in use since the last reset_peaks()")                               \
  X(size_t, reserved_bytes, "bytes in use + cached (what the device holds for the pool)")                   \
  X(uint64_t, alloc_count, "allocations served")                                                            \
  X(uint64_t, free_count, "blocks returned")                                                                \
  X(uint64_t, raw_alloc_count, "blocks the pool took from its raw allocator (not from its cache)")          \
  X(uint64_t, device_allocs, "calls to the device's own allocator (cudaMalloc; fewer with segments)")       \
  X(uint64_t, bytes_allocated_total, "the sum of every allocation (rounded), ever")                         \
  X(uint64_t, stream_reuses, "allocations served by the block of a buffer whose queued ops had not all run") \
  X(size_t, limit_bytes, "the most bytes the pool may reserve (0: no limit)")

struct MemoryStats {
  AMLP_MEMORY_STATS_FIELDS(AMLP_STATS_MEMBER)
  FreshBacking fresh;  // fresh memory made resident so far
};

// A cap on a pool's reserved bytes and where it came from.
struct MemoryBudget {
  size_t bytes = 0;    // 0 = none
  std::string source;  // "MemAvailable at start, less 10%", "--memory-limit", ...
};

// One device's queue. An op is *launched* once its worker has run the kernel
// function (on the CPU it has then finished too; on CUDA it sits on the
// stream) and *completed* once the device has finished it.
// wakes: pushes that found the worker asleep and woke it: each paid a futex
// wake (the worker does not spin), which a frontend slower than the kernels
// pays on most pushes, and one that outruns them on almost none.
// backlog_bytes: bytes referenced by ops not yet launched, counting only
// blocks that exist: under the `run` allocation policy an output counts once
// the worker has allocated it (as its op starts), not while it waits in the
// queue.
// unallocated_bytes: under `run`, the blocks the outputs of queued ops will
// take when they start (always 0 under `enqueue`). Back-pressure by bytes
// bounds backlog_bytes + unallocated_bytes, so it bounds what a queue will hold.
// Seconds since the queue was made:
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
// held_s: pushes held back by back-pressure (the frontend waiting for room).
// kernel_s: the part of busy_s inside the ops' kernel functions alone, for
// ops run while the kernel clock is on (runtime.h set_kernel_clock; 0 while
// it is off).
#define AMLP_QUEUE_STATS_FIELDS(X)                                                                        \
  X(uint64_t, pushed, "ops pushed so far (the last sequence number)")                                     \
  X(uint64_t, launched, "ops the worker has run (CPU) or put on the stream (CUDA)")                       \
  X(uint64_t, completed, "ops the device has finished")                                                   \
  X(uint64_t, depth, "pushed - completed")                                                                \
  X(uint64_t, unlaunched, "pushed - launched: what the worker has not reached yet")                       \
  X(uint64_t, peak_unlaunched, "the most of pushed - launched since reset_peaks()")                       \
  X(uint64_t, wakes, "pushes that found the worker asleep and woke it")                                   \
  X(double, wake_s, "the pushing threads' seconds inside those wakes")                                    \
  X(size_t, backlog_bytes, "bytes referenced by ops not yet launched (blocks that exist)")                \
  X(size_t, peak_backlog_bytes, "the most backlog_bytes since reset_peaks()")                             \
  X(size_t, unallocated_bytes, "under `run`: the blocks queued ops' outputs will take when they start")    \
  X(double, busy_s, "the worker's seconds awake with work")                                               \
  X(double, held_s, "the seconds pushes were held back by back-pressure")                                 \
  X(double, kernel_s, "the part of busy_s inside the kernel functions, while the kernel clock is on")

struct QueueStats {
  AMLP_QUEUE_STATS_FIELDS(AMLP_STATS_MEMBER)
};

#undef AMLP_STATS_MEMBER

// Every field's name, value and meaning, in the list's order: f(name, value,
// meaning). A MemoryStats' `fresh` comes after its own fields, each named
// fresh_<field>, then fresh_bytes (FreshBacking::bytes()).
template <typename F>
void for_each_field(const FreshBacking& s, F&& f) {
#define AMLP_STATS_VISIT(type, name, meaning) f(std::string(#name), s.name, meaning);
  AMLP_FRESH_BACKING_FIELDS(AMLP_STATS_VISIT)
#undef AMLP_STATS_VISIT
}
template <typename F>
void for_each_field(const MemoryStats& s, F&& f) {
#define AMLP_STATS_VISIT(type, name, meaning) f(std::string(#name), s.name, meaning);
  AMLP_MEMORY_STATS_FIELDS(AMLP_STATS_VISIT)
#undef AMLP_STATS_VISIT
  for_each_field(s.fresh, [&f](const std::string& name, auto value, const char* meaning) {
    f("fresh_" + name, value, meaning);
  });
  f(std::string("fresh_bytes"), s.fresh.bytes(), "the fresh bytes made resident, by either (the sum of the two)");
}
template <typename F>
void for_each_field(const QueueStats& s, F&& f) {
#define AMLP_STATS_VISIT(type, name, meaning) f(std::string(#name), s.name, meaning);
  AMLP_QUEUE_STATS_FIELDS(AMLP_STATS_VISIT)
#undef AMLP_STATS_VISIT
}

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

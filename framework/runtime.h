// runtime.h — what a program calls on the devices as a whole, not on one
// tensor: the blocker waitall(); the settings (synchronous mode,
// back-pressure, allocation policy, the data queue, memory limits, BLAS
// threads, TF32); the measurements read every batch (memory_stats,
// queue_stats, RSS, page faults, DeviceTimer; the records are in stats.h);
// and QueuePause for demos. The engine behind them (queues, pools, backends)
// lives in framework/core/.
//
//   set_max_pending(/*ops=*/0, /*bytes=*/256 << 20);   // back-pressure on every queue
//   ... queue work ...
//   QueueStats q = queue_stats(Device::cpu());          // pushed, launched, completed, depth
//   waitall();                                          // every queue of every device
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/device.h"
#include "framework/stats.h"

namespace amlp {

struct DeviceContext;  // the engine's view of a device (framework/core/context.h)

// --- blockers ------------------------------------------------------------------
// Blocks until every queue of every device has completed its ops; rethrows
// the first error a kernel left behind (docs/design.md §4, §5). Any thread.
void waitall();

// --- settings --------------------------------------------------------------------
// Throws EnvError when a variable of the environment the library reads holds
// a value it does not take (ASYNCMLP_BLOCKING=yes: the switches take 0 or 1;
// docs/cli.md), naming each such variable and its value in one line. A
// device's first use checks it too; a program calls it first to report the
// error as bad input before it does anything.
void check_environment();

// Synchronous mode for every queue, present and future (like
// CUDA_LAUNCH_BLOCKING=1 / MXNet's NaiveEngine): each push waits for its op,
// so an error surfaces at the line that caused it. On from the start when
// the environment has ASYNCMLP_BLOCKING=1 (read once per process:
// util/env.h).
void set_blocking(bool on);
bool blocking();

// Back-pressure for every queue, present and future (0 = unbounded, the
// default): a push past `ops` pending ops or `bytes` held by pending ops waits.
// Under the `run` allocation policy the bytes held include the outputs the
// queued ops will allocate when they start (QueueStats::unallocated_bytes).
void set_max_pending(uint64_t ops, size_t bytes);

// When an op's outputs get their memory (docs/design.md §3), for tensors made from
// now on. Enqueue (the default): when the op is queued, so every pending op
// holds its outputs. Run (MXNet's delay_alloc): when the device's worker
// starts the op; until then the tensor has a size but no block, and the pool
// counts nothing for it. An allocation that fails then is the op's error
// (OutOfMemory, naming the op), rethrown by the next blocker like a kernel's.
// Stream (PyTorch's caching allocator): as Enqueue, but a buffer whose last
// handle is gone while queued ops still use it lends its block at once to the
// next op of its size on the same queue (which runs after those uses, in
// order), or on another queue once they completed: a loop that drops what it
// made holds one iteration's working set, however far the frontend runs ahead.
// Not with step graphs (their slots are reused their own way): there it is
// Enqueue.
enum class AllocPolicy { Enqueue, Run, Stream };
void set_alloc_policy(AllocPolicy p);
AllocPolicy alloc_policy();
const char* to_string(AllocPolicy p);  // "enqueue", "run", "stream"
// The policy to_string() names `name`: false, *p untouched, for any other name.
bool alloc_policy_named(const std::string& name, AllocPolicy* p);

// Step graphs (core/graph/step_graph.h) on device `d`'s queue: once `warmup` steps
// in a row queued the same ops (names, sizes, in order), each steady step's
// ops are held until end_step() and launched as one recorded graph where the
// backend records graphs (CUDA), else run one by one in order (the CPU: the
// same kernels, the same results). 0 = off, the default. Off under
// back-pressure and in synchronous mode; a blocker inside a step, an op that
// differs or a failure falls back to running the step op by op.
void set_step_graph(Device d, int warmup);
// A program's step (a training batch): the ops queued on `d` between the two.
void begin_step(Device d);
void end_step(Device d);
// A batch's memory on `d` (core/memory/step_memory.h): between the two, each
// allocation takes the graph slot's block for its position in the batch, so
// a steady step gets the addresses its graph was recorded with. Opened before
// the batch's data is drawn (its buffers are the step's inputs), closed after
// end_step(). Blocks whose handles are still held are never handed out.
void begin_step_memory(Device d);
void end_step_memory(Device d);
// The verdicts so far, and the bytes d's graph slots own (slot_bytes).
StepGraphStats step_graph_stats(Device d);

// A device's data queue: a second in-order queue with its own worker, sharing
// the device's pool and backend, like a loader stream. While a guard is alive,
// the ops this thread (the device's one frontend thread, asyncmlp.h) queues
// on device `d` go to that queue instead of the device's queue (made on
// first use); ops on either queue that use a buffer
// the other wrote wait for it through the cross-queue dependencies, errors
// cross it like any other queue's, and waitall(), drop_pending() and the
// settings above cover it. CPU devices only: on a CUDA device the guard
// throws DeviceError (its kernels launch onto the device's one stream).
// Guards nest; one device at a time per thread.
class DataQueueGuard {
 public:
  explicit DataQueueGuard(Device d);
  ~DataQueueGuard();
  DataQueueGuard(const DataQueueGuard&) = delete;
  DataQueueGuard& operator=(const DataQueueGuard&) = delete;

 private:
  DeviceContext* previous_;  // the device this thread routed to before (engine side, core/context.h)
};

// Cap on the bytes a device's pool may reserve (0 = none); an allocation past
// it raises OutOfMemory after the pool released its cache. `source` is named
// in that error's message and by memory_limit(). Every CPU pool starts with
// host_memory_budget() (docs/design.md §3: never a kill by the operating system, whose
// pages are committed lazily); a CUDA pool starts with none (cudaMalloc fails
// cleanly at the GPU's own size).
void set_memory_limit(Device d, size_t bytes, const std::string& source = "set_memory_limit()");
MemoryBudget memory_limit(Device d);
// How the program's user gives the pools their limit, as out-of-memory
// advice names it: "set_memory_limit" (the API's and the Python module's
// name) unless the program says otherwise ("--memory-limit" for train_mlp;
// "" for a program that offers no way, whose advice then names none).
void set_memory_limit_knob(const std::string& name);
std::string memory_limit_knob();
// The host memory a CPU pool may take by default, read once, at the first
// call: the smaller of the cgroup's limit (v2 memory.max, 'max' = none; v1
// memory.limit_in_bytes; the tightest along the process's cgroup path) and
// MemAvailable from /proc/meminfo, less a safety margin of 10% (at least
// 256 MiB); and, where the process's address space is limited (RLIMIT_AS,
// ulimit -v; RLIMIT_DATA), no more than the limit leaves beside what is
// mapped at that call, less 10% (at least 256 MiB, which keeps room for
// OpenBLAS's buffers, thread stacks and the heap). `source` says which; bytes
// is 0 (none) when nothing is readable and no limit is set.
MemoryBudget host_memory_budget();
// Every queue drops the ops it holds that have not started: they never run,
// their outputs carry a Dropped error (a blocker on them throws it), and no
// blocker reports the drop itself; the op running now finishes. For a run
// that stopped (out of memory, an interrupt) and must not spend minutes on
// work nobody will read. Returns how many ops were dropped.
uint64_t drop_pending();
// Hands a device's cached blocks back to the system (or the driver).
void empty_cache(Device d);

// Threads each CPU GEMM may use (OpenBLAS's, process-wide; it starts with one
// per core). With several CPU devices training at once, give each device its
// share of the cores (cores / devices), or their GEMMs oversubscribe them.
// Call it while no GEMM runs (after waitall()).
// Under an address-space limit (ulimit -v), no more than it has room for
// (each new OpenBLAS thread maps a 128 MiB buffer: cpu/blas_room.h).
void set_blas_threads(int n);
int blas_threads();
// Before calling CBLAS directly, while no device's GEMM runs: throws
// OutOfMemory when the call may need a buffer of its own (more GEMMs at once
// than ever before) and the address-space limit (ulimit -v) leaves no room
// for the 128 MiB OpenBLAS would map, a mapping it would retry for ever. The
// CPU backend's GEMMs check it themselves (cpu/blas_room.h).
void check_blas_room();
// For its lifetime, with two or more CPU devices among `devices`, each CPU
// GEMM gets the cores' share of one device (hardware threads / CPU devices,
// at least one); the previous setting after. Fewer than two: no change.
class BlasThreadsShare {
 public:
  explicit BlasThreadsShare(const std::vector<Device>& devices);
  ~BlasThreadsShare();
  BlasThreadsShare(const BlasThreadsShare&) = delete;
  BlasThreadsShare& operator=(const BlasThreadsShare&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

// TF32 tensor-core math for CUDA GEMMs (off by default); the CPU GEMM emulates
// it, rounding its inputs to TF32 (cpu/linalg.cpp).
void set_tf32(bool on);
bool tf32();

// --- measurements ------------------------------------------------------------------
MemoryStats memory_stats(Device d);
// What an allocation of `bytes` takes from a pool (blocks are rounded up to 512 bytes).
size_t pool_block_bytes(size_t bytes);
// The device's queue; the data queue (DataQueueGuard) is not included: it has
// its own sequence numbers and busy time, read with data_queue_stats() (all
// zero when it was never used).
QueueStats queue_stats(Device d);
QueueStats data_queue_stats(Device d);
// Whether the ops the workers run from now on have their kernels' own time
// counted (QueueStats::kernel_s): two clock reads an op, so off by default
// (train_mlp turns it on for its runs).
void set_kernel_clock(bool on);
bool kernel_clock();
void reset_peaks(Device d);  // the pool's and both queues'
// Free and total memory of a GPU as the driver reports them (cudaMemGetInfo);
// false for a CPU device or when unavailable.
bool device_memory_info(Device d, size_t* free_bytes, size_t* total_bytes);
// Resident set size of this process, from /proc/self/statm (0 if unreadable).
size_t process_rss_bytes();
// A point on a device's own timeline, taken when the device gets there: a
// queued op, in order with the device's other ops (on CUDA a timing event
// recorded on the stream, on the CPU the worker's clock as it runs the op).
// Two points give the device's time between them, which on a GPU the host's
// clock cannot: the host sees only launches. Marking queues the op and
// returns at once; reading waits for both points.
//
//   DeviceTimer a = DeviceTimer::mark(d);
//   ... queue a batch's ops on d ...
//   DeviceTimer b = DeviceTimer::mark(d);
//   double s = b.seconds_since(a);   // the device's seconds from a to b
class DeviceTimer {
 public:
  DeviceTimer() = default;  // unset
  static DeviceTimer mark(Device d);
  bool set() const { return state_ != nullptr; }
  bool reached() const;  // has the device got here? (never blocks; false when unset)
  // Blocks until the device reached both points. Throws Error for an unset
  // timer, points on two devices or queues, or a point the device never
  // reached (its op was dropped or failed).
  double seconds_since(const DeviceTimer& earlier) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Minor page faults of this process so far, every thread (getrusage(RUSAGE_SELF)
// ru_minflt; 0 if unavailable). Fresh pages cost one each: 4 KiB, or 2 MiB where
// the kernel backs a region with a huge page.
uint64_t process_minor_faults();

// --- demonstrations and tests ---------------------------------------------------------
// Holds a device's worker still: ops queue up but none starts until the
// guard is gone (so a demo can time the frontend alone). Pauses nest; the
// runtime resumes every queue before it drains at exit.
// The blockers' waits, heard by a frontend (the Python module: Ctrl-C, and a
// blocker inside its own paused() block). While a thread that is no queue's
// worker waits for a queue's op to start, poll(queue, paused, Blocker) is
// called first, then about every 10 ms until the op has started: `queue` the
// queue's name ("cpu:0", "cpu:0 data"), `paused` whether a QueuePause holds
// it. A WaitInterrupted it throws ends the wait and leaves the blocker with
// it; the queued work stays queued and runs as it would have (what the
// blocker would have read arrives later, for a later blocker). A device's
// own completion wait after the launch (CUDA's) is not polled. A push that
// back-pressure holds (set_max_pending) is polled the same way, with Push:
// what the poll throws leaves the push with it and queues nothing (the call
// that pushed fails). nullptr, the default: the waits sleep until woken.
enum class PolledWait { Blocker, Push };
using BlockerPoll = void (*)(const std::string& queue, bool paused, PolledWait wait);
void set_blocker_poll(BlockerPoll poll);

class QueuePause {
 public:
  explicit QueuePause(Device d);
  ~QueuePause();
  QueuePause(const QueuePause&) = delete;
  QueuePause& operator=(const QueuePause&) = delete;

 private:
  Device device_;
};

}  // namespace amlp

// Under an address-space limit too small to start in (ulimit -v), the
// program ends at load with one line that suggests a limit at which its run
// works: start-up, OpenBLAS's threads and buffers, and room for the run's
// tensors. A program whose runs need more than 64 MiB of tensors says how
// much by defining this (async_demo and train_mlp do), from its arguments
// alone: it is called before any initialiser has run, so it must allocate
// nothing and call nothing that needs the C++ runtime.
extern "C" size_t amlp_tensor_room_at_load(int argc, char** argv) __attribute__((weak));

// memory.h — a device's memory: the tracked caching pool (Pool, one per
// device), the buffers it hands out (Storage, which also carries the
// engine's state of the buffer) and how it gets raw memory from the device
// (RawAllocator, which each backend implements).
//
// Under the default allocation policy (enqueue) outputs are allocated when an
// op is queued; under `run` (MXNet's delay_alloc) an op's output is a Storage
// with a size but no block until the worker starts the op (allocate_now()).
// A Storage returns its block to the pool when the last handle *and* the last
// pending op referring to it let go (docs/design.md §3). Under `stream`
// (PyTorch's caching allocator) a Storage whose last handle is gone while
// queued ops still use it is offered (Pool::offer): the next allocation of its
// size whose op runs after every one of those uses takes its block at once
// (Pool::allocate_reusing), and the old Storage, still read by its queued
// ops, no longer owns it. Freed blocks are cached by
// exact (rounded) size and reused, so a steady training loop stops touching fresh pages (or calling cudaMalloc)
// after its first step.
//
//   Pool& p = ...;  auto s = p.allocate(4096);   // bytes_in_use += 4096
//   s.reset();                                   // back to the cache
//   p.stats().bytes_in_use == 0, p.stats().reserved_bytes == 4096
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/core/memory/buffer_state.h"
#include "framework/core/memory/step_memory.h"
#include "framework/stats.h"

namespace amlp {

// How a pool gets raw memory from its device.
struct RawAllocator {
  virtual ~RawAllocator() = default;
  virtual void* raw_alloc(size_t bytes) = 0;  // returns nullptr when out of memory
  // Why the last raw_alloc returned nullptr when the device had memory but a
  // limit of the process's kept it (the CPU: room an address-space limit
  // keeps for OpenBLAS, cpu/blas_room.h); "" for the device having no more.
  // Read under the pool's lock, as raw_alloc is called.
  virtual std::string why_failed() const { return ""; }
  virtual void raw_free(void* p) noexcept = 0;
  // Called once before a batch of raw_free()s (CUDA: wait for the device, so
  // no launched kernel still uses a block that goes back to the driver).
  virtual void before_raw_free() noexcept {}
  // True when the frontend can address the memory (the CPU): freed blocks are
  // then poisoned for AddressSanitizer while they sit in the cache.
  virtual bool host_memory() const { return false; }
  // Called by a worker before a kernel writes block p (one raw_alloc
  // returned, or a part of one): the CPU backend makes its pages resident
  // there if its populator thread has not yet (so a kernel never faults page
  // by page). False when the memory cannot be had.
  virtual bool prepare_write(void* p) noexcept { return p != nullptr; }
  // Calls made to the device's own allocator so far; -1: one per raw_alloc
  // (the pool counts them).
  virtual int64_t device_allocs() const { return -1; }
  // Adds what backing fresh memory has cost so far to s (MemoryStats'
  // fresh_* fields); a device without such counters leaves them 0.
  virtual void add_fresh_stats(MemoryStats& s) const { (void)s; }
};

class Pool;

// One buffer on one device, and the engine's state of it (buffer_state.h:
// its last writer, its pending uses, its error). Move-free, shared through
// shared_ptr.
class Storage : public BufferState {
 public:
  // `data` nullptr: a block of `bytes` (already rounded) is taken from the
  // pool later, by allocate_now(). `offered_when_dropped`: a buffer made
  // under `stream`, offered to later ops when its last handle goes while
  // queued ops still use it (TensorImpl's destructor, Pool::offer).
  Storage(Pool* pool, void* data, size_t bytes, bool offered_when_dropped = false)
      : pool_(pool), data_(data), bytes_(bytes), offered_when_dropped_(offered_when_dropped) {}
  ~Storage();
  Storage(const Storage&) = delete;  // to prevent performance accidents
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_.load(std::memory_order_acquire); }  // nullptr until allocated
  size_t bytes() const { return bytes_; }  // the block's size, allocated or not
  bool allocated() const { return data() != nullptr; }
  // Takes the block from the pool (throws OutOfMemory). Called by the worker
  // that runs the op writing this buffer, which no other op touches meanwhile
  // (enqueue orders every other use before or after it).
  void allocate_now();
  // Makes the allocated block ready for a kernel to write (RawAllocator::
  // prepare_write); throws OutOfMemory when the device cannot back it.
  // Called by the worker that runs the op writing this buffer.
  void prepare_write();

  Pool& pool() const { return *pool_; }
  bool offered_when_dropped() const { return offered_when_dropped_; }

 private:
  friend class Pool;  // a hand-over (allocate_reusing) clears owns_block_
  Pool* pool_;
  std::atomic<void*> data_;  // written once by allocate_now() on a worker, read by others
  size_t bytes_;
  bool offered_when_dropped_;
  // False once its block went to a later buffer (Pool::allocate_reusing):
  // its queued ops still use the block, which the new owner returns.
  std::atomic<bool> owns_block_{true};
};

// No frontend handle holds `s`, only ops queued earlier (and the caller's
// `s`). use_count is read before the pins: only the worker changes either
// meanwhile, and it unpins before it drops its reference, so a frontend
// handle always leaves use_count - 1 above the pins.
inline bool held_by_queued_ops_only(const std::shared_ptr<Storage>& s) {
  const long users = s.use_count();
  return users - 1 == s->pins();
}

class Pool {
 public:
  static constexpr size_t kRound = 512;  // block sizes are multiples of this

  Pool(std::string device, std::unique_ptr<RawAllocator> raw);
  ~Pool();

  // Throws OutOfMemory (after releasing the cache and retrying once).
  // `offered_when_dropped`: a buffer made under `stream` (offer()).
  std::shared_ptr<Storage> allocate(size_t bytes, bool offered_when_dropped = false);
  // A Storage of `bytes` (rounded) with no block yet: nothing is taken from
  // the pool, nothing counted, until Storage::allocate_now() (policy `run`).
  std::shared_ptr<Storage> allocate_later(size_t bytes);

  // Stream-ordered reuse (policy `stream`, PyTorch's caching allocator).
  // offer(): frontend, as the last handle on `s` goes (the caller's `s` aside)
  // while queued ops still use it: its block may serve a later allocation.
  // allocate_reusing(): a block of `bytes` for an op that `usable(old)`
  // says runs after every queued use of an offered buffer `old` (on the same
  // queue, each run in order; on another, each completed): old's block, handed
  // over (counted once, in use throughout), or else allocate(). The new
  // Storage takes old's uses (so a write on another queue still waits for
  // them), and `predecessor` is set to old, for the caller's bookkeeping (its
  // backlog), or to null. Neither works while step memory has slots.
  using Usable = bool (*)(const Storage& old, const void* ctx);
  void offer(const std::shared_ptr<Storage>& s);
  std::shared_ptr<Storage> allocate_reusing(size_t bytes, Usable usable, const void* ctx,
                                            std::shared_ptr<Storage>& predecessor);

  MemoryStats stats() const;
  void reset_peak();
  void empty_cache();              // give cached blocks back to the device (one device sync, then frees)
  // Cap on reserved bytes, 0 = none; `source` says where it came from (named
  // in OutOfMemory's message and by limit()). A CPU pool starts with the
  // host's budget (host_memory_budget()), a CUDA pool with none.
  void set_limit(size_t bytes, std::string source = "");
  MemoryBudget limit() const;
  static size_t round(size_t bytes) { return (bytes + kRound - 1) / kRound * kRound; }

  // Step memory (step_memory.h), frontend thread: between the two calls
  // allocate() hands out the current graph slot's blocks in the step's
  // order. drop_step_memory() ends the slots (step graphs turned off).
  void begin_step_memory();
  void end_step_memory();
  void drop_step_memory();
  // The bytes the graph slots own (busy and free): what a replayed run keeps
  // reserved for its steps.
  size_t step_memory_bytes() const;

 private:
  friend class Storage;
  size_t block_size(size_t bytes) const;  // round(), 0 as 1; OutOfMemory where rounding would wrap
  // A block of sz (rounded) bytes, counted in use; `in_step`: the step
  // slot's block when step memory is open.
  void* take(size_t sz, size_t requested, bool in_step = false);
  void cache_locked(void* p, size_t bytes) noexcept;  // a free block into the cache
  void prepare_write(void* p, size_t bytes);  // throws OutOfMemory
  void release(void* p, size_t bytes) noexcept;
  void* raw_alloc_locked(size_t bytes);
  std::vector<std::pair<void*, size_t>> take_cache_locked();
  void free_blocks(const std::vector<std::pair<void*, size_t>>& blocks) noexcept;

  std::string device_;
  std::unique_ptr<RawAllocator> raw_;
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> cache_;
  size_t cached_bytes_ = 0;
  StepSlots steps_;  // under mu_
  // Offered buffers by block size (under mu_), each a weak reference: one
  // whose queued ops all ran has died and returned its block the usual way.
  std::unordered_map<size_t, std::vector<std::weak_ptr<Storage>>> offers_;
  size_t offer_entries_ = 0;  // under mu_: entries in offers_, swept when it grows
  size_t limit_ = 0;
  std::string limit_source_;
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<size_t> reserved_{0};
  std::atomic<uint64_t> allocs_{0}, frees_{0}, raw_allocs_{0}, bytes_total_{0}, handovers_{0};
};

}  // namespace amlp

// host_arena.h — the CPU backend's raw memory (private to framework/cpu).
//
// Blocks live in 2 MiB-aligned anonymous mappings advised MADV_HUGEPAGE, and
// no kernel faults on fresh memory page by page:
// - Blocks of kMapBytes or more are mappings of their own, munmap'd by
//   deallocate(). allocate() only maps them (cheap, so the frontend runs
//   ahead as fast as it queues); the populator thread then makes them
//   resident in allocation order (MADV_POPULATE_WRITE: 2 MiB pages, without
//   touching their contents), ahead of the worker, at idle priority
//   (SCHED_IDLE; normal with ASYNCMLP_POPULATOR_NORMAL, util/env.h).
//   prepare_write(), as the writing op starts, makes the block resident on
//   the worker when the populator has not: the worker never waits for the
//   populator. A block the populator has not started (or will not do, being
//   held or stopped) the worker populates itself; for one the populator is
//   on, the worker first populates 2 MiB pieces of the newest blocks still
//   queued (a head start: the populator goes oldest first), then populates
//   the block itself beside the populator (a page either made present is
//   skipped), so two cores share the work. Where the kernel lacks
//   MADV_POPULATE_WRITE (Linux before 5.14), allocate() populates by one
//   write per page, on the allocating thread.
// - Smaller ones are carved (64-byte aligned) from the current 2 MiB chunk,
//   which is populated the same way (a block's writer makes its whole chunk
//   resident in prepare_write, unless it already is); a chunk is unmapped
//   once every block carved from it was freed (the current one is carved
//   again from its start instead).
//
//   HostArena a;  void* p = a.allocate(bytes);   // mapped now, populated later
//   a.prepare_write(p);                          // on the worker, before a kernel writes p
//   a.deallocate(p);
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

namespace amlp::cpu {

class HostArena {
 public:
  static constexpr size_t kMapBytes = size_t(2) << 20;

  HostArena() = default;
  ~HostArena();  // stops the populator, unmaps the chunks
  HostArena(const HostArena&) = delete;
  HostArena& operator=(const HostArena&) = delete;

  void* allocate(size_t bytes);  // nullptr when the memory cannot be had
  // Why the last allocate() returned nullptr when memory was there but an
  // address-space limit keeps it for OpenBLAS (blas_room.h); "" otherwise.
  // Read by the thread that called allocate(), as the pool does under its lock.
  const std::string& why_failed() const { return why_failed_; }
  void deallocate(void* p) noexcept;
  // Before a kernel writes block p: its pages are resident when this returns
  // true; false when the memory cannot be had.
  bool prepare_write(void* p) noexcept;

  // What making blocks resident has cost so far (docs/memory-model.md, fresh
  // memory): the writers' time inside prepare_write making blocks resident
  // (on the worker's clock: a resident block costs no clock read), of which
  // populating (the rest: the lock, finding the queued blocks), the bytes
  // they populated, and the populator thread's own time and bytes. A byte
  // counts once: a block the worker finishes beside the populator is the
  // populator's; a mapping freed mid-way still counts.
  struct BackingStats {
    uint64_t worker_ns = 0, worker_populate_ns = 0, worker_bytes = 0;
    uint64_t populator_ns = 0, populator_bytes = 0;
  };
  BackingStats backing_stats() const;

  // For tests.
  // Whether a block's pages (a small block's: its chunk's) were all made
  // resident, by the populator or prepare_write.
  bool resident(const void* p) const;
  // Holds the populator (true) until released (false), so a test sees a block
  // before it was populated.
  void hold_populator(bool hold);
  // The length of the mapping a block of allocate() is, or 0 for one carved
  // from a chunk (or a pointer that is not a live block).
  size_t mapped_bytes(const void* p) const;
  // The 2 MiB chunk a small block was carved from, or nullptr; chunks mapped now.
  const void* chunk_of(const void* p) const;
  size_t chunk_count() const;

 private:
  struct Mapping {
    size_t len;          // the mapping's exact length
    uint64_t id;         // which mapping at this address (an address is reused once unmapped)
    bool resident;       // every page populated
    bool queued;         // to be populated, or being populated
    bool started;        // being populated whole (by the populator, or by its writer's worker)
    size_t faulted;      // bytes from the start a worker populated ahead, as a head start (prepare_write)
  };
  struct Chunk {
    char* base;
    size_t used;  // bytes carved so far
    size_t live;  // blocks carved and not freed
    Mapping m;    // the chunk's 2 MiB, populated like a large block
  };
  void* chunk_alloc(size_t bytes);
  void release_chunk(Chunk* c) noexcept;  // under maps_mu_
  // Under maps_mu_: a mapping made (new_mapping) or freed, and which one holds a block.
  Mapping new_mapping(char* base, size_t len, bool later);  // queues it for the populator when `later`
  Mapping* mapping_of(const void* p, char** base);  // p's own mapping, or its chunk's; nullptr if neither
  Mapping* job(char* base, uint64_t id);             // the mapping a queued job is for, if still mapped
  void set_resident(Mapping& m, bool ok);  // under maps_mu_, keeping unresident_ right
  void forget(const Mapping& m);             // under maps_mu_: m is being unmapped
  void populator_loop();

  std::string why_failed_;      // allocate()'s caller's (the pool's lock)
  mutable std::mutex maps_mu_;  // allocate and deallocate may come from different threads
  std::unordered_map<const void*, Mapping> maps_;  // large block -> its mapping
  std::unordered_map<char*, Chunk> chunks_;       // base -> chunk (node-based: pointers stay valid)
  std::unordered_map<const void*, char*> small_;  // small block -> its chunk's base
  Chunk* current_ = nullptr;                      // the chunk blocks are carved from
  // The populator's work, under maps_mu_: mappings (large blocks, chunks) to make resident, oldest first.
  std::deque<std::pair<char*, uint64_t>> to_populate_;
  std::condition_variable populate_cv_;
  uint64_t next_id_ = 0;
  bool held_ = false, stopping_ = false;
  std::thread populator_;  // started with the first mapping left to it
  // Mappings not (yet) resident; 0 lets prepare_write return without the lock.
  std::atomic<size_t> unresident_{0};
  // BackingStats, steady_clock ns and bytes.
  std::atomic<uint64_t> worker_ns_{0}, worker_populate_ns_{0}, worker_bytes_{0};
  std::atomic<uint64_t> populator_ns_{0}, populator_bytes_{0};
};

}  // namespace amlp::cpu

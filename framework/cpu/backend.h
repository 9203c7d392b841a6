// backend.h — the CPU kernel table (private to framework/cpu).
//
// Kernels run on the device's worker thread and have finished when they
// return. Each concept's kernels are in the file of its name: elementwise.cpp,
// linalg.cpp (GEMM through OpenBLAS's CBLAS), reduce.cpp, loss.cpp,
// optimizer.cpp, random.cpp (cuRAND's Philox4x32-10 stream, philox.h, on two
// cores through helper.h); memory and copies here.
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
#include <vector>

#include "framework/core/backend.h"

namespace amlp::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int index);
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  // memory (backend.cpp). Blocks live in 2 MiB-aligned anonymous mappings
  // advised MADV_HUGEPAGE, and no kernel faults on fresh memory page by page:
  // - Blocks of kMapBytes or more are mappings of their own, munmap'd by
  //   raw_free. raw_alloc only maps them (microseconds, so the frontend runs
  //   ahead as fast as it queues); the populator thread then makes them
  //   resident in allocation order (MADV_POPULATE_WRITE: 2 MiB pages, without
  //   touching their contents), ahead of the worker. prepare_write(), as the
  //   writing op starts, populates on the worker a block the populator has
  //   not started (or will not do); for one it is populating, the worker
  //   waits, populating 2 MiB pieces of the newest blocks still queued
  //   meanwhile, so two cores share the work rather than one waiting for the
  //   other. Where the kernel lacks MADV_POPULATE_WRITE (before 5.14),
  //   raw_alloc populates by one write per page, on the allocating thread.
  // - Smaller ones are carved (64-byte aligned) from the current 2 MiB chunk,
  //   which is populated the same way (a block's writer waits for its
  //   chunk); a chunk is unmapped once every block carved from it was freed
  //   (the current one is carved again from its start instead).
  static constexpr size_t kMapBytes = size_t(2) << 20;
  void* raw_alloc(size_t bytes) override;
  void raw_free(void* p) noexcept override;
  bool prepare_write(void* p) noexcept override;
  // Whether a block's pages (a small block's: its chunk's) were all made
  // resident, by the populator or prepare_write. For tests.
  bool resident(const void* p) const;
  // Holds the populator (true) until released (false), so a test sees a block
  // before it was populated.
  void hold_populator(bool hold);
  // The length of the mapping a block of raw_alloc is, or 0 for one carved
  // from a chunk (or a pointer that is not a live block); for tests.
  size_t mapped_bytes(const void* p) const;
  // The 2 MiB chunk a small block was carved from, or nullptr; chunks mapped now. For tests.
  const void* chunk_of(const void* p) const;
  size_t chunk_count() const;
  bool host_memory() const override { return true; }
  void* alloc_host(size_t bytes) override;
  void free_host(void* p) noexcept override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host_async(void* host_dst, const void* src, size_t bytes) override;

  // linalg.cpp
  void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
            int ldb, float beta, float* C, int ldc) override;
  // elementwise.cpp
  void fill(float* y, size_t n, float value) override;
  void add_bias(const float* x, const float* b, float* y, int rows, int cols) override;
  void relu(const float* x, float* y, size_t n) override;
  void relu_backward(const float* x, const float* dy, float* dx, size_t n) override;
  void bias_relu(float* y, const float* b, int rows, int cols) override;
  void relu_backward_sum_rows(const float* y, const float* dy, float* dz, float* db, int rows, int cols) override;
  void axpby(float alpha, const float* a, float beta, const float* b, float* y, size_t n) override;
  void add_scalar(const float* x, float s, float* y, size_t n) override;
  void sum_n(const float* const* xs, int k, float* y, size_t n) override;
  void all_reduce_nccl(const float* x, float* y, size_t n, void* comm) override;  // throws: CPU devices use sum_n
  void check_finite(const float* x, size_t n, const char* what) override;
  // backend.cpp: the worker's clock
  void timer_record(TimerPoint& p) override;
  double timer_seconds(const TimerPoint& from, const TimerPoint& to) override;
  void timer_release(TimerPoint&) noexcept override {}
  // reduce.cpp
  void sum_rows(const float* x, float* y, int rows, int cols) override;
  void sum(const float* x, float* y, size_t n, float scale) override;
  void broadcast_scalar(const float* x, float scale, float* y, size_t n) override;
  // loss.cpp
  void l2_loss(const float* pred, const float* label, float* loss, int rows, int cols) override;
  void l2_loss_backward(const float* pred, const float* label, const float* dloss, float* dpred, int rows,
                        int cols) override;
  // optimizer.cpp
  void sgd_update(float* w, const float* g, float* mom, size_t n, float lr, float momentum, float wd,
                  float rescale) override;
  // random.cpp
  void random_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float stddev) override;
  void random_uniform(float* y, size_t n, uint64_t seed, uint64_t offset, float lo, float hi) override;

 private:
  std::string name_;  // "cpu:N", for messages
  struct Mapping {
    size_t len;          // the mapping's exact length
    uint64_t id;         // which mapping at this address (an address is reused once unmapped)
    bool resident;       // every page populated
    bool queued;         // to be populated, or being populated
    bool started;        // being populated whole (by the populator, or by its writer's worker)
    size_t faulted;      // bytes from the start a waiting worker populated ahead (a head start)
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

  mutable std::mutex maps_mu_;  // raw_alloc and raw_free may come from different threads
  std::unordered_map<const void*, Mapping> maps_;  // large block -> its mapping
  std::unordered_map<char*, Chunk> chunks_;       // base -> chunk (node-based: pointers stay valid)
  std::unordered_map<const void*, char*> small_;  // small block -> its chunk's base
  Chunk* current_ = nullptr;                      // the chunk blocks are carved from
  // The populator's work, under maps_mu_: mappings (large blocks, chunks) to make resident, oldest first.
  std::deque<std::pair<char*, uint64_t>> to_populate_;
  std::condition_variable populate_cv_;
  std::condition_variable populated_cv_;  // the populator finished a block
  uint64_t next_id_ = 0;
  bool held_ = false, stopping_ = false;
  std::thread populator_;  // started with the first mapping left to it
  // Mappings not (yet) resident; 0 lets prepare_write return without the lock.
  std::atomic<size_t> unresident_{0};
};

}  // namespace amlp::cpu

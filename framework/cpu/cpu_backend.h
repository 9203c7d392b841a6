// cpu_backend.h — the CPU kernel table (private to framework/cpu).
//
// Kernels run on the device's worker thread and have finished when they
// return. Each concept's kernels are in the file of its name: elementwise.cpp,
// linalg.cpp (GEMM through OpenBLAS's CBLAS), reduce.cpp, loss.cpp,
// optimizer.cpp, random.cpp (cuRAND's Philox4x32-10 stream, philox.h, on two
// cores through split_two.h); memory in host_arena.h; copies and timers in
// cpu_backend.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "framework/core/backend.h"
#include "framework/cpu/host_arena.h"

namespace amlp::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int index);
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  // memory: a HostArena (host_arena.h). For tests, its state:
  bool resident(const void* p) const { return arena_.resident(p); }
  void hold_populator(bool hold) { arena_.hold_populator(hold); }
  size_t mapped_bytes(const void* p) const { return arena_.mapped_bytes(p); }
  const void* chunk_of(const void* p) const { return arena_.chunk_of(p); }
  size_t chunk_count() const { return arena_.chunk_count(); }
  void* raw_alloc(size_t bytes) override { return arena_.allocate(bytes); }
  void raw_free(void* p) noexcept override { arena_.deallocate(p); }
  bool prepare_write(void* p) noexcept override { return arena_.prepare_write(p); }
  void add_fresh_stats(MemoryStats& s) const override;
  bool host_memory() const override { return true; }
  bool per_op_hooks() const override { return false; }  // kernels finish as they return: nothing to mark
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
  // cpu_backend.cpp: the worker's clock
  void timer_record(TimerPoint& p) override;
  double timer_seconds(const TimerPoint& from, const TimerPoint& to) override;
  void timer_release(TimerPoint&) noexcept override {}
  // reduce.cpp
  void sum_rows(const float* x, float* y, int rows, int cols) override;
  void sum(const float* x, float* y, size_t n, float scale) override;
  void broadcast_scalar(const float* x, float scale, float* y, size_t n) override;
  // loss.cpp
  void l2_loss(const float* pred, const float* label, float* loss, float* dpred, int rows, int cols) override;
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
  HostArena arena_;
};

}  // namespace amlp::cpu

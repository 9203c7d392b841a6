// cpu_backend.h — the CPU device (private to framework/cpu): its memory, its
// stream and its kernels; no collectives (its devices reduce with a kernel
// and copy through host memory).
//
// Kernels run on the device's worker thread and have finished when they
// return. Each concept's kernels are in the file of its name, which ends with
// the function that puts them into the table (core/backend/kernels.h):
// elementwise.cpp, linalg.cpp (OpenBLAS's CBLAS), reduce.cpp, loss.cpp,
// optimizer.cpp, random.cpp (cuRAND's Philox4x32-10 stream, philox.h, in two
// parts through split_in_two.h). The table's composed entries (kernels.h) are
// the CPU's fused kernels. Memory in host_arena.h; copies and timers in
// cpu_backend.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "framework/core/backend/backend.h"
#include "framework/cpu/host_arena.h"

namespace amlp::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int index);
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;
  const std::string& name() const { return name_; }  // "cpu:N", for a kernel's messages

  // memory: a HostArena (host_arena.h). For tests, its state:
  bool resident(const void* p) const { return arena_.resident(p); }
  void hold_populator(bool hold) { arena_.hold_populator(hold); }
  size_t mapped_bytes(const void* p) const { return arena_.mapped_bytes(p); }
  const void* chunk_of(const void* p) const { return arena_.chunk_of(p); }
  size_t chunk_count() const { return arena_.chunk_count(); }
  void* raw_alloc(size_t bytes) override { return arena_.allocate(bytes); }
  std::string why_failed() const override { return arena_.why_failed(); }
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

  // cpu_backend.cpp: the worker's clock
  void timer_record(TimerPoint& p) override;
  double timer_seconds(const TimerPoint& from, const TimerPoint& to) override;
  void timer_release(TimerPoint&) noexcept override {}

 private:
  HostArena arena_;
  std::string name_;
};

// Each kernel file's filler: puts that file's kernels into the table.
void add_linalg_kernels(KernelTable& t);       // linalg.cpp
// linalg.cpp: v with its mantissa rounded to TF32's 10 bits (to nearest, ties
// to even); what the CPU GEMM reads with TF32 on. Infinities and NaNs unchanged.
float round_to_tf32(float v);
void add_elementwise_kernels(KernelTable& t);  // elementwise.cpp
void add_reduce_kernels(KernelTable& t);       // reduce.cpp
void add_loss_kernels(KernelTable& t);         // loss.cpp
void add_optimizer_kernels(KernelTable& t);    // optimizer.cpp
void add_random_kernels(KernelTable& t);       // random.cpp

}  // namespace amlp::cpu

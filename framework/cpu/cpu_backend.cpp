// cpu_backend.cpp — the CPU backend's host memory, copies and timers
// (cpu_backend.h), and its kernel table, filled by each kernel file; its
// device memory is the HostArena.
#include "framework/cpu/cpu_backend.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

namespace amlp::cpu {

CpuBackend::CpuBackend(int index) : name_("cpu:" + std::to_string(index)) {
  add_linalg_kernels(kernels);
  add_elementwise_kernels(kernels);
  add_reduce_kernels(kernels);
  add_loss_kernels(kernels);
  add_optimizer_kernels(kernels);
  add_random_kernels(kernels);
  complete_kernels(kernels);  // the Dense layer's GEMMs and the SGD steps: composed
}

void* CpuBackend::alloc_host(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (!p) throw std::bad_alloc();
  return p;
}
void CpuBackend::free_host(void* p) noexcept { std::free(p); }

void CpuBackend::add_fresh_stats(MemoryStats& s) const {
  const HostArena::BackingStats b = arena_.backing_stats();
  s.fresh.worker_s += double(b.worker_ns) * 1e-9;
  s.fresh.worker_populate_s += double(b.worker_populate_ns) * 1e-9;
  s.fresh.worker_bytes += b.worker_bytes;
  s.fresh.populator_s += double(b.populator_ns) * 1e-9;
  s.fresh.populator_bytes += b.populator_bytes;
}

void CpuBackend::timer_record(TimerPoint& p) {
  p.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  p.recorded = true;
}
double CpuBackend::timer_seconds(const TimerPoint& from, const TimerPoint& to) { return to.host_s - from.host_s; }

// An empty tensor's host side may be a null pointer, which memcpy must not see even for 0 bytes.
void CpuBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}
void CpuBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void CpuBackend::copy_from_host(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void CpuBackend::copy_to_host_async(void* dst, const void* src, size_t bytes) { copy_to_host(dst, src, bytes); }

}  // namespace amlp::cpu

namespace amlp {
std::unique_ptr<Backend> make_cpu_backend(int index) { return std::make_unique<cpu::CpuBackend>(index); }
}  // namespace amlp

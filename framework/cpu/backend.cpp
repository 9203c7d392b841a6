// backend.cpp — the CPU backend's memory and copies (backend.h).
#include "framework/cpu/backend.h"

#include <cstdlib>
#include <cstring>

#include "framework/core/context.h"

namespace amlp::cpu {

CpuBackend::CpuBackend(int index) : name_("cpu:" + std::to_string(index)) {}

CpuBackend::~CpuBackend() = default;

// 64-byte aligned; bytes is a multiple of the pool's 512-byte rounding.
void* CpuBackend::raw_alloc(size_t bytes) { return std::aligned_alloc(64, bytes); }
void CpuBackend::raw_free(void* p) noexcept { std::free(p); }

void* CpuBackend::alloc_host(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (!p) throw std::bad_alloc();
  return p;
}
void CpuBackend::free_host(void* p) noexcept { std::free(p); }

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

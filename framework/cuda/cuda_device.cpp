// cuda_device.cpp — what the CUDA build tells the rest of the framework: the
// GPUs it can see, their memory, and the backend for one of them.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/device_guard.h"
#include "framework/device.h"
#include "framework/error.h"
#include "framework/core/context.h"
#include "framework/core/settings.h"
#include "framework/runtime.h"

namespace amlp {

bool built_with_cuda() { return true; }

int cuda_device_count() {
  // Asked once. Any failure (no driver, a driver too old, no device) means
  // no GPU: the CPU backend takes over and callers say so.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

bool device_memory_info(Device d, size_t* free_bytes, size_t* total_bytes) {
  if (!d.is_cuda() || d.index < 0 || d.index >= cuda_device_count()) return false;
  cuda::DeviceGuard guard(d.index, std::nothrow);
  size_t f = 0, t = 0;
  if (cudaMemGetInfo(&f, &t) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (free_bytes) *free_bytes = f;
  if (total_bytes) *total_bytes = t;
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(int index) {
  const int n = cuda_device_count();
  if (index < 0 || index >= n)
    throw DeviceError(detail::device_absent("cuda:" + std::to_string(index)));
  return std::make_unique<cuda::CudaBackend>(index);
}

}  // namespace amlp

namespace amlp::cuda {

namespace {
// A driver API function, reached through the runtime (no link-time libcuda);
// nullptr without a driver.
void* driver_fn(const char* name) noexcept {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return fn;
}
}  // namespace

bool thread_has_context() noexcept {
  using GetCurrent = int (*)(void** ctx);  // CUresult cuCtxGetCurrent(CUcontext*)
  static const auto get_current = reinterpret_cast<GetCurrent>(driver_fn("cuCtxGetCurrent"));
  void* ctx = nullptr;
  // No driver: nothing was ever made current, and nothing must be restored.
  return get_current && get_current(&ctx) == 0 && ctx != nullptr;
}

bool primary_context_active(int device) noexcept {
  using GetState = int (*)(int dev, unsigned* flags, int* active);  // cuDevicePrimaryCtxGetState
  static const auto get_state = reinterpret_cast<GetState>(driver_fn("cuDevicePrimaryCtxGetState"));
  unsigned flags = 0;
  int active = 0;
  return get_state && get_state(device, &flags, &active) == 0 && active != 0;
}

}  // namespace amlp::cuda

// device_guard.h — makes a GPU current for a scope and restores the previous
// one (the frontend thread allocates on any device; it must not be left
// switched by hand).
//
// A thread that never chose a device reports device 0 all the same; setting
// it back to 0 would create GPU 0's context (hundreds of MB) on a run that
// uses only cuda:1. So the previous device is restored only when the thread
// had a current context, as PyTorch's guard does.
//
//   { DeviceGuard g(1); cudaMalloc(...); }          // back to the old device here
//   { DeviceGuard g(1, std::nothrow); ... }          // destructors: never throws
#pragma once
#include <cuda_runtime.h>

#include <new>

#include "framework/cuda/cuda_check.h"

namespace amlp::cuda {

// Does the calling thread have a current CUDA context? (The driver's
// cuCtxGetCurrent, reached through the runtime: no link-time libcuda.)
bool thread_has_context() noexcept;
// Is GPU `device`'s primary context alive (in this process)? (Tests.)
bool primary_context_active(int device) noexcept;

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : had_context_(thread_has_context()) {
    AMLP_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device) AMLP_CUDA_CHECK(cudaSetDevice(device));
    switched_ = prev_ != device;
  }
  DeviceGuard(int device, std::nothrow_t) noexcept : had_context_(thread_has_context()) {
    cudaError_t e = cudaGetDevice(&prev_);
    if (e == cudaSuccess && prev_ != device) {
      e = cudaSetDevice(device);
      switched_ = e == cudaSuccess;
    }
    if (e != cudaSuccess)
      log_failure(__FILE__, __LINE__, "cudaGetDevice / cudaSetDevice", cudaGetErrorString(e), static_cast<int>(e));
  }
  ~DeviceGuard() {
    if (switched_ && had_context_) AMLP_CUDA_CHECK_LOG(cudaSetDevice(prev_));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  bool had_context_;
  int prev_ = 0;
  bool switched_ = false;
};

}  // namespace amlp::cuda

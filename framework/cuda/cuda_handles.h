// cuda_handles.h — RAII for every CUDA handle the backend owns: move-only
// unique_ptrs whose deleters log and never throw (ggml-cpp.h style).
//
//   StreamPtr s = make_stream();              // non-blocking stream on the current device
//   DeviceBuffer b = device_alloc(1 << 20);   // cudaMalloc; freed with cudaFree
//   PinnedBuffer h = pinned_alloc(4096);      // cudaMallocHost; freed with cudaFreeHost
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <cstddef>
#include <memory>

#include "framework/cuda/cuda_check.h"

namespace amlp::cuda {

struct StreamDeleter {
  void operator()(cudaStream_t s) const noexcept { AMLP_CUDA_CHECK_LOG(cudaStreamDestroy(s)); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const noexcept { AMLP_CUDA_CHECK_LOG(cudaEventDestroy(e)); }
};
struct CublasDeleter {
  void operator()(cublasHandle_t h) const noexcept { AMLP_CUDA_CHECK_LOG(cublasDestroy(h)); }
};
struct CurandDeleter {
  void operator()(curandGenerator_t g) const noexcept { AMLP_CUDA_CHECK_LOG(curandDestroyGenerator(g)); }
};
struct DeviceFree {
  void operator()(void* p) const noexcept { AMLP_CUDA_CHECK_LOG(cudaFree(p)); }
};
struct PinnedFree {
  void operator()(void* p) const noexcept { AMLP_CUDA_CHECK_LOG(cudaFreeHost(p)); }
};

using StreamPtr = std::unique_ptr<CUstream_st, StreamDeleter>;
using EventPtr = std::unique_ptr<CUevent_st, EventDeleter>;
using CublasPtr = std::unique_ptr<cublasContext, CublasDeleter>;
using CurandPtr = std::unique_ptr<curandGenerator_st, CurandDeleter>;
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;
using PinnedBuffer = std::unique_ptr<void, PinnedFree>;

// Each makes the object on the calling thread's current device, or throws.
inline StreamPtr make_stream() {
  cudaStream_t s = nullptr;
  AMLP_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return StreamPtr(s);
}
inline EventPtr make_event() {  // no timing: cheaper to record, enough to wait on
  cudaEvent_t e = nullptr;
  AMLP_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return EventPtr(e);
}
inline EventPtr make_timing_event() {  // for cudaEventElapsedTime (DeviceTimer)
  cudaEvent_t e = nullptr;
  AMLP_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault));
  return EventPtr(e);
}
inline CublasPtr make_cublas() {
  cublasHandle_t h = nullptr;
  AMLP_CUDA_CHECK(cublasCreate(&h));
  return CublasPtr(h);
}
inline CurandPtr make_curand(curandRngType_t type) {
  curandGenerator_t g = nullptr;
  AMLP_CUDA_CHECK(curandCreateGenerator(&g, type));
  return CurandPtr(g);
}
inline DeviceBuffer device_alloc(size_t bytes) {
  void* p = nullptr;
  AMLP_CUDA_CHECK(cudaMalloc(&p, bytes));
  return DeviceBuffer(p);
}
inline PinnedBuffer pinned_alloc(size_t bytes) {
  void* p = nullptr;
  AMLP_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return PinnedBuffer(p);
}

}  // namespace amlp::cuda

// cuda_bench.h — what the CUDA benchmarks share: their start (GPU 0 made
// current, or why there is none: each benchmark then reports it and the
// program exits 0) and their clock (CUDA events around repeated work).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "framework/cuda/cuda_check.h"

namespace amlp::bench {

// "" once GPU 0 is the current device; else the reason it cannot be.
inline std::string use_first_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    (void)cudaGetLastError();
    return "no CUDA GPU visible: the CUDA runtime reports 0 devices";
  }
  AMLP_CUDA_CHECK(cudaSetDevice(0));
  return "";
}

// GPU 0's multiprocessors (the backend's grid sizing: CudaBackend::sms()).
inline int multiprocessors() {
  int n = 0;
  AMLP_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0));
  return n;
}

// Seconds per call of `body`, run `repeats` times on `stream` between two
// events (launch costs hidden, as in a run-ahead loop).
template <class Body>
double seconds_per_call(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, int repeats, Body body) {
  AMLP_CUDA_CHECK(cudaEventRecord(start, stream));
  for (int r = 0; r < repeats; ++r) body();
  AMLP_CUDA_CHECK(cudaEventRecord(stop, stream));
  AMLP_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  AMLP_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms / 1e3 / repeats;
}

}  // namespace amlp::bench

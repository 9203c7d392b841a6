// first_gpu.h — the CUDA benchmarks' start: GPU 0 made current, or why there
// is none (each benchmark then reports it and the program exits 0).
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

}  // namespace amlp::bench

// launch.cuh — grid sizing and grid-stride indexing for the backend's kernels
// (device code only; included by the .cu files).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

namespace amlp::cuda {

constexpr int kBlock = 256;
constexpr size_t kMaxBlocks = 4096;  // grid-stride loops cover the rest

inline unsigned blocks_for(size_t n, size_t per_block = kBlock) {
  size_t b = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(std::min(std::max<size_t>(b, 1), kMaxBlocks));
}

__device__ inline size_t global_thread() { return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; }
__device__ inline size_t grid_threads() { return static_cast<size_t>(blockDim.x) * gridDim.x; }

// Sum over a block of kThreads (a multiple of 32, every thread calling);
// the result is valid in thread 0.
template <int kThreads, class T>
__device__ inline T block_sum(T v) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 32 of them");
  __shared__ T warp_sums[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? warp_sums[lane] : T(0);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

}  // namespace amlp::cuda

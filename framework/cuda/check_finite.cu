// check_finite.cu — finds the first value that is not finite (NaN or ±inf).
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/kernels.h"
#include "framework/cuda/launch.cuh"

namespace amlp::cuda {

namespace {

__global__ void find_non_finite_kernel(const float* x, size_t n, unsigned long long* first) {
  for (size_t i = global_thread(); i < n; i += grid_threads())
    if (!isfinite(x[i])) atomicMin(first, static_cast<unsigned long long>(i));
}

}  // namespace

void launch_find_non_finite(const float* x, size_t n, unsigned long long* first, cudaStream_t s) {
  AMLP_CUDA_CHECK(cudaMemsetAsync(first, 0xff, sizeof(*first), s));  // ~0ull: none found
  if (n == 0) return;
  find_non_finite_kernel<<<blocks_for(n), kBlock, 0, s>>>(x, n, first);
  AMLP_CUDA_CHECK_LAUNCH();
}

}  // namespace amlp::cuda

// check_finite.cu — finds the first value that is not finite (NaN or ±inf).
#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/launch.cuh"

namespace amlp::cuda {

namespace {

__global__ void find_non_finite_kernel(const float* x, size_t n, unsigned long long* first) {
  for (size_t i = global_thread(); i < n; i += grid_threads())
    if (!isfinite(x[i])) atomicMin(first, static_cast<unsigned long long>(i));
}

// Waits for the verdict: the op fails here, naming the first non-finite value.
void require_finite(Backend& dev, const float* x, size_t n, const char* what) {
  auto& be = static_cast<CudaBackend&>(dev);
  cudaStream_t s = be.stream();
  auto* first =
      reinterpret_cast<unsigned long long*>(static_cast<char*>(be.scratch()) + CudaBackend::kSumPartialBytes);
  auto* verdict = static_cast<unsigned long long*>(be.host_slot());
  auto* value = reinterpret_cast<float*>(verdict + 1);
  AMLP_CUDA_CHECK(cudaMemsetAsync(first, 0xff, sizeof(*first), s));  // ~0ull: none found
  if (n > 0) {
    find_non_finite_kernel<<<blocks_for(n), kBlock, 0, s>>>(x, n, first);
    AMLP_CUDA_CHECK_LAUNCH();
  }
  AMLP_CUDA_CHECK(cudaMemcpyAsync(verdict, first, sizeof *verdict, cudaMemcpyDeviceToHost, s));
  AMLP_CUDA_CHECK(cudaStreamSynchronize(s));
  const unsigned long long i = *verdict;
  if (i == ~0ull) return;
  AMLP_CUDA_CHECK(cudaMemcpyAsync(value, x + i, sizeof *value, cudaMemcpyDeviceToHost, s));
  AMLP_CUDA_CHECK(cudaStreamSynchronize(s));
  throw Error(detail::concat("non-finite value ", *value, " at index ", i, " of ", what));
}

}  // namespace

void add_check_finite_kernels(KernelTable& t) { t.require_finite = require_finite; }

}  // namespace amlp::cuda

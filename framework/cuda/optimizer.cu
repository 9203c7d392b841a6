// optimizer.cu — the SGD step (Gluon semantics, core/backend.h), in the CPU's
// float order with round-to-nearest intrinsics, so it is bitwise equal to
// cpu/optimizer.cpp.
#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/kernels.h"
#include "framework/cuda/launch.cuh"

namespace amlp::cuda {

namespace {

// g' = rescale*g + wd*w;  w -= lr*g'
__global__ void sgd_kernel(float* w, const float* g, size_t n, float lr, float wd, float rescale) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) {
    const float gp = __fadd_rn(__fmul_rn(rescale, g[i]), __fmul_rn(wd, w[i]));
    w[i] = __fsub_rn(w[i], __fmul_rn(lr, gp));
  }
}

// mom = momentum*mom - lr*g';  w += mom
__global__ void sgd_momentum_kernel(float* w, const float* g, float* mom, size_t n, float lr, float momentum,
                                    float wd, float rescale) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) {
    const float gp = __fadd_rn(__fmul_rn(rescale, g[i]), __fmul_rn(wd, w[i]));
    const float m = __fsub_rn(__fmul_rn(momentum, mom[i]), __fmul_rn(lr, gp));
    mom[i] = m;
    w[i] = __fadd_rn(w[i], m);
  }
}

}  // namespace

void CudaBackend::sgd_update(float* w, const float* g, float* mom, size_t n, float lr, float momentum, float wd,
                             float rescale) {
  cudaStream_t s = stream();
  if (n == 0) return;
  if (momentum == 0.f || !mom)
    sgd_kernel<<<blocks_for(n), kBlock, 0, s>>>(w, g, n, lr, wd, rescale);
  else
    sgd_momentum_kernel<<<blocks_for(n), kBlock, 0, s>>>(w, g, mom, n, lr, momentum, wd, rescale);
  AMLP_CUDA_CHECK_LAUNCH();
}

}  // namespace amlp::cuda

// optimizer.cu — the SGD step (Gluon semantics, core/kernels.h), of one
// parameter or of many in one launch, in the CPU's
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

// Up to kMaxMulti parameters in one launch (the table travels as the
// kernel's argument, under 4 KiB); block b works on a chunk of kChunk
// elements of the parameter whose block range holds b.
constexpr int kMaxMulti = 24;
constexpr size_t kChunk = 4096;
struct MultiTable {
  SgdParam p[kMaxMulti];
  size_t first_block[kMaxMulti + 1];
  int k;
};

__global__ void sgd_multi_kernel(MultiTable t, float lr, float momentum, float wd, float rescale) {
  int j = 0;
  while (j + 1 < t.k && blockIdx.x >= t.first_block[j + 1]) ++j;
  const SgdParam p = t.p[j];
  const size_t begin = (blockIdx.x - t.first_block[j]) * kChunk;
  const size_t end = begin + kChunk < p.n ? begin + kChunk : p.n;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float gp = __fadd_rn(__fmul_rn(rescale, p.g[i]), __fmul_rn(wd, p.w[i]));
    if (momentum == 0.f || !p.mom) {
      p.w[i] = __fsub_rn(p.w[i], __fmul_rn(lr, gp));
    } else {
      const float m = __fsub_rn(__fmul_rn(momentum, p.mom[i]), __fmul_rn(lr, gp));
      p.mom[i] = m;
      p.w[i] = __fadd_rn(p.w[i], m);
    }
  }
}

void sgd_update_multi(Backend& dev, const SgdParam* ps, int k, float lr, float momentum, float wd, float rescale) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  for (int done = 0; done < k;) {
    MultiTable t{};
    t.k = 0;
    size_t blocks = 0;
    for (; done < k && t.k < kMaxMulti; ++done) {
      if (ps[done].n == 0) continue;
      t.p[t.k] = ps[done];
      t.first_block[t.k] = blocks;
      blocks += (ps[done].n + kChunk - 1) / kChunk;
      ++t.k;
    }
    t.first_block[t.k] = blocks;
    if (t.k == 0) continue;
    sgd_multi_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, s>>>(t, lr, momentum, wd, rescale);
    AMLP_CUDA_CHECK_LAUNCH();
  }
}

void sgd_update(Backend& dev, float* w, const float* g, float* mom, size_t n, float lr, float momentum, float wd,
                             float rescale) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (n == 0) return;
  if (momentum == 0.f || !mom)
    sgd_kernel<<<blocks_for(n), kBlock, 0, s>>>(w, g, n, lr, wd, rescale);
  else
    sgd_momentum_kernel<<<blocks_for(n), kBlock, 0, s>>>(w, g, mom, n, lr, momentum, wd, rescale);
  AMLP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void add_optimizer_kernels(KernelTable& t) {
  t.sgd_update = sgd_update;
  t.sgd_update_multi = sgd_update_multi;
}

}  // namespace amlp::cuda

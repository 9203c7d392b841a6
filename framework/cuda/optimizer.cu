// optimizer.cu — the SGD step (Gluon semantics, core/backend/kernels.h), of one
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
// elements of the parameter whose block range holds b. The update is bound
// by memory (w and g read, w written; mom too): each thread loads its
// kVec float4s of every array first, then computes and stores them, so a
// warp has 16-byte accesses in flight for all of them at once. A parameter
// whose arrays are not all 16-byte aligned, and the last n % 4 elements,
// take one float at a time. The same float operations per element either
// way: bitwise the CPU's.
constexpr int kMaxMulti = 24;
constexpr int kMultiThreads = 256, kVec = 4;
constexpr size_t kChunk = size_t(kMultiThreads) * kVec * 4;  // 4096 floats, one float4 each of kVec per thread
struct MultiTable {
  SgdParam p[kMaxMulti];
  size_t first_block[kMaxMulti + 1];
  bool vec[kMaxMulti];  // w, g (and mom) 16-byte aligned
  int k;
};

__device__ inline float sgd_plain(float w, float g, float lr, float wd, float rescale) {
  const float gp = __fadd_rn(__fmul_rn(rescale, g), __fmul_rn(wd, w));
  return __fsub_rn(w, __fmul_rn(lr, gp));
}
__device__ inline float sgd_momentum(float w, float g, float& m, float lr, float momentum, float wd, float rescale) {
  const float gp = __fadd_rn(__fmul_rn(rescale, g), __fmul_rn(wd, w));
  m = __fsub_rn(__fmul_rn(momentum, m), __fmul_rn(lr, gp));
  return __fadd_rn(w, m);
}

__global__ void __launch_bounds__(kMultiThreads)
    sgd_multi_kernel(MultiTable t, float lr, float momentum, float wd, float rescale) {
  int j = 0;
  while (j + 1 < t.k && blockIdx.x >= t.first_block[j + 1]) ++j;
  const SgdParam p = t.p[j];
  const bool mom = momentum != 0.f && p.mom;
  const size_t begin = (blockIdx.x - t.first_block[j]) * kChunk;
  const size_t end = begin + kChunk < p.n ? begin + kChunk : p.n;
  size_t scalar_from = begin;
  if (t.vec[j]) {
    const size_t quads = (end - begin) / 4;  // whole float4s of this chunk
    auto* w4 = reinterpret_cast<float4*>(p.w + begin);
    const auto* g4 = reinterpret_cast<const float4*>(p.g + begin);
    auto* m4 = reinterpret_cast<float4*>(mom ? p.mom + begin : p.w + begin);
    float4 w[kVec], g[kVec], m[kVec];
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      const size_t q = threadIdx.x + size_t(v) * kMultiThreads;
      if (q < quads) {
        w[v] = w4[q], g[v] = __ldg(g4 + q);
        if (mom) m[v] = m4[q];
      }
    }
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      const size_t q = threadIdx.x + size_t(v) * kMultiThreads;
      if (q >= quads) continue;
      float4 r;
      if (mom) {
        r.x = sgd_momentum(w[v].x, g[v].x, m[v].x, lr, momentum, wd, rescale);
        r.y = sgd_momentum(w[v].y, g[v].y, m[v].y, lr, momentum, wd, rescale);
        r.z = sgd_momentum(w[v].z, g[v].z, m[v].z, lr, momentum, wd, rescale);
        r.w = sgd_momentum(w[v].w, g[v].w, m[v].w, lr, momentum, wd, rescale);
        m4[q] = m[v];
      } else {
        r.x = sgd_plain(w[v].x, g[v].x, lr, wd, rescale);
        r.y = sgd_plain(w[v].y, g[v].y, lr, wd, rescale);
        r.z = sgd_plain(w[v].z, g[v].z, lr, wd, rescale);
        r.w = sgd_plain(w[v].w, g[v].w, lr, wd, rescale);
      }
      w4[q] = r;
    }
    scalar_from = begin + quads * 4;
  }
  for (size_t i = scalar_from + threadIdx.x; i < end; i += blockDim.x) {
    if (mom) {
      float m = p.mom[i];
      p.w[i] = sgd_momentum(p.w[i], p.g[i], m, lr, momentum, wd, rescale);
      p.mom[i] = m;
    } else {
      p.w[i] = sgd_plain(p.w[i], p.g[i], lr, wd, rescale);
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void sgd_update_multi(Backend& dev, const SgdParam* ps, int k, float lr, float momentum, float wd, float rescale) {
  launch_sgd_multi(ps, k, lr, momentum, wd, rescale, static_cast<CudaBackend&>(dev).stream());
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

void launch_sgd_multi(const SgdParam* ps, int k, float lr, float momentum, float wd, float rescale, cudaStream_t s) {
  for (int done = 0; done < k;) {
    MultiTable t{};
    t.k = 0;
    size_t blocks = 0;
    for (; done < k && t.k < kMaxMulti; ++done) {
      if (ps[done].n == 0) continue;
      t.p[t.k] = ps[done];
      t.vec[t.k] = aligned16(ps[done].w) && aligned16(ps[done].g) && (!ps[done].mom || aligned16(ps[done].mom));
      t.first_block[t.k] = blocks;
      blocks += (ps[done].n + kChunk - 1) / kChunk;
      ++t.k;
    }
    t.first_block[t.k] = blocks;
    if (t.k == 0) continue;
    sgd_multi_kernel<<<static_cast<unsigned>(blocks), kMultiThreads, 0, s>>>(t, lr, momentum, wd, rescale);
    AMLP_CUDA_CHECK_LAUNCH();
  }
}

void add_optimizer_kernels(KernelTable& t) {
  t.sgd_update = sgd_update;
  t.sgd_update_multi = sgd_update_multi;
}

}  // namespace amlp::cuda

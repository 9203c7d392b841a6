// random.cu — normals and uniforms from cuRAND's Philox4x32-10 stream, at the
// same (seed, offset) as the CPU backend (cpu/philox.h lays its stream out as
// cuRAND does). Uniforms: curandGenerateUniform. Normals: each thread runs
// cuRAND's Philox4x32-10 function on one block of the stream (its counter
// laid out as curandGenerate* lays it out) and turns its two pairs into
// normals with box_muller.h, the CPU generator's operations in its order, so
// a seed draws bitwise the same normals on both backends.
#include <curand_kernel.h>

#include <cstdint>

#include "framework/cuda/box_muller.h"
#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/kernels.h"
#include "framework/cuda/launch.cuh"

namespace amlp::cuda {

namespace {

// Block b of the stream: counter (lo32(b >> 16), hi32(b >> 16), b & 0xffff, 0), key = seed.
__device__ __forceinline__ uint4 stream_block(uint64_t seed, uint64_t b) {
  const uint64_t step = b >> 16;
  const uint4 ctr = make_uint4(uint32_t(step), uint32_t(step >> 32), uint32_t(b & 0xffff), 0u);
  return curand_Philox4x32_10(ctr, make_uint2(uint32_t(seed), uint32_t(seed >> 32)));
}

// y[i] = normal number offset + i of the stream, i < n: one Philox block (four numbers) per thread and step.
__global__ void normal_kernel(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float sd) {
  const uint64_t first = offset / 4, last = (offset + n - 1) / 4;  // blocks touched
  const uint64_t blocks = last - first + 1;
  for (uint64_t k = global_thread(); k < blocks; k += grid_threads()) {
    const uint64_t b = first + k;
    const uint4 w = stream_block(seed, b);
    float z[4];
    bm::box_muller_pair(w.x, w.y, mean, sd, z);
    bm::box_muller_pair(w.z, w.w, mean, sd, z + 2);
    const uint64_t q0 = 4 * b;  // stream position of z[0]
    if (q0 >= offset && q0 + 4 <= offset + n && (offset & 3) == 0 &&
        reinterpret_cast<uintptr_t>(y) % alignof(float4) == 0) {
      reinterpret_cast<float4*>(y)[(q0 - offset) / 4] = make_float4(z[0], z[1], z[2], z[3]);
      continue;
    }
    for (int j = 0; j < 4; ++j)
      if (q0 + j >= offset && q0 + j < offset + n) y[q0 + j - offset] = z[j];
  }
}

}  // namespace

void launch_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float stddev, cudaStream_t s) {
  if (n == 0) return;
  const size_t blocks = (offset + n - 1) / 4 - offset / 4 + 1;
  normal_kernel<<<blocks_for(blocks), kBlock, 0, s>>>(y, n, seed, offset, mean, stddev);
  AMLP_CUDA_CHECK_LAUNCH();
}

namespace {

void random_normal(Backend& dev, float* y, size_t n, uint64_t seed_value, uint64_t offset, float mean, float stddev) {
  launch_normal(y, n, seed_value, offset, mean, stddev, static_cast<CudaBackend&>(dev).stream());
}

void random_uniform(Backend& dev, float* y, size_t n, uint64_t seed_value, uint64_t offset, float lo, float hi) {
  auto& be = static_cast<CudaBackend&>(dev);
  cudaStream_t s = be.stream();
  if (n == 0) return;
  AMLP_CUDA_CHECK(curandSetPseudoRandomGeneratorSeed(be.rng(), seed_value));
  AMLP_CUDA_CHECK(curandSetGeneratorOffset(be.rng(), offset));
  AMLP_CUDA_CHECK(curandGenerateUniform(be.rng(), y, n));  // (0, 1]
  const float width = hi - lo;
  if (!(lo == 0.f && width == 1.f)) launch_affine(y, n, lo, width, s);  // lo + width*y, as on the CPU
}

}  // namespace

void add_random_kernels(KernelTable& t) {
  t.random_normal = random_normal;
  t.random_uniform = random_uniform;
}

}  // namespace amlp::cuda

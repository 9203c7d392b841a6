// random.cpp — normals and uniforms from cuRAND's Philox4x32-10 generator,
// at the same (seed, offset) as the CPU backend's Philox (cpu/philox.h, which
// lays its stream out as cuRAND does), so a seed fixes the same numbers on both backends.
#include <cstdint>

#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/kernels.h"

namespace amlp::cuda {

// The stream at (seed, offset), as the CPU backend draws it.
void CudaBackend::seed(uint64_t seed, uint64_t offset) {
  AMLP_CUDA_CHECK(curandSetPseudoRandomGeneratorSeed(rng_.get(), seed));
  AMLP_CUDA_CHECK(curandSetGeneratorOffset(rng_.get(), offset));
}

float* CudaBackend::normal_scratch(size_t n) {
  if (normal_scratch_floats_ < n) {
    // The old buffer may still be read by a launched copy.
    AMLP_CUDA_CHECK(cudaStreamSynchronize(stream()));
    normal_scratch_.reset();
    normal_scratch_floats_ = 0;
    normal_scratch_ = device_alloc(n * sizeof(float));
    normal_scratch_floats_ = n;
  }
  return static_cast<float*>(normal_scratch_.get());
}

void CudaBackend::random_normal(float* y, size_t n, uint64_t seed_value, uint64_t offset, float mean, float stddev) {
  cudaStream_t s = stream();
  if (n == 0) return;
  seed(seed_value, offset);
  // cuRAND draws normals in pairs into 8-byte-aligned memory; an odd count
  // draws n + 1 into scratch, as the CPU backend does, so both keep the same pairs.
  const bool direct = n % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(float)) == 0;
  if (direct) {
    AMLP_CUDA_CHECK(curandGenerateNormal(rng_.get(), y, n, mean, stddev));
    return;
  }
  const size_t even = n + (n & 1);
  float* tmp = normal_scratch(even);
  AMLP_CUDA_CHECK(curandGenerateNormal(rng_.get(), tmp, even, mean, stddev));
  AMLP_CUDA_CHECK(cudaMemcpyAsync(y, tmp, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
}

void CudaBackend::random_uniform(float* y, size_t n, uint64_t seed_value, uint64_t offset, float lo, float hi) {
  cudaStream_t s = stream();
  if (n == 0) return;
  seed(seed_value, offset);
  AMLP_CUDA_CHECK(curandGenerateUniform(rng_.get(), y, n));  // (0, 1]
  const float width = hi - lo;
  if (!(lo == 0.f && width == 1.f)) launch_affine(y, n, lo, width, s);  // lo + width*y, as on the CPU
}

}  // namespace amlp::cuda

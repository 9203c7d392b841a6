// random.cpp — CPU random numbers: Philox4x32-10 through cuRAND's host
// generator (no GPU needed), so both backends draw one stream from one seed;
// without the CUDA Toolkit, the built-in generator of philox.h.
#include <cstring>

#include "framework/cpu/backend.h"

#if ASYNCMLP_HAVE_CURAND
#include "framework/cuda/cuda_check.h"
#else
#include "framework/cpu/philox.h"
#endif

namespace amlp::cpu {

namespace {
void scale_uniform(float* y, size_t n, float lo, float hi) {
  const float w = hi - lo;
  for (size_t i = 0; i < n; ++i) y[i] = lo + w * y[i];
}
}  // namespace

#if ASYNCMLP_HAVE_CURAND

void CpuBackend::prepare(uint64_t seed, uint64_t offset) {
  if (!gen_) AMLP_CUDA_CHECK_ON(curandCreateGeneratorHost(&gen_, CURAND_RNG_PSEUDO_PHILOX4_32_10), name_.c_str());
  AMLP_CUDA_CHECK_ON(curandSetPseudoRandomGeneratorSeed(gen_, seed), name_.c_str());
  AMLP_CUDA_CHECK_ON(curandSetGeneratorOffset(gen_, offset), name_.c_str());
}

void CpuBackend::random_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float sd) {
  prepare(seed, offset);
  if (n % 2 == 0) {
    AMLP_CUDA_CHECK_ON(curandGenerateNormal(gen_, y, n, mean, sd), name_.c_str());
  } else {  // cuRAND draws normals in pairs
    scratch_.resize(n + 1);
    AMLP_CUDA_CHECK_ON(curandGenerateNormal(gen_, scratch_.data(), n + 1, mean, sd), name_.c_str());
    std::memcpy(y, scratch_.data(), n * sizeof(float));
  }
}

void CpuBackend::random_uniform(float* y, size_t n, uint64_t seed, uint64_t offset, float lo, float hi) {
  prepare(seed, offset);
  AMLP_CUDA_CHECK_ON(curandGenerateUniform(gen_, y, n), name_.c_str());  // (0, 1]
  scale_uniform(y, n, lo, hi);
}

#else

void CpuBackend::random_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float sd) {
  philox::normal(y, n, seed, offset, mean, sd);
}

void CpuBackend::random_uniform(float* y, size_t n, uint64_t seed, uint64_t offset, float lo, float hi) {
  philox::uniform(y, n, seed, offset);
  scale_uniform(y, n, lo, hi);
}

#endif

}  // namespace amlp::cpu

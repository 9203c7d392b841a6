// linalg.cpp — the CUDA GEMM: cuBLAS SGEMM, row-major (gemm.h), TF32 only
// when asked (set_tf32). The CPU's is cpu/linalg.cpp.
#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/gemm.h"

namespace amlp::cuda {

void CudaBackend::gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                       int ldb, float beta, float* C, int ldc) {
  (void)stream();
  if (M <= 0 || N <= 0) return;
  const bool want_tf32 = want_tf32_.load(std::memory_order_acquire);
  if (want_tf32 != tf32_) {
    AMLP_CUDA_CHECK(cublasSetMathMode(blas_.get(), math_mode(want_tf32)));
    tf32_ = want_tf32;
  }
  AMLP_CUDA_CHECK(sgemm_row_major(blas_.get(), ta, tb, M, N, K, &alpha, A, lda, B, ldb, &beta, C, ldc));
}

}  // namespace amlp::cuda

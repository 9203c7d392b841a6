// linalg.cpp — the CUDA GEMMs: cuBLAS SGEMM, row-major (gemm.h), and a Dense
// layer's fused GEMMs through cuBLASLt (lt_gemm.h); TF32 only when asked
// (set_tf32). The CPU's are cpu/linalg.cpp and core/backend.cpp.
#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/gemm.h"

namespace amlp::cuda {

// The cuBLAS handle's math mode follows set_tf32 (the worker's view of it).
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

void CudaBackend::linear(const float* x, const float* w, const float* b, float* y, int B, int in, int out,
                         bool relu) {
  (void)stream();
  if (lt_.linear(x, w, b, y, B, in, out, relu, want_tf32_.load(std::memory_order_acquire))) return;
  Backend::linear(x, w, b, y, B, in, out, relu);
}

void CudaBackend::linear_grad_weight(const float* dz, const float* x, float* dw, float* db, int B, int in, int out) {
  (void)stream();
  if (lt_.grad_weight(dz, x, dw, db, B, in, out, want_tf32_.load(std::memory_order_acquire))) return;
  Backend::linear_grad_weight(dz, x, dw, db, B, in, out);
}

}  // namespace amlp::cuda

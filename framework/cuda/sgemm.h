// sgemm.h — row-major SGEMM through column-major cuBLAS.
//
// A row-major matrix read column-major is its transpose. So row-major
//   C(M,N) = op(A)(M,K) · op(B)(K,N)
// is column-major Cᵀ(N,M) = op(B)ᵀ · op(A)ᵀ: call cublasSgemm with A and B
// swapped, M and N swapped, and the same transpose flags. lda/ldb/ldc are the
// row strides as stored (A: (M,K) or, transposed, (K,M)); they are exactly the
// column-major leading dimensions cuBLAS checks (clamped to >= 1 for empty
// matrices). Shared by the backend and bench/bench_cuda_gemm.cu, so the
// benchmark's floor runs the very calls the backend makes.
//
//   sgemm_row_major(h, /*trans_a=*/false, /*trans_b=*/true, B, out, in,
//                   &one, x, in, w, in, &zero, y, out);       // y = x·Wᵀ
#pragma once
#include <cublas_v2.h>

#include <algorithm>

namespace amlp::cuda {

inline cublasStatus_t sgemm_row_major(cublasHandle_t h, bool trans_a, bool trans_b, int M, int N, int K,
                                      const float* alpha, const float* A, int lda, const float* B, int ldb,
                                      const float* beta, float* C, int ldc) {
  return cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                     /*m=*/N, /*n=*/M, /*k=*/K, alpha, B, std::max(ldb, 1), A, std::max(lda, 1), beta, C,
                     std::max(ldc, 1));
}

// TF32 tensor-core math on or off (off: CUBLAS_DEFAULT_MATH, full FP32 for SGEMM).
inline cublasMath_t math_mode(bool tf32) { return tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH; }

}  // namespace amlp::cuda

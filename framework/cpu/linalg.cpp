// linalg.cpp — the CPU GEMM: OpenBLAS's CBLAS, row-major.
#include <cblas.h>

#include "framework/cpu/backend.h"
#include "framework/runtime.h"

namespace amlp::cpu {

void CpuBackend::gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                      int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
              B, ldb, beta, C, ldc);
}

}  // namespace amlp::cpu

namespace amlp {

void set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
int blas_threads() { return openblas_get_num_threads(); }

}  // namespace amlp

// linalg.cpp — the CPU GEMM: OpenBLAS's CBLAS, row-major.
#include <cblas.h>

#include <algorithm>
#include <thread>

#include "framework/cpu/cpu_backend.h"
#include "framework/runtime.h"

namespace amlp::cpu {

namespace {

void gemm(Backend&, bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
              B, ldb, beta, C, ldc);
}

}  // namespace

void add_linalg_kernels(KernelTable& t) {
  t.gemm = gemm;
}

}  // namespace amlp::cpu

namespace amlp {

void set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
int blas_threads() { return openblas_get_num_threads(); }

BlasThreadsShare::BlasThreadsShare(const std::vector<Device>& devices) : previous_(blas_threads()) {
  int cpus = 0;
  for (const Device& d : devices) cpus += d.is_cuda() ? 0 : 1;
  if (cpus < 2) return;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  set_blas_threads(std::max(1, cores / cpus));
  changed_ = true;
}

BlasThreadsShare::~BlasThreadsShare() {
  if (changed_) set_blas_threads(previous_);
}

}  // namespace amlp

// linalg.cpp — the CPU GEMM: OpenBLAS's CBLAS, row-major; and OpenBLAS's
// threads (runtime.h).
#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "framework/cpu/blas_room.h"
#include "framework/cpu/cpu_backend.h"
#include "framework/runtime.h"

namespace amlp::cpu {

namespace {

void gemm(Backend& be, bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc) {
  const BlasCall room(static_cast<CpuBackend&>(be).name());  // OutOfMemory, not OpenBLAS's endless retry (blas_room.h)
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
              B, ldb, beta, C, ldc);
}

}  // namespace

void add_linalg_kernels(KernelTable& t) {
  t.gemm = gemm;
}

}  // namespace amlp::cpu

namespace amlp {

// OpenBLAS starts a server thread for each past the most it ever ran, and
// each maps a buffer as it starts: no more than a limited address space has
// room for (blas_room.h), or the new thread would retry its mapping for ever.
void set_blas_threads(int n) {
  static std::mutex mu;
  static int started = 0;  // the most OpenBLAS ran so far: what it started with, or a larger n since
  std::lock_guard<std::mutex> lk(mu);
  if (started == 0) started = openblas_get_num_threads();
  n = cpu::blas_threads_that_fit(std::max(1, n), started, detail::address_space_now());
  started = std::max(started, n);
  openblas_set_num_threads(n);
}
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

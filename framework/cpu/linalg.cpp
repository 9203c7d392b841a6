// linalg.cpp — the CPU GEMM: OpenBLAS's CBLAS, row-major, and with TF32 on
// (set_tf32, runtime.h) the tensor cores' input rounding emulated; and
// OpenBLAS's threads (runtime.h).
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "framework/cpu/blas_room.h"
#include "framework/cpu/cpu_backend.h"
#include "framework/runtime.h"

namespace amlp::cpu {

namespace {

// `rows` rows of `cols` floats at stride `ld`, each rounded to TF32 (the
// nearest value with 10 mantissa bits, ties to even) into `out` (same
// stride). Infinities and NaNs pass unchanged.
const float* rounded_to_tf32(const float* x, int rows, int cols, int ld, std::vector<float>& out) {
  if (rows <= 0 || cols <= 0) return x;
  out.resize(static_cast<size_t>(rows - 1) * ld + cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) out[static_cast<size_t>(r) * ld + c] = round_to_tf32(x[static_cast<size_t>(r) * ld + c]);
  return out.data();
}

// With TF32 on, A and B are rounded first, as a tensor core reads them, and
// the products accumulate in FP32 as cuBLAS's TF32 GEMMs do: the loss's
// response to TF32 can be seen, and tested, without a GPU. The copies live
// in the worker thread's buffers, kept for the next GEMM.
void gemm(Backend& be, bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc) {
  const BlasCall room(static_cast<CpuBackend&>(be).name());  // OutOfMemory, not OpenBLAS's endless retry (blas_room.h)
  if (tf32()) {
    thread_local std::vector<float> a32, b32;
    A = rounded_to_tf32(A, ta ? K : M, ta ? M : K, lda, a32);
    B = rounded_to_tf32(B, tb ? N : K, tb ? K : N, ldb, b32);
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
              B, ldb, beta, C, ldc);
}

}  // namespace

void add_linalg_kernels(KernelTable& t) {
  t.gemm = gemm;
}

float round_to_tf32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;  // inf, NaN
  bits += 0xfffu + ((bits >> 13) & 1u);                 // to nearest, ties to even; may carry into the exponent
  bits &= ~0x1fffu;
  std::memcpy(&v, &bits, sizeof v);
  return v;
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

// cpu_backend.cpp — the CPU kernel table: GEMM through OpenBLAS's CBLAS,
// random numbers through cuRAND's host Philox generator (no GPU needed), and
// plain loops for the rest. Kernels run on the device's worker thread.
#include <cblas.h>
#if ASYNCMLP_HAVE_CURAND
#include <curand.h>
#else
#include "framework/philox.h"
#endif

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "framework/backend.h"
#include "framework/error.h"

namespace amlp {

namespace {

#if ASYNCMLP_HAVE_CURAND
const char* curand_str(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_SUCCESS: return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    default: return "curand error";
  }
}

#define CURAND_HOST_CHECK(call)                                                             \
  do {                                                                                      \
    curandStatus_t st_ = (call);                                                            \
    if (st_ != CURAND_STATUS_SUCCESS)                                                       \
      throw Error(detail::concat(__FILE__, ":", __LINE__, ": ", #call, " failed: ",         \
                                 curand_str(st_), " (", static_cast<int>(st_), ") on cpu"));  \
  } while (0)
#endif

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int index) : index_(index) {}
#if ASYNCMLP_HAVE_CURAND
  ~CpuBackend() override {
    if (gen_) curandDestroyGenerator(gen_);
  }
#endif

  void* raw_alloc(size_t bytes) override {
    // 64-byte aligned; bytes is a multiple of 512.
    return std::aligned_alloc(64, bytes);
  }
  void raw_free(void* p) noexcept override { std::free(p); }

  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc) override {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
                K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  void fill(float* y, size_t n, float v) override {
    for (size_t i = 0; i < n; ++i) y[i] = v;
  }
  void add_bias(const float* x, const float* b, float* y, int rows, int cols) override {
    for (int r = 0; r < rows; ++r) {
      float* yr = y + static_cast<size_t>(r) * cols;
      if (!x) {
        std::memcpy(yr, b, sizeof(float) * static_cast<size_t>(cols));
        continue;
      }
      const float* xr = x + static_cast<size_t>(r) * cols;
      for (int c = 0; c < cols; ++c) yr[c] = xr[c] + b[c];
    }
  }
  void relu(const float* x, float* y, size_t n) override {
    for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
  }
  void relu_backward(const float* x, const float* dy, float* dx, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      const float g = dy[i];  // unconditional load: the select vectorises, a branch would not
      dx[i] = x[i] > 0.f ? g : 0.f;
    }
  }
  void l2_loss(const float* p, const float* l, float* loss, int rows, int cols) override {
    for (int r = 0; r < rows; ++r) {
      float s = 0.f;
      for (int c = 0; c < cols; ++c) {
        float d = p[static_cast<size_t>(r) * cols + c] - l[static_cast<size_t>(r) * cols + c];
        s += d * d;
      }
      loss[r] = 0.5f * s / cols;
    }
  }
  void l2_loss_backward(const float* p, const float* l, const float* dloss, float* dp, int rows,
                        int cols) override {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        size_t i = static_cast<size_t>(r) * cols + c;
        dp[i] = dloss[r] * (p[i] - l[i]) / cols;
      }
  }
  void axpby(float alpha, const float* a, float beta, const float* b, float* y, size_t n) override {
    if (b)
      for (size_t i = 0; i < n; ++i) y[i] = alpha * a[i] + beta * b[i];
    else
      for (size_t i = 0; i < n; ++i) y[i] = alpha * a[i];
  }
  void add_scalar(const float* x, float s, float* y, size_t n) override {
    for (size_t i = 0; i < n; ++i) y[i] = x[i] + s;
  }
  void sum_rows(const float* x, float* y, int rows, int cols) override {
    std::memset(y, 0, sizeof(float) * cols);
    for (int r = 0; r < rows; ++r) {
      const float* xr = x + static_cast<size_t>(r) * cols;
      for (int c = 0; c < cols; ++c) y[c] += xr[c];
    }
  }
  void sum(const float* x, float* y, size_t n, float scale) override {
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += x[i];
    y[0] = static_cast<float>(s * scale);
  }
  void broadcast_scalar(const float* x, float scale, float* y, size_t n) override {
    const float v = x[0] * scale;
    for (size_t i = 0; i < n; ++i) y[i] = v;
  }
#if ASYNCMLP_HAVE_CURAND
  void random_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float sd) override {
    prepare(seed, offset);
    if (n % 2 == 0) {
      CURAND_HOST_CHECK(curandGenerateNormal(gen_, y, n, mean, sd));
    } else {  // cuRAND draws normals in pairs
      scratch_.resize(n + 1);
      CURAND_HOST_CHECK(curandGenerateNormal(gen_, scratch_.data(), n + 1, mean, sd));
      std::memcpy(y, scratch_.data(), n * sizeof(float));
    }
  }
  void random_uniform(float* y, size_t n, uint64_t seed, uint64_t offset, float lo, float hi) override {
    prepare(seed, offset);
    CURAND_HOST_CHECK(curandGenerateUniform(gen_, y, n));  // (0, 1]
    scale_uniform(y, n, lo, hi);
  }
#else
  void random_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float sd) override {
    philox::normal(y, n, seed, offset, mean, sd);
  }
  void random_uniform(float* y, size_t n, uint64_t seed, uint64_t offset, float lo, float hi) override {
    philox::uniform(y, n, seed, offset);
    scale_uniform(y, n, lo, hi);
  }
#endif
  void sgd_update(float* w, const float* g, float* mom, size_t n, float lr, float momentum, float wd,
                  float rescale) override {
    if (momentum == 0.f || !mom) {
      for (size_t i = 0; i < n; ++i) w[i] -= lr * (rescale * g[i] + wd * w[i]);
    } else {
      for (size_t i = 0; i < n; ++i) {
        mom[i] = momentum * mom[i] - lr * (rescale * g[i] + wd * w[i]);
        w[i] += mom[i];
      }
    }
  }
  // An empty tensor's host side may be a null pointer, which memcpy must not see even for 0 bytes.
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void check_finite(const float* x, size_t n, const char* what) override {
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(x[i]))
        throw Error(detail::concat("non-finite value ", x[i], " at index ", i, " of ", what));
  }

 private:
  static void scale_uniform(float* y, size_t n, float lo, float hi) {
    const float w = hi - lo;
    for (size_t i = 0; i < n; ++i) y[i] = lo + w * y[i];
  }
#if ASYNCMLP_HAVE_CURAND
  void prepare(uint64_t seed, uint64_t offset) {
    if (!gen_) CURAND_HOST_CHECK(curandCreateGeneratorHost(&gen_, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CURAND_HOST_CHECK(curandSetPseudoRandomGeneratorSeed(gen_, seed));
    CURAND_HOST_CHECK(curandSetGeneratorOffset(gen_, offset));
  }
  curandGenerator_t gen_ = nullptr;
  std::vector<float> scratch_;
#endif
  [[maybe_unused]] int index_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int index) { return std::make_unique<CpuBackend>(index); }

}  // namespace amlp

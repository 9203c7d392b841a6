// kernels.h — host-side launchers for the backend's CUDA kernels. Each only
// launches onto `s` (nothing waits), checks cudaGetLastError() after its
// launch, and returns at once for n == 0. Plain C++ on the calling side: the
// kernels live in the .cu files named below.
//
// Where the CPU backend's loop has a fixed order of float operations, the
// kernel repeats it with round-to-nearest intrinsics (no FMA contraction), so
// the results are bitwise equal to the cpu/ kernels of the same name.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace amlp::cuda {

// --- elementwise.cu (bitwise equal to the CPU) ------------------------------------
void launch_fill(float* y, size_t n, float value, cudaStream_t s);
// y(r,c) = x(r,c) + b(c); y may alias x
void launch_add_bias(const float* x, const float* b, float* y, int rows, int cols, cudaStream_t s);
void launch_relu(const float* x, float* y, size_t n, cudaStream_t s);
// dx = x > 0 ? dy : 0
void launch_relu_backward(const float* x, const float* dy, float* dx, size_t n, cudaStream_t s);
// y(r,c) = max(y(r,c) + b(c), 0) in place; b may be null
void launch_bias_relu(float* y, const float* b, int rows, int cols, cudaStream_t s);
// y = alpha*a + beta*b  (b null: y = alpha*a); y may alias a or b
void launch_axpby(float alpha, const float* a, float beta, const float* b, float* y, size_t n, cudaStream_t s);
void launch_add_scalar(const float* x, float add, float* y, size_t n, cudaStream_t s);
// y = xs[0] + ... + xs[k-1] left to right (k >= 1; xs: a host array of device
// pointers), one launch per kSumNBatch inputs
constexpr int kSumNBatch = 8;
void launch_sum_n(const float* const* xs, int k, float* y, size_t n, cudaStream_t s);
// y[i] = x[0] * scale   (x is one device float)
void launch_broadcast_scalar(const float* x, float scale, float* y, size_t n, cudaStream_t s);
// y = lo + width * y   (cuRAND's (0,1] uniforms to [lo, hi))
void launch_affine(float* y, size_t n, float lo, float width, cudaStream_t s);

// --- optimizer.cu (bitwise equal to the CPU) -----------------------------------------
// Gluon SGD (see backend.h); mom may be null when momentum == 0
void launch_sgd_update(float* w, const float* g, float* mom, size_t n, float lr, float momentum, float wd,
                       float rescale, cudaStream_t s);

// --- loss.cu -----------------------------------------------------------------------
// loss(r) = 0.5 * mean_c (p - l)^2: one thread per row in the CPU's order (bitwise)
// for cols <= kL2RowThreadMaxCols, one warp per row (a tree sum) above it.
constexpr int kL2RowThreadMaxCols = 32;
void launch_l2_loss(const float* p, const float* l, float* loss, int rows, int cols, cudaStream_t s);
// dp(r,c) = dloss(r) * (p - l) / cols   (bitwise)
void launch_l2_loss_backward(const float* p, const float* l, const float* dloss, float* dp, int rows, int cols,
                             cudaStream_t s);

// --- reduce.cu ---------------------------------------------------------------------
// y[0] = scale * sum(x): per-block double partials, then one block sums those;
// deterministic (no atomics), double accumulation as on the CPU.
constexpr int kMaxSumBlocks = 1024;
void launch_sum(const float* x, size_t n, float scale, double* partials /* kMaxSumBlocks */, float* y,
                cudaStream_t s);
// y(c) = sum_r x(r,c): a 32x32 block per 32 columns, double accumulation, deterministic.
void launch_sum_rows(const float* x, float* y, int rows, int cols, cudaStream_t s);

// --- check_finite.cu -----------------------------------------------------------------
// *first = the smallest index i with x[i] not finite, or ~0ull if none.
void launch_find_non_finite(const float* x, size_t n, unsigned long long* first, cudaStream_t s);

}  // namespace amlp::cuda

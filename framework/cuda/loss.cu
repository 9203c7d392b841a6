// loss.cu — L2Loss forward and backward: loss(r) = 0.5 * mean_c (p - l)^2,
// dp(r,c) = dloss(r) * (p - l) / cols. Narrow rows (the d2l MLP has one
// column) take one thread per row in the CPU's order, bitwise equal to it;
// wide rows take a warp each.
#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/kernels.h"
#include "framework/cuda/launch.cuh"

namespace amlp::cuda {

namespace {

// dp, when not null: the gradient for a unit head, (p - l) / cols, bitwise
// l2_loss_backward_kernel's with dloss = 1.
__global__ void l2_loss_row_thread_kernel(const float* p, const float* l, float* loss, float* dp, size_t rows,
                                          int cols) {
  for (size_t r = global_thread(); r < rows; r += grid_threads()) {
    const float* pr = p + r * cols;
    const float* lr = l + r * cols;
    float s = 0.f;
    for (int c = 0; c < cols; ++c) {
      const float d = __fsub_rn(pr[c], lr[c]);
      s = __fadd_rn(s, __fmul_rn(d, d));
      if (dp) dp[r * cols + c] = __fdiv_rn(d, static_cast<float>(cols));
    }
    loss[r] = __fdiv_rn(__fmul_rn(0.5f, s), static_cast<float>(cols));
  }
}

// Whole warps per row: the row index is the same in every lane, so the
// shuffles below always run with all 32 lanes.
__global__ void l2_loss_row_warp_kernel(const float* p, const float* l, float* loss, float* dp, size_t rows,
                                        int cols) {
  const int lane = threadIdx.x & 31;
  const size_t warps = grid_threads() / 32;
  for (size_t r = global_thread() / 32; r < rows; r += warps) {
    const float* pr = p + r * cols;
    const float* lr = l + r * cols;
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) {
      const float d = __fsub_rn(pr[c], lr[c]);
      s = __fadd_rn(s, __fmul_rn(d, d));
      if (dp) dp[r * cols + c] = __fdiv_rn(d, static_cast<float>(cols));
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) loss[r] = __fdiv_rn(__fmul_rn(0.5f, s), static_cast<float>(cols));
  }
}

__global__ void l2_loss_backward_kernel(const float* p, const float* l, const float* dloss, float* dp, size_t n,
                                        int cols) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) {
    const size_t r = i / cols;
    dp[i] = __fdiv_rn(__fmul_rn(dloss[r], __fsub_rn(p[i], l[i])), static_cast<float>(cols));
  }
}

// One thread per row in the CPU's order (bitwise) for cols <= kL2RowThreadMaxCols,
// one warp per row (a tree sum) above it.
void l2_loss_forward(Backend& dev, const float* p, const float* l, float* loss, float* dp, int rows, int cols) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (rows <= 0) return;
  const size_t r = static_cast<size_t>(rows);
  if (cols <= kL2RowThreadMaxCols)
    l2_loss_row_thread_kernel<<<blocks_for(r), kBlock, 0, s>>>(p, l, loss, dp, r, cols);
  else
    l2_loss_row_warp_kernel<<<blocks_for(r * 32), kBlock, 0, s>>>(p, l, loss, dp, r, cols);
  AMLP_CUDA_CHECK_LAUNCH();
}

void l2_loss_backward(Backend& dev, const float* p, const float* l, const float* dloss, float* dp, int rows, int cols) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  const size_t n = static_cast<size_t>(rows > 0 ? rows : 0) * static_cast<size_t>(cols > 0 ? cols : 0);
  if (n == 0) return;
  l2_loss_backward_kernel<<<blocks_for(n), kBlock, 0, s>>>(p, l, dloss, dp, n, cols);
  AMLP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void add_loss_kernels(KernelTable& t) {
  t.l2_loss_forward = l2_loss_forward;
  t.l2_loss_backward = l2_loss_backward;
}

}  // namespace amlp::cuda

// reduce.cu — sum (and mean) of a whole tensor and column sums (bias
// gradients). Both accumulate in double like the CPU backend and are
// deterministic: no atomics, a fixed tree per launch configuration.
#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/kernels.h"
#include "framework/cuda/launch.cuh"

namespace amlp::cuda {

namespace {

constexpr int kSumThreads = 256;
constexpr int kSumFinishThreads = 1024;
constexpr size_t kSumPerThread = 8;  // elements per thread before another block is worth it

// partials[block] = sum of this block's grid-stride share of x
__global__ void __launch_bounds__(kSumThreads) sum_partials_kernel(const float* x, size_t n, double* partials) {
  double acc = 0.0;
  for (size_t i = global_thread(); i < n; i += grid_threads()) acc += x[i];
  acc = block_sum<kSumThreads>(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// y[0] = float(scale * sum(partials))   — as the CPU: static_cast<float>(s * scale)
// (__launch_bounds__: nvcc keeps the registers within what 1024 threads may use.)
__global__ void __launch_bounds__(kSumFinishThreads) sum_finish_kernel(const double* partials, int count, float scale, float* y) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += kSumFinishThreads) acc += partials[i];
  acc = block_sum<kSumFinishThreads>(acc);
  if (threadIdx.x == 0) y[0] = static_cast<float>(acc * static_cast<double>(scale));
}

// A 32x32 block per 32 columns: thread (tx, ty) sums rows ty, ty+32, ... of
// column blockIdx.x*32 + tx (reads coalesced across tx); then row ty == 0
// adds the 32 partial sums of its column in a fixed order.
__global__ void __launch_bounds__(32 * 32) sum_rows_kernel(const float* x, float* y, int rows, int cols) {
  __shared__ double part[32][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  double acc = 0.0;
  if (c < cols)
    for (int r = threadIdx.y; r < rows; r += 32) acc += x[static_cast<size_t>(r) * cols + c];
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double s = 0.0;
    for (int k = 0; k < 32; ++k) s += part[k][threadIdx.x];
    y[c] = static_cast<float>(s);
  }
}

}  // namespace

// y[0] = scale * sum(x): per-block double partials (in scratch_), then one
// block sums those; deterministic (no atomics), double accumulation as on the CPU.
void CudaBackend::sum(const float* x, float* y, size_t n, float scale) {
  cudaStream_t s = stream();
  auto* partials = static_cast<double*>(scratch_.get());
  int blocks = 0;
  if (n > 0) {
    blocks = static_cast<int>(std::min<size_t>((n + kSumThreads * kSumPerThread - 1) / (kSumThreads * kSumPerThread),
                                               CudaBackend::kMaxSumBlocks));
    sum_partials_kernel<<<blocks, kSumThreads, 0, s>>>(x, n, partials);
    AMLP_CUDA_CHECK_LAUNCH();
  }
  sum_finish_kernel<<<1, kSumFinishThreads, 0, s>>>(partials, blocks, scale, y);  // n == 0: y = 0
  AMLP_CUDA_CHECK_LAUNCH();
}

void launch_sum_rows(const float* x, float* y, int rows, int cols, cudaStream_t s) {
  if (cols <= 0) return;
  const dim3 block(32, 32);
  const dim3 grid(static_cast<unsigned>((cols + 31) / 32));
  sum_rows_kernel<<<grid, block, 0, s>>>(x, y, rows < 0 ? 0 : rows, cols);  // rows == 0: y = 0
  AMLP_CUDA_CHECK_LAUNCH();
}

void CudaBackend::sum_rows(const float* x, float* y, int rows, int cols) { launch_sum_rows(x, y, rows, cols, stream()); }

// Two kernels (the mask, then sum_rows' deterministic column sums).
void CudaBackend::relu_backward_sum_rows(const float* y, const float* dy, float* dz, float* db, int rows, int cols) {
  cudaStream_t s = stream();
  launch_relu_backward(y, dy, dz, static_cast<size_t>(rows) * cols, s);
  if (db) launch_sum_rows(dz, db, rows, cols, s);
}

}  // namespace amlp::cuda

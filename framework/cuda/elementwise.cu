// elementwise.cu — fill, bias, ReLU and its backward, axpby, scalar ops, the
// sum of k tensors and the uniform map. Each repeats cpu/elementwise.cpp's
// float operations in the same order with round-to-nearest intrinsics
// (__fmul_rn, __fadd_rn, ...), which nvcc never fuses into an FMA: the
// results are bitwise equal to the CPU's.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/kernels.h"
#include "framework/cuda/launch.cuh"

namespace amlp::cuda {

namespace {

__global__ void fill_kernel(float* y, size_t n, float v) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) y[i] = v;
}

// x, y: (rows, cols) with n = rows*cols; b: (cols). y may alias x.
__global__ void add_bias_kernel(const float* x, const float* b, float* y, size_t n, size_t cols) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) y[i] = x ? __fadd_rn(x[i], b[i % cols]) : b[i % cols];
}

__global__ void relu_kernel(const float* x, float* y, size_t n) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) {
    const float v = x[i];
    y[i] = v > 0.f ? v : 0.f;
  }
}

__global__ void relu_backward_kernel(const float* x, const float* dy, float* dx, size_t n) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) dx[i] = x[i] > 0.f ? dy[i] : 0.f;
}

// y(r,c) = max(y + b(c), 0) in place; the CPU's order: one add, then the
// compare. Thread (tx, ty) owns columns c..c+V-1 and walks the rows ty,
// ty + blockDim.y*gridDim.y, ...: its bias is read once, no index is divided,
// and with V = 4 (cols % 4 == 0, 16-byte aligned) each access is one float4.
template <int V>
__global__ void __launch_bounds__(kBlock) bias_relu_kernel(float* y, const float* b, int rows, int cols) {
  using Vec = typename std::conditional<V == 4, float4, float>::type;
  const int c = (static_cast<int>(blockIdx.x * blockDim.x) + static_cast<int>(threadIdx.x)) * V;
  if (c >= cols) return;
  float bias[V] = {};
  if (b)
    for (int j = 0; j < V; ++j) bias[j] = b[c + j];
  const int step = static_cast<int>(blockDim.y * gridDim.y);
  for (int r = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y); r < rows; r += step) {
    Vec* p = reinterpret_cast<Vec*>(y + static_cast<size_t>(r) * cols + c);
    Vec v = *p;
    float* f = reinterpret_cast<float*>(&v);
    for (int j = 0; j < V; ++j) {
      const float t = b ? __fadd_rn(f[j], bias[j]) : f[j];
      f[j] = t > 0.f ? t : 0.f;
    }
    *p = v;
  }
}

__global__ void axpby_kernel(float alpha, const float* a, float beta, const float* b, float* y, size_t n) {
  for (size_t i = global_thread(); i < n; i += grid_threads())
    y[i] = __fadd_rn(__fmul_rn(alpha, a[i]), __fmul_rn(beta, b[i]));
}

__global__ void scale_kernel(float alpha, const float* a, float* y, size_t n) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) y[i] = __fmul_rn(alpha, a[i]);
}

__global__ void multiply_kernel(const float* a, const float* b, float* y, size_t n) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) y[i] = __fmul_rn(a[i], b[i]);
}

__global__ void add_scalar_kernel(const float* x, float add, float* y, size_t n) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) y[i] = __fadd_rn(x[i], add);
}

// Up to kSumNBatch inputs per launch, passed by value: y = x0 + x1 + ..., or
// y = y + x0 + ... for the batches after the first (the CPU's order).
struct SumNInputs {
  const float* xs[kSumNBatch];
};

__global__ void sum_n_kernel(SumNInputs in, int k, bool onto_y, float* y, size_t n) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) {
    float v = onto_y ? y[i] : in.xs[0][i];
    for (int j = onto_y ? 0 : 1; j < k; ++j) v = __fadd_rn(v, in.xs[j][i]);
    y[i] = v;
  }
}

__global__ void broadcast_scalar_kernel(const float* x, float scale, float* y, size_t n) {
  const float v = __fmul_rn(x[0], scale);
  for (size_t i = global_thread(); i < n; i += grid_threads()) y[i] = v;
}

__global__ void affine_kernel(float* y, size_t n, float lo, float width) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) y[i] = __fadd_rn(lo, __fmul_rn(width, y[i]));
}

// One thread per 32-bit word of the mask: bits c0..c0+31 of its row.
__global__ void relu_mask_kernel(const float* y, uint32_t* mask, int cols, size_t words_per_row, size_t n) {
  for (size_t i = global_thread(); i < n; i += grid_threads()) {
    const size_t r = i / words_per_row;
    const int c0 = static_cast<int>((i % words_per_row) * 32);
    const float* yr = y + r * static_cast<size_t>(cols);
    uint32_t bits = 0;
    for (int j = 0; j < 32 && c0 + j < cols; ++j) bits |= (yr[c0 + j] > 0.f ? 1u : 0u) << j;
    mask[i] = bits;
  }
}

bool is_positive_zero(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits == 0;
}

// --- the kernels (worker thread: launch and return) ---------------------------------------

void fill_value(Backend& dev, float* y, size_t n, float value) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (n == 0) return;
  if (is_positive_zero(value)) {
    AMLP_CUDA_CHECK(cudaMemsetAsync(y, 0, n * sizeof(float), s));
    return;
  }
  fill_kernel<<<blocks_for(n), kBlock, 0, s>>>(y, n, value);
  AMLP_CUDA_CHECK_LAUNCH();
}

void add_bias(Backend& dev, const float* x, const float* b, float* y, int rows, int cols) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  if (n == 0) return;
  add_bias_kernel<<<blocks_for(n), kBlock, 0, s>>>(x, b, y, n, static_cast<size_t>(cols));
  AMLP_CUDA_CHECK_LAUNCH();
}

void relu_forward(Backend& dev, const float* x, float* y, size_t n) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (n == 0) return;
  relu_kernel<<<blocks_for(n), kBlock, 0, s>>>(x, y, n);
  AMLP_CUDA_CHECK_LAUNCH();
}

void relu_backward(Backend& dev, const float* x, const float* dy, float* dx, size_t n) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (n == 0) return;
  relu_backward_kernel<<<blocks_for(n), kBlock, 0, s>>>(x, dy, dx, n);
  AMLP_CUDA_CHECK_LAUNCH();
}

void axpby(Backend& dev, float alpha, const float* a, float beta, const float* b, float* y, size_t n) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (n == 0) return;
  if (b)
    axpby_kernel<<<blocks_for(n), kBlock, 0, s>>>(alpha, a, beta, b, y, n);
  else
    scale_kernel<<<blocks_for(n), kBlock, 0, s>>>(alpha, a, y, n);
  AMLP_CUDA_CHECK_LAUNCH();
}

void multiply(Backend& dev, const float* a, const float* b, float* y, size_t n) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (n == 0) return;
  multiply_kernel<<<blocks_for(n), kBlock, 0, s>>>(a, b, y, n);
  AMLP_CUDA_CHECK_LAUNCH();
}

void scalar_add(Backend& dev, const float* x, float add, float* y, size_t n) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (n == 0) return;
  add_scalar_kernel<<<blocks_for(n), kBlock, 0, s>>>(x, add, y, n);
  AMLP_CUDA_CHECK_LAUNCH();
}

// One launch per kSumNBatch inputs (xs: a host array of device pointers on this GPU).
void sum_n(Backend& dev, const float* const* xs, int k, float* y, size_t n) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (n == 0) return;
  for (int first = 0; first < k; first += kSumNBatch) {
    SumNInputs in{};
    const int m = std::min(kSumNBatch, k - first);
    for (int j = 0; j < m; ++j) in.xs[j] = xs[first + j];
    sum_n_kernel<<<blocks_for(n), kBlock, 0, s>>>(in, m, /*onto_y=*/first > 0, y, n);
    AMLP_CUDA_CHECK_LAUNCH();
  }
}

void broadcast_scalar(Backend& dev, const float* x, float scale, float* y, size_t n) {
  cudaStream_t s = static_cast<CudaBackend&>(dev).stream();
  if (n == 0) return;
  broadcast_scalar_kernel<<<blocks_for(n), kBlock, 0, s>>>(x, scale, y, n);
  AMLP_CUDA_CHECK_LAUNCH();
}

void bias_relu(Backend& dev, float* y, const float* b, int rows, int cols) {
  auto& be = static_cast<CudaBackend&>(dev);
  launch_bias_relu(y, b, rows, cols, be.sms(), be.stream());
}

}  // namespace

void add_elementwise_kernels(KernelTable& t) {
  t.fill_value = fill_value;
  t.add_bias = add_bias;
  t.relu_forward = relu_forward;
  t.relu_backward = relu_backward;
  t.bias_relu = bias_relu;
  t.axpby = axpby;
  t.multiply = multiply;
  t.scalar_add = scalar_add;
  t.sum_n = sum_n;
  t.broadcast_scalar = broadcast_scalar;
}

void launch_affine(float* y, size_t n, float lo, float width, cudaStream_t s) {
  if (n == 0) return;
  affine_kernel<<<blocks_for(n), kBlock, 0, s>>>(y, n, lo, width);
  AMLP_CUDA_CHECK_LAUNCH();
}

// A block of kBlock threads: as many of them across a row as its columns
// need (whole warps), the rest down the rows; about eight blocks per
// multiprocessor, each thread then looping over its rows.
void launch_bias_relu(float* y, const float* b, int rows, int cols, int sms, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  const bool wide = cols % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  const int V = wide ? 4 : 1, lanes = (cols + V - 1) / V;
  const int tx = std::min(kBlock, (lanes + 31) / 32 * 32), ty = kBlock / tx;
  const unsigned gx = static_cast<unsigned>((lanes + tx - 1) / tx);
  const int want = std::max(1, 8 * std::max(sms, 1) / static_cast<int>(gx));
  const unsigned gy = static_cast<unsigned>(std::min(want, (rows + ty - 1) / ty));
  const dim3 block(static_cast<unsigned>(tx), static_cast<unsigned>(ty)), grid(gx, gy);
  if (wide)
    bias_relu_kernel<4><<<grid, block, 0, s>>>(y, b, rows, cols);
  else
    bias_relu_kernel<1><<<grid, block, 0, s>>>(y, b, rows, cols);
  AMLP_CUDA_CHECK_LAUNCH();
}

void launch_relu_mask(const float* y, uint32_t* mask, int rows, int cols, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  const size_t words_per_row = (static_cast<size_t>(cols) + 127) / 128 * 4, n = words_per_row * rows;
  relu_mask_kernel<<<blocks_for(n), kBlock, 0, s>>>(y, mask, cols, words_per_row, n);
  AMLP_CUDA_CHECK_LAUNCH();
}

}  // namespace amlp::cuda
